//! A concurrency limit that sizes itself: the attempts in flight are bounded by what their
//! latency and failures show the server can take, with no size to configure.
//!
//! The limit follows the gradient of Netflix's concurrency-limits (`Gradient2Limit`,
//! github.com/Netflix/concurrency-limits): the ratio of a baseline latency to the latency now,
//! with a tolerance, scales the limit down when a queue builds at the server; a headroom of
//! about the square root of the limit lets it grow while latency stays flat (as Envoy's
//! adaptive concurrency filter does). Its changes are made per sample and scaled by the
//! limit, as TCP Vegas makes its once per round trip: a limit of `L` changes by its gradient
//! over about `L` samples, one window's worth, so a busy client and a quiet one move at the same
//! pace per round trip. A run of failures (errors and throttling, most of the recent answers)
//! cuts it as a loss cuts TCP's window (AIMD), down to one attempt in flight. Noise does not
//! move it below one attempt: a queue counts only beyond RFC 6298's allowance for a round
//! trip's variation, and takes the limit below one attempt only when sustained.

use crate::classify::ErrorClass;
use crate::protect::Change;
use crate::protect::guard::{Admit, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Fixed point of the limit: a 256th of an attempt.
const ONE: u32 = 256;
/// The limit a guard starts with, in attempts: room for a busy client's first burst before any
/// latency has been seen (Netflix's `initialLimit` is 20; a client of 1,000 calls a second has
/// some 50 attempts in flight, its retries' backoffs included).
const INITIAL: u32 = 100;
/// The largest limit, in attempts.
pub(crate) const MAX: u32 = 10_000;
/// The smallest limit latency can bring it to: a quarter of an attempt, that is an idle
/// client's attempt admitted one time in 4 (a client whose every call alone overloads the
/// server). A small client at its floor still sends a sample every few of its calls, so that it
/// sees the server well again within seconds.
const MIN: u32 = ONE / 4;
/// The smallest limit failures bring it to: one attempt in flight (a client whose attempts all
/// fail fast keeps one, so that the first success is seen).
const MIN_ON_FAILURES: u32 = ONE;
/// Latency is congestion past this ratio of the baseline (`Gradient2Limit`'s `rttTolerance`,
/// 1.5 there; 1.3 keeps the p99 of a queueing server within twice its unloaded p99).
const TOLERANCE: f64 = 1.3;
/// A sample above the short latency average moves it by an 8th of the distance; one below,
/// by half: a queue is believed over some samples, its end at once (a client that has cut
/// itself to a fraction of an attempt sees few samples, and must not wait for many of them to
/// see the server is well again).
const SHORT_SHIFT: u32 = 3;
const SHORT_FALL_SHIFT: u32 = 1;
/// The baseline drifts up towards the short average by a 4096th of the distance per sample
/// while latency is within the tolerance, and a 65536th past it, so that a latency that rose
/// for good (a farther server) becomes the new baseline, and a queue held at the tolerance
/// does not raise it with itself.
const DRIFT_SHIFT: u32 = 12;
const CONGESTED_DRIFT_SHIFT: u32 = 16;
/// The baseline comes down towards a lower short average by a 16th of the distance per sample.
const BASE_SHIFT: u32 = 4;
/// Below this gradient a sample is a queue beyond noise: the limit first comes down to twice
/// the attempts in flight.
const SNAP_BELOW: f64 = 0.9;
/// The failure ratio's average: a 16th per settled answer, in 65536ths.
const FAIL_ONE: u32 = 1 << 16;
const FAIL_SHIFT: u32 = 4;
/// Failures are a signal once they are most of the recent answers.
const FAIL_SIGNAL: u32 = FAIL_ONE / 2;
/// The samples the short average takes before the gradient is read: one sample is no
/// average.
const WARMUP: u32 = 16;
/// A queue is sustained once clear samples (a gradient below [`SNAP_BELOW`]) are the most of
/// the recent ones: their average, a 16th per sample in 65536ths, above a half. Only then can
/// latency take the limit below one attempt.
const QUEUE_ONE: u32 = 1 << 16;
const QUEUE_SHIFT: u32 = 4;
const QUEUE_SUSTAINED: u32 = QUEUE_ONE / 2;
/// A queue is clear only if it adds more to the baseline than RFC 6298's retransmission
/// timeout allows a round trip to vary, `max(G, K x RTTVAR)`: the clock's granularity `G`, a
/// millisecond (tokio's timers), or `K = 4` times the samples' mean deviation from the short
/// average (`RTTVAR`, moved a quarter of the way per sample, as there). Latency that varies
/// that much without a queue is noise.
const CLEAR_NS: u64 = 1_000_000;
const CLEAR_DEVIATIONS: u64 = 4;
const DEV_SHIFT: u32 = 2;
/// Latencies are kept in nanoseconds from 1 µs (a clock that does not move still gives a
/// sample) to an hour (`Duration::MAX` stays in range of the arithmetic).
const FLOOR_NS: u64 = 1_000;
const CEILING_NS: u64 = 3_600_000_000_000;

/// An adaptive concurrency limit, a [`Guard`] shared by every function that names it
/// (`guard = PATH`): at most [`limit`](Self::limit) attempts in flight, a limit it finds from
/// the attempts' latency and failures, with no size to configure.
///
/// ```
/// use retry_runtime::{AdaptiveConcurrency, retry};
///
/// static LIMIT: AdaptiveConcurrency = AdaptiveConcurrency::new();
///
/// #[retry(guard = LIMIT)]
/// async fn fetch() -> Result<u32, std::io::Error> {
///     Ok(7)
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// assert_eq!(fetch().await.unwrap(), 7);
/// assert!(LIMIT.limit() >= 1);
/// assert_eq!(LIMIT.in_flight(), 0);
/// # }
/// ```
///
/// - Every attempt is counted while in flight, first attempts, retries (through their backoff
///   sleep, as the engine admits a retry before it sleeps) and hedges alike; one that finds the
///   limit reached is refused at once (a refused first attempt fails its call with
///   `E::from(Refused)`, a refused retry ends the call with its last error).
/// - Each answer is a sample: its latency ([`GuardContext::elapsed`]) moves a short average (up by
///   an 8th of the distance per sample, down by half: the end of a queue is seen at once; and a
///   sample within 1.3 times the baseline, which passed no queue, ends one the average still
///   remembers: it falls to that sample, not below the baseline, and the queue's average by half)
///   and the samples' mean deviation from it (RFC 6298's `RTTVAR`). The baseline is the mean of the
///   first 16 samples, then a soft minimum of the short average (a 16th of the way down per sample,
///   drifting slowly up): a latency that rose for good becomes the new baseline over some thousands
///   of samples. The gradient is `1.3 x baseline / short average`, kept within [0.5, 1], and not
///   below 0.9 for a queue under a millisecond.
/// - Noise never takes the limit below one attempt, so a caller with one attempt in flight at
///   a time is never refused for latency: a queue is clear only past the baseline by more
///   than RFC 6298's `max(G, 4 x RTTVAR)` (G, a millisecond), and sustained once clear samples
///   are most of the recent ones (an average over about 16 samples above a half). Only a
///   sustained queue takes the limit below one attempt, or first brings it down to twice the
///   attempts in flight. A gradient of 0.9 or more leaves a limit less than half used alone
///   (Netflix's `Gradient2Limit` does not change an app-limited client's limit, and keeps a
///   `minLimit`; Envoy's filter keeps a minimum concurrency).
/// - Under 1, the limit `L` shrinks by a share `(1 - gradient) / L` per sample, so by its
///   gradient over a window of `L` samples. At 1, it grows by `1 / sqrt(L)` per sample (about
///   `sqrt(L)` per window; below one attempt, it doubles, and a sample that passed no queue
///   makes it one attempt at once) while at least half of it is in use; a client that uses
///   less keeps it.
/// - A failure (a transient error, a timeout or throttling) when failures are most of the
///   recent answers (their average over about 16 answers above a half) cuts the limit by a
///   quarter of what is in flight, down to 1: a dependency that fails fast is not sent a
///   storm, and 5 % of failures in normal operation change nothing. A throttle, the server
///   saying it is over its rate, cuts an eighth of what is in flight even when rare (down to
///   1): throttled answers come fast, so latency alone never sheds them. A timeout is also a
///   latency sample. A cancelled attempt gives its place back and teaches nothing.
/// - The limit is within [1/4, 10,000] attempts: below 1 (a client whose every call alone
///   overloads the server), an attempt finding none in flight is admitted with the limit as
///   its chance, so that the client keeps that share of an attempt in flight. Only a
///   sustained queue takes it below 1; failures alone stop at 1. [`limit`](Self::limit) reports it rounded up,
///   never 0.
///
/// The count and the limit are one atomic word, changed by compare-and-swap: an admission
/// sees both together, two attempts racing for the last place take it once, and a settle
/// never takes the count below 0. The latency averages are a word each, updated without a
/// lock: two settles at once may lose one of their samples, never the count.
#[derive(Debug)]
pub struct AdaptiveConcurrency {
    /// `attempts in flight << 32 | limit in 256ths of an attempt`.
    word: AtomicU64,
    /// The short average latency, in nanoseconds (0: none yet).
    short: AtomicU64,
    /// The baseline latency, in nanoseconds (0: none yet).
    base: AtomicU64,
    /// The mean deviation of the samples from the short average, in nanoseconds.
    dev: AtomicU64,
    /// The average of failures over answers, in 65536ths.
    failures: AtomicU32,
    /// The average of clear samples (a queue beyond noise) over samples, in 65536ths.
    queue: AtomicU32,
    /// The latency samples taken, up to [`WARMUP`].
    samples: AtomicU32,
}

impl AdaptiveConcurrency {
    /// A limit that starts at 100 attempts in flight and sizes itself from there.
    #[must_use]
    pub const fn new() -> AdaptiveConcurrency {
        AdaptiveConcurrency {
            word: AtomicU64::new(pack(0, INITIAL * ONE)),
            short: AtomicU64::new(0),
            base: AtomicU64::new(0),
            dev: AtomicU64::new(0),
            failures: AtomicU32::new(0),
            queue: AtomicU32::new(0),
            samples: AtomicU32::new(0),
        }
    }

    /// The limit now, in attempts in flight, rounded up: at least 1, at most 10,000.
    #[must_use]
    pub fn limit(&self) -> u32 {
        unpack(self.word.load(Ordering::Acquire)).1.div_ceil(ONE)
    }

    /// The attempts it admitted that have not been settled.
    #[must_use]
    pub fn in_flight(&self) -> u32 {
        unpack(self.word.load(Ordering::Acquire)).0
    }

    /// The limit in 256ths of an attempt (within [16, 2,560,000]).
    #[cfg(all(test, not(retry_loom)))]
    pub(crate) fn limit_fixed(&self) -> u32 {
        unpack(self.word.load(Ordering::Acquire)).1
    }

    /// Takes a place for an attempt; `false` takes nothing. `chance` is asked for a draw only
    /// when the limit is below one attempt and none is in flight.
    fn take(&self, chance: impl FnOnce() -> f64) -> bool {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let (n, limit) = unpack(word);
            let admit = if (u64::from(n) + 1) * u64::from(ONE) <= u64::from(limit) {
                true
            } else if n == 0 && limit < ONE {
                return self.take_by_chance(limit, chance);
            } else {
                false
            };
            if !admit {
                return false;
            }
            match self.word.compare_exchange_weak(
                word,
                pack(n + 1, limit),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }

    /// Below one attempt: admits with the limit as its chance, if none is in flight still.
    fn take_by_chance(&self, limit: u32, chance: impl FnOnce() -> f64) -> bool {
        if chance() * f64::from(ONE) >= f64::from(limit) {
            return false;
        }
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let (n, limit) = unpack(word);
                (n == 0).then(|| pack(1, limit))
            })
            .is_ok()
    }

    /// Moves the latency averages by a sample of `elapsed`; returns what it shows.
    fn sample(&self, elapsed: Duration) -> Shown {
        let ns = u64::try_from(elapsed.as_nanos())
            .unwrap_or(u64::MAX)
            .clamp(FLOOR_NS, CEILING_NS);
        let short = self.short.load(Ordering::Relaxed);
        if short != 0 {
            let d = self.dev.load(Ordering::Relaxed);
            let off = ns.abs_diff(short);
            let d = if off >= d {
                d + ((off - d) >> DEV_SHIFT)
            } else {
                d - ((d - off) >> DEV_SHIFT)
            };
            self.dev.store(d, Ordering::Relaxed);
        }
        let short = match short {
            0 => ns,
            s => {
                if ns >= s {
                    s + ((ns - s) >> SHORT_SHIFT)
                } else {
                    s - ((s - ns) >> SHORT_FALL_SHIFT)
                }
            }
        };
        self.short.store(short, Ordering::Relaxed);
        let seen = self.samples.load(Ordering::Relaxed);
        if seen < WARMUP {
            // The baseline starts as the mean of the first samples (as `Gradient2Limit`
            // starts its long average): a low one among them, or a low short average, would
            // make a baseline the usual latency then reads as a queue. The gradient is read
            // once the average is more than its first sample.
            self.samples.store(seen + 1, Ordering::Relaxed);
            let base = self.base.load(Ordering::Relaxed);
            let mean = if seen == 0 {
                ns
            } else if ns >= base {
                base + (ns - base) / u64::from(seen + 1)
            } else {
                base - (base - ns) / u64::from(seen + 1)
            };
            self.base.store(mean, Ordering::Relaxed);
            return Shown::FLAT;
        }
        let base = match self.base.load(Ordering::Relaxed) {
            0 => short,
            // A soft minimum: a 16th of the way down per sample, so that one low average (of
            // a few lucky samples) does not make a baseline the noise then reads as a queue.
            b if short < b => b - ((b - short) >> BASE_SHIFT),
            b => {
                let congested = short as f64 > TOLERANCE * b as f64;
                let shift = if congested {
                    CONGESTED_DRIFT_SHIFT
                } else {
                    DRIFT_SHIFT
                };
                b + ((short - b) >> shift)
            }
        };
        self.base.store(base, Ordering::Relaxed);
        // A sample within the tolerance of the baseline passed no queue. If the short average
        // still remembers one, the queue is gone: the average falls at once to the sample (not
        // below the baseline, which it would drag down) and the queue's average by half. A
        // client that cut itself to a fraction of an attempt sees a sample every few seconds
        // and would otherwise need several of them to see the server well again, its limit
        // cut further by each.
        let unqueued = ns as f64 <= TOLERANCE * base as f64;
        let forgets = unqueued && short as f64 > TOLERANCE * base as f64;
        let short = if forgets {
            let short = ns.max(base);
            self.short.store(short, Ordering::Relaxed);
            short
        } else {
            short
        };
        let gradient = (TOLERANCE * base as f64 / short as f64).clamp(0.5, 1.0);
        // A queue of less than the clock's granularity is none; one within the samples'
        // variation is not clear enough to count towards a sustained one.
        let steep = gradient < SNAP_BELOW && short >= base.saturating_add(CLEAR_NS);
        let beyond = CLEAR_DEVIATIONS.saturating_mul(self.dev.load(Ordering::Relaxed));
        let clear = steep && short >= base.saturating_add(beyond);
        let q = self.queue.load(Ordering::Relaxed);
        let q = if clear {
            q + ((QUEUE_ONE - q) >> QUEUE_SHIFT)
        } else if forgets {
            q >> 1
        } else {
            q - (q >> QUEUE_SHIFT)
        };
        self.queue.store(q, Ordering::Relaxed);
        Shown {
            gradient: if steep {
                gradient
            } else {
                gradient.max(SNAP_BELOW)
            },
            sustained: clear && q > QUEUE_SUSTAINED,
            unqueued,
        }
    }

    /// Moves the failure average by an answer (`failed` or not); returns whether failures are
    /// a signal now.
    fn answered(&self, failed: bool) -> bool {
        let f = self.failures.load(Ordering::Relaxed);
        let f = if failed {
            f + ((FAIL_ONE - f) >> FAIL_SHIFT)
        } else {
            f - (f >> FAIL_SHIFT)
        };
        self.failures.store(f, Ordering::Relaxed);
        failed && f > FAIL_SIGNAL
    }

    /// Gives a place back (never below 0) and sets the limit by `change` of the limit and the
    /// attempts in flight before the place is given back.
    fn give_back(&self, change: impl Fn(u32, u32) -> u32) -> u32 {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let (n, limit) = unpack(word);
            let new = change(limit, n).clamp(MIN, MAX * ONE);
            match self.word.compare_exchange_weak(
                word,
                pack(n.saturating_sub(1), new),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return new,
                Err(now) => word = now,
            }
        }
    }
}

impl Default for AdaptiveConcurrency {
    fn default() -> Self {
        AdaptiveConcurrency::new()
    }
}

/// What a latency sample shows.
#[derive(Clone, Copy, Debug)]
struct Shown {
    /// `1.3 x baseline / short average`, within [0.5, 1]; below [`SNAP_BELOW`] only for a
    /// queue of a millisecond or more.
    gradient: f64,
    /// Clear queues are most of the recent samples: latency may take the limit below one
    /// attempt.
    sustained: bool,
    /// The sample passed no queue (within the tolerance of the baseline).
    unqueued: bool,
}

impl Shown {
    /// No queue.
    const FLAT: Shown = Shown {
        gradient: 1.0,
        sustained: false,
        unqueued: false,
    };
}

/// The limit (in 256ths) after a sample that showed `shown` with `n` attempts in flight.
fn by_gradient(limit: u32, n: u32, shown: Shown) -> u32 {
    let l = f64::from(limit) / f64::from(ONE);
    let used = f64::from(n);
    let g = shown.gradient;
    let l = if g < 1.0 {
        let clear = g < SNAP_BELOW;
        if !clear && 2.0 * used < l {
            // A mild gradient while most of the limit is unused is noise, or a queue of other
            // clients' making: the limit stays (Gradient2Limit's rule for an app-limited
            // client).
            return limit;
        }
        // A sustained queue: come down to what is used first; then by the gradient over one
        // window of samples.
        let from = if shown.sustained {
            l.min(2.0 * used.max(0.5))
        } else {
            l
        };
        let to = from * (1.0 - (1.0 - g) / from.max(1.0));
        // Not below one attempt (nor lifted to it) until the queue is sustained.
        if shown.sustained {
            to
        } else {
            to.max(l.min(1.0))
        }
    } else if 2.0 * used >= l {
        // About sqrt(L) per window of L samples; below one attempt, double per sample, and
        // back to one at once on a sample that passed no queue (the queue that took it there
        // is gone).
        if l >= 1.0 {
            l + 1.0 / l.sqrt()
        } else if shown.unqueued {
            1.0
        } else {
            l * 2.0
        }
    } else {
        return limit;
    };
    // Within [0, MAX x ONE] already for any finite l; `as` saturates a NaN to 0, which the
    // clamp in `give_back` lifts to the floor.
    (l * f64::from(ONE)) as u32
}

/// The limit (in 256ths) after a failure that is a signal, with `n` attempts in flight: a
/// quarter off what is in flight.
fn by_failure(limit: u32, n: u32) -> u32 {
    cut_in_flight(limit, n, 4)
}

/// The limit (in 256ths) after a throttle that is not yet a signal, with `n` attempts in
/// flight: an eighth off what is in flight.
fn by_throttle(limit: u32, n: u32) -> u32 {
    cut_in_flight(limit, n, 8)
}

/// The limit (in 256ths) with `1 / part` of what is in flight (`n` attempts) cut off, not
/// below one attempt (or the limit, if latency took it lower).
fn cut_in_flight(limit: u32, n: u32, part: u32) -> u32 {
    let used = n.saturating_mul(ONE).min(limit);
    let cut = used - used / part;
    cut.max(MIN_ON_FAILURES.min(limit))
}

impl Guard for AdaptiveConcurrency {
    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        if self.take(|| attempt.random()) {
            Admit::Go
        } else {
            Admit::Refuse
        }
    }

    fn settle(&self, attempt: &GuardContext<'_>, outcome: GuardOutcome) {
        let limit = match outcome {
            GuardOutcome::Cancelled | GuardOutcome::Failure(ErrorClass::NotSent) => {
                self.give_back(|limit, _| limit)
            }
            GuardOutcome::Success | GuardOutcome::Failure(ErrorClass::Permanent) => {
                self.answered(false);
                let shown = self.sample(attempt.elapsed());
                self.give_back(|limit, n| by_gradient(limit, n, shown))
            }
            GuardOutcome::Failure(ErrorClass::Timeout) => {
                let signal = self.answered(true);
                let shown = self.sample(attempt.elapsed());
                self.give_back(|limit, n| {
                    let limit = by_gradient(limit, n, shown);
                    if signal { by_failure(limit, n) } else { limit }
                })
            }
            GuardOutcome::Failure(ErrorClass::Throttling) => {
                // The server said it is over its rate: each throttle cuts a little (an eighth
                // of what is in flight, not below one attempt), most of the answers a quarter.
                let signal = self.answered(true);
                self.give_back(|limit, n| {
                    if signal {
                        by_failure(limit, n)
                    } else {
                        by_throttle(limit, n)
                    }
                })
            }
            GuardOutcome::Failure(ErrorClass::Transient) => {
                if self.answered(true) {
                    self.give_back(by_failure)
                } else {
                    self.give_back(|limit, _| limit)
                }
            }
        };
        attempt.report(Change::Limit {
            guard: self.name(),
            limit: f64::from(limit) / f64::from(ONE),
        });
    }

    fn name(&self) -> &'static str {
        "adaptive_concurrency"
    }
}

const fn pack(n: u32, limit: u32) -> u64 {
    (n as u64) << 32 | limit as u64
}

fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;
    use crate::protect::guard::AttemptKind;

    /// Draws that go round [0, 1) in 97 steps.
    fn spread() -> f64 {
        use std::sync::atomic::AtomicU32;
        static AT: AtomicU32 = AtomicU32::new(0);
        f64::from(AT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 97) / 97.0
    }

    fn cx(ms: u64) -> GuardContext<'static> {
        GuardContext::new(AttemptKind::First, 1)
            .with_elapsed(Duration::from_millis(ms))
            .with_random(&spread)
    }

    /// Admits `n` attempts and settles each after `ms`, one at a time: returns how many were
    /// refused.
    fn serially(g: &AdaptiveConcurrency, n: usize, ms: u64, outcome: GuardOutcome) -> usize {
        (0..n)
            .filter(|_| {
                if g.admit(&cx(0)) == Admit::Go {
                    g.settle(&cx(ms), outcome);
                    false
                } else {
                    true
                }
            })
            .count()
    }

    /// Holds `width` attempts in flight and settles them after `ms` each, `rounds` times.
    fn held(g: &AdaptiveConcurrency, width: u32, rounds: usize, ms: u64) -> usize {
        let mut refused = 0;
        for _ in 0..rounds {
            let admitted = (0..width).filter(|_| g.admit(&cx(0)) == Admit::Go).count();
            refused += width as usize - admitted;
            for _ in 0..admitted {
                g.settle(&cx(ms), GuardOutcome::Success);
            }
        }
        refused
    }

    #[test]
    fn it_starts_at_a_hundred_and_refuses_past_its_limit() {
        let g = AdaptiveConcurrency::new();
        assert_eq!((g.limit(), g.in_flight()), (100, 0));
        for _ in 0..100 {
            assert_eq!(g.admit(&cx(0)), Admit::Go);
        }
        assert_eq!(g.admit(&cx(0)), Admit::Refuse);
        assert_eq!(g.in_flight(), 100);
        g.settle(&cx(0), GuardOutcome::Cancelled);
        assert_eq!(
            (g.limit(), g.in_flight()),
            (100, 99),
            "a cancel teaches nothing"
        );
        assert_eq!(g.name(), "adaptive_concurrency");
    }

    #[test]
    fn flat_latency_refuses_nothing_and_a_limit_in_use_grows() {
        let g = AdaptiveConcurrency::new();
        assert_eq!(held(&g, 64, 200, 20), 0);
        assert!(
            g.limit() > 100,
            "a limit used past half grows: {}",
            g.limit()
        );
        let before = g.limit();
        assert_eq!(serially(&g, 1000, 20, GuardOutcome::Success), 0);
        assert_eq!(g.limit(), before, "a client that uses less keeps it");
    }

    #[test]
    fn a_sequential_caller_is_never_refused_by_noise() {
        // A noisy clock (a microsecond to 3 ms, as under valgrind), and a server whose latency
        // wanders between 12 and 28 ms: noise, and no queue.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (low, high) in [(1_000_u64, 3_000_000_u64), (12_000_000, 28_000_000)] {
            let g = AdaptiveConcurrency::new();
            for _ in 0..100_000 {
                assert_eq!(g.admit(&cx(0)), Admit::Go, "{low}..{high}");
                let ns = low + next() % (high - low);
                let c =
                    GuardContext::new(AttemptKind::First, 1).with_elapsed(Duration::from_nanos(ns));
                g.settle(&c, GuardOutcome::Success);
            }
            assert!(g.limit_fixed() >= ONE);
        }
    }

    #[test]
    fn fast_first_samples_make_no_baseline_the_usual_latency_reads_as_a_queue() {
        // The first answers come back fast (a warm connection, an empty server: 5 ms), then
        // latency settles at its usual 18 to 26 ms with two or three attempts in flight, as a
        // client of 100 calls a second has: nothing is a queue, nothing is refused.
        let g = AdaptiveConcurrency::new();
        assert_eq!(serially(&g, 4, 5, GuardOutcome::Success), 0);
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for round in 0..20_000_u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let width = 2 + (round % 2) as u32;
            assert_eq!(held(&g, width, 1, 18 + x % 9), 0, "round {round}");
        }
        assert!(g.limit() >= 3, "limit {}", g.limit());
    }

    #[test]
    fn a_queue_brings_it_down_and_a_drained_one_lets_it_up() {
        let g = AdaptiveConcurrency::new();
        held(&g, 20, 50, 20);
        // The server queues: latency grows with what is in flight.
        for _ in 0..200 {
            let admitted = (0..40).filter(|_| g.admit(&cx(0)) == Admit::Go).count() as u64;
            for _ in 0..admitted {
                g.settle(&cx(20 + 5 * admitted), GuardOutcome::Success);
            }
        }
        assert!(
            g.limit() <= 8,
            "held near what keeps latency flat: {}",
            g.limit()
        );
        // Flat again: it grows back.
        held(&g, 40, 400, 20);
        assert!(g.limit() >= 20, "{}", g.limit());
    }

    #[test]
    fn failures_that_are_most_answers_cut_it_to_one_and_a_few_do_not() {
        let g = AdaptiveConcurrency::new();
        for i in 0..2000 {
            let outcome = if i % 20 == 0 {
                GuardOutcome::Failure(ErrorClass::Transient)
            } else {
                GuardOutcome::Success
            };
            assert_eq!(g.admit(&cx(0)), Admit::Go);
            g.settle(&cx(20), outcome);
        }
        assert_eq!(g.limit(), 100, "5 % of failures change nothing");
        let mut limits = Vec::new();
        for _ in 0..50 {
            for _ in 0..10 {
                g.admit(&cx(0));
            }
            for _ in 0..10 {
                g.settle(&cx(20), GuardOutcome::Failure(ErrorClass::Throttling));
            }
            limits.push(g.limit());
        }
        assert_eq!(g.limit(), 1, "{limits:?}");
        assert_eq!(g.in_flight(), 0);
        assert_eq!(g.limit_fixed(), ONE, "failures alone stop at one attempt");
    }

    #[test]
    fn each_throttle_cuts_an_eighth_of_what_is_in_flight_down_to_one_attempt() {
        let g = AdaptiveConcurrency::new();
        // 16 attempts in flight, one throttled: 14 left of them (16 less an eighth).
        for _ in 0..16 {
            assert_eq!(g.admit(&cx(0)), Admit::Go);
        }
        g.settle(&cx(20), GuardOutcome::Failure(ErrorClass::Throttling));
        assert_eq!(g.limit(), 14);
        // A transient failure, as rare, changes nothing.
        g.settle(&cx(20), GuardOutcome::Failure(ErrorClass::Transient));
        assert_eq!(g.limit(), 14);
        for _ in 0..14 {
            g.settle(&cx(20), GuardOutcome::Cancelled);
        }
        assert_eq!(g.in_flight(), 0);
        // Throttles one at a time: down to one attempt, not below.
        for _ in 0..100 {
            assert_eq!(g.admit(&cx(0)), Admit::Go);
            g.settle(&cx(20), GuardOutcome::Failure(ErrorClass::Throttling));
        }
        assert_eq!(g.limit_fixed(), ONE);
    }

    #[test]
    fn below_one_attempt_an_idle_client_is_admitted_by_chance() {
        let g = AdaptiveConcurrency::new();
        held(&g, 1, 100, 20);
        for _ in 0..400 {
            if g.admit(&cx(0)) == Admit::Go {
                g.settle(&cx(2000), GuardOutcome::Success);
            }
        }
        assert_eq!(g.limit_fixed(), MIN, "latency takes it to a quarter");
        assert_eq!(g.limit(), 1, "reported rounded up");
        let draw = |x: f64| move || x;
        let low = GuardContext::new(AttemptKind::First, 1);
        assert!(g.take(draw(0.01)), "a draw below a quarter");
        assert!(!g.take(draw(0.01)), "one in flight already");
        g.settle(&low, GuardOutcome::Cancelled);
        assert!(!g.take(draw(0.5)), "a draw above");
        assert_eq!(g.admit(&low), Admit::Refuse, "the test context draws 0.5");
    }

    #[test]
    fn bad_clocks_and_latencies_never_panic_or_pin_it_at_zero() {
        for ms in [0, u64::MAX] {
            let g = AdaptiveConcurrency::new();
            let elapsed = Duration::from_millis(ms);
            for i in 0..5000 {
                let c = GuardContext::new(AttemptKind::First, 1).with_elapsed(elapsed);
                if g.admit(&c) == Admit::Go {
                    let outcome = if i % 3 == 0 {
                        GuardOutcome::Failure(ErrorClass::Timeout)
                    } else {
                        GuardOutcome::Success
                    };
                    g.settle(&c, outcome);
                }
                assert!((1..=MAX).contains(&g.limit()));
                assert!(g.limit_fixed() >= MIN);
            }
        }
        // A clock that does not move: every sample is zero, the gradient stays 1.
        let g = AdaptiveConcurrency::new();
        assert_eq!(held(&g, 60, 100, 0), 0);
        assert!(g.limit() >= 100);
        let g = AdaptiveConcurrency::new();
        g.settle(&cx(Duration::MAX.as_millis() as u64), GuardOutcome::Success);
        g.settle(
            &GuardContext::new(AttemptKind::Hedge, 2).with_elapsed(Duration::MAX),
            GuardOutcome::Success,
        );
        assert_eq!(
            g.in_flight(),
            0,
            "a settle without an admission never wraps"
        );
        assert!(g.limit() >= 1);
    }

    #[test]
    fn the_limit_stays_within_its_bounds_from_either_end() {
        let g = AdaptiveConcurrency::new();
        g.word.store(pack(0, MAX * ONE), Ordering::Release);
        held(&g, 10_000, 3, 20);
        assert_eq!(g.limit(), MAX);
        assert_eq!(
            by_gradient(MAX * ONE, MAX, Shown::FLAT).min(MAX * ONE + 100),
            MAX * ONE + 2
        );
        assert_eq!(
            by_failure(MIN, 1),
            MIN,
            "failures never lift a limit latency lowered"
        );
        let steep = Shown {
            gradient: 0.5,
            sustained: true,
            unqueued: false,
        };
        assert_eq!(by_gradient(MIN, 1, steep).clamp(MIN, MAX * ONE), MIN);
        let noise = Shown {
            gradient: 0.5,
            sustained: false,
            unqueued: false,
        };
        assert_eq!(
            by_gradient(ONE, 1, noise),
            ONE,
            "not below one attempt until a queue is sustained"
        );
        // Below one attempt, a sample that passed no queue restores one attempt at once; one
        // that only shows no growing queue doubles the limit.
        let gone = Shown {
            unqueued: true,
            ..Shown::FLAT
        };
        assert_eq!(by_gradient(MIN, 1, gone), ONE);
        assert_eq!(by_gradient(MIN, 1, Shown::FLAT), 2 * MIN);
    }

    #[test]
    fn a_sample_that_passed_no_queue_ends_a_remembered_one_at_once() {
        // Settled in normal operation at 20 ms, then a queue of 1 s for as long as it takes
        // to cut the limit below one attempt, then a single sample at 20 ms: the limit is one
        // attempt again, where it would have taken several such samples.
        let g = AdaptiveConcurrency::new();
        held(&g, 32, 1, 20);
        let mut samples = 0;
        while g.limit_fixed() >= ONE {
            held(&g, 1, 1, 1000);
            samples += 1;
            assert!(
                samples < 1000,
                "a sustained queue takes the limit below one attempt"
            );
        }
        assert!(g.limit_fixed() < ONE);
        // Admitted by chance (a draw of 0), then answered in 20 ms.
        let zero = || 0.0;
        let lucky = GuardContext::new(AttemptKind::First, 1).with_random(&zero);
        assert_eq!(g.admit(&lucky), Admit::Go);
        g.settle(&cx(20), GuardOutcome::Success);
        assert_eq!(g.limit_fixed(), ONE, "one sample without a queue");
    }

    #[test]
    fn concurrent_admissions_and_settles_conserve_places() {
        static G: AdaptiveConcurrency = AdaptiveConcurrency::new();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                s.spawn(move || {
                    for i in 0..20_000u64 {
                        if G.admit(&cx(0)) == Admit::Go {
                            assert!(G.in_flight() >= 1);
                            let outcome = match (i + t) % 7 {
                                0 => GuardOutcome::Failure(ErrorClass::Transient),
                                1 => GuardOutcome::Cancelled,
                                _ => GuardOutcome::Success,
                            };
                            G.settle(&cx(10 + (i % 50)), outcome);
                        }
                    }
                });
            }
        });
        assert_eq!(G.in_flight(), 0);
        assert!((1..=MAX).contains(&G.limit()));
    }
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::guard::AttemptKind;
    use crate::protect::sync::check::{concurrently, model, report};
    use std::sync::Arc;

    fn cx(ms: u64) -> GuardContext<'static> {
        GuardContext::new(AttemptKind::First, 1).with_elapsed(Duration::from_millis(ms))
    }

    /// A limit, its words made by the model's main thread.
    fn limit() -> Arc<AdaptiveConcurrency> {
        let g = Arc::new(AdaptiveConcurrency::new());
        assert_eq!(g.in_flight(), 0);
        g.short.load(Ordering::Relaxed);
        g.base.load(Ordering::Relaxed);
        g.dev.load(Ordering::Relaxed);
        g.failures.load(Ordering::Relaxed);
        g.queue.load(Ordering::Relaxed);
        g.samples.load(Ordering::Relaxed);
        g
    }

    /// Two attempts settle at once, one fast and one timed out: in every order both places
    /// come back, and the limit stays within its bounds.
    #[test]
    fn loom_concurrent_settles_keep_the_count_and_the_bounds() {
        let runs = model(|| {
            let g = limit();
            assert_eq!(g.admit(&cx(0)), Admit::Go);
            assert_eq!(g.admit(&cx(0)), Admit::Go);
            let (a, b) = (g.clone(), g.clone());
            concurrently::<()>(vec![
                Box::new(move || a.settle(&cx(10), GuardOutcome::Success)),
                Box::new(move || b.settle(&cx(5000), GuardOutcome::Failure(ErrorClass::Timeout))),
            ]);
            assert_eq!(g.in_flight(), 0);
            let (_, fixed) = unpack(g.word.load(Ordering::Acquire));
            assert!((MIN..=MAX * ONE).contains(&fixed), "{fixed}");
            assert!(g.limit() >= 1);
        });
        report("adaptive concurrency settles", runs);
    }

    /// At a limit of one attempt, two admissions race for the place: exactly one takes it.
    #[test]
    fn loom_two_admissions_racing_for_the_last_place_take_it_once() {
        let runs = model(|| {
            let g = limit();
            g.word.store(pack(0, ONE), Ordering::Release);
            let (a, b) = (g.clone(), g.clone());
            let admits = concurrently(vec![
                Box::new(move || a.admit(&cx(0))) as Box<dyn FnOnce() -> Admit + Send>,
                Box::new(move || b.admit(&cx(0))),
            ]);
            assert_eq!(admits.iter().filter(|a| **a == Admit::Go).count(), 1);
            g.settle(&cx(10), GuardOutcome::Cancelled);
            assert_eq!(g.in_flight(), 0);
        });
        report("adaptive concurrency last place", runs);
    }
}
