//! A call's invocation id (its own module, so that what reports a call can name it without
//! depending on the attempt context).

use core::fmt;

/// A call's invocation id: 128 random bits (a version-4 UUID), the same for every attempt of
/// one call and new for each call. `Display` writes it as a UUID
/// (`6f1c2a4e-93b0-4d7e-a2c5-0b8e4f7d9a31`), as the AWS SDKs send it in
/// `amz-sdk-invocation-id`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InvocationId(u128);

impl InvocationId {
    /// A version-4 (random) UUID from 128 random bits: the version and variant bits are set.
    pub(crate) fn v4(bits: u128) -> Self {
        let bits = (bits & !(0xf << 76) & !(0b11 << 62)) | (0x4 << 76) | (0b10 << 62);
        InvocationId(bits)
    }

    pub(crate) fn from_halves(hi: u64, lo: u64) -> Self {
        InvocationId((u128::from(hi) << 64) | u128::from(lo))
    }

    pub(crate) fn halves(self) -> (u64, u64) {
        ((self.0 >> 64) as u64, self.0 as u64)
    }

    /// The id's 128 bits.
    #[must_use]
    pub fn as_u128(&self) -> u128 {
        self.0
    }
}

impl fmt::Display for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            (b >> 96) as u32,
            (b >> 80) as u16,
            (b >> 64) as u16,
            (b >> 48) as u16,
            b & 0xffff_ffff_ffff,
        )
    }
}

impl fmt::Debug for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InvocationId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocation_ids_are_version_4_uuids() {
        let id = InvocationId::v4(u128::MAX);
        assert_eq!(id.to_string(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let id = InvocationId::v4(0);
        assert_eq!(id.to_string(), "00000000-0000-4000-8000-000000000000");
        let id = InvocationId::v4(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert_eq!(id.to_string(), "01234567-89ab-4def-8123-456789abcdef");
        let (hi, lo) = id.halves();
        assert_eq!(InvocationId::from_halves(hi, lo), id);
        assert_ne!(
            InvocationId::v4(0).as_u128(),
            0,
            "never the 'not drawn' mark"
        );
    }
}
