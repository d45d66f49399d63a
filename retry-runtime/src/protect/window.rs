//! The sliding window a retry budget and a circuit breaker count in: ten slots, each one atomic
//! word per counter tagged with the slot's number since the window's first use. A counter whose
//! tag is not the current slot's is restarted at its first use, and a sum over the window counts
//! only tags of its last ten slots, so the window slides by a tenth of its length and nothing
//! needs sweeping.

use crate::protect::sync::atomic::{AtomicU64, Ordering};
use crate::runtime::Instant;
use std::sync::OnceLock;
use std::time::Duration;

/// The slots of a window: the window slides by one slot at a time.
pub(crate) const SLOTS: usize = 10;

/// A window of at least 10 ms: its slots are a tenth of it.
pub(crate) const fn shortest_window(window: Duration) -> Duration {
    if window.as_millis() < 10 {
        Duration::from_millis(10)
    } else {
        window
    }
}

/// The number of the slot of `window` that `now` falls in, counted from `epoch` (set by the
/// first look at the clock).
pub(crate) fn slot(epoch: &OnceLock<Instant>, window: Duration, now: Instant) -> u64 {
    let epoch = *epoch.get_or_init(|| now);
    let slot_ns = (window.as_nanos() / SLOTS as u128).max(1);
    u64::try_from(now.saturating_duration_since(epoch).as_nanos() / slot_ns).unwrap_or(u64::MAX)
}

/// The tag of slot `slot` (its number, 32 bits: slots a multiple of 2^32 apart share a tag,
/// centuries apart for any window of 10 ms or more).
fn tag(slot: u64) -> u64 {
    slot & 0xffff_ffff
}

/// Adds 1 to the counter of `slot`, restarting it if it still counts an older slot. A caller
/// that read the clock before another restarted the counter for a newer slot counts there
/// (a moment late), and never turns the counter back to its own, older slot: that would drop
/// the newer slot's counts.
pub(crate) fn add(counters: &[AtomicU64; SLOTS], slot: u64) {
    let c = &counters[(slot % SLOTS as u64) as usize];
    let want = tag(slot);
    let mut cur = c.load(Ordering::Relaxed);
    loop {
        let seen = cur >> 32;
        // Tags compare by their wrapping distance: a positive one is a newer slot.
        let newer = (seen.wrapping_sub(want) as u32 as i32) > 0;
        let next = if seen == want || newer {
            // Saturating: the count never carries into the tag.
            if cur & 0xffff_ffff == 0xffff_ffff {
                return;
            }
            cur + 1
        } else {
            (want << 32) | 1
        };
        match c.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => cur = seen,
        }
    }
}

/// The counts of the window ending with `slot`: the counters tagged with one of its slots.
pub(crate) fn sum(counters: &[AtomicU64; SLOTS], slot: u64) -> u64 {
    sum_from(counters, slot.saturating_sub(SLOTS as u64 - 1), slot)
}

/// The counts of slots `first` to `last` (at most the window's ten).
pub(crate) fn sum_from(counters: &[AtomicU64; SLOTS], first: u64, last: u64) -> u64 {
    (first.max(last.saturating_sub(SLOTS as u64 - 1))..=last)
        .map(|s| {
            let v = counters[(s % SLOTS as u64) as usize].load(Ordering::Acquire);
            if v >> 32 == tag(s) {
                v & 0xffff_ffff
            } else {
                0
            }
        })
        .sum()
}

#[cfg(all(test, retry_loom))]
mod loom {
    //! Loom models (see `protect::sync::check`).
    use super::*;
    use crate::protect::sync::check::{concurrently, model, report};
    use std::sync::Arc;

    /// A ratio budget's counters, slot 3's holding 5, made by the model's main thread.
    fn counters() -> Arc<[AtomicU64; SLOTS]> {
        let c: Arc<[AtomicU64; SLOTS]> = Arc::new([const { AtomicU64::new(0) }; SLOTS]);
        for _ in 0..5 {
            add(&c, 3);
        }
        c
    }

    /// One thread adds for slot 3 (it read the clock a moment ago) while another adds for
    /// slot 13, the same counter a full turn later: the counter ends counting slot 13, with
    /// both adds or the newer one, never turned back to slot 3 (which would drop slot 13's
    /// count). Shown failing with the add that restarts any counter whose tag differs.
    #[test]
    fn loom_a_late_add_never_turns_a_slot_back() {
        let runs = model(|| {
            let c = counters();
            let (late, now) = (c.clone(), c.clone());
            concurrently::<()>(vec![
                Box::new(move || add(&late, 3)),
                Box::new(move || add(&now, 13)),
            ]);
            let in_window = sum(&c, 13);
            assert!(
                in_window == 1 || in_window == 2,
                "slot 13 counts {in_window}"
            );
            assert_eq!(sum(&c, 3), 0, "slot 3's counter was restarted for slot 13");
        });
        report("late add", runs);
    }
}
