//! The retry loop, defined once, as a macro that the expansion of `#[retry]` invokes in the
//! function's body, and [`Call::run`] for callers that hold the attempt as a closure.

use super::outcome::RetryResult;
use super::scope;
use super::{Call, OnFailure, OnStop, Timer, TimerKind};
use crate::protect::Ticket;
use crate::protect::chain::{Chain, Joined};
use crate::runtime::{AsyncRuntime, Instant};
use core::future::Future;
use core::pin::pin;
use core::task::{Poll, Waker};
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
    pub async fn run<F, Fut>(mut self, mut attempt: F) -> R
    where
        R: AsyncRuntime,
        F: FnMut() -> Fut,
        Fut: Future<Output = R>,
    {
        let call = &mut self;
        crate::__retry_loop!(call, attempt())
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

impl<R, K: TimerKind, P, J> Call<'_, R, K, P, J> {
    /// Waits in the line of the guard that asked the attempt to wait, for at most `delay`:
    /// until the guard hands it a place (which admits it), or the delay ends; either way the
    /// loop then asks the gate or the admission again, from where it stopped. The time spent
    /// is what the attempt waited. Dropped in line, it leaves the line, and a place handed to
    /// it meanwhile is held by its ticket, which gives it back.
    pub async fn in_line(&mut self, delay: Duration) {
        let started = Instant::now();
        {
            let mut place = Place::new(self.r().chain(), &mut self.current.ticket);
            let mut sleep = pin!(crate::runtime::sleep(delay));
            core::future::poll_fn(|task| {
                let ended = sleep.as_mut().poll(task).is_ready();
                place.step(task.waker(), ended)
            })
            .await;
        }
        self.waited_in_line(started);
    }

    /// [`in_line`](Self::in_line) for a blocking function: the thread parks until the guard
    /// hands the attempt a place or the delay ends.
    pub fn in_line_blocking(&mut self, delay: Duration) {
        let started = Instant::now();
        {
            let mut place = Place::new(self.r().chain(), &mut self.current.ticket);
            block_in_line(&mut place, delay);
        }
        self.waited_in_line(started);
    }

    /// Counts a wait in line that began at `started`.
    fn waited_in_line(&mut self, started: Instant) {
        let waited = Instant::now().saturating_duration_since(started);
        self.current.ticket.waited(waited);
        self.slept(waited);
    }
}

/// Parks the thread in line until `place` is handed over or `delay` ends (on
/// `wasm32-unknown-unknown`, whose one thread nobody else can free a place from, it sleeps the
/// delay and looks once).
fn block_in_line(place: &mut Place<'_>, delay: Duration) {
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
            if place.step(&waker, left == Some(Duration::ZERO)).is_ready() {
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
        if place.step(waker, false).is_ready() {
            return;
        }
        crate::runtime::thread_sleep(delay);
        let _ = place.step(waker, true);
    }
}

/// An attempt's place in a guard's line, from its join to its hand-over or its leaving.
struct Place<'c> {
    chain: &'c Chain,
    ticket: &'c mut Ticket,
    /// Its number in line, once it joined.
    id: Option<u64>,
    /// Its wait is over.
    done: bool,
}

impl<'c> Place<'c> {
    fn new(chain: &'c Chain, ticket: &'c mut Ticket) -> Self {
        Place {
            chain,
            ticket,
            id: None,
            done: false,
        }
    }

    /// One look: joins the line on the first, then sees whether the place was handed over;
    /// `ended`: the wait's time is up, and it leaves the line.
    fn step(&mut self, waker: &Waker, ended: bool) -> Poll<()> {
        if self.done {
            return Poll::Ready(());
        }
        let draw = || scope::around().uniform();
        let id = match self.id {
            Some(id) => id,
            None => match self.chain.join(self.ticket, waker, &draw) {
                Some(Joined::Wait(id)) => {
                    self.id = Some(id);
                    id
                }
                // Admitted or refused at the join (the loop asks again and hears it), or the
                // guard keeps no line (the delay is slept).
                Some(Joined::Go | Joined::Refuse) => return self.over(),
                None if ended => return self.over(),
                None => return Poll::Pending,
            },
        };
        if self.chain.granted(self.ticket, id, waker) {
            self.id = None;
            return self.over();
        }
        if ended {
            self.leave();
            return self.over();
        }
        Poll::Pending
    }

    fn over(&mut self) -> Poll<()> {
        self.done = true;
        Poll::Ready(())
    }

    fn leave(&mut self) {
        if let Some(id) = self.id.take() {
            self.chain.leave(self.ticket, id);
        }
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.leave();
    }
}
