//! The keys of a retry policy, as `#[retry(...)]`, the environment, the config file and a
//! `Policy` read with serde write them: one table of the keys, one parser of each form of value,
//! and one set of rules the values hold to. The attribute macro (`retry-macros`) checks a
//! function's keys with them at compile time, and the runtime (`retry-runtime`) checks with
//! them what it reads at run time, so both accept the same values and say the same things about
//! them.
//!
//! - The table: [`AttributeKey`] (every key of the attribute, with the [`Form`] of its value)
//!   and [`Key`] (the keys the environment and the config file may set, `as usize` dense for
//!   arrays); [`POLICY_FIELDS`]; did-you-mean for a misspelled key ([`AttributeKey::suggest`]).
//! - The values, as plain data: [`Mode`], [`Behavior`], [`Jitter`], [`HedgeSpec`], [`Value`], and the
//!   defaults (`DEFAULT_*`).
//! - The parsers: [`parse_duration`] (exact to the nanosecond), [`parse_mode`], [`parse_behavior`],
//!   [`parse_jitter`], [`parse_hedge`], [`parse_count`], [`parse_factor`], [`parse_budget_share`],
//!   [`parse_hedge_budget`], [`parse_failure_ratio`], [`is_name`], [`is_profile_name`]; and
//!   [`Key::parse`] / [`Key::from_number`], a setting's value from text or a config file's number.
//!   A misspelt mode, jitter or percentile is an error that carries the value it most likely
//!   meant ([`UnknownName`], [`HedgeError::Percentile`], [`ValueError::DidYouMean`]), so that the
//!   attribute's errors and the runtime's warnings both say `did you mean "full"?`
//!   ([`did_you_mean`]).
//! - The rules: [`Key::check`] (a value on its own) and [`Values::problems`] (the values
//!   written together), each [`Problem`] with the key it is about and its texts.
//! - The draws: [`Jitter::apply`] and [`Jitter::decorrelated`], the delay each jitter draws
//!   from a computed backoff, generic over rand's generators; [`nanos`].
//!
//! ```
//! use retry_keys::{Key, Values};
//! use std::time::Duration;
//!
//! let mut values = Values::new();
//! values.set(Key::InitialBackoff, Key::InitialBackoff.parse("2s").unwrap());
//! values.set(Key::MaxBackoff, Key::MaxBackoff.parse("1s").unwrap());
//! let problems = values.problems();
//! assert_eq!(problems[0].key(), Key::MaxBackoff);
//! assert_eq!(problems[0].sentence(), "max_backoff (1s) is below initial_backoff (2s)");
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod draw;
mod parse;
mod rules;
mod table;
mod value;

pub use draw::nanos;
pub use parse::{
    DurationError, HedgeError, UnknownName, ValueError, did_you_mean, is_name, is_profile_name,
    parse_behavior, parse_budget_share, parse_count, parse_duration, parse_factor,
    parse_failure_ratio, parse_hedge, parse_hedge_budget, parse_jitter, parse_mode,
};
pub use rules::{Place, Problem, Values};
pub use table::{AttributeKey, Form, Key, POLICY_FIELDS, suggest};
pub use value::{
    AWS_2026_HINT_ABOVE_BACKOFF, AWS_2026_INITIAL_BACKOFF, AWS_2026_THROTTLING_BACKOFF, Behavior,
    DEFAULT_ATTEMPT_TIMEOUT_MULTIPLIER, DEFAULT_BEHAVIOR, DEFAULT_INITIAL_BACKOFF, DEFAULT_JITTER,
    DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_BACKOFF, DEFAULT_MAX_HEDGE_AFTER, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MIN_HEDGE_AFTER, DEFAULT_MODE, DEFAULT_MULTIPLIER, HedgeSpec, Jitter, Mode, Value,
};
