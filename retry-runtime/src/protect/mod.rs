//! The protections a call passes through: the retry token bucket (AWS standard mode), the
//! client-side rate limiter (AWS adaptive mode), retry budgets and circuit breakers, the
//! user's guards (the public seam, [`guard`]) and the crate's own (the `guards!` list below),
//! and the named partitions that share them. Each is shared state built by `const fn`, so that
//! it can live in a `static`, and changed lock-free (but for a refilling bucket's clock). A call
//! meets them in one list, defined once in [`chain`].

pub(crate) mod breaker;
pub(crate) mod bucket;
pub(crate) mod budget;
pub(crate) mod chain;
pub(crate) mod guard;
pub(crate) mod limiter;
pub(crate) mod line;
pub(crate) mod partition;
pub(crate) mod sync;
pub(crate) mod window;

use crate::classify::ErrorClass;
use crate::runtime::Instant;
use breaker::Pass;
pub(crate) use breaker::Transition;
use core::fmt;
use core::ops::Deref;
use guard::AttemptKind;
use std::sync::Arc;
use std::time::Duration;

/// Declares each of the crate's guards (a protection users name with `guard = STATIC` or
/// `Policy::guard`, which the engine knows only as a `dyn Guard`) from its file, and gathers
/// them in [`guards`], which the crate root re-exports. A new one is its file and its line
/// here.
macro_rules! guards {
    ($($file:ident::$name:ident),* $(,)?) => {
        $(pub(crate) mod $file;)*

        /// The crate's guards, re-exported at the crate root.
        pub(crate) mod guards {
            $(pub use super::$file::$name;)*
        }
    };
}

guards! {
    adaptive::AdaptiveConcurrency,
    bulkhead::Bulkhead,
    concurrency::ConcurrencyBudget,
    quota::Quota,
    throttle::AdaptiveThrottle,
}

/// `d` in whole milliseconds, as waits at the guards are counted (`u64::MAX` past it).
pub(crate) const fn whole_millis(d: Duration) -> u64 {
    let ms = d.as_millis();
    if ms > u64::MAX as u128 {
        u64::MAX
    } else {
        ms as u64
    }
}

/// Shared state a function's calls use: a `static` (what the attribute names, and a `const`
/// policy), or state the policy that names it owns (built at run time: a gRPC service
/// config's throttle, a `Policy::guard_shared`), released with the last policy and call that
/// hold it.
pub(crate) enum Held<T: ?Sized + 'static> {
    Static(&'static T),
    Owned(Arc<T>),
}

impl<T: ?Sized> Deref for Held<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Held::Static(t) => t,
            Held::Owned(t) => t,
        }
    }
}

impl<T: ?Sized> Clone for Held<T> {
    fn clone(&self) -> Self {
        match self {
            Held::Static(t) => Held::Static(t),
            Held::Owned(t) => Held::Owned(Arc::clone(t)),
        }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// A change of a protection's state that operators see. Every protection reports its changes
/// as one of these, through one hook: the chain passes the breaker's and the rate limiter's to
/// it, a guard's settle passes its own ([`GuardContext`](guard::GuardContext)'s report), and
/// the call hands each to `observe::state_changed`, which turns it into events and metrics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Change {
    /// A circuit breaker moved from one state to another.
    Breaker(Transition),
    /// Adaptive mode's rate limiter allows this many send tokens a second.
    Rate(f64),
    /// A self-sizing guard's limit, in attempts in flight.
    Limit {
        /// The guard's name.
        guard: &'static str,
        /// The limit.
        limit: f64,
    },
}

/// What an attempt holds from the protections that let it start: the retry cost it took from
/// the bucket, how it went through the breaker, and how many of the call's guards admitted it.
/// A retry's or a hedge's cost goes back if the attempt succeeds or never runs (whoever holds
/// the ticket when the call is dropped gives it back), and stays out if the attempt fails. A
/// first attempt costs nothing. The guards that admitted it are settled once, when it ends,
/// told how long it ran.
///
/// Every call's future holds one, set up when the call starts: 24 bytes, the guards' context
/// (which attempt, what it waited, when it was sent) packed beside what the bucket and the
/// breaker keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    /// When the attempt was sent, for the guards that admitted it (set only for an attempt
    /// that has some; [`Stamp::NONE`] for one never sent).
    pub(crate) started: Stamp,
    pub(crate) cost: u32,
    /// The number the attempt has (or will have), for the guards' context.
    pub(crate) number: u32,
    /// How long the attempt waited at the guards so far, in milliseconds, saturating (at 49
    /// days, past any wait a deadline or a guard allows).
    pub(crate) waited_ms: u32,
    pub(crate) pass: Pass,
    /// At its last look, the rate limiter's send tokens for this attempt went to another
    /// caller (it looks again with priority).
    pub(crate) lost: bool,
    /// How many of the call's guards admitted it (in order).
    pub(crate) guards: u8,
    /// Which attempt it is, and for a retry the class of the failure it follows.
    pub(crate) of: Of,
}

const _: () = assert!(core::mem::size_of::<Ticket>() == 24);

/// Which attempt a ticket is for, as its guards' context tells it: one byte, 0 for a first
/// attempt (so that [`Ticket::NONE`] is all zeros, which a call sets up and resets cheaply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Of {
    First = 0,
    Hedge,
    /// A polling repeat: a retry after a success.
    Repeat,
    /// A retry after a failure of that class.
    AfterTransient,
    AfterTimeout,
    AfterThrottling,
    AfterNotSent,
    AfterPermanent,
}

impl Of {
    /// A retry after a failure of `class` (`None`: a polling repeat).
    pub(crate) fn retry(class: Option<ErrorClass>) -> Of {
        match class {
            None => Of::Repeat,
            Some(ErrorClass::Transient) => Of::AfterTransient,
            Some(ErrorClass::Timeout) => Of::AfterTimeout,
            Some(ErrorClass::Throttling) => Of::AfterThrottling,
            Some(ErrorClass::NotSent) => Of::AfterNotSent,
            Some(ErrorClass::Permanent) => Of::AfterPermanent,
        }
    }

    /// The attempt's kind.
    pub(crate) fn kind(self) -> AttemptKind {
        match self {
            Of::First => AttemptKind::First,
            Of::Hedge => AttemptKind::Hedge,
            _ => AttemptKind::Retry,
        }
    }

    /// The class of the failure a retry follows.
    pub(crate) fn last_class(self) -> Option<ErrorClass> {
        match self {
            Of::First | Of::Hedge | Of::Repeat => None,
            Of::AfterTransient => Some(ErrorClass::Transient),
            Of::AfterTimeout => Some(ErrorClass::Timeout),
            Of::AfterThrottling => Some(ErrorClass::Throttling),
            Of::AfterNotSent => Some(ErrorClass::NotSent),
            Of::AfterPermanent => Some(ErrorClass::Permanent),
        }
    }
}

/// An instant in 8 bytes: nanoseconds from an instant the process takes once, offset so that
/// 0 is none, so that a ticket keeps when its attempt was sent without growing by an
/// `Option<Instant>`'s 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp(i64);

/// Where stamps count from: far enough below the epoch that a paused clock standing before the
/// instant another runtime's clock took still makes a positive stamp.
const STAMP_ORIGIN: i64 = 1 << 62;

impl Stamp {
    /// No instant: an attempt never sent.
    pub(crate) const NONE: Stamp = Stamp(0);

    /// Now.
    pub(crate) fn now() -> Stamp {
        let now = Instant::now();
        let epoch = epoch();
        let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(STAMP_ORIGIN - 1);
        Stamp(match now.checked_duration_since(epoch) {
            Some(after) => STAMP_ORIGIN.saturating_add(nanos(after)),
            None => (STAMP_ORIGIN - nanos(epoch.saturating_duration_since(now))).max(1),
        })
    }

    /// The time since this instant; zero for [`Stamp::NONE`].
    pub(crate) fn elapsed(self) -> Duration {
        if self == Stamp::NONE {
            return Duration::ZERO;
        }
        let offset = self.0 - STAMP_ORIGIN;
        let at = if offset >= 0 {
            epoch().checked_add(Duration::from_nanos(offset.unsigned_abs()))
        } else {
            epoch().checked_sub(Duration::from_nanos(offset.unsigned_abs()))
        };
        at.map_or(Duration::ZERO, |at| {
            Instant::now().saturating_duration_since(at)
        })
    }
}

/// The instant stamps count from, taken the first time one is made.
fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Ticket {
    /// An attempt that holds nothing (a first attempt before its gate). A constant, so that a
    /// call sets its ticket up with stores of constants.
    pub(crate) const NONE: Ticket = Ticket {
        started: Stamp::NONE,
        cost: 0,
        number: 0,
        waited_ms: 0,
        pass: Pass::None,
        lost: false,
        guards: 0,
        of: Of::First,
    };

    /// The ticket of attempt `number` of `kind`, admitted after a failure of `class` for
    /// `cost` taken from the bucket (a retry keeps the class for its guards' context).
    pub(crate) fn paid(cost: u32, kind: AttemptKind, number: u32, class: ErrorClass) -> Ticket {
        Ticket {
            cost,
            number,
            of: match kind {
                AttemptKind::First => Of::First,
                AttemptKind::Hedge => Of::Hedge,
                AttemptKind::Retry => Of::retry(Some(class)),
            },
            ..Ticket::NONE
        }
    }

    /// Whether it holds anything to give back when its attempt will not run: a retry's cost,
    /// or guards' admissions.
    pub(crate) fn holds(&self) -> bool {
        self.cost > 0 || self.guards > 0
    }

    /// What it waited at the guards so far, to the millisecond.
    pub(crate) fn waited_for(&self) -> Duration {
        Duration::from_millis(u64::from(self.waited_ms))
    }

    /// Adds `delay`, slept waiting at the guards, to what it waited.
    pub(crate) fn waited(&mut self, delay: Duration) {
        let ms = u32::try_from(delay.as_millis()).unwrap_or(u32::MAX);
        self.waited_ms = self.waited_ms.saturating_add(ms);
    }

    /// The attempt is sent now: the guards that admitted it will be told how long it ran.
    pub(crate) fn sent(&mut self) {
        if self.guards > 0 {
            self.started = Stamp::now();
        }
    }
}

impl Default for Ticket {
    fn default() -> Self {
        Ticket::NONE
    }
}
