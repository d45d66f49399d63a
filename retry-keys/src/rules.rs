//! The rules a policy's values hold to: each value on its own ([`Key::check`]), and the values
//! written together ([`Values::problems`]).

use crate::table::Key;
use crate::value::{
    Behavior, DEFAULT_BEHAVIOR, DEFAULT_MAX_BACKOFF, HedgeSpec, Jitter, Mode, Value,
};
use std::fmt;
use std::time::Duration;

/// The values written for a policy's keys: in the attribute, by a `Policy`'s builder, or chosen
/// from the environment and the config file. `None`: not written, so the key's default applies
/// (or a source of lower precedence may still set it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Values {
    /// `mode`.
    pub mode: Option<Mode>,
    /// `behavior`.
    pub behavior: Option<Behavior>,
    /// `max_attempts`.
    pub max_attempts: Option<u32>,
    /// `initial_backoff`.
    pub initial_backoff: Option<Duration>,
    /// `multiplier`.
    pub multiplier: Option<f64>,
    /// `max_backoff`.
    pub max_backoff: Option<Duration>,
    /// `jitter`.
    pub jitter: Option<Jitter>,
    /// `attempt_timeout`.
    pub attempt_timeout: Option<Duration>,
    /// `attempt_timeout_multiplier`.
    pub attempt_timeout_multiplier: Option<f64>,
    /// `max_attempt_timeout`.
    pub max_attempt_timeout: Option<Duration>,
    /// `deadline`.
    pub deadline: Option<Duration>,
    /// `hedge_after`.
    pub hedge_after: Option<HedgeSpec>,
    /// `max_in_flight`.
    pub max_in_flight: Option<u32>,
    /// `min_hedge_after`.
    pub min_hedge_after: Option<Duration>,
    /// `max_hedge_after`.
    pub max_hedge_after: Option<Duration>,
    /// `hedge_budget`, a share of the calls.
    pub hedge_budget: Option<f64>,
}

impl Values {
    /// Nothing written.
    #[must_use]
    pub const fn new() -> Values {
        Values {
            mode: None,
            behavior: None,
            max_attempts: None,
            initial_backoff: None,
            multiplier: None,
            max_backoff: None,
            jitter: None,
            attempt_timeout: None,
            attempt_timeout_multiplier: None,
            max_attempt_timeout: None,
            deadline: None,
            hedge_after: None,
            max_in_flight: None,
            min_hedge_after: None,
            max_hedge_after: None,
            hedge_budget: None,
        }
    }

    /// The value written for `key`.
    #[must_use]
    pub fn get(&self, key: Key) -> Option<Value> {
        match key {
            Key::Mode => self.mode.map(Value::Mode),
            Key::Behavior => self.behavior.map(Value::Behavior),
            Key::MaxAttempts => self.max_attempts.map(Value::Count),
            Key::InitialBackoff => self.initial_backoff.map(Value::Duration),
            Key::Multiplier => self.multiplier.map(Value::Factor),
            Key::MaxBackoff => self.max_backoff.map(Value::Duration),
            Key::Jitter => self.jitter.map(Value::Jitter),
            Key::AttemptTimeout => self.attempt_timeout.map(Value::Duration),
            Key::AttemptTimeoutMultiplier => self.attempt_timeout_multiplier.map(Value::Factor),
            Key::MaxAttemptTimeout => self.max_attempt_timeout.map(Value::Duration),
            Key::Deadline => self.deadline.map(Value::Duration),
            Key::HedgeAfter => self.hedge_after.map(Value::Hedge),
            Key::MaxInFlight => self.max_in_flight.map(Value::Count),
            Key::MinHedgeAfter => self.min_hedge_after.map(Value::Duration),
            Key::MaxHedgeAfter => self.max_hedge_after.map(Value::Duration),
            Key::HedgeBudget => self.hedge_budget.map(Value::Share),
        }
    }

    /// Writes `value` for `key`; `false` (and nothing written) if it is not of the key's form.
    pub fn set(&mut self, key: Key, value: Value) -> bool {
        match (key, value) {
            (Key::Mode, Value::Mode(m)) => self.mode = Some(m),
            (Key::Behavior, Value::Behavior(b)) => self.behavior = Some(b),
            (Key::MaxAttempts, Value::Count(n)) => self.max_attempts = Some(n),
            (Key::InitialBackoff, Value::Duration(d)) => self.initial_backoff = Some(d),
            (Key::Multiplier, Value::Factor(x)) => self.multiplier = Some(x),
            (Key::MaxBackoff, Value::Duration(d)) => self.max_backoff = Some(d),
            (Key::Jitter, Value::Jitter(j)) => self.jitter = Some(j),
            (Key::AttemptTimeout, Value::Duration(d)) => self.attempt_timeout = Some(d),
            (Key::AttemptTimeoutMultiplier, Value::Factor(x)) => {
                self.attempt_timeout_multiplier = Some(x);
            }
            (Key::MaxAttemptTimeout, Value::Duration(d)) => self.max_attempt_timeout = Some(d),
            (Key::Deadline, Value::Duration(d)) => self.deadline = Some(d),
            (Key::HedgeAfter, Value::Hedge(h)) => self.hedge_after = Some(h),
            (Key::MaxInFlight, Value::Count(n)) => self.max_in_flight = Some(n),
            (Key::MinHedgeAfter, Value::Duration(d)) => self.min_hedge_after = Some(d),
            (Key::MaxHedgeAfter, Value::Duration(d)) => self.max_hedge_after = Some(d),
            (Key::HedgeBudget, Value::Share(x)) => self.hedge_budget = Some(x),
            _ => return false,
        }
        true
    }

    /// Whether a value is written for `key`.
    #[must_use]
    pub fn wrote(&self, key: Key) -> bool {
        self.get(key).is_some()
    }

    /// The backoff bounds in effect, `(initial_backoff, max_backoff)`: where only one is
    /// written, the other's default yields to it, so `initial_backoff` alone at 30 s also caps
    /// the backoff at 30 s, and `max_backoff` alone at 300 ms also starts it at 300 ms. The
    /// default `initial_backoff` is the behavior's ([`Behavior::default_initial_backoff`]).
    #[must_use]
    pub const fn backoff_bounds(&self) -> (Duration, Duration) {
        let initial_default = match self.behavior {
            Some(b) => b.default_initial_backoff(),
            None => DEFAULT_BEHAVIOR.default_initial_backoff(),
        };
        match (self.initial_backoff, self.max_backoff) {
            (Some(initial), Some(max)) => (initial, max),
            (Some(initial), None) => {
                if initial.as_nanos() > DEFAULT_MAX_BACKOFF.as_nanos() {
                    (initial, initial)
                } else {
                    (initial, DEFAULT_MAX_BACKOFF)
                }
            }
            (None, Some(max)) => {
                if max.as_nanos() < initial_default.as_nanos() {
                    (max, max)
                } else {
                    (initial_default, max)
                }
            }
            (None, None) => (initial_default, DEFAULT_MAX_BACKOFF),
        }
    }

    /// Every way the values do not hold, in a fixed order: each value on its own
    /// ([`Key::check`]), the backoff, the timeouts, then hedging. Empty: they hold.
    ///
    /// A rule across keys compares values written together: a key left out is checked where it
    /// is set (the environment and the config file may set it), except that the backoff bounds
    /// compare as in effect ([`Values::backoff_bounds`]). A value that breaks its own rule is
    /// one problem: the rules across keys count it as written but compare nothing with it.
    ///
    /// ```
    /// use retry_keys::{Key, Values};
    /// use std::time::Duration;
    ///
    /// let values = Values {
    ///     attempt_timeout: Some(Duration::from_secs(10)),
    ///     deadline: Some(Duration::from_secs(5)),
    ///     ..Values::new()
    /// };
    /// let problems = values.problems();
    /// assert_eq!(problems[0].key(), Key::AttemptTimeout);
    /// assert_eq!(problems[0].to_string(), "attempt_timeout (10s) is longer than deadline (5s)");
    /// ```
    #[must_use]
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        for key in [
            Key::MaxAttempts,
            Key::Multiplier,
            Key::AttemptTimeoutMultiplier,
            Key::Jitter,
        ] {
            out.extend(self.get(key).and_then(|v| key.check(&v)));
        }
        let (initial, max) = self.backoff_bounds();
        if max < initial {
            out.push(Problem::BackoffBounds { initial, max });
        }
        for (key, d) in [
            (Key::AttemptTimeout, self.attempt_timeout),
            (Key::Deadline, self.deadline),
        ] {
            if d == Some(Duration::ZERO) {
                out.push(Problem::ZeroTimeout(key));
            }
        }
        if self.attempt_timeout.is_none() {
            for key in [Key::AttemptTimeoutMultiplier, Key::MaxAttemptTimeout] {
                if self.wrote(key) {
                    out.push(Problem::NeedsAttemptTimeout(key));
                }
            }
        }
        if let (Some(timeout), Some(max)) = (self.attempt_timeout, self.max_attempt_timeout) {
            if max < timeout {
                out.push(Problem::AttemptTimeoutBounds { timeout, max });
            }
        }
        if let (Some(timeout), Some(deadline)) = (self.attempt_timeout, self.deadline) {
            // A zero deadline is its own problem.
            if timeout > deadline && !deadline.is_zero() {
                out.push(Problem::PastDeadline { timeout, deadline });
            }
        }
        self.hedge_problems(&mut out);
        out
    }

    fn hedge_problems(&self, out: &mut Vec<Problem>) {
        let Some(spec) = self.hedge_after else {
            for key in [
                Key::MaxInFlight,
                Key::MinHedgeAfter,
                Key::MaxHedgeAfter,
                Key::HedgeBudget,
            ] {
                if self.wrote(key) {
                    out.push(Problem::NeedsHedgeAfter(key));
                }
            }
            return;
        };
        let spec_problem = Key::HedgeAfter.check(&Value::Hedge(spec));
        out.extend(spec_problem);
        if let Some(share) = self.hedge_budget {
            out.extend(Key::HedgeBudget.check(&Value::Share(share)));
        }
        if let Some(n) = self.max_in_flight {
            if let Some(problem) = Key::MaxInFlight.check(&Value::Count(n)) {
                out.push(problem);
            } else {
                if n < 2 {
                    out.push(Problem::MaxInFlightBelowTwo(n));
                }
                let attempts = self.max_attempts.filter(|&m| m >= 1);
                if let Some(m) = attempts.filter(|&m| n > m) {
                    out.push(Problem::MaxInFlightAboveAttempts {
                        in_flight: n,
                        attempts: m,
                    });
                }
            }
        }
        match (spec, spec_problem) {
            (_, Some(_)) => {}
            (HedgeSpec::Fixed(_), None) => {
                for key in [Key::MinHedgeAfter, Key::MaxHedgeAfter] {
                    if self.wrote(key) {
                        out.push(Problem::BoundWithFixedDelay(key));
                    }
                }
            }
            (HedgeSpec::Percentile(_), None) => {
                if let (Some(min), Some(max)) = (self.min_hedge_after, self.max_hedge_after) {
                    if max < min {
                        out.push(Problem::HedgeBounds { min, max });
                    }
                }
            }
        }
    }
}

impl Key {
    /// What is wrong with `value` as this key's value on its own, whatever the other keys say:
    /// a count of zero, a growth factor below 1 (or not finite), a jitter fraction outside
    /// [0, 1], a `hedge_after` of zero or of a percentile other than 50, 90, 95 and 99. (A
    /// value of another form is not this key's: nothing to say.)
    ///
    /// The attribute reports these as it reads each value.
    #[must_use]
    pub fn check(self, value: &Value) -> Option<Problem> {
        match (self, *value) {
            (Key::MaxAttempts | Key::MaxInFlight, Value::Count(0)) => {
                Some(Problem::ZeroCount(self))
            }
            (Key::Multiplier | Key::AttemptTimeoutMultiplier, Value::Factor(factor))
                if !(factor.is_finite() && factor >= 1.0) =>
            {
                Some(Problem::FactorBelowOne { key: self, factor })
            }
            (Key::Jitter, Value::Jitter(Jitter::Fraction(j))) if !(0.0..=1.0).contains(&j) => {
                Some(Problem::JitterOutOfRange(j))
            }
            (Key::HedgeAfter, Value::Hedge(HedgeSpec::Fixed(d))) if d.is_zero() => {
                Some(Problem::HedgeAfterZero)
            }
            (Key::HedgeAfter, Value::Hedge(HedgeSpec::Percentile(p)))
                if !HedgeSpec::PERCENTILES.contains(&p) =>
            {
                Some(Problem::UnknownPercentile(p))
            }
            (Key::HedgeBudget, Value::Share(x)) if !(x > 0.0 && x <= 1.0) => {
                Some(Problem::HedgeBudgetOutOfRange(x))
            }
            _ => None,
        }
    }
}

/// Where the attribute puts the error of a [`Problem`]: on the key's name, or on its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// The key's name: the key is the trouble (`max_attempt_timeout` without
    /// `attempt_timeout`).
    Key,
    /// The key's value.
    Value,
}

/// One way the values do not hold. Each says the key it is about ([`Problem::key`], where the
/// attribute's compile error goes: [`Problem::place`]), the other key involved if any, and
/// itself three ways: the attribute's compile error ([`Problem::message`]), a sentence for a
/// `Policy` that does not build ([`Problem::sentence`], also its `Display`), and why a value from
/// the environment or the config file is ignored ([`Problem::reason`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Problem {
    /// `max_attempts` or `max_in_flight` of zero.
    ZeroCount(Key),
    /// `multiplier` or `attempt_timeout_multiplier` below 1 or not finite.
    FactorBelowOne {
        /// The key.
        key: Key,
        /// Its value.
        factor: f64,
    },
    /// A jitter fraction outside [0, 1].
    JitterOutOfRange(f64),
    /// `hedge_after` of zero.
    HedgeAfterZero,
    /// `hedge_after` of a percentile other than 50, 90, 95 and 99.
    UnknownPercentile(u8),
    /// `hedge_budget` not above 0 % and at most 100 % (as a share: 0.02 for 2 %).
    HedgeBudgetOutOfRange(f64),
    /// `max_backoff` below `initial_backoff`, as in effect.
    BackoffBounds {
        /// `initial_backoff` in effect.
        initial: Duration,
        /// `max_backoff` in effect.
        max: Duration,
    },
    /// `attempt_timeout` or `deadline` of zero.
    ZeroTimeout(Key),
    /// `attempt_timeout_multiplier` or `max_attempt_timeout` without `attempt_timeout`.
    NeedsAttemptTimeout(Key),
    /// `max_attempt_timeout` below `attempt_timeout`.
    AttemptTimeoutBounds {
        /// `attempt_timeout`.
        timeout: Duration,
        /// `max_attempt_timeout`.
        max: Duration,
    },
    /// `attempt_timeout` longer than `deadline`.
    PastDeadline {
        /// `attempt_timeout`.
        timeout: Duration,
        /// `deadline`.
        deadline: Duration,
    },
    /// `max_in_flight`, `min_hedge_after` or `max_hedge_after` without `hedge_after`.
    NeedsHedgeAfter(Key),
    /// `max_in_flight` of 1 with `hedge_after`: it would never hedge.
    MaxInFlightBelowTwo(u32),
    /// `max_in_flight` above `max_attempts`, with `hedge_after`.
    MaxInFlightAboveAttempts {
        /// `max_in_flight`.
        in_flight: u32,
        /// `max_attempts`.
        attempts: u32,
    },
    /// `min_hedge_after` or `max_hedge_after` with a fixed `hedge_after`.
    BoundWithFixedDelay(Key),
    /// `max_hedge_after` below `min_hedge_after`, with a percentile `hedge_after`.
    HedgeBounds {
        /// `min_hedge_after`.
        min: Duration,
        /// `max_hedge_after`.
        max: Duration,
    },
}

impl Problem {
    /// The key the problem is about: where the attribute's compile error goes, and the first
    /// value a resolution from outside sources ignores.
    #[must_use]
    pub const fn key(&self) -> Key {
        match *self {
            Problem::ZeroCount(key)
            | Problem::FactorBelowOne { key, .. }
            | Problem::ZeroTimeout(key)
            | Problem::NeedsAttemptTimeout(key)
            | Problem::NeedsHedgeAfter(key)
            | Problem::BoundWithFixedDelay(key) => key,
            Problem::JitterOutOfRange(_) => Key::Jitter,
            Problem::HedgeAfterZero | Problem::UnknownPercentile(_) => Key::HedgeAfter,
            Problem::HedgeBudgetOutOfRange(_) => Key::HedgeBudget,
            Problem::BackoffBounds { .. } => Key::MaxBackoff,
            Problem::AttemptTimeoutBounds { .. } => Key::MaxAttemptTimeout,
            Problem::PastDeadline { .. } => Key::AttemptTimeout,
            Problem::MaxInFlightBelowTwo(_) | Problem::MaxInFlightAboveAttempts { .. } => {
                Key::MaxInFlight
            }
            Problem::HedgeBounds { .. } => Key::MaxHedgeAfter,
        }
    }

    /// The other key whose value takes part, for a problem between two values.
    #[must_use]
    pub const fn other_key(&self) -> Option<Key> {
        match self {
            Problem::BackoffBounds { .. } => Some(Key::InitialBackoff),
            Problem::AttemptTimeoutBounds { .. } => Some(Key::AttemptTimeout),
            Problem::PastDeadline { .. } => Some(Key::Deadline),
            Problem::MaxInFlightAboveAttempts { .. } => Some(Key::MaxAttempts),
            Problem::HedgeBounds { .. } => Some(Key::MinHedgeAfter),
            _ => None,
        }
    }

    /// The keys whose values take part: [`Problem::key`], then [`Problem::other_key`].
    pub fn keys(&self) -> impl Iterator<Item = Key> + use<> {
        std::iter::once(self.key()).chain(self.other_key())
    }

    /// Where the attribute's compile error goes: the name of [`Problem::key`] when writing the
    /// key at all is the trouble, else its value.
    #[must_use]
    pub const fn place(&self) -> Place {
        match self {
            Problem::NeedsAttemptTimeout(_)
            | Problem::NeedsHedgeAfter(_)
            | Problem::BoundWithFixedDelay(_) => Place::Key,
            _ => Place::Value,
        }
    }

    /// The attribute's compile error.
    #[must_use]
    pub fn message(&self) -> String {
        match *self {
            Problem::ZeroCount(key) => format!(
                "`{}` counts the first attempt: it must be at least 1",
                key.name()
            ),
            Problem::FactorBelowOne { key, factor } => {
                format!("`{}` must be a number >= 1.0, found {factor}", key.name())
            }
            Problem::JitterOutOfRange(j) => {
                format!("a jitter fraction must be in [0, 1], found {j}")
            }
            Problem::HedgeAfterZero => "`hedge_after` of zero would send every request twice at \
                                        once: give the delay after which a slow attempt gets a \
                                        copy, such as \"50ms\", or a percentile such as \"p95\""
                .to_owned(),
            Problem::UnknownPercentile(p) => format!(
                "`hedge_after` = \"p{p}\": {}",
                crate::parse::HedgeError::Percentile { meant: None }
            ),
            Problem::HedgeBudgetOutOfRange(x) => format!(
                "`hedge_budget` is a share of the calls above 0 % and at most 100 %, such as \
                 \"2%\", found {}%",
                x * 100.0
            ),
            Problem::BackoffBounds { initial, max } => format!(
                "`max_backoff` ({max:?}) is shorter than `initial_backoff` ({initial:?}): the \
                 backoff grows from initial_backoff up to max_backoff"
            ),
            Problem::ZeroTimeout(key) => format!(
                "`{}` of zero would fail every call before it starts: give a positive duration \
                 or leave it out",
                key.name()
            ),
            Problem::NeedsAttemptTimeout(key) => format!(
                "`{}` shapes the per-attempt timeout, but `attempt_timeout` is not set: add \
                 `attempt_timeout = \"...\"`",
                key.name()
            ),
            Problem::AttemptTimeoutBounds { timeout, max } => format!(
                "`max_attempt_timeout` ({max:?}) is shorter than `attempt_timeout` \
                 ({timeout:?}): it caps the attempt timeout as the multiplier grows it"
            ),
            Problem::PastDeadline { timeout, deadline } => format!(
                "`attempt_timeout` ({timeout:?}) is longer than `deadline` ({deadline:?}): no \
                 attempt can run past the deadline"
            ),
            Problem::NeedsHedgeAfter(key) => format!(
                "`{}` shapes hedging, but `hedge_after` is not set: add `hedge_after = \
                 \"50ms\"` (or a percentile such as \"p95\")",
                key.name()
            ),
            Problem::MaxInFlightBelowTwo(n) => format!(
                "`max_in_flight = {n}` would never hedge: it counts the attempt and its hedges \
                 in flight at once, so give at least 2 (the default), or remove `hedge_after`"
            ),
            Problem::MaxInFlightAboveAttempts {
                in_flight,
                attempts,
            } => format!(
                "`max_in_flight` ({in_flight}) is more than `max_attempts` ({attempts}): hedges \
                 and retries count together against max_attempts, so no more than {attempts} \
                 attempts can ever be in flight"
            ),
            Problem::BoundWithFixedDelay(key) => format!(
                "`{}` bounds a percentile's delay, but `hedge_after` is a fixed duration: remove \
                 it, or write `hedge_after = \"p95\"`",
                key.name()
            ),
            Problem::HedgeBounds { min, max } => format!(
                "`max_hedge_after` ({max:?}) is shorter than `min_hedge_after` ({min:?}): the \
                 percentile's delay is kept between them"
            ),
        }
    }

    /// The problem as a sentence, for a `Policy` whose values do not hold
    /// (`attempt_timeout (10s) is longer than deadline (5s)`); also the problem's `Display`.
    #[must_use]
    pub fn sentence(&self) -> String {
        match *self {
            Problem::ZeroCount(Key::MaxInFlight) => {
                "max_in_flight (0) must be at least 2 to hedge".to_owned()
            }
            Problem::ZeroCount(key) => format!("{} must be at least 1", key.name()),
            Problem::FactorBelowOne { key, factor } => {
                format!("{} ({factor}) must be a number >= 1", key.name())
            }
            Problem::JitterOutOfRange(j) => format!("the jitter fraction ({j}) must be in [0, 1]"),
            Problem::HedgeAfterZero => "hedge_after must be above zero".to_owned(),
            Problem::UnknownPercentile(p) => {
                format!("hedge_after's percentile (p{p}) is one of p50, p90, p95, p99")
            }
            Problem::HedgeBudgetOutOfRange(x) => format!(
                "hedge_budget ({}%) must be above 0 % and at most 100 %",
                x * 100.0
            ),
            Problem::BackoffBounds { initial, max } => {
                format!("max_backoff ({max:?}) is below initial_backoff ({initial:?})")
            }
            Problem::ZeroTimeout(key) => format!("{} must be above zero", key.name()),
            Problem::NeedsAttemptTimeout(key) => format!("{} needs attempt_timeout", key.name()),
            Problem::AttemptTimeoutBounds { timeout, max } => {
                format!("max_attempt_timeout ({max:?}) is below attempt_timeout ({timeout:?})")
            }
            Problem::PastDeadline { timeout, deadline } => {
                format!("attempt_timeout ({timeout:?}) is longer than deadline ({deadline:?})")
            }
            Problem::NeedsHedgeAfter(key) => format!("{} needs hedge_after", key.name()),
            Problem::MaxInFlightBelowTwo(n) => {
                format!("max_in_flight ({n}) must be at least 2 to hedge")
            }
            Problem::MaxInFlightAboveAttempts {
                in_flight,
                attempts,
            } => format!("max_in_flight ({in_flight}) is more than max_attempts ({attempts})"),
            Problem::BoundWithFixedDelay(key) => format!(
                "{} bounds a percentile's delay, but hedge_after is a fixed duration",
                key.name()
            ),
            Problem::HedgeBounds { min, max } => {
                format!("max_hedge_after ({max:?}) is below min_hedge_after ({min:?})")
            }
        }
    }

    /// Why a value from the environment or the config file that causes the problem is ignored
    /// (`max_backoff would be below initial_backoff`).
    #[must_use]
    pub fn reason(&self) -> String {
        match *self {
            Problem::ZeroCount(key) => format!("{} would be zero", key.name()),
            Problem::FactorBelowOne { key, .. } => format!("{} would be below 1", key.name()),
            Problem::JitterOutOfRange(_) => {
                "the jitter fraction would be outside [0, 1]".to_owned()
            }
            Problem::HedgeAfterZero => "hedge_after would be zero".to_owned(),
            Problem::UnknownPercentile(_) => {
                "hedge_after's percentile would be none of p50, p90, p95, p99".to_owned()
            }
            Problem::HedgeBudgetOutOfRange(_) => {
                "hedge_budget would not be above 0 % and at most 100 %".to_owned()
            }
            Problem::BackoffBounds { .. } => {
                "max_backoff would be below initial_backoff".to_owned()
            }
            Problem::ZeroTimeout(key) => format!("{} would be zero", key.name()),
            Problem::NeedsAttemptTimeout(_) => {
                "it shapes attempt_timeout, which is not set".to_owned()
            }
            Problem::AttemptTimeoutBounds { .. } => {
                "max_attempt_timeout would be below attempt_timeout".to_owned()
            }
            Problem::PastDeadline { .. } => {
                "attempt_timeout would be longer than deadline".to_owned()
            }
            Problem::NeedsHedgeAfter(_) => {
                "it shapes hedging, and hedge_after is not set".to_owned()
            }
            Problem::MaxInFlightBelowTwo(_) => {
                "max_in_flight would be below 2, which never hedges".to_owned()
            }
            Problem::MaxInFlightAboveAttempts { .. } => {
                "max_in_flight would be more than max_attempts".to_owned()
            }
            Problem::BoundWithFixedDelay(_) => {
                "it bounds a percentile's delay, and hedge_after is a fixed duration".to_owned()
            }
            Problem::HedgeBounds { .. } => {
                "max_hedge_after would be below min_hedge_after".to_owned()
            }
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sentence())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;
    const S: fn(u64) -> Duration = Duration::from_secs;

    fn sentences(values: &Values) -> Vec<String> {
        values.problems().iter().map(Problem::sentence).collect()
    }

    #[test]
    fn the_2026_behavior_starts_the_backoff_at_50ms_unless_written() {
        use crate::value::Behavior;
        let aws2026 = Values {
            behavior: Some(Behavior::Aws2026),
            ..Values::new()
        };
        assert_eq!(aws2026.backoff_bounds(), (MS(50), S(20)));
        let classic = Values {
            behavior: Some(Behavior::Classic),
            ..Values::new()
        };
        assert_eq!(classic.backoff_bounds(), (S(1), S(20)));
        assert_eq!(Values::new().backoff_bounds(), (S(1), S(20)));
        // A max_backoff alone below the classic default starts the backoff at it; under 2026,
        // 50 ms is below it and stays.
        let capped = Values {
            behavior: Some(Behavior::Aws2026),
            max_backoff: Some(MS(300)),
            ..Values::new()
        };
        assert_eq!(capped.backoff_bounds(), (MS(50), MS(300)));
        let written = Values {
            behavior: Some(Behavior::Aws2026),
            initial_backoff: Some(MS(25)),
            ..Values::new()
        };
        assert_eq!(written.backoff_bounds(), (MS(25), S(20)));
    }

    #[test]
    fn nothing_written_holds() {
        assert_eq!(Values::new().problems(), []);
        assert_eq!(Values::default(), Values::new());
    }

    #[test]
    fn every_key_gets_and_sets() {
        let values = [
            Value::Mode(Mode::Adaptive),
            Value::Behavior(crate::value::Behavior::Aws2026),
            Value::Count(5),
            Value::Duration(MS(50)),
            Value::Factor(1.5),
            Value::Duration(S(2)),
            Value::Jitter(Jitter::Equal),
            Value::Duration(S(1)),
            Value::Factor(2.0),
            Value::Duration(S(4)),
            Value::Duration(S(10)),
            Value::Hedge(HedgeSpec::Percentile(95)),
            Value::Count(3),
            Value::Duration(MS(2)),
            Value::Duration(MS(500)),
        ];
        let mut written = Values::new();
        for (key, value) in Key::ALL.into_iter().zip(values) {
            assert!(!written.wrote(key));
            assert!(written.set(key, value), "{key:?}");
            assert_eq!(written.get(key), Some(value), "{key:?}");
        }
        assert!(!written.set(Key::Mode, Value::Count(1)));
        assert_eq!(written.get(Key::Mode), Some(Value::Mode(Mode::Adaptive)));
        assert_eq!(written.problems(), []);
    }

    #[test]
    fn each_value_on_its_own() {
        assert_eq!(
            Key::MaxAttempts.check(&Value::Count(0)),
            Some(Problem::ZeroCount(Key::MaxAttempts))
        );
        assert_eq!(Key::MaxAttempts.check(&Value::Count(1)), None);
        assert_eq!(
            Key::MaxInFlight.check(&Value::Count(0)),
            Some(Problem::ZeroCount(Key::MaxInFlight))
        );
        for bad in [0.5, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                Key::Multiplier.check(&Value::Factor(bad)).is_some(),
                "{bad}"
            );
        }
        assert_eq!(
            Key::AttemptTimeoutMultiplier.check(&Value::Factor(0.9)),
            Some(Problem::FactorBelowOne {
                key: Key::AttemptTimeoutMultiplier,
                factor: 0.9
            })
        );
        assert_eq!(Key::Multiplier.check(&Value::Factor(1.0)), None);
        assert_eq!(
            Key::Jitter.check(&Value::Jitter(Jitter::Fraction(1.5))),
            Some(Problem::JitterOutOfRange(1.5))
        );
        assert!(
            Key::Jitter
                .check(&Value::Jitter(Jitter::Fraction(-0.1)))
                .is_some()
        );
        assert_eq!(
            Key::Jitter.check(&Value::Jitter(Jitter::Fraction(1.0))),
            None
        );
        assert_eq!(
            Key::Jitter.check(&Value::Jitter(Jitter::Fraction(0.0))),
            None
        );
        assert_eq!(
            Key::HedgeAfter.check(&Value::Hedge(HedgeSpec::Fixed(Duration::ZERO))),
            Some(Problem::HedgeAfterZero)
        );
        assert_eq!(
            Key::HedgeAfter.check(&Value::Hedge(HedgeSpec::Percentile(42))),
            Some(Problem::UnknownPercentile(42))
        );
        for p in [50, 90, 95, 99] {
            assert_eq!(
                Key::HedgeAfter.check(&Value::Hedge(HedgeSpec::Percentile(p))),
                None
            );
        }
        // Zero timeouts are rules of the values together (the attribute checks them after
        // reading every value), and a value of another form is not the key's.
        assert_eq!(Key::Deadline.check(&Value::Duration(Duration::ZERO)), None);
        assert_eq!(Key::Mode.check(&Value::Count(0)), None);
    }

    #[test]
    fn the_backoff_bounds_yield_where_one_is_written() {
        let bounds = |initial, max| {
            Values {
                initial_backoff: initial,
                max_backoff: max,
                ..Values::new()
            }
            .backoff_bounds()
        };
        assert_eq!(bounds(None, None), (S(1), S(20)));
        assert_eq!(bounds(Some(S(30)), None), (S(30), S(30)));
        assert_eq!(bounds(Some(S(5)), None), (S(5), S(20)));
        assert_eq!(bounds(None, Some(MS(300))), (MS(300), MS(300)));
        assert_eq!(bounds(None, Some(S(60))), (S(1), S(60)));
        assert_eq!(bounds(Some(MS(10)), Some(MS(50))), (MS(10), MS(50)));
        assert_eq!(bounds(Some(S(2)), Some(S(1))), (S(2), S(1)));
    }

    #[test]
    fn max_backoff_below_initial_backoff() {
        let problems = Values {
            initial_backoff: Some(S(2)),
            max_backoff: Some(S(1)),
            ..Values::new()
        }
        .problems();
        assert_eq!(
            problems,
            [Problem::BackoffBounds {
                initial: S(2),
                max: S(1)
            }]
        );
        let p = problems[0];
        assert_eq!(
            p.message(),
            "`max_backoff` (1s) is shorter than `initial_backoff` (2s): the backoff grows from \
             initial_backoff up to max_backoff"
        );
        assert_eq!(
            p.sentence(),
            "max_backoff (1s) is below initial_backoff (2s)"
        );
        assert_eq!(p.reason(), "max_backoff would be below initial_backoff");
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            [Key::MaxBackoff, Key::InitialBackoff]
        );
        assert_eq!(p.place(), Place::Value);
        // Alone, either bound moves the other's default: nothing to say.
        for values in [
            Values {
                initial_backoff: Some(S(30)),
                ..Values::new()
            },
            Values {
                max_backoff: Some(MS(100)),
                ..Values::new()
            },
        ] {
            assert_eq!(values.problems(), []);
        }
    }

    #[test]
    fn zero_timeouts() {
        let values = Values {
            attempt_timeout: Some(Duration::ZERO),
            deadline: Some(Duration::ZERO),
            ..Values::new()
        };
        assert_eq!(
            values.problems(),
            [
                Problem::ZeroTimeout(Key::AttemptTimeout),
                Problem::ZeroTimeout(Key::Deadline)
            ]
        );
        let p = Problem::ZeroTimeout(Key::Deadline);
        assert_eq!(
            p.message(),
            "`deadline` of zero would fail every call before it starts: give a positive \
             duration or leave it out"
        );
        assert_eq!(p.sentence(), "deadline must be above zero");
        assert_eq!(p.place(), Place::Value);
        // A zero max_attempt_timeout is below any attempt_timeout, or needs one.
        let values = Values {
            max_attempt_timeout: Some(Duration::ZERO),
            ..Values::new()
        };
        assert_eq!(
            values.problems(),
            [Problem::NeedsAttemptTimeout(Key::MaxAttemptTimeout)]
        );
    }

    #[test]
    fn timeout_shapes_need_attempt_timeout() {
        let values = Values {
            attempt_timeout_multiplier: Some(2.0),
            max_attempt_timeout: Some(S(5)),
            ..Values::new()
        };
        assert_eq!(
            values.problems(),
            [
                Problem::NeedsAttemptTimeout(Key::AttemptTimeoutMultiplier),
                Problem::NeedsAttemptTimeout(Key::MaxAttemptTimeout)
            ]
        );
        let p = Problem::NeedsAttemptTimeout(Key::MaxAttemptTimeout);
        assert_eq!(
            p.message(),
            "`max_attempt_timeout` shapes the per-attempt timeout, but `attempt_timeout` is not \
             set: add `attempt_timeout = \"...\"`"
        );
        assert_eq!(p.sentence(), "max_attempt_timeout needs attempt_timeout");
        assert_eq!(p.reason(), "it shapes attempt_timeout, which is not set");
        assert_eq!(p.place(), Place::Key);
        assert_eq!(p.other_key(), None);
    }

    #[test]
    fn max_attempt_timeout_below_attempt_timeout() {
        let values = Values {
            attempt_timeout: Some(S(2)),
            max_attempt_timeout: Some(S(1)),
            ..Values::new()
        };
        let [p] = values.problems()[..] else {
            panic!("one problem")
        };
        assert_eq!(
            p.message(),
            "`max_attempt_timeout` (1s) is shorter than `attempt_timeout` (2s): it caps the \
             attempt timeout as the multiplier grows it"
        );
        assert_eq!(
            p.sentence(),
            "max_attempt_timeout (1s) is below attempt_timeout (2s)"
        );
        assert_eq!(
            p.reason(),
            "max_attempt_timeout would be below attempt_timeout"
        );
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            [Key::MaxAttemptTimeout, Key::AttemptTimeout]
        );
    }

    #[test]
    fn attempt_timeout_longer_than_deadline() {
        let values = Values {
            attempt_timeout: Some(S(20)),
            deadline: Some(S(10)),
            ..Values::new()
        };
        let [p] = values.problems()[..] else {
            panic!("one problem")
        };
        assert_eq!(
            p.message(),
            "`attempt_timeout` (20s) is longer than `deadline` (10s): no attempt can run past \
             the deadline"
        );
        assert_eq!(
            p.sentence(),
            "attempt_timeout (20s) is longer than deadline (10s)"
        );
        assert_eq!(p.reason(), "attempt_timeout would be longer than deadline");
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            [Key::AttemptTimeout, Key::Deadline]
        );
        assert_eq!(p.place(), Place::Value);
        // A zero deadline is that problem only.
        let values = Values {
            attempt_timeout: Some(S(1)),
            deadline: Some(Duration::ZERO),
            ..Values::new()
        };
        assert_eq!(values.problems(), [Problem::ZeroTimeout(Key::Deadline)]);
    }

    #[test]
    fn values_on_their_own_in_the_problems() {
        let values = Values {
            max_attempts: Some(0),
            multiplier: Some(0.5),
            attempt_timeout: Some(S(1)),
            attempt_timeout_multiplier: Some(f64::NAN),
            jitter: Some(Jitter::Fraction(2.0)),
            ..Values::new()
        };
        assert_eq!(
            sentences(&values),
            [
                "max_attempts must be at least 1",
                "multiplier (0.5) must be a number >= 1",
                "attempt_timeout_multiplier (NaN) must be a number >= 1",
                "the jitter fraction (2) must be in [0, 1]",
            ]
        );
        let messages: Vec<String> = values.problems().iter().map(Problem::message).collect();
        assert_eq!(
            messages,
            [
                "`max_attempts` counts the first attempt: it must be at least 1",
                "`multiplier` must be a number >= 1.0, found 0.5",
                "`attempt_timeout_multiplier` must be a number >= 1.0, found NaN",
                "a jitter fraction must be in [0, 1], found 2",
            ]
        );
    }

    /// The order a `Policy` lists its problems in.
    #[test]
    fn every_problem_at_once_in_order() {
        let values = Values {
            max_attempts: Some(0),
            initial_backoff: Some(S(5)),
            max_backoff: Some(S(1)),
            max_attempt_timeout: Some(S(3)),
            deadline: Some(Duration::ZERO),
            ..Values::new()
        };
        assert_eq!(
            sentences(&values),
            [
                "max_attempts must be at least 1",
                "max_backoff (1s) is below initial_backoff (5s)",
                "deadline must be above zero",
                "max_attempt_timeout needs attempt_timeout",
            ]
        );
    }

    #[test]
    fn hedging_shapes_need_hedge_after() {
        let values = Values {
            max_in_flight: Some(3),
            max_hedge_after: Some(S(1)),
            ..Values::new()
        };
        assert_eq!(
            values.problems(),
            [
                Problem::NeedsHedgeAfter(Key::MaxInFlight),
                Problem::NeedsHedgeAfter(Key::MaxHedgeAfter)
            ]
        );
        let p = Problem::NeedsHedgeAfter(Key::MaxInFlight);
        assert_eq!(
            p.message(),
            "`max_in_flight` shapes hedging, but `hedge_after` is not set: add `hedge_after = \
             \"50ms\"` (or a percentile such as \"p95\")"
        );
        assert_eq!(p.sentence(), "max_in_flight needs hedge_after");
        assert_eq!(p.place(), Place::Key);
    }

    #[test]
    fn hedge_after_on_its_own() {
        let values = Values {
            hedge_after: Some(HedgeSpec::Fixed(Duration::ZERO)),
            max_in_flight: Some(3),
            ..Values::new()
        };
        // hedge_after is written: max_in_flight does not lack it.
        assert_eq!(values.problems(), [Problem::HedgeAfterZero]);
        let p = Problem::HedgeAfterZero;
        assert_eq!(
            p.message(),
            "`hedge_after` of zero would send every request twice at once: give the delay after \
             which a slow attempt gets a copy, such as \"50ms\", or a percentile such as \"p95\""
        );
        assert_eq!(p.sentence(), "hedge_after must be above zero");
        let p = Problem::UnknownPercentile(42);
        assert_eq!(
            p.message(),
            "`hedge_after` = \"p42\": the percentiles are \"p50\", \"p90\", \"p95\" or \"p99\" \
             (\"The Tail at Scale\" hedges at the 95th)"
        );
        assert_eq!(
            p.sentence(),
            "hedge_after's percentile (p42) is one of p50, p90, p95, p99"
        );
        assert_eq!(p.key(), Key::HedgeAfter);
    }

    #[test]
    fn max_in_flight_hedges_within_max_attempts() {
        let fixed = Some(HedgeSpec::Fixed(MS(50)));
        let values = Values {
            hedge_after: fixed,
            max_in_flight: Some(1),
            ..Values::new()
        };
        let [p] = values.problems()[..] else {
            panic!("one problem")
        };
        assert_eq!(p, Problem::MaxInFlightBelowTwo(1));
        assert_eq!(
            p.message(),
            "`max_in_flight = 1` would never hedge: it counts the attempt and its hedges in \
             flight at once, so give at least 2 (the default), or remove `hedge_after`"
        );
        assert_eq!(
            p.sentence(),
            "max_in_flight (1) must be at least 2 to hedge"
        );
        let values = Values {
            hedge_after: fixed,
            max_in_flight: Some(0),
            ..Values::new()
        };
        assert_eq!(
            sentences(&values),
            ["max_in_flight (0) must be at least 2 to hedge"]
        );
        let values = Values {
            hedge_after: fixed,
            max_attempts: Some(2),
            max_in_flight: Some(3),
            ..Values::new()
        };
        let [p] = values.problems()[..] else {
            panic!("one problem")
        };
        assert_eq!(
            p.message(),
            "`max_in_flight` (3) is more than `max_attempts` (2): hedges and retries count \
             together against max_attempts, so no more than 2 attempts can ever be in flight"
        );
        assert_eq!(
            p.sentence(),
            "max_in_flight (3) is more than max_attempts (2)"
        );
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            [Key::MaxInFlight, Key::MaxAttempts]
        );
        // max_attempts left out may come from outside; of zero, it is its own problem.
        for attempts in [None, Some(0)] {
            let values = Values {
                hedge_after: fixed,
                max_attempts: attempts,
                max_in_flight: Some(5),
                ..Values::new()
            };
            assert_eq!(values.problems().len(), usize::from(attempts.is_some()));
        }
    }

    #[test]
    fn hedge_delay_bounds() {
        let values = Values {
            hedge_after: Some(HedgeSpec::Fixed(MS(50))),
            min_hedge_after: Some(MS(5)),
            max_hedge_after: Some(MS(1)),
            ..Values::new()
        };
        assert_eq!(
            values.problems(),
            [
                Problem::BoundWithFixedDelay(Key::MinHedgeAfter),
                Problem::BoundWithFixedDelay(Key::MaxHedgeAfter)
            ]
        );
        let p = Problem::BoundWithFixedDelay(Key::MinHedgeAfter);
        assert_eq!(
            p.message(),
            "`min_hedge_after` bounds a percentile's delay, but `hedge_after` is a fixed \
             duration: remove it, or write `hedge_after = \"p95\"`"
        );
        assert_eq!(p.place(), Place::Key);
        let values = Values {
            hedge_after: Some(HedgeSpec::Percentile(95)),
            min_hedge_after: Some(S(1)),
            max_hedge_after: Some(MS(10)),
            ..Values::new()
        };
        let [p] = values.problems()[..] else {
            panic!("one problem")
        };
        assert_eq!(
            p.message(),
            "`max_hedge_after` (10ms) is shorter than `min_hedge_after` (1s): the percentile's \
             delay is kept between them"
        );
        assert_eq!(
            p.sentence(),
            "max_hedge_after (10ms) is below min_hedge_after (1s)"
        );
        assert_eq!(p.reason(), "max_hedge_after would be below min_hedge_after");
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            [Key::MaxHedgeAfter, Key::MinHedgeAfter]
        );
        // One bound written: the other may come from outside.
        let values = Values {
            hedge_after: Some(HedgeSpec::Percentile(95)),
            max_hedge_after: Some(Duration::from_micros(500)),
            ..Values::new()
        };
        assert_eq!(values.problems(), []);
    }

    #[test]
    fn the_three_texts_of_every_problem() {
        let all = [
            Problem::ZeroCount(Key::MaxAttempts),
            Problem::ZeroCount(Key::MaxInFlight),
            Problem::FactorBelowOne {
                key: Key::Multiplier,
                factor: 0.5,
            },
            Problem::JitterOutOfRange(1.5),
            Problem::HedgeAfterZero,
            Problem::UnknownPercentile(42),
            Problem::BackoffBounds {
                initial: S(2),
                max: S(1),
            },
            Problem::ZeroTimeout(Key::AttemptTimeout),
            Problem::NeedsAttemptTimeout(Key::AttemptTimeoutMultiplier),
            Problem::AttemptTimeoutBounds {
                timeout: S(2),
                max: S(1),
            },
            Problem::PastDeadline {
                timeout: S(2),
                deadline: S(1),
            },
            Problem::NeedsHedgeAfter(Key::MinHedgeAfter),
            Problem::MaxInFlightBelowTwo(1),
            Problem::MaxInFlightAboveAttempts {
                in_flight: 3,
                attempts: 2,
            },
            Problem::BoundWithFixedDelay(Key::MaxHedgeAfter),
            Problem::HedgeBounds {
                min: S(1),
                max: MS(1),
            },
        ];
        for p in all {
            let (message, sentence, reason) = (p.message(), p.sentence(), p.reason());
            assert!(message.contains(p.key().name()), "{message}");
            assert!(
                sentence.contains(p.key().name()) || sentence.contains("jitter"),
                "{sentence}"
            );
            assert!(!reason.is_empty());
            assert_eq!(p.to_string(), sentence);
            if let Some(other) = p.other_key() {
                assert!(message.contains(other.name()), "{message}");
                assert!(sentence.contains(other.name()), "{sentence}");
            }
        }
    }
}
