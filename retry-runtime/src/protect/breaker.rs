//! A circuit breaker: when a dependency fails most of what is sent to it, stop sending, first
//! attempts included, then probe it before letting traffic through again (the pattern of
//! Nygard's "Release It!", as Polly, resilience4j and failsafe-go build it).

use crate::classify::ErrorClass;
use crate::protect::guard::{self, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::{AtomicU64, Ordering};
use crate::protect::window::{self, SLOTS, add, sum_from};
use crate::runtime::Instant;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

/// A circuit breaker, shared by every function that names it (`breaker = PATH`);
/// `breaker = "50%"` gives the function one of its own with that failure ratio, or its
/// partition's, shared by the partition's functions and readable from
/// [`Partition::circuit_breaker`](crate::Partition::circuit_breaker).
///
/// ```
/// use retry_runtime::{BreakerState, CircuitBreaker};
/// use std::time::Duration;
///
/// // Open when half of the attempts of the last 10 s failed (once there were 20), refuse
/// // calls for 5 s, then let one probe through.
/// static STORE: CircuitBreaker = CircuitBreaker::new()
///     .with_failure_ratio(0.5)
///     .with_min_calls(20)
///     .with_window(Duration::from_secs(10))
///     .with_break(Duration::from_secs(5))
///     .with_probes(1);
/// assert_eq!(STORE.state(), BreakerState::Closed);
/// ```
///
/// The breaker counts attempts, each one request to the dependency, as they end:
///
/// - **Closed**: attempts run. Their outcomes are counted in a sliding window (ten slots,
///   lock-free, as a [`RetryBudget`](crate::RetryBudget)'s); a failure classified
///   [`Transient`](ErrorClass::Transient), [`Timeout`](ErrorClass::Timeout) or
///   [`Throttling`](ErrorClass::Throttling) counts as a failure, anything else (a success, a
///   permanent error, a request never sent) as a call that did not fail. When the failures
///   reach the failure ratio of the window's calls, with at least `min_calls` calls, it opens.
/// - **Open**: for the break duration, a call fails at once without running its body, with
///   the function's error made `From<Refused>` (by `"CircuitBreaker"`), and a retry of a call
///   already running ends early with its last error.
/// - **Half-open**: after the break, up to `probes` attempts go through per break duration
///   (a probe that never reports, because its call was dropped, frees its place when the next
///   break duration starts); the others are refused as while open. A probe that fails opens
///   the breaker again for another break; `probes` probes that do not fail close it, with an
///   empty window.
///
/// The state is one atomic word changed by compare-and-swap, so each transition happens
/// once, however many attempts race for it (and is reported once, as a tracing event).
#[derive(Debug)]
pub struct CircuitBreaker {
    /// Thousandths of the window's calls.
    failure_ratio: u64,
    min_calls: u32,
    window: Duration,
    break_for: Duration,
    probes: u8,
    /// Per slot: `tag << 32 | attempts ended while closed`.
    calls: [AtomicU64; SLOTS],
    /// Per slot: `tag << 32 | of them, failures`.
    failures: [AtomicU64; SLOTS],
    /// See [`Word`].
    state: AtomicU64,
    /// The breaker's first look at the clock: times and slots are counted from there.
    epoch: OnceLock<Instant>,
}

/// The state of a [`CircuitBreaker`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls go through; failures are counted.
    Closed,
    /// Calls are refused until the break duration has passed.
    Open,
    /// A bounded number of probes go through; the others are refused.
    HalfOpen,
}

impl BreakerState {
    /// The state as events and metrics write it: `closed`, `open`, `half-open`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The breaker's name, as its refusals report it ([`Refused::by`](crate::Refused::by)) named
/// by its key or listed as a guard.
pub(crate) const NAME: &str = "CircuitBreaker";

/// How an attempt went through the breaker: what its outcome is counted as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Not looked at (no breaker, or the attempt has not started).
    #[default]
    None,
    /// Through a closed breaker: counted in the window.
    Closed,
    /// A half-open breaker's probe.
    Probe,
}

/// What [`CircuitBreaker::admit`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Go ahead, counted as this.
    Go(Pass),
    /// Refused: the next probe in this long.
    Refused(Duration),
}

/// A transition of the breaker, reported by the caller that made it (as a
/// [`Change`](super::Change)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transition {
    pub(crate) from: BreakerState,
    pub(crate) to: BreakerState,
}

/// The state word: the state in the top two bits, and below them
/// - closed: the slot the window counts from (the slot it closed in);
/// - open: when it half-opens, in milliseconds from the epoch;
/// - half-open: when the probes' period ends (milliseconds from the epoch) `<< 16`, the probes
///   that did not fail `<< 8`, the probes let through in this period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    Closed { since: u64 },
    Open { until: u64 },
    HalfOpen { until: u64, passed: u8, taken: u8 },
}

const KIND: u32 = 62;
const PAYLOAD: u64 = (1 << KIND) - 1;
/// Half-open's period end: 46 bits of milliseconds, over two thousand years.
const UNTIL: u64 = (1 << (KIND - 16)) - 1;

impl Word {
    fn load(bits: u64) -> Word {
        let payload = bits & PAYLOAD;
        match bits >> KIND {
            0 => Word::Closed { since: payload },
            1 => Word::Open { until: payload },
            _ => Word::HalfOpen {
                until: payload >> 16,
                passed: (payload >> 8) as u8,
                taken: payload as u8,
            },
        }
    }

    fn bits(self) -> u64 {
        match self {
            Word::Closed { since } => since & PAYLOAD,
            Word::Open { until } => (1 << KIND) | (until & PAYLOAD),
            Word::HalfOpen {
                until,
                passed,
                taken,
            } => (2 << KIND) | (until & UNTIL) << 16 | u64::from(passed) << 8 | u64::from(taken),
        }
    }

    fn state(self) -> BreakerState {
        match self {
            Word::Closed { .. } => BreakerState::Closed,
            Word::Open { .. } => BreakerState::Open,
            Word::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        CircuitBreaker::new()
    }
}

impl CircuitBreaker {
    /// The share of failed attempts that opens it, in thousandths.
    pub(crate) fn failure_thousandths(&self) -> u64 {
        self.failure_ratio
    }

    /// A closed breaker that opens when half of the attempts of the last 10 s failed, once
    /// there were 20, breaks for 5 s and then lets one probe through.
    #[must_use]
    pub const fn new() -> CircuitBreaker {
        CircuitBreaker {
            failure_ratio: 500,
            min_calls: 20,
            window: Duration::from_secs(10),
            break_for: Duration::from_secs(5),
            probes: 1,
            calls: [const { AtomicU64::new(0) }; SLOTS],
            failures: [const { AtomicU64::new(0) }; SLOTS],
            state: AtomicU64::new(0),
            epoch: OnceLock::new(),
        }
    }

    /// The share of the window's attempts that must fail for the breaker to open, clamped to
    /// (0, 1] and kept to the thousandth (0.5 unless set).
    #[must_use]
    pub const fn with_failure_ratio(mut self, ratio: f64) -> CircuitBreaker {
        self.failure_ratio = if ratio.is_nan() || ratio <= 0.001 {
            1
        } else if ratio >= 1.0 {
            1000
        } else {
            (ratio * 1000.0) as u64
        };
        self
    }

    /// The fewest attempts in the window for the failure ratio to count (20 unless set; at
    /// least 1).
    #[must_use]
    pub const fn with_min_calls(mut self, calls: u32) -> CircuitBreaker {
        self.min_calls = if calls == 0 { 1 } else { calls };
        self
    }

    /// The window the failure ratio is measured over (10 s unless set; at least 10 ms). It
    /// slides by a tenth of its length.
    #[must_use]
    pub const fn with_window(mut self, window: Duration) -> CircuitBreaker {
        self.window = window::shortest_window(window);
        self
    }

    /// How long an open breaker refuses calls before it lets probes through (5 s unless set;
    /// at least 1 ms).
    #[must_use]
    pub const fn with_break(mut self, duration: Duration) -> CircuitBreaker {
        self.break_for = if duration.as_millis() < 1 {
            Duration::from_millis(1)
        } else {
            duration
        };
        self
    }

    /// How many probes a half-open breaker lets through per break duration, and how many must
    /// not fail for it to close (1 unless set; 1 to 255).
    #[must_use]
    pub const fn with_probes(mut self, probes: u32) -> CircuitBreaker {
        self.probes = if probes == 0 {
            1
        } else if probes > 255 {
            255
        } else {
            probes as u8
        };
        self
    }

    /// The state now. An open breaker whose break has passed reads `HalfOpen`: the next call
    /// is a probe.
    #[must_use]
    pub fn state(&self) -> BreakerState {
        self.state_at(Instant::now())
    }

    /// The attempts and failures counted in the window now (zeros unless closed).
    #[must_use]
    pub fn window_counts(&self) -> (u64, u64) {
        let now = Instant::now();
        match self.word() {
            Word::Closed { since } => self.counts(self.slot(now), since),
            _ => (0, 0),
        }
    }

    pub(crate) fn state_at(&self, now: Instant) -> BreakerState {
        match self.word() {
            Word::Open { until } if self.millis(now) >= until => BreakerState::HalfOpen,
            word => word.state(),
        }
    }

    fn word(&self) -> Word {
        Word::load(self.state.load(Ordering::Acquire))
    }

    /// Whether a retry decided at `now` would be refused (an open breaker in its break).
    pub(crate) fn refuses(&self, now: Instant) -> bool {
        matches!(self.word(), Word::Open { until } if self.millis(now) < until)
    }

    /// An attempt wants to start at `now`. A closed breaker is one load.
    pub(crate) fn admit(&self, now: Instant) -> (Admit, Option<Transition>) {
        let bits = self.state.load(Ordering::Acquire);
        if bits >> KIND == 0 {
            return (Admit::Go(Pass::Closed), None);
        }
        self.admit_slow(bits, now)
    }

    fn admit_slow(&self, mut bits: u64, now: Instant) -> (Admit, Option<Transition>) {
        let ms = self.millis(now);
        loop {
            let word = Word::load(bits);
            let (next, change) = match word {
                Word::Closed { .. } => return (Admit::Go(Pass::Closed), None),
                Word::Open { until } if ms < until => {
                    return (Admit::Refused(Duration::from_millis(until - ms)), None);
                }
                // The break is over: this attempt is the first probe.
                Word::Open { .. } => (
                    Word::HalfOpen {
                        until: ms + self.break_millis(),
                        passed: 0,
                        taken: 1,
                    },
                    Some(Transition {
                        from: BreakerState::Open,
                        to: BreakerState::HalfOpen,
                    }),
                ),
                Word::HalfOpen {
                    until,
                    passed,
                    taken,
                } => {
                    if taken < self.probes {
                        (
                            Word::HalfOpen {
                                until,
                                passed,
                                taken: taken + 1,
                            },
                            None,
                        )
                    } else if ms >= until {
                        // The period's probes never all reported: a new period.
                        (
                            Word::HalfOpen {
                                until: ms + self.break_millis(),
                                passed,
                                taken: 1,
                            },
                            None,
                        )
                    } else {
                        return (Admit::Refused(Duration::ZERO), None);
                    }
                }
            };
            match self.state.compare_exchange_weak(
                bits,
                next.bits(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return (Admit::Go(Pass::Probe), change),
                Err(seen) => bits = seen,
            }
        }
    }

    /// An attempt that went through as `pass` ended at `now`, failed or not (only a
    /// `Transient`, `Timeout` or `Throttling` failure counts: see [`counts_as_failure`]).
    pub(crate) fn record(&self, now: Instant, pass: Pass, failed: bool) -> Option<Transition> {
        match pass {
            Pass::None => None,
            Pass::Closed => self.record_closed(now, failed),
            Pass::Probe => self.record_probe(now, failed),
        }
    }

    fn record_closed(&self, now: Instant, failed: bool) -> Option<Transition> {
        let Word::Closed { since } = self.word() else {
            // It opened while this attempt ran: the window it counted in is gone.
            return None;
        };
        let slot = self.slot(now);
        add(&self.calls, slot);
        if !failed {
            return None;
        }
        add(&self.failures, slot);
        let (calls, failures) = self.counts(slot, since);
        if calls < u64::from(self.min_calls) || failures * 1000 < self.failure_ratio * calls {
            return None;
        }
        let open = Word::Open {
            until: self.millis(now) + self.break_millis(),
        };
        // Only the attempt that finds it still closed (since the same slot) opens it.
        self.state
            .compare_exchange(
                Word::Closed { since }.bits(),
                open.bits(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .ok()
            .map(|_| Transition {
                from: BreakerState::Closed,
                to: BreakerState::Open,
            })
    }

    fn record_probe(&self, now: Instant, failed: bool) -> Option<Transition> {
        let ms = self.millis(now);
        let mut bits = self.state.load(Ordering::Acquire);
        loop {
            let Word::HalfOpen {
                until,
                passed,
                taken,
            } = Word::load(bits)
            else {
                // Another probe decided already.
                return None;
            };
            let (next, to) = if failed {
                (
                    Word::Open {
                        until: ms + self.break_millis(),
                    },
                    BreakerState::Open,
                )
            } else if passed + 1 >= self.probes {
                (
                    Word::Closed {
                        since: self.slot(now),
                    },
                    BreakerState::Closed,
                )
            } else {
                (
                    Word::HalfOpen {
                        until,
                        passed: passed + 1,
                        taken,
                    },
                    BreakerState::HalfOpen,
                )
            };
            match self.state.compare_exchange_weak(
                bits,
                next.bits(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return (to != BreakerState::HalfOpen).then_some(Transition {
                        from: BreakerState::HalfOpen,
                        to,
                    });
                }
                Err(seen) => bits = seen,
            }
        }
    }

    /// The window's attempts and failures ending with `slot`, counted from `since`.
    fn counts(&self, slot: u64, since: u64) -> (u64, u64) {
        let first = slot.saturating_sub(SLOTS as u64 - 1).max(since);
        (
            sum_from(&self.calls, first, slot),
            sum_from(&self.failures, first, slot),
        )
    }

    fn epoch(&self, now: Instant) -> Instant {
        *self.epoch.get_or_init(|| now)
    }

    /// `now` in milliseconds from the epoch.
    fn millis(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.epoch(now));
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX) & UNTIL
    }

    fn break_millis(&self) -> u64 {
        u64::try_from(self.break_for.as_millis()).unwrap_or(UNTIL)
    }

    /// The slot `now` falls in.
    fn slot(&self, now: Instant) -> u64 {
        window::slot(&self.epoch, self.window, now) & PAYLOAD
    }
}

/// Whether a failure of `class` counts against the breaker: the dependency's own trouble
/// (`Transient`, `Timeout`, `Throttling`), not a request it refused as wrong (`Permanent`) nor
/// one that never reached it (`NotSent`).
pub(crate) fn counts_as_failure(class: Option<ErrorClass>) -> bool {
    matches!(
        class,
        Some(ErrorClass::Transient | ErrorClass::Timeout | ErrorClass::Throttling)
    )
}

/// The breaker as a guard in a call's list (`guard = BREAKER`,
/// [`Policy::guard`](crate::Policy::guard)), with the `breaker` key's states and thresholds:
/// every attempt asks for its leave (an open breaker refuses it, a half-open one lets its
/// probes through), and an attempt's end is counted in the state the breaker is in when it
/// ends, as failsafe-go's breaker records an execution: in the window when closed, as a probe's
/// answer when half-open, not at all when open. An attempt that never ran counts nothing.
///
/// Named by its own key instead (`breaker = BREAKER`), the breaker counts an attempt in the
/// state it went through and reports its changes of state; a refused call ends with
/// [`Refused`](crate::Refused) either way (by `"CircuitBreaker"`).
///
/// ```
/// use retry_runtime::{Admit, AttemptKind, CircuitBreaker, ErrorClass, Guard, GuardContext};
/// use retry_runtime::GuardOutcome;
///
/// static BREAKER: CircuitBreaker = CircuitBreaker::new().with_min_calls(2);
///
/// let first = GuardContext::new(AttemptKind::First, 1);
/// for _ in 0..2 {
///     assert_eq!(BREAKER.admit(&first), Admit::Go);
///     BREAKER.settle(&first, GuardOutcome::Failure(ErrorClass::Transient));
/// }
/// assert_eq!(BREAKER.admit(&first), Admit::Refuse, "open");
/// ```
impl Guard for CircuitBreaker {
    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn admit(&self, _: &GuardContext<'_>) -> guard::Admit {
        match CircuitBreaker::admit(self, Instant::now()).0 {
            Admit::Go(_) => guard::Admit::Go,
            Admit::Refused(_) => guard::Admit::Refuse,
        }
    }

    fn settle(&self, _: &GuardContext<'_>, outcome: GuardOutcome) {
        let failed = match outcome {
            GuardOutcome::Success => false,
            GuardOutcome::Failure(class) => counts_as_failure(Some(class)),
            GuardOutcome::Cancelled => return,
        };
        let now = Instant::now();
        let pass = match self.state_at(now) {
            BreakerState::Closed => Pass::Closed,
            BreakerState::HalfOpen => Pass::Probe,
            BreakerState::Open => Pass::None,
        };
        self.record(now, pass, failed);
    }

    fn name(&self) -> &'static str {
        NAME
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;
    use tokio::time::advance;

    const MS: fn(u64) -> Duration = Duration::from_millis;
    const S: fn(u64) -> Duration = Duration::from_secs;

    fn fail(b: &CircuitBreaker) -> Option<Transition> {
        let (admit, _) = b.admit(Instant::now());
        let Admit::Go(pass) = admit else {
            panic!("refused: {admit:?}")
        };
        b.record(Instant::now(), pass, true)
    }

    fn succeed(b: &CircuitBreaker) -> Option<Transition> {
        let (admit, _) = b.admit(Instant::now());
        let Admit::Go(pass) = admit else {
            panic!("refused: {admit:?}")
        };
        b.record(Instant::now(), pass, false)
    }

    const fn change(from: BreakerState, to: BreakerState) -> Option<Transition> {
        Some(Transition { from, to })
    }

    use BreakerState::{Closed, HalfOpen, Open};

    #[test]
    fn the_word_round_trips() {
        for w in [
            Word::Closed { since: 0 },
            Word::Closed { since: PAYLOAD },
            Word::Open { until: 12_345 },
            Word::HalfOpen {
                until: UNTIL,
                passed: 254,
                taken: 255,
            },
        ] {
            assert_eq!(Word::load(w.bits()), w);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn it_opens_at_the_failure_ratio_once_min_calls_are_counted() {
        let b = CircuitBreaker::new()
            .with_failure_ratio(0.5)
            .with_min_calls(4);
        // 3 failures: the ratio is 100 % but only 3 calls are counted.
        for _ in 0..3 {
            assert_eq!(fail(&b), None);
        }
        assert_eq!(b.window_counts(), (3, 3));
        assert_eq!(b.state(), Closed);
        // 4 calls, 4 failures: open.
        assert_eq!(fail(&b), change(Closed, Open));
        assert_eq!(b.state(), Open);
    }

    #[tokio::test(start_paused = true)]
    async fn successes_keep_it_closed_below_the_ratio() {
        let b = CircuitBreaker::new()
            .with_failure_ratio(0.5)
            .with_min_calls(4);
        for _ in 0..3 {
            assert_eq!(succeed(&b), None);
        }
        // 1 of 4, 2 of 5: below half.
        assert_eq!(fail(&b), None);
        assert_eq!(fail(&b), None);
        assert_eq!(b.window_counts(), (5, 2));
        // 3 of 6: half.
        assert_eq!(fail(&b), change(Closed, Open));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_leave_the_window_as_it_slides() {
        let b = CircuitBreaker::new()
            .with_failure_ratio(0.5)
            .with_min_calls(4)
            .with_window(S(10));
        for _ in 0..3 {
            fail(&b);
        }
        // 10 s later those three have left the window.
        advance(S(10)).await;
        assert_eq!(b.window_counts(), (0, 0));
        assert_eq!(fail(&b), None);
        assert_eq!(b.state(), Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn open_refuses_for_the_break_then_lets_one_probe_through() {
        let b = CircuitBreaker::new()
            .with_min_calls(1)
            .with_break(S(5))
            .with_probes(1);
        assert_eq!(fail(&b), change(Closed, Open));
        assert_eq!(b.admit(Instant::now()).0, Admit::Refused(S(5)));
        assert!(b.refuses(Instant::now()));
        advance(MS(4999)).await;
        assert_eq!(b.admit(Instant::now()).0, Admit::Refused(MS(1)));
        advance(MS(1)).await;
        assert_eq!(b.state(), HalfOpen, "the next call is a probe");
        assert!(!b.refuses(Instant::now()));
        let (admit, moved) = b.admit(Instant::now());
        assert_eq!(admit, Admit::Go(Pass::Probe));
        assert_eq!(moved, change(Open, HalfOpen));
        // The probe is out: the others are refused.
        assert_eq!(b.admit(Instant::now()).0, Admit::Refused(Duration::ZERO));
        // It succeeds: closed, with an empty window.
        assert_eq!(
            b.record(Instant::now(), Pass::Probe, false),
            change(HalfOpen, Closed)
        );
        assert_eq!(b.state(), Closed);
        assert_eq!(b.window_counts(), (0, 0));
        assert_eq!(b.admit(Instant::now()).0, Admit::Go(Pass::Closed));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_probe_opens_it_for_another_break() {
        let b = CircuitBreaker::new().with_min_calls(1).with_break(S(5));
        fail(&b);
        advance(S(5)).await;
        assert_eq!(fail(&b), change(HalfOpen, Open));
        assert_eq!(b.state(), Open);
        assert_eq!(b.admit(Instant::now()).0, Admit::Refused(S(5)));
    }

    #[tokio::test(start_paused = true)]
    async fn it_closes_after_as_many_probes_as_it_lets_through() {
        let b = CircuitBreaker::new()
            .with_min_calls(1)
            .with_break(S(1))
            .with_probes(3);
        fail(&b);
        advance(S(1)).await;
        let passes: Vec<_> = (0..4).map(|_| b.admit(Instant::now()).0).collect();
        assert_eq!(
            passes,
            [
                Admit::Go(Pass::Probe),
                Admit::Go(Pass::Probe),
                Admit::Go(Pass::Probe),
                Admit::Refused(Duration::ZERO)
            ]
        );
        assert_eq!(b.record(Instant::now(), Pass::Probe, false), None);
        assert_eq!(b.record(Instant::now(), Pass::Probe, false), None);
        assert_eq!(b.state(), HalfOpen);
        assert_eq!(
            b.record(Instant::now(), Pass::Probe, false),
            change(HalfOpen, Closed)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_never_reports_frees_its_place_after_a_break() {
        let b = CircuitBreaker::new().with_min_calls(1).with_break(S(2));
        fail(&b);
        advance(S(2)).await;
        // A probe goes and its call is dropped: it never reports.
        assert_eq!(b.admit(Instant::now()).0, Admit::Go(Pass::Probe));
        advance(MS(1999)).await;
        assert_eq!(b.admit(Instant::now()).0, Admit::Refused(Duration::ZERO));
        advance(MS(1)).await;
        assert_eq!(b.admit(Instant::now()).0, Admit::Go(Pass::Probe));
        assert_eq!(
            b.record(Instant::now(), Pass::Probe, false),
            change(HalfOpen, Closed)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_that_ends_after_the_breaker_opened_is_not_counted() {
        let b = CircuitBreaker::new().with_min_calls(1);
        let (late, _) = b.admit(Instant::now());
        assert_eq!(fail(&b), change(Closed, Open));
        let Admit::Go(pass) = late else {
            unreachable!()
        };
        assert_eq!(b.record(Instant::now(), pass, true), None);
        assert_eq!(b.record(Instant::now(), Pass::Probe, true), None);
        assert_eq!(b.state(), Open);
    }

    #[test]
    fn only_the_dependencys_own_failures_count() {
        use ErrorClass::*;
        assert!(counts_as_failure(Some(Transient)));
        assert!(counts_as_failure(Some(Timeout)));
        assert!(counts_as_failure(Some(Throttling)));
        assert!(!counts_as_failure(Some(Permanent)));
        assert!(!counts_as_failure(Some(NotSent)));
        assert!(!counts_as_failure(None));
    }

    #[test]
    fn builders_clamp() {
        let b = CircuitBreaker::new()
            .with_failure_ratio(f64::NAN)
            .with_min_calls(0)
            .with_window(Duration::ZERO)
            .with_break(Duration::ZERO)
            .with_probes(1000);
        assert_eq!(
            (
                b.failure_ratio,
                b.min_calls,
                b.window,
                b.break_for,
                b.probes
            ),
            (1, 1, MS(10), MS(1), 255)
        );
        assert_eq!(
            CircuitBreaker::new().with_failure_ratio(2.0).failure_ratio,
            1000
        );
    }

    #[test]
    fn circuit_open_says_what_was_refused() {
        use crate::classify::Classify;
        let open = crate::protect::guard::Refused::until(NAME, MS(1500));
        assert_eq!(
            open.to_string(),
            "refused by guard `CircuitBreaker`: the call was not made (it admits again in 1.5s)"
        );
        assert_eq!(open.retry_in(), MS(1500));
        assert_eq!(open.classify(), ErrorClass::Permanent);
    }
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::sync::check::{concurrently, model, report};
    use crate::runtime::Instant;
    use std::sync::Arc;
    use std::time::Duration;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// A breaker, its atomics of slot 0 and its state word made by the model's main thread.
    fn breaker(b: CircuitBreaker, now: Instant) -> Arc<CircuitBreaker> {
        let b = Arc::new(b);
        assert_eq!(b.state_at(now), BreakerState::Closed);
        let _ = b.record(now, Pass::Closed, false);
        b
    }

    /// An open breaker: one failure of one attempt (min_calls 1) at `now`.
    fn opened(b: CircuitBreaker, now: Instant) -> Arc<CircuitBreaker> {
        let b = breaker(b.with_failure_ratio(0.5).with_min_calls(1), now);
        let opened = b.record(now, Pass::Closed, true);
        assert_eq!(opened.map(|c| c.to), Some(BreakerState::Open));
        b
    }

    fn to(changes: &[Option<Transition>], state: BreakerState) -> usize {
        changes.iter().flatten().filter(|c| c.to == state).count()
    }

    /// Two attempts fail at once on a closed breaker that each failure alone would not open
    /// (min_calls 3, one success counted): whichever order their counts land in, it opens,
    /// and exactly one of them reports the transition.
    #[test]
    fn loom_racing_failures_open_it_once() {
        let runs = model(|| {
            let now = Instant::now();
            let b = breaker(CircuitBreaker::new().with_min_calls(3), now);
            let fail = || -> Box<dyn FnOnce() -> Option<Transition> + Send> {
                let b = b.clone();
                Box::new(move || b.record(now, Pass::Closed, true))
            };
            let changes = concurrently(vec![fail(), fail()]);
            assert_eq!(to(&changes, BreakerState::Open), 1, "{changes:?}");
            assert_eq!(b.state_at(now), BreakerState::Open);
        });
        report("racing failures", runs);
    }

    /// After the break, two attempts look at once with one probe allowed: exactly one goes
    /// through as the probe, and the transition to half-open is reported once.
    #[test]
    fn loom_a_half_open_breaker_lets_out_at_most_its_probes() {
        let runs = model(|| {
            let now = Instant::now();
            let b = opened(CircuitBreaker::new().with_break(S(5)).with_probes(1), now);
            let later = now + S(5);
            let admit = || -> Box<dyn FnOnce() -> (Admit, Option<Transition>) + Send> {
                let b = b.clone();
                Box::new(move || b.admit(later))
            };
            let seen = concurrently(vec![admit(), admit()]);
            let probes = seen
                .iter()
                .filter(|(a, _)| *a == Admit::Go(Pass::Probe))
                .count();
            assert_eq!(probes, 1, "{seen:?}");
            let changes: Vec<_> = seen.iter().map(|(_, c)| *c).collect();
            assert_eq!(to(&changes, BreakerState::HalfOpen), 1, "{seen:?}");
            assert_eq!(b.state_at(later), BreakerState::HalfOpen);
        });
        report("half-open probes", runs);
    }

    /// Two probes out (probes 2); one succeeds as the other fails. In either order the
    /// breaker ends open (a failed probe wins over a success that is not yet enough), and it
    /// never closes.
    #[test]
    fn loom_a_failed_probe_wins_over_a_racing_success() {
        let runs = model(|| {
            let now = Instant::now();
            let b = opened(CircuitBreaker::new().with_break(S(5)).with_probes(2), now);
            let later = now + S(5);
            assert_eq!(b.admit(later).0, Admit::Go(Pass::Probe));
            assert_eq!(b.admit(later).0, Admit::Go(Pass::Probe));
            let probe = |failed: bool| -> Box<dyn FnOnce() -> Option<Transition> + Send> {
                let b = b.clone();
                Box::new(move || b.record(later, Pass::Probe, failed))
            };
            let changes = concurrently(vec![probe(false), probe(true)]);
            assert_eq!(to(&changes, BreakerState::Open), 1, "{changes:?}");
            assert_eq!(to(&changes, BreakerState::Closed), 0, "{changes:?}");
            assert_eq!(b.state_at(later), BreakerState::Open);
        });
        report("probe outcomes", runs);
    }
}
