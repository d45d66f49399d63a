//! Sets of gRPC status codes (`retryableStatusCodes`, `nonFatalStatusCodes`): one bit per
//! code, the bit numbered by the code's number (`UNAVAILABLE` is 14).

use ::tonic::Code;
use std::fmt;

/// The names of the status codes, by number, as a service config writes them (the `google.rpc.Code`
/// enum's names).
pub(crate) const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The names in lower case, for suggestions.
const LOWER: [&str; 17] = [
    "ok",
    "cancelled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
];

/// The highest status code number.
pub(crate) const MAX_CODE: u8 = 16;

/// A set of status codes: bit `n` for the code numbered `n`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct Codes(u32);

impl Codes {
    /// No code.
    pub(crate) const EMPTY: Codes = Codes(0);

    /// The set with the code numbered `number` added (a number above 16 adds nothing).
    pub(crate) const fn with(self, number: u8) -> Codes {
        if number > MAX_CODE {
            return self;
        }
        Codes(self.0 | 1 << number)
    }

    /// Whether `code` is in the set.
    pub(crate) fn contains(self, code: Code) -> bool {
        // tonic's codes are numbered as gRPC's, 0 to 16.
        let number = code as i32;
        (0..=i32::from(MAX_CODE)).contains(&number) && self.0 & (1 << number) != 0
    }

    /// The set as a mask: bit `n` for the code numbered `n` (what the config's tests compare).
    #[cfg(test)]
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// Whether the set has no code.
    #[cfg(test)]
    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The codes by name: `{UNAVAILABLE, RESOURCE_EXHAUSTED}` in the order of their numbers.
impl fmt::Debug for Codes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        let mut names = NAMES
            .iter()
            .enumerate()
            .filter(|(n, _)| self.0 & (1 << n) != 0)
            .map(|(_, name)| name);
        if let Some(first) = names.next() {
            f.write_str(first)?;
        }
        for name in names {
            write!(f, ", {name}")?;
        }
        f.write_str("}")
    }
}

/// The number of the code `name` names, in any case (`"UNAVAILABLE"`, `"unavailable"`,
/// `"Unavailable"`: 14).
pub(crate) fn by_name(name: &str) -> Option<u8> {
    NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .and_then(|n| u8::try_from(n).ok())
}

/// The number of the code `name` names exactly, in upper case (`"UNAVAILABLE"`: 14;
/// `"unavailable"`: none), as proto3's JSON mapping reads a `google.rpc.Code` name.
pub(crate) fn by_exact_name(name: &str) -> Option<u8> {
    NAMES
        .iter()
        .position(|n| *n == name)
        .and_then(|n| u8::try_from(n).ok())
}

/// The name a misspelt code name most likely meant (`"UNAVAILBLE"`: `"UNAVAILABLE"`).
pub(crate) fn suggest(name: &str) -> Option<&'static str> {
    let meant = retry_keys::suggest(name, &LOWER)?;
    LOWER.iter().position(|n| *n == meant).map(|n| NAMES[n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_numbered_as_tonic_codes() {
        for (n, name) in NAMES.iter().enumerate() {
            let number = i32::try_from(n).expect("a small number");
            let code = Code::from_i32(number);
            assert_eq!(code as i32, number, "{name}");
            assert_eq!(by_name(name), u8::try_from(n).ok());
            assert_eq!(LOWER[n], name.to_ascii_lowercase());
        }
        assert_eq!(by_name("UNAVAILABLE"), Some(14));
        assert_eq!(by_name("unavailable"), Some(14));
        assert_eq!(by_name("Resource_Exhausted"), Some(8));
        assert_eq!(by_name("UNAVAILBLE"), None);
        assert_eq!(by_name(""), None);
        assert_eq!(by_exact_name("UNAVAILABLE"), Some(14));
        assert_eq!(by_exact_name("unavailable"), None);
        assert_eq!(by_exact_name("Resource_Exhausted"), None);
        assert_eq!(by_exact_name("DATA_LOSS"), Some(15));
    }

    #[test]
    fn a_set_holds_its_codes() {
        let set = Codes::EMPTY.with(14).with(8).with(14).with(200);
        assert_eq!(set.bits(), 1 << 14 | 1 << 8);
        assert!(set.contains(Code::Unavailable));
        assert!(set.contains(Code::ResourceExhausted));
        assert!(!set.contains(Code::Ok));
        assert!(!set.contains(Code::Internal));
        assert!(!set.is_empty());
        assert!(Codes::EMPTY.is_empty());
        assert_eq!(format!("{set:?}"), "{RESOURCE_EXHAUSTED, UNAVAILABLE}");
        let all = (0..=MAX_CODE).fold(Codes::EMPTY, Codes::with);
        assert_eq!(all.bits(), (1 << 17) - 1);
    }

    #[test]
    fn misspelt_names_suggest_the_code() {
        assert_eq!(suggest("UNAVAILBLE"), Some("UNAVAILABLE"));
        assert_eq!(suggest("deadline_exeeded"), Some("DEADLINE_EXCEEDED"));
        assert_eq!(suggest("RETRY"), None);
    }
}
