//! Property run of `AdaptiveConcurrency` over a million random operations: admissions of every
//! kind, settled in a random order with random outcomes and latencies (zero, `Duration::MAX`,
//! a clock that does not move, and everything between), and the draws its admissions below one
//! attempt use. After each operation: the count is the admissions not yet settled, the limit is
//! within [1, 10,000] attempts, and the count never passes the limit rounded up but by the
//! admissions made before the limit came down. At the end every admission is settled and the
//! count is 0.
//!
//! Operations: 1,000,000, or `RETRY_LIMIT_CASES`.

use retry_runtime::{
    AdaptiveConcurrency, Admit, AttemptKind, ErrorClass, Guard, GuardContext, GuardOutcome,
};
use std::time::Duration;

fn cases() -> u64 {
    std::env::var("RETRY_LIMIT_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// xorshift64*: the run is the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn latency(rng: &mut Rng) -> Duration {
    match rng.below(10) {
        0 => Duration::ZERO,
        1 => Duration::MAX,
        2 => Duration::from_nanos(rng.next()),
        3..=5 => Duration::from_micros(10_000 + rng.below(5_000)),
        _ => Duration::from_micros(10_000 + rng.below(200_000)),
    }
}

#[test]
fn every_admission_is_settled_and_the_limit_stays_within_its_bounds() {
    let g = AdaptiveConcurrency::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut open: Vec<AttemptKind> = Vec::new();
    let (mut admitted, mut refused) = (0u64, 0u64);
    let draws = std::cell::Cell::new(0u64);
    let draw = || {
        draws.set(
            draws
                .get()
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
        (draws.get() >> 11) as f64 / (1u64 << 53) as f64
    };
    // Phases of a few thousand operations each: a stalled clock, a flat latency, a queue, an
    // outage, and everything at random.
    for i in 0..cases() {
        let phase = (i / 4096) % 5;
        let settle = !open.is_empty() && rng.below(100) < 48 + 4 * (open.len() as u64).min(4);
        if settle {
            let kind = open.swap_remove(rng.below(open.len() as u64) as usize);
            let elapsed = match phase {
                0 => Duration::ZERO,
                1 => Duration::from_millis(20),
                2 => Duration::from_millis(20 + 5 * open.len() as u64),
                _ => latency(&mut rng),
            };
            let outcome = match (phase, rng.below(20)) {
                (3, _) => GuardOutcome::Failure(ErrorClass::Transient),
                (_, 0) => GuardOutcome::Cancelled,
                (_, 1) => GuardOutcome::Failure(ErrorClass::Timeout),
                (_, 2) => GuardOutcome::Failure(ErrorClass::Throttling),
                (4, 3) => GuardOutcome::Failure(ErrorClass::NotSent),
                (4, 4) => GuardOutcome::Failure(ErrorClass::Permanent),
                _ => GuardOutcome::Success,
            };
            let cx = GuardContext::new(kind, 1).with_elapsed(elapsed);
            g.settle(&cx, outcome);
        } else {
            let kind = match rng.below(3) {
                0 => AttemptKind::First,
                1 => AttemptKind::Retry,
                _ => AttemptKind::Hedge,
            };
            let cx = GuardContext::new(kind, 1).with_random(&draw);
            let before = g.limit();
            match g.admit(&cx) {
                Admit::Go => {
                    assert!(
                        open.len() < before as usize,
                        "operation {i}: admitted with {} in flight at a limit of {before}",
                        open.len()
                    );
                    open.push(kind);
                    admitted += 1;
                }
                Admit::Refuse => refused += 1,
                Admit::Wait(d) => panic!("operation {i}: it never asks to wait ({d:?})"),
            }
        }
        assert_eq!(g.in_flight() as usize, open.len(), "operation {i}");
        assert!(
            (1..=10_000).contains(&g.limit()),
            "operation {i}: {}",
            g.limit()
        );
    }
    for kind in open.drain(..) {
        g.settle(&GuardContext::new(kind, 1), GuardOutcome::Cancelled);
    }
    assert_eq!(g.in_flight(), 0);
    assert!(
        admitted > refused / 100 && refused > 0,
        "{admitted} admitted, {refused} refused"
    );
    eprintln!(
        "every_admission_is_settled_and_the_limit_stays_within_its_bounds: {} operations, \
         {admitted} admitted, {refused} refused, limit {} at the end",
        cases(),
        g.limit()
    );
}
