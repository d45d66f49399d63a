//! A task-local value without tokio: what `tokio::task_local!` does, for the builds without
//! it. A value is set in a thread-local slot while the future that carries it is polled (or
//! while a closure runs) and taken back out after, so that it follows the future from thread
//! to thread and never leaks to another task polled on the same thread.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::cell::RefCell;
use std::thread::LocalKey;

/// Declares `static $name: TaskLocal<$t>`, its slot a thread-local of its own.
macro_rules! task_local {
    (static $name:ident: $t:ty;) => {
        static $name: $crate::runtime::local::TaskLocal<$t> = {
            ::std::thread_local! {
                static SLOT: ::std::cell::RefCell<::core::option::Option<$t>> =
                    const { ::std::cell::RefCell::new(::core::option::Option::None) };
            }
            $crate::runtime::local::TaskLocal::new(&SLOT)
        };
    };
}
pub(crate) use task_local;

/// A value set for a future ([`TaskLocal::scope`]) or a closure ([`TaskLocal::sync_scope`]).
pub(crate) struct TaskLocal<T: 'static> {
    slot: &'static LocalKey<RefCell<Option<T>>>,
}

impl<T: 'static> TaskLocal<T> {
    /// The task-local whose value lives in `slot` while it is set.
    pub(crate) const fn new(slot: &'static LocalKey<RefCell<Option<T>>>) -> Self {
        TaskLocal { slot }
    }

    /// `f` of the value set, or `Err(())` outside any scope.
    pub(crate) fn try_with<R>(&'static self, f: impl FnOnce(&T) -> R) -> Result<R, ()> {
        self.slot
            .try_with(|slot| slot.borrow().as_ref().map(f))
            .ok()
            .flatten()
            .ok_or(())
    }

    /// `fut`, with the value `value` while it is polled.
    pub(crate) fn scope<F: Future>(&'static self, value: T, fut: F) -> Scoped<T, F> {
        Scoped {
            key: self,
            value: Some(value),
            fut,
        }
    }

    /// Runs `f` with the value `value`.
    pub(crate) fn sync_scope<R>(&'static self, value: T, f: impl FnOnce() -> R) -> R {
        let mut value = Some(value);
        let _set = Set::new(self.slot, &mut value);
        f()
    }
}

/// The value is in the slot while this lives; dropped (a panic too), it goes back where it
/// was taken from, and the slot's earlier value (an outer scope's) back in the slot.
struct Set<'v, T: 'static> {
    slot: &'static LocalKey<RefCell<Option<T>>>,
    value: &'v mut Option<T>,
}

impl<'v, T: 'static> Set<'v, T> {
    fn new(slot: &'static LocalKey<RefCell<Option<T>>>, value: &'v mut Option<T>) -> Self {
        slot.with(|s| core::mem::swap(&mut *s.borrow_mut(), value));
        Set { slot, value }
    }
}

impl<T: 'static> Drop for Set<'_, T> {
    fn drop(&mut self) {
        let value = &mut *self.value;
        // During a thread's teardown the slot may be gone: the value is then dropped with it.
        let _ = self
            .slot
            .try_with(|s| core::mem::swap(&mut *s.borrow_mut(), value));
    }
}

pin_project_lite::pin_project! {
    /// A future with a task-local value set while it is polled.
    pub(crate) struct Scoped<T: 'static, F> {
        key: &'static TaskLocal<T>,
        value: Option<T>,
        #[pin]
        fut: F,
    }
}

impl<T: 'static, F: Future> Future for Scoped<T, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _set = Set::new(this.key.slot, this.value);
        this.fut.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    task_local! {
        static NUMBER: u32;
    }

    #[test]
    fn a_value_is_seen_inside_its_scope_only_and_scopes_nest() {
        assert!(NUMBER.try_with(|n| *n).is_err());
        NUMBER.sync_scope(1, || {
            assert_eq!(NUMBER.try_with(|n| *n), Ok(1));
            NUMBER.sync_scope(2, || assert_eq!(NUMBER.try_with(|n| *n), Ok(2)));
            assert_eq!(NUMBER.try_with(|n| *n), Ok(1));
        });
        assert!(NUMBER.try_with(|n| *n).is_err());
    }

    #[test]
    fn a_future_sees_its_value_at_each_poll_and_others_do_not() {
        let mut polls = 0;
        let fut = NUMBER.scope(
            7,
            core::future::poll_fn(|cx| {
                assert_eq!(NUMBER.try_with(|n| *n), Ok(7));
                polls += 1;
                if polls < 3 {
                    cx.waker().wake_by_ref();
                    return core::task::Poll::Pending;
                }
                core::task::Poll::Ready(())
            }),
        );
        let mut fut = core::pin::pin!(fut);
        let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
        while fut.as_mut().poll(&mut cx).is_pending() {
            // Between polls the value is not set.
            assert!(NUMBER.try_with(|n| *n).is_err());
        }
    }
}
