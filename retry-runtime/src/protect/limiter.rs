//! The client-side rate limiter of AWS "adaptive" mode: a token bucket whose fill rate follows
//! CUBIC congestion control, driven by throttling responses.

use crate::classify::ErrorClass;
use crate::protect::guard::{Admit, Guard, GuardContext, GuardOutcome};
use crate::protect::sync::atomic::{AtomicBool, Ordering};
use crate::protect::sync::{Mutex, MutexGuard, PoisonError};
use crate::runtime::Instant;
use crate::spec::Behavior;
use std::time::Duration;

/// The AWS adaptive-mode rate limiter (CUBIC).
///
/// Every attempt of an adaptive function first takes send tokens (1 for a first attempt, 5 for
/// a retry, 10 for a retry after throttling) and waits when there are too few. The bucket is
/// disabled, so nothing waits, until the first throttling response; from then on each response
/// moves the fill rate: a throttle cuts it to `beta` (0.7) of the rate in use, successes grow
/// it back along the CUBIC curve `scale * (t - last_throttle - K)^3 + last_max_rate`, and it
/// never exceeds twice the measured send rate (an EWMA over half-second buckets, smoothing 0.8).
///
/// A caller short of tokens sleeps until the refill should cover them, then looks again, so a
/// change of the fill rate while it sleeps (a throttle, or CUBIC growth) applies to it at once.
/// A caller that finds its tokens taken by another waits again with a random extra of up to one
/// refill time, so waiters are served in no fixed order (a fixed oldest-first order would, under
/// sustained overload, send every request just before its deadline). A caller whose next look would come at or after its deadline gives up at once. A cost above
/// the bucket's maximum (a 10-token retry when the bucket holds 1) is taken as soon as the
/// bucket is full, and the rest is owed: the bucket goes below zero, as in the specification's
/// `TokenBucketAcquire`, and later sends wait until it is paid.
///
/// Built by `const fn`, so a limiter shared by several functions lives in a `static` and is
/// named with `rate_limiter = PATH`:
///
/// ```
/// use retry_runtime::RateLimiter;
///
/// static TABLE: RateLimiter = RateLimiter::adaptive()   // the AWS constants
///     .with_min_fill_rate(1.0)
///     .with_smoothing(0.75);
///
/// assert!(!TABLE.is_enabled());          // until the first throttling response
/// assert_eq!(TABLE.measured_rate(), 0.0);
/// ```
///
/// Time is counted from the first response the limiter records (nothing reads its clock
/// before: it is disabled until a response throttles), so its half-second rate buckets start
/// there, as the SDKs' start at the creation of a client.
#[derive(Debug)]
pub struct RateLimiter {
    beta: f64,
    scale: f64,
    smoothing: f64,
    min_fill_rate: f64,
    min_capacity: f64,
    enabled: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct State {
    pub(crate) fill_rate: f64,
    pub(crate) max_capacity: f64,
    /// Tokens in the bucket; below zero after a cost above the maximum, until it is paid.
    pub(crate) capacity: f64,
    /// The instant of the first use: the limiter's time 0.
    pub(crate) origin: Option<Instant>,
    pub(crate) last_refill: Option<f64>,
    pub(crate) measured_rate: f64,
    pub(crate) last_rate_bucket: f64,
    pub(crate) request_count: u64,
    pub(crate) last_max_rate: f64,
    pub(crate) last_throttle: f64,
    pub(crate) enabled: bool,
}

impl State {
    const NEW: State = State {
        fill_rate: 0.0,
        max_capacity: 0.0,
        capacity: 0.0,
        origin: None,
        last_refill: None,
        measured_rate: 0.0,
        last_rate_bucket: 0.0,
        request_count: 0,
        last_max_rate: 0.0,
        last_throttle: 0.0,
        enabled: false,
    };
}

/// The send-token cost of an attempt in adaptive mode: 1 for a first attempt, and for a retry
/// 5, or 10 after throttling; the 2026 behavior takes 1 for a retry too.
pub(crate) const fn send_cost(attempt: u32, after_throttle: bool, behavior: Behavior) -> u32 {
    if attempt <= 1 || matches!(behavior, Behavior::Aws2026) {
        1
    } else if after_throttle {
        10
    } else {
        5
    }
}

impl RateLimiter {
    /// The AWS constants: beta 0.7, scale 0.4, smoothing 0.8, minimum fill rate 0.5 tokens/s,
    /// minimum capacity 1.
    #[must_use]
    pub const fn adaptive() -> RateLimiter {
        RateLimiter {
            beta: 0.7,
            scale: 0.4,
            smoothing: 0.8,
            min_fill_rate: 0.5,
            min_capacity: 1.0,
            enabled: AtomicBool::new(false),
            state: Mutex::new(State::NEW),
        }
    }

    /// Sets the lowest fill rate (tokens per second) a throttle can push the limiter to.
    ///
    /// # Panics
    ///
    /// If `tokens_per_sec` is not a positive finite number (in a `static`, a compile error).
    #[must_use]
    pub const fn with_min_fill_rate(self, tokens_per_sec: f64) -> RateLimiter {
        assert!(
            tokens_per_sec > 0.0 && tokens_per_sec.is_finite(),
            "the minimum fill rate must be a positive number of tokens per second"
        );
        RateLimiter {
            min_fill_rate: tokens_per_sec,
            ..self
        }
    }

    /// Sets the weight of the newest half-second bucket in the measured send rate.
    ///
    /// # Panics
    ///
    /// If `smoothing` is not in `(0, 1]` (in a `static`, a compile error).
    #[must_use]
    pub const fn with_smoothing(self, smoothing: f64) -> RateLimiter {
        assert!(
            smoothing > 0.0 && smoothing <= 1.0,
            "smoothing is the weight of the newest rate bucket, in (0, 1]"
        );
        RateLimiter { smoothing, ..self }
    }

    /// Sets the multiplicative decrease on a throttle (AWS: 0.7).
    ///
    /// # Panics
    ///
    /// If `beta` is not in `(0, 1)` (in a `static`, a compile error).
    #[must_use]
    pub const fn with_beta(self, beta: f64) -> RateLimiter {
        assert!(
            beta > 0.0 && beta < 1.0,
            "beta is the fraction of the rate kept on a throttle, in (0, 1)"
        );
        RateLimiter { beta, ..self }
    }

    /// Sets the CUBIC scale constant (AWS: 0.4).
    ///
    /// # Panics
    ///
    /// If `scale` is not a positive finite number (in a `static`, a compile error).
    #[must_use]
    pub const fn with_scale(self, scale: f64) -> RateLimiter {
        assert!(
            scale > 0.0 && scale.is_finite(),
            "the CUBIC scale must be a positive number"
        );
        RateLimiter { scale, ..self }
    }

    /// The rate (tokens per second) at which send tokens come back now.
    #[must_use]
    pub fn fill_rate(&self) -> f64 {
        self.lock().fill_rate
    }

    /// The measured send rate (requests per second, smoothed).
    #[must_use]
    pub fn measured_rate(&self) -> f64 {
        self.lock().measured_rate
    }

    /// Send tokens in the bucket now; below zero while a cost above the maximum capacity is
    /// being paid.
    #[must_use]
    pub fn capacity(&self) -> f64 {
        let mut s = self.lock();
        if s.origin.is_some() {
            let t = s.secs(Instant::now());
            s.refill(t);
        }
        s.capacity
    }

    /// The most send tokens the bucket holds now.
    #[must_use]
    pub fn max_capacity(&self) -> f64 {
        self.lock().max_capacity
    }

    /// The rate in use at the last throttling response (CUBIC's `W_max`): the fill rate
    /// climbs back to it `K = cbrt(W_max * (1 - beta) / scale)` seconds after that response.
    #[must_use]
    pub fn last_max_rate(&self) -> f64 {
        self.lock().last_max_rate
    }

    /// Whether the limiter has seen a throttling response and now paces sends.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// The limiter's numbers, as one value (for the model checker).
    #[cfg(all(test, retry_loom))]
    pub(crate) fn snapshot(&self) -> State {
        *self.lock()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is plain numbers updated in one step: a panic elsewhere cannot leave it
        // half-written, so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `cost` send tokens are there and takes them. `Err(())` at once, taking
    /// nothing, when the next look at the bucket would come at or after `deadline`.
    // The engine takes one step at a time (`try_send`) and sleeps in the caller's own future;
    // this whole wait is what the limiter's tests drive.
    #[cfg(test)]
    pub(crate) async fn acquire(&self, cost: u32, deadline: Option<Instant>) -> Result<(), ()> {
        use rand::{RngExt, SeedableRng};
        if !self.is_enabled() {
            return Ok(());
        }
        let mut lost = false;
        // Its randomness is an input, as the engine's is: a seeded generator of its own.
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        while let Some(wait) =
            self.try_send(cost, Instant::now(), deadline, lost, || rng.random::<f64>())?
        {
            tokio::time::sleep(wait).await;
            lost = true;
        }
        Ok(())
    }

    /// One look at the bucket, at `now`, for `cost` send tokens: `Ok(None)` took them,
    /// `Ok(Some(wait))` says how long to sleep before looking again, `Err(())` gives up (taking
    /// nothing) because that look would come at or after `deadline`. `lost` says the caller has
    /// slept and looked before and found its tokens taken by another; `draw` gives a draw from
    /// `U[0, 1)` for its extra wait, called only when it must wait again.
    pub(crate) fn try_send(
        &self,
        cost: u32,
        now: Instant,
        deadline: Option<Instant>,
        lost: bool,
        draw: impl FnOnce() -> f64,
    ) -> Result<Option<Duration>, ()> {
        if !self.is_enabled() {
            return Ok(None);
        }
        let (wait, refill_time) = {
            let mut s = self.lock();
            let t = s.secs(now);
            match s.try_acquire(t, f64::from(cost)) {
                Ok(()) => return Ok(None),
                Err(wait) => (wait, s.refill_time(f64::from(cost))),
            }
        };
        // A caller that slept and found its tokens taken by another waits, besides the
        // shortfall, a random part of the time the tokens take to come back. Callers that
        // keep losing then do not all wake at the same instant, and newcomers get their
        // chance: with a strict order the oldest caller would always win, so under
        // sustained overload every request would be sent just before its deadline.
        let wait = if lost {
            wait + refill_time.mul_f64(draw().clamp(0.0, 1.0))
        } else {
            wait
        };
        if deadline.is_some_and(|d| wait >= d.saturating_duration_since(now)) {
            return Err(());
        }
        Ok(Some(wait))
    }

    /// Takes `cost` send tokens if they are there now, without waiting (instant retries in a
    /// `testing` scope): the limiter still counts what it can.
    pub(crate) fn take_without_waiting(&self, cost: u32, now: Instant) {
        if self.is_enabled() {
            let mut s = self.lock();
            let t = s.secs(now);
            let _ = s.try_acquire(t, f64::from(cost));
        }
    }

    /// Records the response of an attempt at `now`: `throttled` for a throttling error,
    /// otherwise a success or another error. The fill rate, if this changed it.
    pub(crate) fn record(&self, now: Instant, throttled: bool) -> Option<f64> {
        let mut s = self.lock();
        let t = s.secs(now);
        let before = s.fill_rate;
        self.update(&mut s, t, throttled);
        (s.fill_rate != before).then_some(s.fill_rate)
    }

    /// [`State::try_acquire`] at time `t` (seconds since the first use).
    #[cfg(test)]
    fn try_acquire_at(&self, t: f64, cost: f64) -> Result<(), Duration> {
        self.lock().try_acquire(t, cost)
    }

    /// [`update`](Self::update) at time `t` (seconds since the first use).
    #[cfg(test)]
    fn update_at(&self, t: f64, throttled: bool) {
        self.update(&mut self.lock(), t, throttled);
    }

    /// The AWS `UpdateClientSendingRate(response)` at time `t` (seconds).
    fn update(&self, s: &mut State, t: f64, throttled: bool) {
        self.measure(s, t);
        let calculated = if throttled {
            let rate_to_use = if s.enabled {
                s.measured_rate.min(s.fill_rate)
            } else {
                s.measured_rate
            };
            s.last_max_rate = rate_to_use;
            s.last_throttle = t;
            s.enabled = true;
            self.enabled.store(true, Ordering::Release);
            self.cubic_throttle(rate_to_use)
        } else {
            self.cubic_success(s, t)
        };
        let new_rate = calculated.min(2.0 * s.measured_rate);
        // The time since the last refill is paid at the old rate.
        s.refill(t);
        s.fill_rate = new_rate.max(self.min_fill_rate);
        s.max_capacity = new_rate.max(self.min_capacity);
        s.capacity = s.capacity.min(s.max_capacity);
    }

    /// Counts a request into the half-second buckets of the measured rate.
    fn measure(&self, s: &mut State, t: f64) {
        let bucket = (t * 2.0).floor() / 2.0;
        s.request_count += 1;
        if bucket > s.last_rate_bucket {
            let current = s.request_count as f64 / (bucket - s.last_rate_bucket);
            s.measured_rate = current * self.smoothing + s.measured_rate * (1.0 - self.smoothing);
            s.request_count = 0;
            s.last_rate_bucket = bucket;
        }
    }

    /// `K = cbrt(last_max_rate * (1 - beta) / scale)`: the time CUBIC takes to climb back to
    /// the rate of the last throttle.
    fn time_window(&self, last_max_rate: f64) -> f64 {
        (last_max_rate * (1.0 - self.beta) / self.scale).cbrt()
    }

    fn cubic_success(&self, s: &State, t: f64) -> f64 {
        let k = self.time_window(s.last_max_rate);
        self.scale * (t - s.last_throttle - k).powi(3) + s.last_max_rate
    }

    fn cubic_throttle(&self, rate: f64) -> f64 {
        rate * self.beta
    }
}

/// The limiter as a guard in a call's list (`guard = LIMITER`,
/// [`Policy::guard`](crate::Policy::guard)), with the AWS adaptive mode's rates: every attempt
/// takes one send token once a throttling response has enabled the limiter, or waits as long
/// as the bucket's refill needs (the call's deadline still bounds the wait); every attempt's
/// end updates the rate (a `Throttling` failure cuts it, anything else lets it grow). An
/// attempt that never ran counts nothing.
///
/// Named by its own key instead (`rate_limiter = LIMITER`, in adaptive mode), the limiter also
/// charges the AWS 2026 behavior's send costs and keeps a waiting attempt's place in line.
///
/// ```
/// use retry_runtime::{Admit, AttemptKind, Guard, GuardContext, RateLimiter};
///
/// static LIMITER: RateLimiter = RateLimiter::adaptive();
///
/// // Until a throttling response, nothing is paced.
/// assert_eq!(LIMITER.admit(&GuardContext::new(AttemptKind::First, 1)), Admit::Go);
/// ```
impl Guard for RateLimiter {
    /// It reads no attempt's time.
    fn timed(&self) -> bool {
        false
    }

    fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
        match self.try_send(1, Instant::now(), None, false, || attempt.random()) {
            Ok(None) | Err(()) => Admit::Go,
            Ok(Some(wait)) => Admit::Wait(wait),
        }
    }

    fn settle(&self, _: &GuardContext<'_>, outcome: GuardOutcome) {
        let throttled = match outcome {
            GuardOutcome::Success => false,
            GuardOutcome::Failure(class) => class == ErrorClass::Throttling,
            GuardOutcome::Cancelled => return,
        };
        self.record(Instant::now(), throttled);
    }
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::adaptive()
    }
}

/// How long `tokens` take to come at `rate` per second, rounded up to the nanosecond and at
/// least one: a zero-length sleep would not move the clock, and the caller would look again
/// and again at the same instant.
fn wait_for(tokens: f64, rate: f64) -> Duration {
    let nanos = (tokens / rate * 1e9).ceil();
    if nanos >= u64::MAX as f64 {
        Duration::MAX
    } else {
        Duration::from_nanos((nanos as u64).max(1))
    }
}

/// Float noise allowed when comparing the bucket with a cost: a caller that slept exactly the
/// computed wait finds its tokens there even if the refill's arithmetic lands a hair short.
/// (Waiting again would cost a whole millisecond: tokio rounds timers up to the next one.)
const SLACK: f64 = 1e-9;

impl State {
    /// Seconds from the first use to `now` (which becomes the first use if there was none).
    fn secs(&mut self, now: Instant) -> f64 {
        let origin = *self.origin.get_or_insert(now);
        now.saturating_duration_since(origin).as_secs_f64()
    }

    /// Takes `cost` tokens at time `t` (seconds), or says how long until the refill should
    /// cover them. A cost above the maximum capacity is taken when the bucket is full, and the
    /// bucket goes below zero by the rest.
    fn try_acquire(&mut self, t: f64, cost: f64) -> Result<(), Duration> {
        if !self.enabled {
            return Ok(());
        }
        self.refill(t);
        let needed = cost.min(self.max_capacity);
        if self.capacity + SLACK >= needed {
            self.capacity -= cost;
            return Ok(());
        }
        Err(wait_for(needed - self.capacity, self.fill_rate))
    }

    /// How long `cost` tokens (at most a full bucket) take to refill from empty.
    fn refill_time(&self, cost: f64) -> Duration {
        wait_for(cost.min(self.max_capacity), self.fill_rate)
    }

    fn refill(&mut self, t: f64) {
        if let Some(last) = self.last_refill {
            let amount = (t - last).max(0.0) * self.fill_rate;
            self.capacity = self.max_capacity.min(self.capacity + amount);
        }
        self.last_refill = Some(t);
    }
}

#[cfg(test)]
mod tests {
    //! The AWS SDKs' own public test values for the adaptive rate limiter (smithy-rs, botocore,
    //! aws-sdk-go-v2, aws-sdk-java and others); each test names its source.
    use super::*;

    /// Relative equality, as the smithy-rs tests use.
    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-12 * want.abs().max(1.0)
    }

    #[track_caller]
    fn assert_close(got: f64, want: f64, what: &str) {
        assert!(close(got, want), "{what}: got {got}, want {want}");
    }

    /// A limiter first touched at `t` (the SDKs create theirs at a known instant).
    fn created_at(t: f64) -> RateLimiter {
        let l = RateLimiter::adaptive();
        l.lock().last_rate_bucket = t.floor();
        l
    }

    fn with_last_max(last_max_rate: f64, last_throttle: f64) -> RateLimiter {
        let l = RateLimiter::adaptive();
        {
            let mut s = l.lock();
            s.last_max_rate = last_max_rate;
            s.last_throttle = last_throttle;
        }
        l
    }

    #[test]
    fn cubic_set_1_all_successes() {
        // smithy-rs test_calculated_rate_with_successes; Go "success"; Java TokenBucketCubicTest.
        let l = with_last_max(10.0, 5.0);
        let want = [
            (5.0, 7.0),
            (6.0, 9.64893600966),
            (7.0, 10.000030849917364),
            (8.0, 10.453284520772092),
            (9.0, 13.408697022224185),
            (10.0, 21.26626835427364),
            (11.0, 36.425998516920465),
        ];
        for (t, rate) in want {
            let got = l.cubic_success(&l.lock(), t);
            assert!((got - rate).abs() < 1e-10, "t={t}: got {got}, want {rate}");
        }
    }

    /// Set 2 under a harness that, on a throttle, sets `last_max_rate` to `on_throttle(calc)`.
    fn cubic_set_2(post_beta: bool) -> Vec<f64> {
        let l = with_last_max(10.0, 5.0);
        let mut calc = 0.0;
        let mut out = Vec::new();
        for (t, throttled) in [
            (5.0, false),
            (6.0, false),
            (7.0, true),
            (8.0, true),
            (9.0, false),
            (10.0, false),
            (11.0, false),
            (12.0, false),
        ] {
            if throttled {
                let new = l.cubic_throttle(calc);
                let mut s = l.lock();
                s.last_max_rate = if post_beta { new } else { calc };
                s.last_throttle = t;
                calc = new;
            } else {
                calc = l.cubic_success(&l.lock(), t);
            }
            out.push(calc);
        }
        out
    }

    #[test]
    fn cubic_set_2_mixed_follows_the_specification() {
        // SEP Appendix A: Java v1 "Mixed", C++ TEST_CASE_2, smithy-kotlin, smithy-java, .NET.
        let want = [
            7.0,
            9.64893600966,
            6.754255206761999,
            4.727978644733399,
            6.606547753887045,
            6.763279816944947,
            7.598174833907107,
            11.511232804773524,
        ];
        for (i, (got, want)) in cubic_set_2(false).into_iter().zip(want).enumerate() {
            assert!(
                (got - want).abs() < 1e-10,
                "step {i}: got {got}, want {want}"
            );
        }
    }

    #[test]
    fn cubic_set_2_under_the_go_harness() {
        // Go "mixed" and smithy-rs test_calculated_rate_with_throttles put the post-beta rate
        // into last_max_rate; the same formulas reproduce their table too.
        let want = [
            7.0,
            9.64893600966,
            6.754255206761999,
            4.727978644733399,
            4.670125557970046,
            4.770870456867401,
            6.011819748005445,
            10.792973431384178,
        ];
        for (i, (got, want)) in cubic_set_2(true).into_iter().zip(want).enumerate() {
            assert!(
                (got - want).abs() < 1e-10,
                "step {i}: got {got}, want {want}"
            );
        }
    }

    #[test]
    fn end_to_end_sending_rates() {
        // smithy-rs test_client_sending_rates; Go TestAdaptiveRateLimit_Update "base";
        // Java v2 RateLimiterTokenBucketTest; C++ TEST_CASE_3; JS updateClientSendingRate.
        let l = created_at(0.0);
        let rows = [
            (0.2, false, 0.0, 0.5),
            (0.4, false, 0.0, 0.5),
            (0.6, false, 4.800000000000001, 0.5),
            (0.8, false, 4.800000000000001, 0.5),
            (1.0, false, 4.16, 0.5),
            (1.2, false, 4.16, 0.6912),
            (1.4, false, 4.16, 1.0975999999999997),
            (1.6, false, 5.632000000000001, 1.6384),
            (1.8, false, 5.632000000000001, 2.3328),
            (2.0, true, 4.3264, 3.0284799999999996),
            (2.2, false, 4.3264, 3.48663917347026),
            (2.4, false, 4.3264, 3.821874416040255),
            (2.6, false, 5.66528, 4.053385727709987),
            (2.8, false, 5.66528, 4.200373108479454),
            (3.0, false, 4.333056, 4.282036558348658),
            (3.2, true, 4.333056, 2.99742559084406),
            (3.4, false, 4.333056, 3.4522263943863463),
        ];
        for (t, throttled, measured, fill) in rows {
            l.update_at(t, throttled);
            assert_close(l.measured_rate(), measured, &format!("measured at {t}"));
            assert_close(l.fill_rate(), fill, &format!("fill rate at {t}"));
        }
    }

    #[test]
    fn beta_decrease() {
        // smithy-rs should_match_beta_decrease.
        let l = RateLimiter::adaptive();
        assert_close(l.cubic_throttle(10.0), 7.0, "throttle(10)");
        let l = with_last_max(10.0, 1.0);
        assert_close(l.cubic_success(&l.lock(), 1.0), 7.0, "success(1)");
    }

    fn throttled_at_zero_with_empty_bucket() -> RateLimiter {
        let l = created_at(0.0);
        {
            let mut s = l.lock();
            s.last_refill = Some(0.0);
            s.capacity = 0.0;
        }
        l.update_at(0.0, true);
        assert_close(l.fill_rate(), 0.5, "fill rate");
        assert_close(l.max_capacity(), 1.0, "max capacity");
        l
    }

    #[test]
    fn capacity_never_goes_negative() {
        // smithy-rs test_capacity_never_goes_negative.
        let l = throttled_at_zero_with_empty_bucket();
        let wait = l.try_acquire_at(0.1, 1.0).expect_err("0.05 < 1");
        assert_close(wait.as_secs_f64(), 1.9, "wait");
        assert_close(l.capacity(), 0.05, "capacity");
    }

    #[test]
    fn acquire_succeeds_after_sufficient_refill() {
        // smithy-rs test_acquire_succeeds_after_sufficient_refill.
        let l = throttled_at_zero_with_empty_bucket();
        assert!(l.try_acquire_at(0.1, 1.0).is_err());
        assert_eq!(l.try_acquire_at(2.1, 1.0), Ok(()));
        assert_close(l.capacity(), 0.0, "capacity");
    }

    #[test]
    fn a_cost_above_the_maximum_capacity_is_owed() {
        // A throttled retry (10 tokens) against a bucket that holds at most 1, filling at 0.5
        // per second: it goes when the bucket is full (2 s) and owes 9, so the next first
        // attempt waits for 10 tokens of refill: 20 s more.
        let l = throttled_at_zero_with_empty_bucket();
        assert_eq!(l.try_acquire_at(0.0, 10.0), Err(Duration::from_secs(2)));
        assert_eq!(l.try_acquire_at(2.0, 10.0), Ok(()));
        assert_close(l.capacity(), -9.0, "owed");
        assert_eq!(l.try_acquire_at(2.0, 1.0), Err(Duration::from_secs(20)));
    }

    #[test]
    fn waits_are_never_zero_and_absorb_float_noise() {
        // smithy-rs grants a request whose shortfall rounds to a zero-length sleep, which would
        // never advance the clock; here the wait is at least a nanosecond.
        assert_eq!(wait_for(1e-12, 0.5), Duration::from_nanos(1));
        assert_eq!(wait_for(1.0, 0.5), Duration::from_secs(2));
        assert_eq!(wait_for(1e30, 1e-9), Duration::MAX);
        // A caller that slept the computed wait finds its token, whatever the last bit of the
        // refill's arithmetic.
        let l = throttled_at_zero_with_empty_bucket();
        let wait = l.try_acquire_at(0.3, 1.0).expect_err("empty");
        assert_eq!(l.try_acquire_at(0.3 + wait.as_secs_f64(), 1.0), Ok(()));
    }

    #[test]
    fn send_token_delay_after_one_throttle() {
        // JS DefaultRateLimiter.spec.ts: created at 0, one throttle at t.
        for (t, ms) in [
            (0.5, 892.8571428571428),
            (1.0, 1785.7142857142856),
            (2.0, 2000.0),
        ] {
            let l = created_at(0.0);
            l.update_at(t, true);
            let wait = l
                .try_acquire_at(t, 1.0)
                .expect_err("the bucket starts empty");
            assert!(
                (wait.as_secs_f64() * 1000.0 - ms).abs() < 1e-6,
                "t={t}: {wait:?}"
            );
        }
    }

    #[test]
    fn throttle_cuts_the_measured_rate_by_beta() {
        // JS cubicThrottle: a limiter created at 0, one throttle at t = 5..9. The measured
        // rate is then 0.8 / t (one request over t seconds, smoothing 0.8), and the throttle
        // leaves beta times it: 0.56 / t.
        let want = [0.112, 0.09333333, 0.08, 0.07, 0.06222222];
        for (t, want) in (5..=9).zip(want) {
            let l = created_at(0.0);
            l.update_at(f64::from(t), true);
            let got = l.cubic_throttle(l.lock().last_max_rate);
            assert!((got - want).abs() < 1e-8, "t={t}: got {got}, want {want}");
        }
    }

    #[test]
    fn botocore_cubic_calculator() {
        // botocore test_throttling.py: K(10) and the rate a throttle at 8 leaves.
        let l = RateLimiter::adaptive();
        assert_close(l.time_window(10.0), 1.9574338205844317, "K(10)");
        let l = with_last_max(10.0, 0.0);
        assert_close(
            l.cubic_success(&l.lock(), 1.9574338205844317),
            10.0,
            "success at K",
        );
        let l = RateLimiter::adaptive();
        assert_close(l.cubic_throttle(8.0), 5.6, "error_received(8)");
        assert_close(l.time_window(8.0), 1.8171205928321397, "k after 8");
        let l = RateLimiter::adaptive().with_beta(0.6);
        assert_close(l.cubic_throttle(10.0), 6.0, "beta 0.6");
        // A success at the instant of the throttle returns the throttled rate.
        let l = with_last_max(10.0, 1.0).with_beta(0.6);
        assert_close(
            l.cubic_success(&l.lock(), 1.0),
            6.0,
            "success_received(1) with beta 0.6",
        );
    }

    #[test]
    fn botocore_rate_clocker() {
        // botocore test_adaptive.py RateClocker: the measured rate's EWMA.
        let l = created_at(0.0);
        l.update_at(1.0, false);
        assert_close(l.measured_rate(), 0.8, "first record at 1");

        let l = created_at(0.0);
        for t in 1..=20 {
            l.update_at(f64::from(t), false);
        }
        assert!((l.measured_rate() - 1.0).abs() < 1e-6);

        let l = created_at(0.0);
        for i in 0..=6 {
            l.update_at(1.0 + 0.5 * f64::from(i), false);
        }
        let r = l.measured_rate();
        assert!((1.99..=2.0).contains(&r), "{r}");
        l.update_at(14.0, false);
        let r = l.measured_rate();
        assert!((0.1..=2.0).contains(&r), "{r}");

        let l = created_at(0.0);
        for t in [0.1, 0.2, 0.3, 0.4, 0.49] {
            l.update_at(t, false);
        }
        assert_eq!(l.measured_rate(), 0.0);
        l.update_at(0.5, false);
        assert_close(l.measured_rate(), 9.6, "6 records / 0.5 s * 0.8");
    }

    #[test]
    fn new_rate_is_capped_at_twice_the_measured_rate() {
        // botocore ClientRateLimiter: measured 20 with an adjustor value of 100 gives 40.
        let l = created_at(0.0);
        {
            let mut s = l.lock();
            s.measured_rate = 20.0;
            s.last_rate_bucket = 100.0;
            s.last_max_rate = 100.0;
            s.last_throttle = 0.0;
        }
        // At t=100 the CUBIC rate is far above 100, so twice the measured rate wins.
        l.update_at(100.2, false);
        assert_close(l.fill_rate(), 40.0, "2 x measured");

        // Measured 21 with a CUBIC rate of 20 (t = last throttle + K) gives 20.
        let l = created_at(0.0);
        let k = l.time_window(20.0);
        {
            let mut s = l.lock();
            s.measured_rate = 21.0;
            s.last_rate_bucket = 100.0;
            s.last_max_rate = 20.0;
            s.last_throttle = 100.2 - k;
        }
        l.update_at(100.2, false);
        assert_close(l.fill_rate(), 20.0, "the CUBIC rate");
    }

    #[test]
    fn send_costs() {
        assert_eq!(send_cost(1, false, Behavior::Classic), 1);
        assert_eq!(send_cost(1, true, Behavior::Classic), 1);
        assert_eq!(send_cost(2, false, Behavior::Classic), 5);
        assert_eq!(send_cost(3, true, Behavior::Classic), 10);
        assert_eq!(send_cost(3, true, Behavior::Aws2026), 1);
    }

    /// Hand-computed CUBIC values on tokio's paused clock, through the same `record` and
    /// `acquire` the engine calls.
    mod paused_clock {
        use super::*;
        use tokio::time::advance;

        const TENTH: Duration = Duration::from_millis(100);

        #[tokio::test(start_paused = true)]
        async fn rates_after_a_throttle_follow_the_cubic_curve() {
            let l = RateLimiter::adaptive();
            // 20 successes at 10 per second (t = 0.0 .. 1.9, the first one starts the clock),
            // then a throttle at t = 2.0. The measured rate is the EWMA of 10 per second over
            // the half-second buckets: 0.8 * 12 = 9.6 (6 responses in the first bucket), then
            // 9.92, 9.984 and, at 2.0, 9.9968. The limiter was disabled, so the rate in use is
            // the measured one: W_max = 9.9968 and the fill rate becomes 0.7 * W_max.
            for _ in 0..20 {
                l.record(Instant::now(), false);
                advance(TENTH).await;
            }
            assert!(!l.is_enabled());
            l.record(Instant::now(), true);
            assert!(l.is_enabled());
            assert_close(l.measured_rate(), 9.9968, "measured at 2.0");
            assert_close(l.last_max_rate(), 9.9968, "W_max");
            assert_close(l.fill_rate(), 6.99776, "0.7 * W_max");

            // Then a success every 100 ms. K = cbrt(9.9968 * 0.3 / 0.4) = 1.9572250053683622 s
            // and the fill rate is 0.4 * (t - 2.0 - K)^3 + 9.9968, capped at twice the measured
            // rate (which stays just under 10).
            let want = [
                (2.5, 8.759030331373003),
                (3.0, 9.645965659524988),
                (3.5, 9.958565984455957),
                // t = 2 + K: back at W_max; just after it the curve is flat ...
                (4.0, 9.996831306165907),
                // ... then grows past it, probing for more ...
                (5.0, 10.450356939922756),
                (6.0, 13.406542560795538),
                // ... until twice the measured rate stops it.
                (7.0, 19.999999999344638),
                (8.0, 19.999999999973785),
            ];
            let mut t = 2.0_f64;
            for (at, fill) in want {
                while t < at - 1e-9 {
                    advance(TENTH).await;
                    t += 0.1;
                    l.record(Instant::now(), false);
                }
                assert_close(l.fill_rate(), fill, &format!("fill rate at {at}"));
            }
            assert!((l.measured_rate() - 10.0).abs() < 1e-9);
        }

        #[tokio::test(start_paused = true)]
        async fn the_rate_is_back_at_w_max_after_k_seconds() {
            let l = RateLimiter::adaptive();
            for _ in 0..20 {
                l.record(Instant::now(), false);
                advance(TENTH).await;
            }
            l.record(Instant::now(), true);
            let w_max = l.last_max_rate();
            let k = (w_max * 0.3_f64 / 0.4).cbrt();
            assert_close(k, 1.9572250053683622, "K");
            // Responses keep coming at 10 per second (the cap of twice the measured rate stays
            // out of the way); the one exactly K seconds after the throttle finds W_max again.
            for _ in 0..19 {
                advance(TENTH).await;
                l.record(Instant::now(), false);
            }
            advance(Duration::from_secs_f64(k) - 19 * TENTH).await;
            l.record(Instant::now(), false);
            assert!((l.fill_rate() - w_max).abs() < 1e-8, "{}", l.fill_rate());
            // 2 s after the throttle the plateau of the cubic has moved it by 0.4 * (2 - K)^3.
            advance(Duration::from_secs(4) - Duration::from_secs_f64(2.0 + k)).await;
            l.record(Instant::now(), false);
            assert!((l.fill_rate() - (w_max + 0.4 * (2.0 - k).powi(3))).abs() < 1e-8);
            assert_close(l.fill_rate(), 9.996831306165907, "at 4.0, as above");
        }

        #[tokio::test(start_paused = true)]
        async fn waiters_are_paced_at_the_fill_rate() {
            // A throttle on the first response: measured rate 0, so the fill rate is the
            // minimum (0.5 per second), the bucket holds at most 1 token and is empty.
            let l: &'static RateLimiter = Box::leak(Box::new(RateLimiter::adaptive()));
            l.record(Instant::now(), true);
            assert_close(l.fill_rate(), 0.5, "minimum fill rate");
            let start = Instant::now();
            let done = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let tasks: Vec<_> = (0..3)
                .map(|i| {
                    let done = done.clone();
                    tokio::spawn(async move {
                        l.acquire(1, None).await.expect("no deadline");
                        let ms = start.elapsed().as_millis();
                        done.lock().unwrap().push((i, ms));
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            // Never faster than one token every 2 s; the first at 2 s. The losers of each
            // round wait a random extra of up to one refill time (2 s), so the order and the
            // later instants vary, but each one comes after the refill for it.
            let mut times: Vec<_> = done.lock().unwrap().iter().map(|&(_, ms)| ms).collect();
            times.sort_unstable();
            assert_eq!(times[0], 2000);
            assert!(times[1] >= 4000 && times[1] <= 6000, "{times:?}");
            assert!(times[2] >= times[1] + 2000, "{times:?}");
        }

        #[tokio::test(start_paused = true)]
        async fn a_wait_that_would_reach_the_deadline_is_refused_at_once() {
            let l = RateLimiter::adaptive();
            l.record(Instant::now(), true);
            let start = Instant::now();
            // The token comes at 2 s: a deadline at 2 s refuses, without waiting or taking.
            let refused = l.acquire(1, Some(start + Duration::from_secs(2))).await;
            assert_eq!(refused, Err(()));
            assert_eq!(start.elapsed(), Duration::ZERO);
            assert_close(l.capacity(), 0.0, "nothing taken");
            // A deadline 1 ms later lets it wait.
            let granted = l
                .acquire(1, Some(start + Duration::from_millis(2001)))
                .await;
            assert_eq!(granted, Ok(()));
            assert_eq!(start.elapsed(), Duration::from_secs(2));
        }

        #[tokio::test(start_paused = true)]
        async fn a_waiter_dropped_before_its_turn_holds_nothing() {
            let l = RateLimiter::adaptive();
            l.record(Instant::now(), true);
            let start = Instant::now();
            // A retry after throttling costs 10: 20 s at 0.5 per second. The caller gives up
            // after 1 s.
            let gave_up = tokio::time::timeout(Duration::from_secs(1), l.acquire(10, None)).await;
            assert!(gave_up.is_err());
            // Its 10 tokens are back: after 1 s of refill the bucket holds 0.5 of a token, so
            // the next first attempt waits 1 s, not 20.
            assert_close(l.capacity(), 0.5, "refund");
            l.acquire(1, None).await.expect("no deadline");
            assert_eq!(start.elapsed(), Duration::from_secs(2));
        }
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

    type Sent = Result<Option<Duration>, ()>;

    /// A fresh limiter whose flag and mutex the model's main thread has made.
    fn fresh() -> Arc<RateLimiter> {
        let l = Arc::new(RateLimiter::adaptive());
        let _ = (l.is_enabled(), l.snapshot());
        l
    }

    /// After a throttle at `t0` (fill rate 0.5 tokens/s, at most 1 token, the bucket empty),
    /// 2 s of refill make exactly one send token at `t0 + 2 s`.
    fn one_token(t0: Instant) -> Arc<RateLimiter> {
        let l = fresh();
        l.record(t0, true);
        l
    }

    #[test]
    fn loom_two_senders_never_take_the_same_token() {
        let runs = model(|| {
            let t0 = Instant::now();
            let l = one_token(t0);
            let t = t0 + Duration::from_secs(2);
            let send = || -> Box<dyn FnOnce() -> Sent + Send> {
                let l = l.clone();
                Box::new(move || l.try_send(1, t, None, false, || 0.0))
            };
            let outcomes = concurrently(vec![send(), send()]);
            let sent = outcomes.iter().filter(|o| **o == Ok(None)).count();
            assert_eq!(
                sent, 1,
                "exactly one caller gets the one token: {outcomes:?}"
            );
            // The other is told to wait the time one token takes at 0.5 per second.
            assert!(
                outcomes.contains(&Ok(Some(Duration::from_secs(2)))),
                "{outcomes:?}"
            );
            assert_eq!(l.snapshot().capacity, 0.0);
        });
        report("two senders, one token", runs);
    }

    #[test]
    fn loom_a_throttle_racing_a_send_leaves_the_limiter_enabled_at_the_throttled_rate() {
        let runs = model(|| {
            let t0 = Instant::now();
            let l = fresh();
            let (throttler, sender) = (l.clone(), l.clone());
            let mut out = concurrently::<Option<Sent>>(vec![
                Box::new(move || {
                    throttler.record(t0, true);
                    None
                }),
                Box::new(move || Some(sender.try_send(1, t0, None, false, || 0.0))),
            ]);
            let sent = out.pop().flatten().expect("the sender's outcome");
            // Before the throttle the limiter lets everything through; after it the bucket is
            // empty, so a send that saw it enabled is told to wait.
            assert!(
                sent == Ok(None) || sent == Ok(Some(Duration::from_secs(2))),
                "{sent:?}"
            );
            let s = l.snapshot();
            assert!(l.is_enabled() && s.enabled);
            assert_eq!((s.fill_rate, s.max_capacity), (0.5, 1.0));
            assert_eq!(s.capacity, 0.0, "no token was taken from the empty bucket");
        });
        report("throttle racing a send", runs);
    }

    /// What each of the three operations of the next model does, applied to `l`.
    fn op(l: &RateLimiter, which: usize, t: Instant) -> Option<Sent> {
        match which {
            0 => {
                l.record(t, false);
                None
            }
            1 => {
                l.record(t, true);
                None
            }
            _ => Some(l.try_send(1, t, None, false, || 0.0)),
        }
    }

    /// Every end state (and send outcome) the three operations can reach one after another.
    fn serial_outcomes(t0: Instant, t: Instant) -> Vec<(State, Sent)> {
        const ORDERS: [[usize; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        ORDERS
            .iter()
            .map(|order| {
                let l = one_token(t0);
                let sent = order
                    .iter()
                    .filter_map(|&which| op(&l, which, t))
                    .next()
                    .expect("one send");
                (l.snapshot(), sent)
            })
            .collect()
    }

    /// A success, a throttle and a send at the same instant, on three threads: whatever the
    /// interleaving, the limiter ends exactly as one of the six serial orders leaves it (every
    /// number of its state), and the send gets what it got in that order. An update that read
    /// the state, let the lock go and wrote it back would lose the other update and fail here.
    #[test]
    fn loom_concurrent_updates_and_a_send_are_each_atomic() {
        let runs = model(|| {
            let t0 = Instant::now();
            let t = t0 + Duration::from_secs(2);
            let l = one_token(t0);
            let ops = (0..3)
                .map(|which| -> Box<dyn FnOnce() -> Option<Sent> + Send> {
                    let l = l.clone();
                    Box::new(move || op(&l, which, t))
                })
                .collect();
            let sent = concurrently(ops)
                .into_iter()
                .flatten()
                .next()
                .expect("the sender's outcome");
            let got = (l.snapshot(), sent);
            let serial = serial_outcomes(t0, t);
            assert!(
                serial.contains(&got),
                "{got:?} is no serial order's outcome: {serial:?}"
            );
        });
        report("concurrent updates and a send", runs);
    }
}
