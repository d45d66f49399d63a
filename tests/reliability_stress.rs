//! Stress: 100,000 concurrent calls of `#[retry]` functions sharing one named partition, on a
//! two-worker runtime, with injected failures of every class. Every call ends, no call runs
//! more than `max_attempts` attempts, the shared bucket ends where the calls' accounting says
//! it must, and the heap comes back to where it was: a counting allocator measures the peak
//! bytes per in-flight call and checks nothing is left behind.
//!
//! The bucket gives +1 for a first-attempt success, clipped at capacity, so under concurrency
//! its final level is bounded rather than fixed: with `kept` the costs of retries whose attempt
//! failed and `rewards` the first-attempt successes,
//! `capacity - kept <= level <= min(capacity, capacity - kept + rewards)`.
//! (Each reward adds at most 1; a clip only ever removes tokens above capacity.)
//!
//! Then the same calls run again on a bucket without reward (capacity 20,000, drained by the
//! retries mid-run, so takes are refused under contention): there nothing clips, and the level
//! must be exactly `capacity - kept`.
//!
//! `RETRY_STRESS_CALLS` changes the number of calls (100,000 by default).
//!
//! Last, 100,000 policies built at run time, each with guards it owns (`Policy::guard_shared`),
//! a breaker and a budget of its own, are called once and dropped: the heap stays flat, and
//! every guard is released.

use retry_runtime::{
    Admit, Bulkhead, Classify, ErrorClass, Guard, GuardContext, GuardOutcome, Partition, Policy,
    TokenBucket, retry,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The tests measure the whole process's heap: they run one at a time.
static ALONE: Mutex<()> = Mutex::new(());

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// Counts the bytes the process holds on the heap, and their peak.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                + (new_size - layout.size());
            PEAK.fetch_max(live, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The error of these calls: one byte, not the tests' shared `TestError`, so that the heap
/// measured per in-flight call is that of a call with a minimal error (RELIABILITY.md's figures).
#[derive(Debug)]
struct Fault(ErrorClass);

impl Classify for Fault {
    fn classify(&self) -> ErrorClass {
        self.0
    }
}

/// One call's injected outcomes, and how many attempts it ran.
struct Plan {
    outcomes: [Option<ErrorClass>; 3],
    attempts: AtomicU32,
}

impl Plan {
    /// A deterministic mix: about 30 % of attempts fail, over all classes.
    fn new(i: u64) -> Plan {
        let pick = |k: u64| {
            let h = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ k.wrapping_mul(0xbf58_476d_1ce4_e5b9))
                .rotate_left(29)
                .wrapping_mul(0x94d0_49bb_1331_11eb);
            match (h >> 40) % 20 {
                0..=2 => Some(ErrorClass::Transient),
                3 => Some(ErrorClass::Throttling),
                4 => Some(ErrorClass::Timeout),
                5 => Some(ErrorClass::NotSent),
                // Half a percent permanent.
                6 if h % 10 == 0 => Some(ErrorClass::Permanent),
                _ => None,
            }
        };
        Plan {
            outcomes: [pick(1), pick(2), pick(3)],
            attempts: AtomicU32::new(0),
        }
    }

    async fn attempt(&self) -> Result<u32, Fault> {
        let n = self.attempts.fetch_add(1, Ordering::Relaxed);
        tokio::task::yield_now().await;
        match self.outcomes[n as usize] {
            Some(class) => Err(Fault(class)),
            None => Ok(n + 1),
        }
    }

    /// The costs this call's failed retries kept, and whether it earned the success reward.
    fn accounting(&self) -> (u64, u64) {
        let cost = |c: ErrorClass| u64::from(TokenBucket::standard().cost(c));
        let attempts = self.attempts.load(Ordering::Relaxed) as usize;
        let mut kept = 0;
        for m in 1..attempts {
            // Attempt m + 1 (index m) is a retry paid for by the class of attempt m.
            if self.outcomes[m].is_some() {
                kept += cost(self.outcomes[m - 1].expect("a retry follows a failure"));
            }
        }
        (kept, u64::from(self.outcomes[0].is_none()))
    }

    /// The costs this call's failed retries would keep if the bucket never refused: it retries
    /// every non-permanent failure up to its third attempt.
    fn unrefused_demand(&self) -> u64 {
        let cost = |c: ErrorClass| u64::from(TokenBucket::standard().cost(c));
        let mut kept = 0;
        for m in 1..3 {
            match self.outcomes[m - 1] {
                Some(class) if class != ErrorClass::Permanent => {
                    if self.outcomes[m].is_some() {
                        kept += cost(class);
                    }
                }
                _ => break,
            }
        }
        kept
    }
}

#[retry(
    partition = "stress",
    max_attempts = 3,
    initial_backoff = "1ms",
    max_backoff = "2ms"
)]
async fn first(plan: Arc<Plan>) -> Result<u32, Fault> {
    plan.attempt().await
}

#[retry(
    partition = "stress",
    max_attempts = 3,
    initial_backoff = "500us",
    jitter = "equal"
)]
async fn second(plan: Arc<Plan>) -> Result<u32, Fault> {
    plan.attempt().await
}

static DRAINING: TokenBucket = TokenBucket::standard()
    .with_capacity(20_000)
    .with_success_reward(0);

#[retry(bucket = DRAINING, max_attempts = 3, initial_backoff = "1ms")]
async fn drained(plan: Arc<Plan>) -> Result<u32, Fault> {
    plan.attempt().await
}

/// What a run of concurrent calls did.
struct Run {
    kept: u64,
    rewards: u64,
    level: u64,
    capacity: u64,
    /// Calls that stopped on a retryable failure before their last attempt: the bucket refused.
    refused: u64,
    /// What the failed retries would have kept had the bucket refused nothing.
    demand: u64,
}

#[test]
fn a_hundred_thousand_concurrent_calls_on_one_partition() {
    let _alone = ALONE.lock().unwrap_or_else(PoisonError::into_inner);
    let calls: u64 = std::env::var("RETRY_STRESS_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();

    let shared = Partition::named("stress").bucket();
    let run = stress(&rt, calls, shared, |i, plan| {
        if i % 2 == 0 {
            tokio::spawn(first(plan))
        } else {
            tokio::spawn(second(plan))
        }
    });
    let Run {
        kept,
        rewards,
        level,
        capacity,
        ..
    } = run;
    assert!(
        capacity.saturating_sub(kept) <= level
            && level <= capacity.min((capacity + rewards).saturating_sub(kept)),
        "level {level} outside [{capacity} - {kept}, min({capacity}, {capacity} - {kept} + {rewards})]"
    );

    let run = stress(&rt, calls, &DRAINING, |_, plan| tokio::spawn(drained(plan)));
    // How far the bucket falls depends on how the tasks interleave (a retry that later succeeds
    // holds its cost meanwhile); that it ran dry does not: had no take been refused, the failed
    // retries would have kept more than the bucket holds.
    if run.demand > run.capacity {
        assert!(
            run.refused > 0,
            "the retries ({} tokens kept without refusal) never found the bucket short",
            run.demand
        );
    }
    assert_eq!(
        run.level,
        run.capacity - run.kept,
        "no reward, so nothing clips"
    );
}

/// Runs `calls` concurrent calls spawned by `spawn` on `bucket`; checks every call and the
/// heap, and returns the accounting.
fn stress(
    rt: &tokio::runtime::Runtime,
    calls: u64,
    bucket: &TokenBucket,
    spawn: impl Fn(usize, Arc<Plan>) -> tokio::task::JoinHandle<Result<u32, Fault>>,
) -> Run {
    let capacity = u64::from(bucket.capacity());
    let plans: Vec<Arc<Plan>> = (0..calls).map(|i| Arc::new(Plan::new(i))).collect();

    // Warm up what lives for the process (the partition, the runtime's workers and timer).
    rt.block_on(async { tokio::time::sleep(std::time::Duration::from_millis(1)).await });
    let baseline = LIVE.load(Ordering::Relaxed);
    PEAK.store(baseline, Ordering::Relaxed);

    let results: Vec<Result<u32, ErrorClass>> = rt.block_on(async {
        let handles: Vec<_> = plans
            .iter()
            .enumerate()
            .map(|(i, plan)| spawn(i, plan.clone()))
            .collect();
        let mut results = Vec::with_capacity(handles.len());
        for h in handles {
            results.push(h.await.expect("no call panics").map_err(|e| e.0));
        }
        results
    });
    let peak = PEAK.load(Ordering::Relaxed) - baseline;

    let (mut kept, mut rewards, mut attempts, mut retries) = (0, 0, 0u64, 0u64);
    let (mut refused, mut demand) = (0u64, 0u64);
    for (plan, result) in plans.iter().zip(&results) {
        let n = plan.attempts.load(Ordering::Relaxed);
        assert!((1..=3).contains(&n), "{n} attempts");
        attempts += u64::from(n);
        retries += u64::from(n - 1);
        // The call returns what its last attempt answered.
        match plan.outcomes[n as usize - 1] {
            None => assert_eq!(*result, Ok(n)),
            Some(class) => assert_eq!(*result, Err(class)),
        }
        let (k, r) = plan.accounting();
        kept += k;
        rewards += r;
        demand += plan.unrefused_demand();
        if n < 3 && plan.outcomes[n as usize - 1].is_some_and(|c| c != ErrorClass::Permanent) {
            refused += 1;
        }
    }
    let level = u64::from(bucket.available());
    eprintln!(
        "{calls} calls, {attempts} attempts, {retries} retries; bucket {level} of {capacity}: \
         kept {kept}, rewards {rewards}; {refused} calls refused a retry; \
         peak heap {peak} bytes ({} per call)",
        peak / usize::try_from(calls).unwrap()
    );
    assert!(
        retries > 0 && kept > 0,
        "failures were injected and retried"
    );
    assert!(level <= capacity);

    // Bounded memory: a call in flight costs its task (the future plus tokio's header) and its
    // handle, and nothing stays behind once they are done.
    let per_call = peak / usize::try_from(calls).unwrap();
    assert!(per_call < 2048, "{per_call} bytes per in-flight call");
    drop(results);
    let left = LIVE.load(Ordering::Relaxed).saturating_sub(baseline);
    assert!(
        left < 64 * 1024,
        "{left} bytes still held after every call ended"
    );
    Run {
        kept,
        rewards,
        level,
        capacity,
        refused,
        demand,
    }
}

/// Guards dropped, of those [`Owned`] made.
static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// A guard built at run time, one per policy, that counts its drops.
struct Owned {
    admitted: AtomicU32,
}

impl Guard for Owned {
    fn admit(&self, _: &GuardContext<'_>) -> Admit {
        self.admitted.fetch_add(1, Ordering::Relaxed);
        Admit::Go
    }

    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}
}

impl Drop for Owned {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_hundred_thousand_policies_with_owned_guards_leave_nothing_behind() {
    let _alone = ALONE.lock().unwrap_or_else(PoisonError::into_inner);
    const POLICIES: usize = 100_000;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // One guard every policy shares, and one of each policy's own.
    let shared = Arc::new(Bulkhead::new(8));
    let one = |i: usize| {
        let own = Arc::new(Owned {
            admitted: AtomicU32::new(0),
        });
        let policy = Policy::new()
            .max_attempts(2)
            .breaker("50%")
            .budget("20%")
            .guard_shared(Arc::clone(&shared))
            .guard_shared(Arc::clone(&own));
        let out = rt.block_on(policy.retry(|| async { Ok::<_, std::io::Error>(i) }));
        assert_eq!(out.unwrap(), i);
        assert_eq!(own.admitted.load(Ordering::Relaxed), 1);
        drop(policy);
        assert_eq!(Arc::strong_count(&own), 1, "the policy released its guard");
    };
    // Warm up what lives for the process (the explained settings, the runtime's timer).
    one(0);
    let baseline = LIVE.load(Ordering::Relaxed);
    PEAK.store(baseline, Ordering::Relaxed);
    let dropped = DROPPED.load(Ordering::Relaxed);
    for i in 1..=POLICIES {
        one(i);
    }
    let peak = PEAK.load(Ordering::Relaxed) - baseline;
    let left = LIVE.load(Ordering::Relaxed).saturating_sub(baseline);
    eprintln!("{POLICIES} policies: peak heap {peak} bytes over the first's, {left} left");
    assert_eq!(DROPPED.load(Ordering::Relaxed) - dropped, POLICIES);
    assert_eq!(Arc::strong_count(&shared), 1, "every policy released it");
    assert_eq!(shared.in_flight(), 0);
    // A leak of a byte per policy would be 100 KB; what the test harness's other threads
    // allocate meanwhile (another test's start) stays far below the bound.
    assert!(peak < 64 * 1024, "{peak} bytes at the peak: memory grew");
    assert!(
        left < 64 * 1024,
        "{left} bytes still held after every policy was dropped"
    );
}
