//! Latency estimates for hedged requests: a quantile of a function's recent successful
//! attempts, from which `hedge_after = "p95"` takes its delay.
//!
//! Hedging ("The Tail at Scale", Dean & Barroso, CACM 2013) sends a second copy of a request
//! when the first has not answered within a delay. Following the function's own p95 hedges
//! about one call in twenty, and only the slow ones; the estimate must therefore follow the
//! function's latency as it changes, and cost next to nothing, since every successful attempt
//! of a hedged function records into it.
//!
//! # Design: one log-linear histogram, halved every 1024 records
//!
//! [`Latency`] is 240 counters of a log-linear histogram (HdrHistogram's layout) and one tick
//! counter, all `AtomicU32`, and the last answer cached in an `AtomicU64` (a hedged call asks
//! for the quantile on each call; it is computed again every 32 records), and the function's
//! hedge budget (16 bytes, `hedge::budget`): 992 bytes, no heap,
//! built by `const fn` for a `static`.
//!
//! * Buckets. A latency is counted in units of 1024 ns (a shift, no division). Below 16 units
//!   each unit has its bucket; above, every power of two `[2^k, 2^(k+1))` is split into 8
//!   equal buckets. The range ends at `2^32` units, `2^42` ns (73 min 18 s); a latency below
//!   1024 ns lands in the first bucket, one at or above the end in the last.
//! * Answer. [`quantile`](Latency::quantile) returns the upper bound of the bucket holding the
//!   nearest rank, `ceil(percentile / 100 x n)`: never below the exact quantile of the samples
//!   weighing in, and at most 12.5 % above it (a bucket spans at most an eighth of its lower
//!   bound) for latencies of 8.192 µs and more; below that, at most 1.024 µs above it. An upper
//!   bound errs towards hedging later, that is towards fewer duplicate requests, never more.
//!   (Geometric buckets would give 9 % with the same count, but need a logarithm per record.)
//! * Decay by count. Every 1024th record halves every counter (rounding down, so a lone old
//!   sample goes at the first halving). In steady state between 1024 and 2048 samples weigh
//!   in, with weight `2^-k` after `k` halvings: no clock read in `record`, and a function's
//!   estimate moves as fast as its traffic brings evidence. A windowed pair of histograms
//!   (fill one while the other answers, swap) would cost twice the memory and make the
//!   estimate jump at each swap; decay by time would read a clock on every record.
//!
//! Following a shift, measured in records of the new distribution:
//!
//! * To slower latencies (the direction that would otherwise hedge nearly every call): the
//!   p95 moves into the new distribution once it weighs one twentieth of at most 2048, about
//!   110 records; the tests hold it within 160 at every phase of the halving cycle.
//! * To faster latencies: the old tail keeps the p95 up until it weighs under 5 %; after `k x
//!   1024` new records at least `k` halvings have passed and the old samples weigh at most
//!   `2^(1-k)` of the estimate, so 6 x 1024 = 6144 records bring the p95 within the error
//!   bound of the new distribution's (and after 12 halvings nothing old is left).
//!
//! # Cost and concurrency
//!
//! [`record`](Latency::record) computes the bucket (a leading-zero count and shifts) and does
//! two relaxed `fetch_add`s, one on the bucket and one on the tick counter; the record whose
//! tick is a multiple of 1024 then halves: one load per counter and a compare-and-swap per
//! non-empty one, under one nanosecond per record spread over the 1024.
//!
//! All accesses are `Relaxed`: the counts are an estimate and no invariant ties two counters
//! together (the total is summed from the buckets themselves, never kept apart, so it cannot
//! disagree with them). Each counter only changes by read-modify-writes, so its modification
//! order holds every increment and every halving: a halving is a compare-and-swap loop
//! (`fetch_update`) whose half is of the very value it replaces, so it loses no increment and
//! cannot wrap a count below zero (a `fetch_sub` of half a value read earlier could, and a
//! `store` of it would drop the records landing in between). A record concurrent with a
//! halving lands before it (and is halved) or after (and is not): it weighs 1 where it might
//! have weighed 1/2. Concurrent halvings (a halving preempted past the next 1024 records)
//! compose per counter, as the same halvings one after another would. A count stays within
//! about twice 1024 plus the records in flight, far from `u32::MAX`. A quantile reads the
//! counters one after another, so one answer can see a halving half done: its weights then
//! differ by at most a factor of two between the two parts of the range, for that answer.

use super::budget::Spend;
use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::time::Duration;

/// The samples that must weigh in an estimate before [`Latency::quantile`] answers.
///
/// Twenty is the fewest at which the p95 (the nearest rank, 19 of 20) is not simply the
/// slowest sample seen. A p99 read from fewer than 100 samples is the slowest one, which errs
/// towards hedging later. Once a function has run 20 successful attempts its estimate stays
/// answered: halvings keep more than 500 samples weighing in.
pub const MIN_SAMPLES: u64 = 20;

/// Records between two halvings of every count; a power of two, so that the tick counter may
/// wrap around.
const HALF_LIFE: u32 = 1024;

/// A latency is counted in units of `2^UNIT_SHIFT` ns (1.024 µs).
const UNIT_SHIFT: u32 = 10;

/// Each power of two of units (from 8 up) is split into `2^SUB_BITS` buckets.
const SUB_BITS: u32 = 3;

/// Latencies of `2^RANGE_BITS` units (`2^42` ns, 73 min 18 s) and more share the last bucket.
const RANGE_BITS: u32 = 32;

/// 16 buckets of one unit, then 8 per power of two from `2^4` to `2^31` units: 240.
const BUCKETS: usize = ((RANGE_BITS - SUB_BITS + 1) as usize) << SUB_BITS;

/// An estimate of the quantiles of a function's recent latencies, fed by its successful
/// attempts: the delay of `hedge_after = "p95"`.
///
/// A log-linear histogram whose counts halve every 1024 records, so that between 1024 and 2048
/// samples weigh in, the newest the most (see the module's documentation for the layout, the
/// decay and the error bound). Fixed-size atomics only: recording takes no lock and allocates
/// nothing, and `new` is a `const fn`, so an estimate lives in a `static`.
pub struct Latency {
    /// Per bucket, the weight of its samples.
    counts: [AtomicU32; BUCKETS],
    /// Records so far, modulo `2^32`: every `HALF_LIFE`th one halves the counts.
    ticks: AtomicU32,
    /// The last answer of [`quantile_cached`](Self::quantile_cached): the ticks it was
    /// computed at (high 32 bits), the percentile (bits 8 to 15), and its bucket plus one (low
    /// 8 bits; 0 for no answer yet).
    cache: AtomicU64,
    /// The function's hedge budget, for `hedge_budget` (its own module: `hedge::budget`).
    spend: Spend,
}

/// How many records a cached quantile stands for before it is computed again.
const REFRESH: u32 = 32;

impl Latency {
    /// An estimate with no sample.
    #[must_use]
    pub const fn new() -> Self {
        Latency {
            counts: [const { AtomicU32::new(0) }; BUCKETS],
            ticks: AtomicU32::new(0),
            cache: AtomicU64::new(0),
            spend: Spend::new(),
        }
    }

    /// The function's hedge budget, beside its estimate.
    pub(crate) fn spend(&self) -> &Spend {
        &self.spend
    }

    /// The delay the function's hedge budget (`hedge_budget`) steers to, before the bounds
    /// of `hedge_after` and `max_hedge_after` apply: `None` before its first call.
    #[must_use]
    pub fn budget_delay(&self) -> Option<Duration> {
        self.spend.raw()
    }

    /// Adds one latency to the estimate: two relaxed `fetch_add`s, and every 1024th record
    /// halves every count. Latencies below 1.024 µs and from 73 min 18 s up are clamped into
    /// the first and last buckets.
    pub fn record(&self, latency: Duration) {
        self.counts[bucket_of(latency)].fetch_add(1, Relaxed);
        if self.ticks.fetch_add(1, Relaxed).wrapping_add(1) % HALF_LIFE == 0 {
            self.halve();
        }
    }

    /// The latency under which `percentile` % of the samples weighing in fall: the upper
    /// bound of the bucket holding the nearest rank, at most 12.5 % above the exact quantile
    /// of those samples (1.024 µs above it under 8.192 µs), never below it. `None` while fewer
    /// than `MIN_SAMPLES` (20) weigh in.
    ///
    /// `percentile` is meant to be in `1..=99`; 0 is read as 1 (the fastest bucket) and
    /// anything above 100 as 100 (the slowest).
    #[must_use]
    pub fn quantile(&self, percentile: u8) -> Option<Duration> {
        self.quantile_bucket(percentile).map(upper_bound)
    }

    /// [`quantile`](Self::quantile), computed again only after every 32 records: a hedged
    /// call asks on each attempt, and walking the buckets each time would cost more than the
    /// rest of its success path. One load and a comparison while the answer stands.
    pub fn quantile_cached(&self, percentile: u8) -> Option<Duration> {
        let cache = self.cache.load(Relaxed);
        let ticks = self.ticks.load(Relaxed);
        let bucket = (cache & 0xff) as usize;
        if bucket != 0
            && ((cache >> 8) & 0xff) as u8 == percentile
            && ticks.wrapping_sub((cache >> 32) as u32) < REFRESH
        {
            return Some(upper_bound(bucket - 1));
        }
        self.refresh(percentile, ticks)
    }

    fn refresh(&self, percentile: u8, ticks: u32) -> Option<Duration> {
        let bucket = self.quantile_bucket(percentile)?;
        let word = (u64::from(ticks) << 32) | (u64::from(percentile) << 8) | (bucket as u64 + 1);
        self.cache.store(word, Relaxed);
        Some(upper_bound(bucket))
    }

    /// The bucket holding the nearest rank of `percentile`, once `MIN_SAMPLES` weigh in.
    fn quantile_bucket(&self, percentile: u8) -> Option<usize> {
        // One load per bucket: the rank and the walk then agree on the same counts.
        let counts: [u32; BUCKETS] = std::array::from_fn(|b| self.counts[b].load(Relaxed));
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total < MIN_SAMPLES {
            return None;
        }
        let rank = (total * u64::from(percentile.clamp(1, 100))).div_ceil(100);
        counts
            .iter()
            .scan(0u64, |below, &c| {
                *below += u64::from(c);
                Some(*below)
            })
            .position(|below| below >= rank)
    }

    /// The samples weighing in the estimate now, the sum of the halved counts: 0 before the
    /// first record, then up to 1024, then between about 1024 and 2048 once decay has set in.
    #[must_use]
    pub fn samples(&self) -> u64 {
        self.counts.iter().map(|c| u64::from(c.load(Relaxed))).sum()
    }

    /// Halves every count, rounding down. Each halving is a compare-and-swap loop on the value
    /// it replaces, so a concurrent record is kept (before the halving or after it) and no
    /// count can wrap.
    fn halve(&self) {
        for count in &self.counts {
            // `Err` is an empty bucket, left untouched (and its cache line clean).
            let _ = count.fetch_update(Relaxed, Relaxed, |c| (c != 0).then_some(c / 2));
        }
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl fmt::Debug for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latency")
            .field("samples", &self.samples())
            .field("p50", &self.quantile(50))
            .field("p95", &self.quantile(95))
            .field("p99", &self.quantile(99))
            .finish()
    }
}

/// The upper bound of a bucket, as a latency.
fn upper_bound(bucket: usize) -> Duration {
    Duration::from_nanos(bounds(bucket).1 << UNIT_SHIFT)
}

/// The bucket of a latency, clamped into the range.
fn bucket_of(latency: Duration) -> usize {
    let units = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX) >> UNIT_SHIFT;
    // The top bit's position, 0 for 0 and 1; the shift keeps the top `SUB_BITS + 1` bits, so
    // `units >> shift` is in `8..16` from 8 units up (and the units themselves below).
    let top = u64::BITS - 1 - (units | 1).leading_zeros();
    let shift = top.saturating_sub(SUB_BITS);
    let bucket = ((shift as usize) << SUB_BITS) + (units >> shift) as usize;
    bucket.min(BUCKETS - 1)
}

/// A bucket's first unit and the first unit past it.
const fn bounds(bucket: usize) -> (u64, u64) {
    let shift = (bucket >> SUB_BITS).saturating_sub(1);
    let mantissa = (bucket - (shift << SUB_BITS)) as u64;
    (mantissa << shift, (mantissa + 1) << shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread;

    /// splitmix64: deterministic samples without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Uniform in `[0, 1)`.
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }

        /// Uniform in `[lo, hi)` nanoseconds.
        fn uniform(&mut self, lo: Duration, hi: Duration) -> Duration {
            let (lo, hi) = (lo.as_nanos() as u64, hi.as_nanos() as u64);
            Duration::from_nanos(lo + self.next() % (hi - lo))
        }

        /// Log-normal: `median x e^(sigma x N(0, 1))` (Box-Muller).
        fn log_normal(&mut self, median: Duration, sigma: f64) -> Duration {
            let (u1, u2) = (1.0 - self.unit(), self.unit());
            let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            median.mul_f64((sigma * normal).exp())
        }
    }

    /// The nearest-rank quantile of `samples`.
    fn exact(samples: &[Duration], percentile: u8) -> Duration {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let rank = (sorted.len() as u64 * u64::from(percentile)).div_ceil(100);
        sorted[rank as usize - 1]
    }

    /// The stated bound: above the exact quantile, by at most an eighth of it from 8.192 µs
    /// up and at most 1.024 µs below that.
    fn assert_within_bound(estimate: Duration, exact: Duration, what: &str) {
        let (e, x) = (estimate.as_nanos(), exact.as_nanos());
        assert!(
            e > x,
            "{what}: {estimate:?} is not above the exact {exact:?}"
        );
        if x >= 8 << UNIT_SHIFT {
            assert!(8 * e <= 9 * x, "{what}: {estimate:?} > 9/8 x {exact:?}");
        } else {
            assert!(
                e - x <= 1 << UNIT_SHIFT,
                "{what}: {estimate:?} - {exact:?} > 1.024 µs"
            );
        }
    }

    /// Records `samples` (fewer than `HALF_LIFE`, so that none decays) and checks the usual
    /// percentiles against their exact values.
    fn assert_accurate(samples: &[Duration], what: &str) {
        assert!(samples.len() < HALF_LIFE as usize);
        let latency = Latency::new();
        for &s in samples {
            latency.record(s);
        }
        assert_eq!(latency.samples(), samples.len() as u64);
        for p in [1, 10, 50, 90, 95, 99] {
            let estimate = latency.quantile(p).unwrap();
            assert_within_bound(estimate, exact(samples, p), &format!("{what} p{p}"));
        }
    }

    #[test]
    fn buckets_tile_the_range_with_the_stated_widths() {
        assert_eq!(BUCKETS, 240);
        assert_eq!(bounds(0), (0, 1));
        assert_eq!(bounds(BUCKETS - 1).1, 1 << RANGE_BITS);
        for b in 1..BUCKETS {
            let (lo, hi) = bounds(b);
            assert_eq!(
                lo,
                bounds(b - 1).1,
                "bucket {b} starts where {} ends",
                b - 1
            );
            if lo >= 8 {
                assert!(
                    8 * (hi - lo) <= lo,
                    "bucket {b}: [{lo}, {hi}) wider than lo / 8"
                );
            } else {
                assert_eq!(hi - lo, 1);
            }
        }
        // Every unit below 4096, and the units around each power of two, land in the bucket
        // whose bounds hold them.
        let edges = (0..RANGE_BITS).flat_map(|k| {
            let p = 1u64 << k;
            [p - 1, p, p + 1, p + p / 2]
        });
        for units in (0..4096).chain(edges) {
            let b = bucket_of(Duration::from_nanos(units << UNIT_SHIFT));
            let (lo, hi) = bounds(b);
            assert!(
                lo <= units && units < hi,
                "{units} units in bucket {b}: [{lo}, {hi})"
            );
            // Nanoseconds within the unit land in the same bucket.
            let last = Duration::from_nanos((units << UNIT_SHIFT) + (1 << UNIT_SHIFT) - 1);
            assert_eq!(bucket_of(last), b);
        }
    }

    #[test]
    fn none_before_min_samples() {
        let latency = Latency::new();
        assert_eq!(latency.quantile(95), None);
        assert_eq!(latency.samples(), 0);
        for n in 1..MIN_SAMPLES {
            latency.record(Duration::from_millis(n));
            assert_eq!(latency.quantile(50), None, "after {n} samples");
            assert_eq!(latency.samples(), n);
        }
        latency.record(Duration::from_millis(20));
        let p95 = latency.quantile(95).unwrap();
        // The 19th of 1..=20 ms.
        assert_within_bound(p95, Duration::from_millis(19), "p95 of 20");
    }

    #[test]
    fn uniform_within_the_bound() {
        let mut rng = Rng(1);
        let samples: Vec<_> = (0..1000)
            .map(|_| rng.uniform(Duration::from_millis(1), Duration::from_millis(100)))
            .collect();
        assert_accurate(&samples, "uniform 1..100 ms");
    }

    #[test]
    fn heavy_tailed_log_normal_within_the_bound() {
        let mut rng = Rng(2);
        let samples: Vec<_> = (0..1000)
            .map(|_| rng.log_normal(Duration::from_millis(20), 1.5))
            .collect();
        // The tail spans a few powers of ten.
        assert!(exact(&samples, 99) > 20 * exact(&samples, 10));
        assert_accurate(&samples, "log-normal");
        let mut rng = Rng(3);
        let microseconds: Vec<_> = (0..1000)
            .map(|_| rng.log_normal(Duration::from_micros(30), 1.0))
            .collect();
        assert_accurate(&microseconds, "log-normal around 30 µs");
    }

    #[test]
    fn bimodal_p50_fast_p99_slow() {
        // Every 20th call is slow: 5 % at 200..400 ms, 95 % at 2..4 ms.
        let mut rng = Rng(4);
        let samples: Vec<_> = (0..1000)
            .map(|i| match i % 20 {
                0 => rng.uniform(Duration::from_millis(200), Duration::from_millis(400)),
                _ => rng.uniform(Duration::from_millis(2), Duration::from_millis(4)),
            })
            .collect();
        assert_accurate(&samples, "bimodal");
        let latency = Latency::new();
        for &s in &samples {
            latency.record(s);
        }
        let (p50, p99) = (latency.quantile(50).unwrap(), latency.quantile(99).unwrap());
        assert!(p50 > Duration::from_millis(2) && p50 <= Duration::from_millis(4) * 9 / 8);
        assert!(p99 > Duration::from_millis(200) && p99 <= Duration::from_millis(400) * 9 / 8);
        // The 950th of 1000 is the slowest fast one.
        assert!(latency.quantile(95).unwrap() <= Duration::from_millis(4) * 9 / 8);
    }

    #[test]
    fn decayed_estimate_of_a_steady_distribution() {
        // Long past the first halving, the samples weighing in still follow the distribution:
        // uniform 10..20 ms has p50 15 ms and p95 19.5 ms.
        let latency = Latency::new();
        let mut rng = Rng(5);
        for _ in 0..200_000 {
            latency.record(rng.uniform(Duration::from_millis(10), Duration::from_millis(20)));
            let samples = latency.samples();
            assert!(samples <= 2 * u64::from(HALF_LIFE), "{samples} samples");
        }
        assert!(latency.samples() >= u64::from(HALF_LIFE) * 3 / 4);
        for (p, truth) in [(50, 15.0), (95, 19.5)] {
            let ms = latency.quantile(p).unwrap().as_secs_f64() * 1000.0;
            assert!(
                ms >= truth * 0.98 && ms <= truth * 1.125 * 1.02,
                "p{p}: {ms} ms"
            );
        }
    }

    /// Records `n` uniform samples in `[lo, hi)` ms.
    fn feed(latency: &Latency, rng: &mut Rng, n: usize, lo: u64, hi: u64) {
        for _ in 0..n {
            latency.record(rng.uniform(Duration::from_millis(lo), Duration::from_millis(hi)));
        }
    }

    #[test]
    fn decay_follows_a_shift_to_slower() {
        // At every phase of the halving cycle: 160 records of 100..200 ms after 1..2 ms ones
        // put the p95 among them; 6144 put it within the bound of theirs (195 ms).
        for phase in (0..HALF_LIFE as usize).step_by(61) {
            let latency = Latency::new();
            let mut rng = Rng(phase as u64);
            feed(&latency, &mut rng, 10_000 + phase, 1, 2);
            assert!(latency.quantile(95).unwrap() <= Duration::from_millis(3));
            feed(&latency, &mut rng, 160, 100, 200);
            let p95 = latency.quantile(95).unwrap();
            assert!(p95 > Duration::from_millis(100), "phase {phase}: {p95:?}");
            feed(&latency, &mut rng, 6144 - 160, 100, 200);
            let p95 = latency.quantile(95).unwrap().as_secs_f64() * 1000.0;
            assert!(
                (195.0 * 0.98..=195.0 * 1.125).contains(&p95),
                "phase {phase}: {p95} ms"
            );
        }
    }

    #[test]
    fn decay_follows_a_shift_to_faster() {
        // At every phase of the halving cycle: 6144 records of 1..2 ms after 100..200 ms ones
        // bring the p95 within the bound of theirs (1.95 ms).
        for phase in (0..HALF_LIFE as usize).step_by(61) {
            let latency = Latency::new();
            let mut rng = Rng(phase as u64);
            feed(&latency, &mut rng, 10_000 + phase, 100, 200);
            feed(&latency, &mut rng, 1024, 1, 2);
            // One halving is not enough: the old tail still weighs more than 5 %.
            assert!(latency.quantile(95).unwrap() > Duration::from_millis(100));
            feed(&latency, &mut rng, 6144 - 1024, 1, 2);
            let p95 = latency.quantile(95).unwrap().as_secs_f64() * 1000.0;
            assert!(
                (1.95 * 0.98..=1.95 * 1.125).contains(&p95),
                "phase {phase}: {p95} ms"
            );
        }
    }

    #[test]
    fn concurrent_records_below_the_half_life_are_all_counted() {
        let latency = Arc::new(Latency::new());
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let latency = Arc::clone(&latency);
                thread::spawn(move || {
                    for i in 0..125 {
                        latency.record(Duration::from_micros(100 * t + i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(latency.samples(), 1000);
    }

    #[test]
    fn concurrent_records_and_halvings_stay_sane() {
        static LATENCY: Latency = Latency::new();
        let (lo, hi) = (Duration::from_micros(50), Duration::from_millis(500));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let done = Arc::clone(&done);
            thread::spawn(move || {
                let mut reads = 0u64;
                while !done.load(Ordering::Relaxed) || reads == 0 {
                    // A wrapped count would show as billions of samples.
                    let samples = LATENCY.samples();
                    assert!(samples <= 16 * u64::from(HALF_LIFE), "{samples} samples");
                    if let Some(p) = LATENCY.quantile(95) {
                        assert!(p > lo && p <= hi * 9 / 8, "p95 {p:?}");
                    }
                    reads += 1;
                }
            })
        };
        let writers: Vec<_> = (0..8u64)
            .map(|t| {
                thread::spawn(move || {
                    let mut rng = Rng(t);
                    for _ in 0..50_000 {
                        LATENCY.record(rng.uniform(lo, hi));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap();
        // 400 000 records: the last one halved, leaving about 1024.
        let samples = LATENCY.samples();
        assert!(
            (512..=2 * u64::from(HALF_LIFE)).contains(&samples),
            "{samples}"
        );
        let p50 = LATENCY.quantile(50).unwrap().as_secs_f64() * 1000.0;
        assert!(
            (0.9 * 250.0..=1.125 * 1.1 * 250.0).contains(&p50),
            "p50 {p50} ms"
        );
    }

    #[test]
    fn extreme_values_clamp() {
        let first = Duration::from_nanos(1 << UNIT_SHIFT);
        let last = Duration::from_nanos(1 << (RANGE_BITS + UNIT_SHIFT));
        let cases = [
            (Duration::ZERO, first),
            (Duration::from_nanos(1), first),
            (Duration::from_nanos(1023), first),
            (Duration::from_secs(4398), last),
            (Duration::from_secs(2 * 3600), last),
            (Duration::from_nanos(u64::MAX), last),
            (Duration::from_secs(u64::MAX), last),
            (Duration::MAX, last),
        ];
        for (value, expected) in cases {
            let latency = Latency::new();
            for _ in 0..MIN_SAMPLES {
                latency.record(value);
            }
            for p in [0, 1, 50, 99, 100, 255] {
                assert_eq!(latency.quantile(p), Some(expected), "{value:?} p{p}");
            }
        }
        assert_eq!(bucket_of(Duration::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(Duration::ZERO), 0);
    }

    #[test]
    fn out_of_range_percentiles_clamp() {
        let latency = Latency::new();
        for ms in 1..=100 {
            latency.record(Duration::from_millis(ms));
        }
        assert_eq!(latency.quantile(0), latency.quantile(1));
        assert_eq!(latency.quantile(255), latency.quantile(100));
        assert_within_bound(latency.quantile(1).unwrap(), Duration::from_millis(1), "p1");
        assert_within_bound(
            latency.quantile(100).unwrap(),
            Duration::from_millis(100),
            "max",
        );
    }

    #[test]
    fn the_cached_quantile_is_the_quantile_of_at_most_32_records_ago() {
        let l = Latency::new();
        for _ in 0..100 {
            l.record(Duration::from_millis(10));
        }
        let first = l.quantile_cached(95);
        assert_eq!(first, l.quantile(95));
        // Slower records move the quantile, but the cache stands for 31 more records.
        for _ in 0..31 {
            l.record(Duration::from_secs(1));
        }
        assert_eq!(l.quantile_cached(95), first);
        assert_ne!(l.quantile(95), first);
        l.record(Duration::from_secs(1));
        assert_eq!(
            l.quantile_cached(95),
            l.quantile(95),
            "32 records: computed again"
        );
        // Another percentile is computed at once.
        assert_eq!(l.quantile_cached(50), l.quantile(50));
        assert_eq!(Latency::new().quantile_cached(95), None);
    }

    #[test]
    fn fixed_size_without_heap_and_usable_in_a_static() {
        fn shared<T: Send + Sync>() {}
        shared::<Latency>();
        // No drop glue: nothing on the heap (no `Vec`, no `Box`), so recording allocates
        // nothing.
        assert!(!std::mem::needs_drop::<Latency>());
        assert_eq!(std::mem::size_of::<Latency>(), 992);
        static STATIC: Latency = Latency::new();
        STATIC.record(Duration::from_millis(1));
        assert_eq!(STATIC.samples(), 1);
        assert_eq!(Latency::default().samples(), 0);
        let debug = format!("{:?}", Latency::new());
        assert_eq!(
            debug,
            "Latency { samples: 0, p50: None, p95: None, p99: None }"
        );
    }

    #[test]
    fn halving_rounds_down_and_keeps_the_rest() {
        let latency = Latency::new();
        // 1023 records: 3 in one bucket, 1 in another, 1019 in a third; the 1024th halves.
        latency.record(Duration::from_millis(1));
        latency.record(Duration::from_millis(1));
        latency.record(Duration::from_millis(1));
        latency.record(Duration::from_secs(1));
        for _ in 0..1019 {
            latency.record(Duration::from_millis(10));
        }
        assert_eq!(latency.samples(), 1023);
        latency.record(Duration::from_millis(10));
        // 3 -> 1, 1 -> 0, 1020 -> 510.
        assert_eq!(latency.samples(), 511);
        let one_ms = bucket_of(Duration::from_millis(1));
        assert_eq!(latency.counts[one_ms].load(Relaxed), 1);
        assert_eq!(
            latency.quantile(100).unwrap(),
            latency.quantile(99).unwrap()
        );
        assert!(latency.quantile(100).unwrap() < Duration::from_millis(12));
    }
}
