//! Loom's primitives behind the standard library's `const fn` constructors.
//!
//! The bucket and the limiter are built by `const fn` (they live in `static`s), which loom's
//! primitives are not, and their builders overwrite fields, which a `const fn` can do only to
//! values without drop glue. Each stand-in here is its initial value and a slot number: on
//! first use it makes a loom primitive from that value, leaks it into a registry and keeps its
//! index. So a stand-in must first be used inside a model, by the model's main thread (loom
//! objects made in a spawned thread are not seen by the others). A model makes a handful.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};

pub(crate) use std::sync::PoisonError;

/// Every loom primitive a stand-in has made.
static MADE: std::sync::Mutex<Vec<&'static (dyn Any + Send + Sync)>> =
    std::sync::Mutex::new(Vec::new());

/// The loom primitive of the stand-in whose slot is `slot` (0 until first use), made by `make`
/// on first use.
fn made<T: Any + Send + Sync>(slot: &AtomicUsize, make: impl FnOnce() -> T) -> &'static T {
    let mut all = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    let index = match slot.load(StdOrdering::SeqCst) {
        0 => {
            all.push(Box::leak(Box::new(make())));
            slot.store(all.len(), StdOrdering::SeqCst);
            all.len()
        }
        n => n,
    };
    let object: &'static (dyn Any + Send + Sync) = all[index - 1];
    (object as &dyn Any)
        .downcast_ref()
        .expect("a slot keeps its type")
}

pub(crate) mod atomic {
    use super::made;
    use std::sync::atomic::AtomicUsize;

    pub(crate) use std::sync::atomic::Ordering;

    macro_rules! stand_in {
        ($name:ident, $int:ty) => {
            #[derive(Debug)]
            pub(crate) struct $name {
                init: $int,
                slot: AtomicUsize,
            }

            #[allow(dead_code)] // each primitive uses part of them
            impl $name {
                pub(crate) const fn new(v: $int) -> Self {
                    $name {
                        init: v,
                        slot: AtomicUsize::new(0),
                    }
                }

                fn get(&self) -> &'static loom::sync::atomic::$name {
                    made(&self.slot, || loom::sync::atomic::$name::new(self.init))
                }

                pub(crate) fn load(&self, order: Ordering) -> $int {
                    self.get().load(order)
                }

                pub(crate) fn store(&self, v: $int, order: Ordering) {
                    self.get().store(v, order)
                }

                pub(crate) fn compare_exchange(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.get().compare_exchange(current, new, success, failure)
                }

                pub(crate) fn compare_exchange_weak(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.get()
                        .compare_exchange_weak(current, new, success, failure)
                }

                pub(crate) fn fetch_update<F>(
                    &self,
                    set: Ordering,
                    fetch: Ordering,
                    f: F,
                ) -> Result<$int, $int>
                where
                    F: FnMut($int) -> Option<$int>,
                {
                    self.get().fetch_update(set, fetch, f)
                }
            }
        };
    }

    stand_in!(AtomicBool, bool);
    stand_in!(AtomicU32, u32);
    stand_in!(AtomicU64, u64);
}

/// Loom's mutex behind a `const fn` constructor.
pub(crate) struct Mutex<T> {
    init: T,
    slot: AtomicUsize,
}

impl<T> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mutex { .. }")
    }
}

pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

impl<T: Clone + Send + 'static> Mutex<T> {
    pub(crate) const fn new(v: T) -> Self {
        Mutex {
            init: v,
            slot: AtomicUsize::new(0),
        }
    }

    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, T>, PoisonError<MutexGuard<'_, T>>> {
        made(&self.slot, || loom::sync::Mutex::new(self.init.clone())).lock()
    }
}
