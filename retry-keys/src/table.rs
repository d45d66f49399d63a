//! The key table: every key of `#[retry(...)]`, the form of its value, whether the environment
//! and the config file may set it, and whether a `Policy` read with serde accepts it.

/// How a key's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// `"standard"` or `"adaptive"` ([`parse_mode`](crate::parse_mode)).
    Mode,
    /// `"classic"` or `"2026"` ([`parse_behavior`](crate::parse_behavior)).
    Behavior,
    /// A whole number of attempts ([`parse_count`](crate::parse_count)).
    Count,
    /// A duration with a unit, such as `"150ms"` ([`parse_duration`](crate::parse_duration)).
    Duration,
    /// A growth factor, a number >= 1.
    Factor,
    /// A jitter's name, or a fraction in [0, 1] ([`parse_jitter`](crate::parse_jitter)).
    Jitter,
    /// A duration, or a percentile of the function's latency ([`parse_hedge`](crate::parse_hedge)).
    Hedge,
    /// A share of the calls, such as `"2%"` ([`parse_hedge_budget`](crate::parse_hedge_budget)).
    Share,
    /// `true` or `false`.
    Bool,
    /// A `bool` expression over the function's arguments, evaluated once per call.
    Condition,
    /// A path to a function.
    Function,
    /// A non-empty string naming a partition or a profile.
    Name,
    /// A path to a `static`.
    Static,
    /// A path to a `static TokenBucket`, or `"none"`.
    Bucket,
    /// A share of the requests such as `"20%"` ([`parse_budget_share`](crate::parse_budget_share)),
    /// or a path to a `static RetryBudget`.
    Budget,
    /// A failure ratio such as `"50%"` ([`parse_failure_ratio`](crate::parse_failure_ratio)), or
    /// a path to a `static CircuitBreaker`.
    Breaker,
    /// A path to a `static` that implements `Guard`, or a list of them: `[G1, G2]`.
    Guards,
    /// Argument names in parentheses: `clone(a, b)`.
    Arguments,
    /// A path to the runtime crate.
    Crate,
}

/// Declares a key enum from one list of its variants, with `COUNT` and `ALL` (the variants in
/// the order written, which is the documentation's table); for the keys that also have a
/// variant of the same name in [`AttributeKey`], `attribute()` too.
macro_rules! key_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$doc:meta])* $variant:ident,)* }) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// How many keys there are.
            pub const COUNT: usize = [$($name::$variant),*].len();

            /// Every key, in the order of the documentation's table.
            pub const ALL: [$name; $name::COUNT] = [$($name::$variant),*];
        }
    };
    ($(#[$meta:meta])* pub enum $name:ident in AttributeKey { $($(#[$doc:meta])* $variant:ident,)* }) => {
        key_enum! { $(#[$meta])* pub enum $name { $($(#[$doc])* $variant,)* } }

        impl $name {
            /// The same key in the attribute's table.
            #[must_use]
            pub const fn attribute(self) -> AttributeKey {
                match self {
                    $($name::$variant => AttributeKey::$variant,)*
                }
            }
        }
    };
}

key_enum! {
/// A key of the `#[retry(...)]` attribute, in the order of the documentation's table (the order
/// in which error messages list them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttributeKey {
    /// `mode`.
    Mode,
    /// `behavior`.
    Behavior,
    /// `max_attempts`.
    MaxAttempts,
    /// `initial_backoff`.
    InitialBackoff,
    /// `multiplier`.
    Multiplier,
    /// `max_backoff`.
    MaxBackoff,
    /// `jitter`.
    Jitter,
    /// `attempt_timeout`.
    AttemptTimeout,
    /// `attempt_timeout_multiplier`.
    AttemptTimeoutMultiplier,
    /// `max_attempt_timeout`.
    MaxAttemptTimeout,
    /// `deadline`.
    Deadline,
    /// `retry_on`.
    RetryOn,
    /// `retry_after`.
    RetryAfter,
    /// `retry_if_ok`.
    RetryIfOk,
    /// `idempotent`.
    Idempotent,
    /// `idempotent_if`.
    IdempotentIf,
    /// `idempotency_key`.
    IdempotencyKey,
    /// `long_polling`.
    LongPolling,
    /// `partition`.
    Partition,
    /// `bucket`.
    Bucket,
    /// `rate_limiter`.
    RateLimiter,
    /// `budget`.
    Budget,
    /// `breaker`.
    Breaker,
    /// `guard`.
    Guard,
    /// `hedge_after`.
    HedgeAfter,
    /// `max_in_flight`.
    MaxInFlight,
    /// `min_hedge_after`.
    MinHedgeAfter,
    /// `max_hedge_after`.
    MaxHedgeAfter,
    /// `hedge_budget`.
    HedgeBudget,
    /// `on_retry`.
    OnRetry,
    /// `profile`.
    Profile,
    /// `aws_config`.
    AwsConfig,
    /// `clone`.
    Clone,
    /// `crate`.
    Crate,
}
}

/// One row of the table.
struct Row {
    name: &'static str,
    form: Form,
    describe: &'static str,
    settable: Option<Key>,
    in_policy: bool,
}

const fn row(
    name: &'static str,
    form: Form,
    describe: &'static str,
    settable: Option<Key>,
    in_policy: bool,
) -> Row {
    Row {
        name,
        form,
        describe,
        settable,
        in_policy,
    }
}

/// The table, one row per [`AttributeKey`] in its order: the key's name, the form of its value,
/// that form in words (as the attribute's error messages write it), the [`Key`] the environment
/// and the config file may set, and whether a `Policy` read with serde accepts the key.
#[rustfmt::skip]
const ROWS: [Row; AttributeKey::COUNT] = {
    use Form as F;
    [
        row("mode",                       F::Mode,      "\"standard\" or \"adaptive\"", Some(Key::Mode), true),
        row("behavior",                   F::Behavior,  "\"classic\" or \"2026\"", Some(Key::Behavior), true),
        row("max_attempts",               F::Count,     "an integer >= 1", Some(Key::MaxAttempts), true),
        row("initial_backoff",            F::Duration,  "a duration such as \"100ms\"", Some(Key::InitialBackoff), true),
        row("multiplier",                 F::Factor,    "a number >= 1.0", Some(Key::Multiplier), true),
        row("max_backoff",                F::Duration,  "a duration such as \"20s\"", Some(Key::MaxBackoff), true),
        row("jitter",                     F::Jitter,    "\"full\", \"equal\", \"none\", \"decorrelated\" or a number in [0, 1]", Some(Key::Jitter), true),
        row("attempt_timeout",            F::Duration,  "a duration such as \"2s\"", Some(Key::AttemptTimeout), true),
        row("attempt_timeout_multiplier", F::Factor,    "a number >= 1.0", Some(Key::AttemptTimeoutMultiplier), true),
        row("max_attempt_timeout",        F::Duration,  "a duration such as \"10s\"", Some(Key::MaxAttemptTimeout), true),
        row("deadline",                   F::Duration,  "a duration such as \"30s\"", Some(Key::Deadline), true),
        row("retry_on",                   F::Function,  "a path to `fn(&E) -> bool` or `fn(&E) -> ErrorClass`", None, false),
        row("retry_after",                F::Function,  "a path to `fn(&E) -> Option<Duration>`", None, false),
        row("retry_if_ok",                F::Function,  "a path to `fn(&T) -> bool`", None, false),
        row("idempotent",                 F::Bool,      "`true` or `false`", None, true),
        row("idempotent_if",              F::Condition, "a `bool` expression over the arguments", None, false),
        row("idempotency_key",            F::Bool,      "`true` or `false`", None, true),
        row("long_polling",               F::Bool,      "`true` or `false`", None, true),
        row("partition",                  F::Name,      "a string naming a shared partition", None, true),
        row("bucket",                     F::Bucket,    "a path to a `static TokenBucket`, or \"none\"", None, true),
        row("rate_limiter",               F::Static,    "a path to a `static RateLimiter`", None, false),
        row("budget",                     F::Budget,    "a share of the requests such as \"20%\", or a path to a `static RetryBudget`", None, true),
        row("breaker",                    F::Breaker,   "a failure ratio such as \"50%\", or a path to a `static CircuitBreaker`", None, false),
        row("guard",                      F::Guards,    "a path to a `static` that implements `Guard`, or a list of them: `[G1, G2]`", None, false),
        row("hedge_after",                F::Hedge,     "a duration such as \"50ms\", or a percentile of the function's latency: \"p50\", \"p90\", \"p95\" or \"p99\"", Some(Key::HedgeAfter), true),
        row("max_in_flight",              F::Count,     "an integer >= 2", Some(Key::MaxInFlight), true),
        row("min_hedge_after",            F::Duration,  "a duration such as \"5ms\"", Some(Key::MinHedgeAfter), true),
        row("max_hedge_after",            F::Duration,  "a duration such as \"500ms\"", Some(Key::MaxHedgeAfter), true),
        row("hedge_budget",               F::Share,     "a share of the calls such as \"2%\"", Some(Key::HedgeBudget), true),
        row("on_retry",                   F::Function,  "a path to `fn(&RetryEvent<'_, E>)`", None, false),
        row("profile",                    F::Name,      "a string naming a config profile", None, true),
        row("aws_config",                 F::Bool,      "`true` or `false`", None, true),
        row("clone",                      F::Arguments, "a list of owned arguments: `clone(a, b)`", None, false),
        row("crate",                      F::Crate,     "a path to the runtime crate: `crate = ::my_retry`", None, false),
    ]
};

impl AttributeKey {
    const fn row(self) -> &'static Row {
        &ROWS[self as usize]
    }

    /// The key as the attribute writes it (`max_attempts`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// The key written `name`, if there is one (exactly: keys are lower case).
    #[must_use]
    pub fn from_name(name: &str) -> Option<AttributeKey> {
        AttributeKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// How the key's value is written.
    #[must_use]
    pub const fn form(self) -> Form {
        self.row().form
    }

    /// The form of the key's value in words, as the attribute's error messages write it
    /// (`a duration such as "100ms"`).
    #[must_use]
    pub const fn describe(self) -> &'static str {
        self.row().describe
    }

    /// The same key as the environment and the config file may set it, if they may.
    #[must_use]
    pub const fn settable(self) -> Option<Key> {
        self.row().settable
    }

    /// Whether a `Policy` read with serde accepts the key ([`POLICY_FIELDS`]).
    #[must_use]
    pub const fn in_policy(self) -> bool {
        self.row().in_policy
    }

    /// The key a misspelled `name` most likely meant, if it is close enough to be a typo.
    ///
    /// ```
    /// use retry_keys::AttributeKey;
    ///
    /// assert_eq!(AttributeKey::suggest("max_attempt"), Some(AttributeKey::MaxAttempts));
    /// assert_eq!(AttributeKey::suggest("banana"), None);
    /// ```
    #[must_use]
    pub fn suggest(name: &str) -> Option<AttributeKey> {
        let names = AttributeKey::ALL.map(AttributeKey::name);
        let found = suggest(name, &names)?;
        AttributeKey::from_name(found)
    }
}

key_enum! {
/// A key whose value the environment and the config file may set (the attribute may write
/// them too), in the order of the documentation's table. `key as usize` is below
/// [`Key::COUNT`], so that an array can hold one entry per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key in AttributeKey {
    /// `mode`.
    Mode,
    /// `behavior`.
    Behavior,
    /// `max_attempts`.
    MaxAttempts,
    /// `initial_backoff`.
    InitialBackoff,
    /// `multiplier`.
    Multiplier,
    /// `max_backoff`.
    MaxBackoff,
    /// `jitter`.
    Jitter,
    /// `attempt_timeout`.
    AttemptTimeout,
    /// `attempt_timeout_multiplier`.
    AttemptTimeoutMultiplier,
    /// `max_attempt_timeout`.
    MaxAttemptTimeout,
    /// `deadline`.
    Deadline,
    /// `hedge_after`.
    HedgeAfter,
    /// `max_in_flight`.
    MaxInFlight,
    /// `min_hedge_after`.
    MinHedgeAfter,
    /// `max_hedge_after`.
    MaxHedgeAfter,
    /// `hedge_budget`.
    HedgeBudget,
}
}

impl Key {
    /// The key as the attribute and the config file write it (`max_attempts`; the environment
    /// upper-cases it: `RETRY_MAX_ATTEMPTS`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.attribute().name()
    }

    /// The key written `name`, if there is one.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }

    /// How the key's value is written.
    #[must_use]
    pub const fn form(self) -> Form {
        self.attribute().form()
    }

    /// Whether the key shapes hedging (`hedge_after` and the keys that need it).
    #[must_use]
    pub const fn is_hedging(self) -> bool {
        matches!(
            self,
            Key::HedgeAfter
                | Key::MaxInFlight
                | Key::MinHedgeAfter
                | Key::MaxHedgeAfter
                | Key::HedgeBudget
        )
    }

    /// Whether the key shapes an attempt's timer (`attempt_timeout`, the keys that need it, and
    /// `deadline`).
    #[must_use]
    pub const fn is_timer(self) -> bool {
        matches!(
            self,
            Key::AttemptTimeout
                | Key::AttemptTimeoutMultiplier
                | Key::MaxAttemptTimeout
                | Key::Deadline
        )
    }
}

/// The keys a `Policy` read with serde accepts, in the order of the documentation's table: the
/// keys the environment may set, `idempotent`, `idempotency_key`, `long_polling`, `partition`,
/// `bucket` (`"none"`), `budget` (a share), `profile` (for its unknown-field error) and
/// `aws_config`.
pub const POLICY_FIELDS: [&str; 24] = policy_fields();

const fn policy_fields() -> [&'static str; 24] {
    let mut out = [""; 24];
    let (mut i, mut n) = (0, 0);
    while i < AttributeKey::COUNT {
        let key = AttributeKey::ALL[i];
        if key.in_policy() {
            out[n] = key.name();
            n += 1;
        }
        i += 1;
    }
    assert!(n == out.len(), "POLICY_FIELDS counts the keys in_policy");
    out
}

/// The candidate a misspelled `name` most likely meant: one that starts with it (`retry_if`
/// for `retry_if_ok`, for a name of 4 characters or more), else the closest one by edit
/// distance if it is within a third of the candidate's length. ASCII case is ignored.
///
/// ```
/// assert_eq!(retry_keys::suggest("dealine", &["deadline", "jitter"]), Some("deadline"));
/// ```
#[must_use]
pub fn suggest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    let prefixed = candidates
        .iter()
        .copied()
        .filter(|k| name.len() >= 4 && k.starts_with(&name))
        .min_by_key(|k| k.len());
    prefixed.or_else(|| {
        candidates
            .iter()
            .map(|k| (*k, edit_distance(&name, k)))
            .filter(|(k, d)| *d <= (k.len() / 3).max(1))
            .min_by_key(|(_, d)| *d)
            .map(|(k, _)| k)
    })
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_keys() {
        for (i, key) in AttributeKey::ALL.into_iter().enumerate() {
            assert_eq!(key as usize, i, "{key:?}");
            assert_eq!(AttributeKey::from_name(key.name()), Some(key));
        }
        for (i, key) in Key::ALL.into_iter().enumerate() {
            assert_eq!(key as usize, i, "{key:?}");
            assert_eq!(key.attribute().settable(), Some(key), "{key:?}");
            assert_eq!(Key::from_name(key.name()), Some(key));
        }
        let settable: Vec<Key> = AttributeKey::ALL
            .into_iter()
            .filter_map(AttributeKey::settable)
            .collect();
        assert_eq!(
            settable,
            Key::ALL,
            "the settable keys, in the table's order"
        );
    }

    #[test]
    fn the_keys_as_written() {
        let names = AttributeKey::ALL.map(AttributeKey::name).join(", ");
        assert_eq!(
            names,
            "mode, behavior, max_attempts, initial_backoff, multiplier, max_backoff, jitter, \
             attempt_timeout, attempt_timeout_multiplier, max_attempt_timeout, deadline, \
             retry_on, retry_after, retry_if_ok, idempotent, idempotent_if, idempotency_key, \
             long_polling, partition, \
             bucket, \
             rate_limiter, budget, breaker, guard, hedge_after, max_in_flight, min_hedge_after, \
             max_hedge_after, hedge_budget, on_retry, profile, aws_config, clone, crate"
        );
        assert_eq!(AttributeKey::from_name("Mode"), None);
        assert_eq!(Key::from_name("retry_on"), None);
        assert_eq!(AttributeKey::Crate.form(), Form::Crate);
        assert_eq!(Key::Deadline.form(), Form::Duration);
        assert_eq!(Key::HedgeAfter.form(), Form::Hedge);
    }

    #[test]
    fn a_policy_accepts_the_settable_keys_and_the_named_values() {
        assert_eq!(
            POLICY_FIELDS,
            [
                "mode",
                "behavior",
                "max_attempts",
                "initial_backoff",
                "multiplier",
                "max_backoff",
                "jitter",
                "attempt_timeout",
                "attempt_timeout_multiplier",
                "max_attempt_timeout",
                "deadline",
                "idempotent",
                "idempotency_key",
                "long_polling",
                "partition",
                "bucket",
                "budget",
                "hedge_after",
                "max_in_flight",
                "min_hedge_after",
                "max_hedge_after",
                "hedge_budget",
                "profile",
                "aws_config",
            ]
        );
    }

    #[test]
    fn hedging_and_timer_keys() {
        let hedging: Vec<&str> = Key::ALL
            .into_iter()
            .filter(|k| k.is_hedging())
            .map(Key::name)
            .collect();
        assert_eq!(
            hedging,
            [
                "hedge_after",
                "max_in_flight",
                "min_hedge_after",
                "max_hedge_after",
                "hedge_budget"
            ]
        );
        let timer: Vec<&str> = Key::ALL
            .into_iter()
            .filter(|k| k.is_timer())
            .map(Key::name)
            .collect();
        assert_eq!(
            timer,
            [
                "attempt_timeout",
                "attempt_timeout_multiplier",
                "max_attempt_timeout",
                "deadline"
            ]
        );
    }

    #[test]
    fn typos_get_suggestions() {
        let s = |name| AttributeKey::suggest(name).map(AttributeKey::name);
        assert_eq!(s("max_attempt"), Some("max_attempts"));
        assert_eq!(s("maxattempts"), Some("max_attempts"));
        assert_eq!(s("MAX_ATTEMPTS"), Some("max_attempts"));
        assert_eq!(s("jiter"), Some("jitter"));
        assert_eq!(s("dealine"), Some("deadline"));
        assert_eq!(s("retry_if"), Some("retry_if_ok"));
        assert_eq!(s("hedge"), Some("hedge_after"));
        assert_eq!(s("crat"), Some("crate"));
        assert_eq!(s("banana"), None);
        assert_eq!(s(""), None);
        assert_eq!(suggest("max_attempt", &[]), None);
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("µs", "us"), 1);
    }
}
