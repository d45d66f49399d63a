//! wasm32-unknown-unknown (browsers, Node): the JS host's `setTimeout` and `web-time`'s clock
//! (`performance.now()`). Chosen by the target, whatever the runtime features say: tokio's and
//! async-io's timers do not exist there.
//!
//! A timer is one `setTimeout` on the global object (`globalThis`, so a page, a worker and Node
//! alike), armed at the first poll that finds its instant ahead, cleared when the timer is
//! dropped or moved. A JS timer may fire a little before `performance.now()` reaches the
//! instant, and a delay past 2^31 - 1 ms fires at once; so a timer that fires is looked at
//! against the clock and armed again for what is left, and never asked for more than that
//! maximum at a time.
//!
//! JS values belong to the thread that made them: the futures here are not `Send`, as no
//! future holding a JS value is. A wasm program runs them on its one thread
//! (`wasm_bindgen_futures::spawn_local`, or awaited inside another such future).

use core::cell::{Cell, RefCell};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::rc::Rc;
use std::time::{Duration, SystemTime};
use wasm_bindgen::JsValue;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
pub use web_time::Instant;

#[wasm_bindgen]
extern "C" {
    /// The global `setTimeout`: a number in browsers, a `Timeout` object in Node.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Closure<dyn FnMut()>, millis: f64) -> JsValue;

    /// The global `clearTimeout`.
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// The longest delay a JS timer keeps (a longer one fires at once).
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

/// `instant` itself: the public instants are `web_time`'s on this target.
#[must_use]
pub fn to_public(instant: Instant) -> Instant {
    instant
}

/// The wall clock: `Date.now()` (`std`'s `SystemTime::now()` panics on this target).
#[must_use]
pub fn system_now() -> SystemTime {
    let since_epoch = web_time::SystemTime::now()
        .duration_since(web_time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    SystemTime::UNIX_EPOCH + since_epoch
}

/// A blocking function's wait: the thread cannot sleep here (JS has no such call on its main
/// thread), so it spins on the clock until `duration` has passed, blocking the event loop the
/// whole time. Async functions sleep on timers instead; this is for blocking `#[retry]`
/// functions, whose waits block by definition.
pub fn thread_sleep(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        core::hint::spin_loop();
    }
}

/// 256 bits for the thread's generator, from `Math.random()` (the host's generator, seeded by
/// the host from its system's entropy): this target's `std` has none to give `RandomState`.
pub(crate) fn seed() -> [u8; 32] {
    let mut seed = [0; 32];
    for chunk in seed.chunks_exact_mut(4) {
        // Math.random() has 52 random bits; the 32 highest of them.
        let bits = (js_sys::Math::random() * 4_294_967_296.0) as u32;
        chunk.copy_from_slice(&bits.to_le_bytes());
    }
    seed
}

/// What a timer and its JS callback share: whether it fired, and whom to wake.
#[derive(Default)]
struct Shared {
    fired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

/// One `setTimeout` in flight, cleared when dropped.
struct Armed {
    id: JsValue,
    shared: Rc<Shared>,
    // Called by JS until cleared: it lives as long as the timeout it was given to.
    _callback: Closure<dyn FnMut()>,
}

impl Armed {
    fn new(millis: f64, waker: &Waker) -> Armed {
        let shared = Rc::new(Shared {
            fired: Cell::new(false),
            waker: RefCell::new(Some(waker.clone())),
        });
        let theirs = Rc::clone(&shared);
        let callback = Closure::<dyn FnMut()>::new(move || {
            theirs.fired.set(true);
            let waker = theirs.waker.borrow_mut().take();
            if let Some(waker) = waker {
                waker.wake();
            }
        });
        let id = set_timeout(&callback, millis);
        Armed {
            id,
            shared,
            _callback: callback,
        }
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        // Cleared before the callback is dropped: JS never calls a dropped closure.
        clear_timeout(&self.id);
    }
}

/// A JS timer until an instant (`None`: never).
struct Timer {
    at: Option<Instant>,
    armed: Option<Armed>,
}

impl Timer {
    fn at(at: Option<Instant>) -> Timer {
        Timer { at, armed: None }
    }

    fn set(&mut self, at: Instant) {
        self.at = Some(at);
        self.armed = None;
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(at) = self.at else {
            return Poll::Pending;
        };
        let now = Instant::now();
        if now >= at {
            self.armed = None;
            return Poll::Ready(());
        }
        if let Some(armed) = self.armed.as_ref().filter(|a| !a.shared.fired.get()) {
            let mut waker = armed.shared.waker.borrow_mut();
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        // Not armed yet, or fired early: arm for what is left, rounded up to a millisecond.
        let millis = ((at - now).as_secs_f64() * 1000.0).ceil().min(MAX_DELAY_MS);
        self.armed = Some(Armed::new(millis, cx.waker()));
        Poll::Pending
    }
}

impl core::fmt::Debug for Timer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Timer")
            .field("at", &self.at)
            .field("armed", &self.armed.is_some())
            .finish()
    }
}

/// A sleep until an instant, which the hedged loop moves ([`Sleep::reset`]).
#[derive(Debug)]
pub struct Sleep {
    timer: Timer,
    deadline: Instant,
}

/// A sleep of `duration` from now (forever, for a duration past what `Instant` holds).
pub fn sleep(duration: Duration) -> Sleep {
    let now = Instant::now();
    match now.checked_add(duration) {
        Some(at) => sleep_until(at),
        None => Sleep {
            timer: Timer::at(None),
            deadline: now,
        },
    }
}

/// A sleep until `deadline` (none, for one passed).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        timer: Timer::at(Some(deadline)),
        deadline,
    }
}

impl Sleep {
    /// When it ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// It ends at `deadline` instead.
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.timer.set(deadline);
        this.deadline = deadline;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().timer.poll(cx)
    }
}

/// An attempt's future cut off at an instant ([`Timeout`]'s error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

pin_project_lite::pin_project! {
    /// `future`, cut off at an instant: it is polled first, as tokio's `Timeout` polls it, so
    /// that an answer ready at the cutoff wins.
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        timer: Timer,
    }
}

/// `future`, cut off at `deadline`.
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout {
        future,
        timer: Timer::at(Some(deadline)),
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.future.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        this.timer.poll(cx).map(|()| Err(Elapsed(())))
    }
}
