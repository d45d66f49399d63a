//! The line a guard's waiters stand in: an attempt a guard answered [`Admit::Wait`] waits here,
//! first come first served, and is woken when a place frees, instead of asking again after a
//! delay.
//!
//! A guard that keeps one ([`Guard::line`](crate::Guard::line)) passes each place it frees through
//! [`WaitLine::free`]: the place goes to the attempt first in line, which is woken and holds
//! it as if `admit` had answered [`Admit::Go`], or, with nobody waiting, back to the guard.
//! The engine joins the line with the guard's `admit` asked again under the line's lock, so
//! that a place freed between the first answer and the join is not missed: either `admit`
//! sees it, or the join came first and the freed place is handed over.

use crate::protect::sync::{Mutex, MutexGuard, PoisonError};
use std::collections::VecDeque;
use std::fmt;
use std::task::Waker;

/// A first-come-first-served line of attempts waiting for a guard's place, which the guard
/// hands over as places free ([`free`](WaitLine::free)). Built by `const fn`, to live in a
/// guard's `static`; a guard exposes it through [`Guard::line`](crate::Guard::line).
///
/// ```
/// use retry_runtime::{Admit, Guard, GuardContext, GuardOutcome, WaitLine};
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
///
/// /// One attempt at a time; the others wait in line up to a second.
/// struct OneAtATime {
///     busy: AtomicU32,
///     line: WaitLine,
/// }
///
/// impl Guard for OneAtATime {
///     fn admit(&self, attempt: &GuardContext<'_>) -> Admit {
///         if self.busy.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
///             Admit::Go
///         } else if attempt.waited() < Duration::from_secs(1) {
///             Admit::Wait(Duration::from_secs(1) - attempt.waited())
///         } else {
///             Admit::Refuse
///         }
///     }
///
///     fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {
///         // The place goes to the first waiter, or back.
///         self.line.free(|| self.busy.store(0, Ordering::Release));
///     }
///
///     fn line(&self) -> Option<&WaitLine> {
///         Some(&self.line)
///     }
/// }
///
/// static ONE: OneAtATime = OneAtATime { busy: AtomicU32::new(0), line: WaitLine::new() };
/// ```
pub struct WaitLine {
    queue: Mutex<Queue>,
}

/// The attempts in line, oldest first, and the number the next one takes.
#[derive(Clone)]
struct Queue {
    next: u64,
    waiters: VecDeque<Waiter>,
}

/// One attempt in line: woken by its waker; `granted` once a place was handed to it.
#[derive(Clone)]
struct Waiter {
    id: u64,
    waker: Option<Waker>,
    granted: bool,
}

impl WaitLine {
    /// An empty line.
    #[must_use]
    pub const fn new() -> WaitLine {
        WaitLine {
            queue: Mutex::new(Queue {
                next: 0,
                waiters: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place frees: it goes to the attempt first in line that holds none yet (which is woken,
    /// and holds it as if admitted), or, with nobody waiting, `give_back` returns it to the
    /// guard. `give_back` runs under the line's lock, so that no attempt joins the line between
    /// the look and the give-back.
    pub fn free(&self, give_back: impl FnOnce()) {
        let mut queue = self.lock();
        match queue.waiters.iter_mut().find(|w| !w.granted) {
            Some(first) => {
                first.granted = true;
                let waker = first.waker.take();
                drop(queue);
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
            None => give_back(),
        }
    }

    /// How many attempts stand in line without a place.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.lock().waiters.iter().filter(|w| !w.granted).count()
    }

    /// Runs `waits` under the line's lock (a guard's `admit` asked again) and, if it says the
    /// attempt waits, puts it in line: its number there.
    pub(crate) fn join(&self, waits: impl FnOnce() -> bool, waker: &Waker) -> Option<u64> {
        let mut queue = self.lock();
        if !waits() {
            return None;
        }
        let id = queue.next;
        queue.next += 1;
        queue.waiters.push_back(Waiter {
            id,
            waker: Some(waker.clone()),
            granted: false,
        });
        Some(id)
    }

    /// Whether the attempt in line as `id` was handed a place (it then leaves the line);
    /// otherwise `waker` is the one its hand-over wakes.
    pub(crate) fn granted(&self, id: u64, waker: &Waker) -> bool {
        let mut queue = self.lock();
        let Some(at) = queue.waiters.iter().position(|w| w.id == id) else {
            return false;
        };
        if queue.waiters[at].granted {
            queue.waiters.remove(at);
            return true;
        }
        match &mut queue.waiters[at].waker {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        false
    }

    /// The attempt in line as `id` leaves it (its wait ended, or its call was dropped):
    /// whether it had been handed a place, which it then holds.
    pub(crate) fn leave(&self, id: u64) -> bool {
        let mut queue = self.lock();
        match queue.waiters.iter().position(|w| w.id == id) {
            Some(at) => queue.waiters.remove(at).is_some_and(|w| w.granted),
            None => false,
        }
    }
}

impl Default for WaitLine {
    fn default() -> Self {
        WaitLine::new()
    }
}

impl fmt::Debug for WaitLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitLine")
            .field("waiting", &self.waiting())
            .finish()
    }
}

#[cfg(all(test, not(retry_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::Wake;

    /// A waker that counts its wakes.
    struct Count(AtomicU32);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicU32::new(0)));
        (count.clone(), Waker::from(count))
    }

    #[test]
    fn places_go_to_the_waiters_in_the_order_they_came_then_back() {
        let line = WaitLine::new();
        let (a_wakes, a) = waker();
        let (b_wakes, b) = waker();
        let first = line.join(|| true, &a).expect("in line");
        let second = line.join(|| true, &b).expect("in line");
        assert_eq!(line.waiting(), 2);
        let given_back = AtomicU32::new(0);
        line.free(|| {
            given_back.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(a_wakes.0.load(Ordering::SeqCst), 1, "the first is woken");
        assert_eq!(b_wakes.0.load(Ordering::SeqCst), 0);
        assert!(!line.granted(second, &b));
        assert!(line.granted(first, &a));
        line.free(|| {
            given_back.fetch_add(1, Ordering::SeqCst);
        });
        assert!(line.granted(second, &b));
        line.free(|| {
            given_back.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(given_back.load(Ordering::SeqCst), 1, "nobody left in line");
        assert_eq!(line.waiting(), 0);
    }

    #[test]
    fn a_join_that_does_not_wait_does_not_queue_and_a_leaver_says_what_it_holds() {
        let line = WaitLine::new();
        let (_, w) = waker();
        assert_eq!(line.join(|| false, &w), None);
        assert_eq!(line.waiting(), 0);
        let id = line.join(|| true, &w).expect("in line");
        assert!(!line.leave(id), "left without a place");
        let id = line.join(|| true, &w).expect("in line");
        line.free(|| panic!("a waiter takes it"));
        assert!(line.leave(id), "left holding the place handed to it");
        assert_eq!(line.waiting(), 0);
    }
}
