//! The retry loop, defined once, as a macro that the expansion of `#[retry]` invokes in the
//! function's body, and [`Call::run`] for callers that hold the attempt as a closure.

use super::outcome::RetryResult;
use super::scope;
use super::{Call, OnFailure, OnStop, Timer, TimerKind};
use crate::protect::Ticket;
use crate::protect::chain::{Chain, Joined};
use crate::runtime::{AsyncRuntime, Instant};
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::time::Duration;

/// The retry loop, defined once. `$call` names a [`Call`]; `$attempt` is an expression that
/// makes one attempt's future, evaluated once per attempt. The loop's value is the call's
/// outcome. Every wait (a send token in adaptive mode, the backoff, a bucket's refill) is a
/// sleep awaited here, after a synchronous decision of the engine, so the caller's future
/// holds one timer at a time and no future of the engine.
///
/// A blocking function (`#[retry]` on a plain `fn`) runs the same steps
/// (`retry_loop_blocking!`): its attempt is a call of the closure `$attempt` names, and each
/// wait a `std::thread::sleep`.
#[doc(hidden)]
#[macro_export]
macro_rules! __retry_loop {
    ($call:ident, $attempt:expr) => {
        $crate::__retry_loop!(@steps async $call, {
            let out = $call.attempt($attempt).await;
            $call.finish(out)
        })
    };
    (@blocking $call:ident, $attempt:ident) => {
        $crate::__retry_loop!(@steps blocking $call, {
            let out = $call.attempt_blocking(&mut $attempt);
            $call.finish_outcome(out)
        })
    };
    (@wait async $delay:expr) => {
        $crate::__private::sleep($delay).await
    };
    (@wait blocking $delay:expr) => {
        $crate::__private::thread_sleep($delay)
    };
    (@line async $call:ident $delay:expr) => {
        $call.in_line($delay).await
    };
    (@line blocking $call:ident $delay:expr) => {
        $call.in_line_blocking($delay)
    };
    (@steps $kind:ident $call:ident, $attempt_and_finish:block) => {
        'retry: loop {
            if $call.gated() {
                loop {
                    match $call.send_token() {
                        $crate::__private::SendToken::Go => break,
                        $crate::__private::SendToken::Wait(delay) => {
                            $crate::__retry_loop!(@wait $kind delay)
                        }
                        $crate::__private::SendToken::Line(delay) => {
                            $crate::__retry_loop!(@line $kind $call delay)
                        }
                        $crate::__private::SendToken::Return(out) => break 'retry out,
                    }
                }
            }
            let mut out = match $attempt_and_finish {
                $crate::__private::ControlFlow::Break(out) => break 'retry out,
                $crate::__private::ControlFlow::Continue(out) => ::core::option::Option::Some(out),
            };
            loop {
                // `settle` takes the outcome; after a `Wait` there is none (the retry that
                // waits for the bucket is kept in the call), and the future holds no outcome
                // across the sleep.
                match $call.settle(out) {
                    $crate::__private::Settled::Return(out) => break 'retry out,
                    $crate::__private::Settled::Retry => break,
                    $crate::__private::Settled::Sleep(delay) => {
                        $crate::__retry_loop!(@wait $kind delay);
                        break;
                    }
                    $crate::__private::Settled::Wait(delay) => {
                        $crate::__retry_loop!(@wait $kind delay);
                        out = ::core::option::Option::None;
                    }
                    $crate::__private::Settled::Line(delay) => {
                        $crate::__retry_loop!(@line $kind $call delay);
                        out = ::core::option::Option::None;
                    }
                }
            }
        }
    };
}

/// The retry loop of a blocking function: [`retry_loop!`](crate::__retry_loop)'s steps, with
/// `$attempt` naming a closure that runs one attempt.
#[doc(hidden)]
#[macro_export]
macro_rules! __retry_loop_blocking {
    ($call:ident, $attempt:ident) => {
        $crate::__retry_loop!(@blocking $call, $attempt)
    };
}

impl<R, K, P, J> Call<'_, R, K, P, J>
where
    R: RetryResult,
    K: Timer<R>,
    P: Fn(&R::Ok) -> bool,
    J: OnFailure<R> + OnStop<R>,
{
    /// The loop for callers that hold the attempt as a closure: `attempt` makes each
    /// attempt's future. The same loop the expansion of `#[retry]` runs.
    // A block: an `async fn` would hold the call twice, its argument and the local it moves
    // it into.
    #[allow(clippy::manual_async_fn)]
    pub fn run<F, Fut>(mut self, mut attempt: F) -> impl Future<Output = R>
    where
        R: AsyncRuntime,
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        async move {
            let call = &mut self;
            crate::__retry_loop!(call, attempt())
        }
    }

    /// The blocking loop, for callers that hold a blocking attempt as a closure: the loop
    /// the expansion of `#[retry]` on a plain `fn` runs.
    pub fn run_blocking<F>(mut self, mut attempt: F) -> R
    where
        F: FnMut() -> R,
    {
        let call = &mut self;
        crate::__retry_loop_blocking!(call, attempt)
    }
}

impl<'a, R, K: TimerKind, P, J> Call<'a, R, K, P, J> {
    /// Waits in the line of the guard that asked the attempt to wait, for at most `delay`:
    /// until the guard hands it a place (which admits it), or the delay ends; either way the
    /// loop then asks the gate or the admission again, from where it stopped. The time spent
    /// is what the attempt waited. Dropped in line, it leaves the line, and a place handed to
    /// it meanwhile is held by its ticket, which gives it back.
    pub fn in_line(&mut self, delay: Duration) -> InLine<'_, 'a, R, K, P, J> {
        InLine {
            call: self,
            sleep: crate::runtime::sleep(delay),
            started: Instant::now(),
            place: Place::JOINING,
        }
    }

    /// [`in_line`](Self::in_line) for a blocking function: the thread parks until the guard
    /// hands the attempt a place or the delay ends.
    pub fn in_line_blocking(&mut self, delay: Duration) {
        let started = Instant::now();
        let chain = self.r().chain();
        block_in_line(chain, &mut self.current.ticket, delay);
        self.waited_in_line(started);
    }

    /// Counts a wait in line that began at `started`.
    fn waited_in_line(&mut self, started: Instant) {
        let waited = Instant::now().saturating_duration_since(started);
        self.current.ticket.waited(waited);
        self.slept(waited);
    }
}

pin_project_lite::pin_project! {
    /// The wait of [`Call::in_line`]: the call, the delay's timer, when the wait began and the
    /// attempt's place. A hand-written future rather than an `async fn`, so that it holds no
    /// more than these: it is one of the states of every `#[retry]` function's future, whose
    /// other largest state is a sleep's.
    #[doc(hidden)]
    pub struct InLine<'c, 'a, R, K: TimerKind, P, J> {
        call: &'c mut Call<'a, R, K, P, J>,
        #[pin]
        sleep: crate::runtime::Sleep,
        started: Instant,
        place: Place,
    }

    impl<'c, 'a, R, K: TimerKind, P, J> PinnedDrop for InLine<'c, 'a, R, K, P, J> {
        fn drop(this: Pin<&mut Self>) {
            // Dropped in line: it leaves, and a place handed to it meanwhile is held.
            let this = this.project();
            let chain = this.call.r().chain();
            this.place.leave(chain, &mut this.call.current.ticket);
        }
    }
}

impl<R, K: TimerKind, P, J> Future for InLine<'_, '_, R, K, P, J> {
    type Output = ();

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        if *this.place == Place::OVER {
            return Poll::Ready(());
        }
        let ended = this.sleep.poll(task).is_ready();
        let chain = this.call.r().chain();
        let ticket = &mut this.call.current.ticket;
        let poll = this.place.step(chain, ticket, task.waker(), ended);
        if poll.is_ready() {
            this.call.waited_in_line(*this.started);
        }
        poll
    }
}

/// Parks the thread in line until `place` is handed over or `delay` ends (on
/// `wasm32-unknown-unknown`, whose one thread nobody else can free a place from, it sleeps the
/// delay and looks once).
fn block_in_line(chain: &Chain, ticket: &mut Ticket, delay: Duration) {
    let mut place = Place::JOINING;
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        struct Unpark(std::thread::Thread);
        impl std::task::Wake for Unpark {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
        let until = std::time::Instant::now().checked_add(delay);
        loop {
            let left = until.map(|u| u.saturating_duration_since(std::time::Instant::now()));
            if place
                .step(chain, ticket, &waker, left == Some(Duration::ZERO))
                .is_ready()
            {
                return;
            }
            match left {
                Some(left) => std::thread::park_timeout(left),
                None => std::thread::park(),
            }
        }
    }
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        let waker = Waker::noop();
        if place.step(chain, ticket, waker, false).is_ready() {
            return;
        }
        crate::runtime::thread_sleep(delay);
        let _ = place.step(chain, ticket, waker, true);
    }
}

/// An attempt's place in a guard's line, from its join to its hand-over or its leaving, in
/// 8 bytes: not joined yet, its number in line, or its wait over.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Place(u64);

impl Place {
    /// Not in line yet: the first look joins it.
    const JOINING: Place = Place(u64::MAX);
    /// The wait is over (handed a place, refused or admitted at the join, or its time up).
    const OVER: Place = Place(u64::MAX - 1);

    /// Its number in line, once it joined and while it waits.
    fn id(self) -> Option<u64> {
        (self != Place::JOINING && self != Place::OVER).then_some(self.0)
    }

    /// One look at the line of the first guard of `chain` that has not admitted the attempt
    /// `ticket` is for: joins the line on the first, then sees whether the place was handed
    /// over; `ended`: the wait's time is up, and it leaves the line.
    fn step(&mut self, chain: &Chain, ticket: &mut Ticket, waker: &Waker, ended: bool) -> Poll<()> {
        if *self == Place::OVER {
            return Poll::Ready(());
        }
        let draw = || scope::around().uniform();
        let id = match self.id() {
            Some(id) => id,
            None => match chain.join(ticket, waker, &draw) {
                Some(Joined::Wait(id)) => {
                    *self = Place(id);
                    id
                }
                // Admitted or refused at the join (the loop asks again and hears it), or the
                // guard keeps no line (the delay is slept).
                Some(Joined::Go | Joined::Refuse) => return self.over(),
                None if ended => return self.over(),
                None => return Poll::Pending,
            },
        };
        if chain.granted(ticket, id, waker) {
            return self.over();
        }
        if ended {
            self.leave(chain, ticket);
            return self.over();
        }
        Poll::Pending
    }

    fn over(&mut self) -> Poll<()> {
        *self = Place::OVER;
        Poll::Ready(())
    }

    /// Leaves the line it stands in, if it does (a place handed to it meanwhile is held).
    fn leave(&mut self, chain: &Chain, ticket: &mut Ticket) {
        if let Some(id) = self.id() {
            chain.leave(ticket, id);
            *self = Place::OVER;
        }
    }
}
