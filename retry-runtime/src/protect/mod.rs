//! The protections a call passes through: the retry token bucket (AWS standard mode), the
//! client-side rate limiter (AWS adaptive mode), retry budgets and circuit breakers, the
//! user's guards (the public seam, [`guard`]) with three of them built in, and the named
//! partitions that share them. Each is shared state built by `const fn`, so that it can live in
//! a `static`, and changed lock-free (but for a refilling bucket's clock). A call meets them
//! in one order, defined once in [`chain`].

pub(crate) mod breaker;
pub(crate) mod bucket;
pub(crate) mod budget;
pub(crate) mod bulkhead;
pub(crate) mod chain;
pub(crate) mod concurrency;
pub(crate) mod guard;
pub(crate) mod limiter;
pub(crate) mod partition;
pub(crate) mod sync;
pub(crate) mod throttle;
pub(crate) mod window;

use crate::classify::ErrorClass;
use breaker::Pass;
use guard::AttemptKind;
use std::time::Duration;

/// What an attempt holds from the protections that let it start: the retry cost it took from
/// the bucket, how it went through the breaker, and how many of the call's guards admitted it.
/// A retry's or a hedge's cost goes back if the attempt succeeds or never runs (whoever holds
/// the ticket when the call is dropped gives it back), and stays out if the attempt fails. A
/// first attempt costs nothing. The guards that admitted it are settled once, when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) cost: u32,
    /// The number the attempt has (or will have), for the guards' context.
    pub(crate) number: u32,
    /// How long the attempt waited at the guards so far, in milliseconds, saturating (16 bits
    /// keep the ticket, which every call's future holds, at 16 bytes).
    pub(crate) waited_ms: u16,
    pub(crate) pass: Pass,
    /// At its last look, the rate limiter's send tokens for this attempt went to another
    /// caller (it looks again with priority).
    pub(crate) lost: bool,
    /// How many of the call's guards admitted it (in order).
    pub(crate) guards: u8,
    pub(crate) kind: AttemptKind,
    /// The class of the failure a retry follows.
    pub(crate) after: Option<ErrorClass>,
}

impl Ticket {
    /// An attempt that holds nothing (a first attempt before its gate). A constant, so that a
    /// call sets its ticket up with stores of constants.
    pub(crate) const NONE: Ticket = Ticket {
        cost: 0,
        number: 0,
        waited_ms: 0,
        pass: Pass::None,
        lost: false,
        guards: 0,
        kind: AttemptKind::First,
        after: None,
    };

    /// The ticket of attempt `number` of `kind`, admitted after a failure of `class` for
    /// `cost` taken from the bucket (a retry keeps the class for its guards' context).
    pub(crate) fn paid(cost: u32, kind: AttemptKind, number: u32, class: ErrorClass) -> Ticket {
        Ticket {
            cost,
            kind,
            number,
            after: (kind == AttemptKind::Retry).then_some(class),
            ..Ticket::NONE
        }
    }

    /// Whether it holds anything to give back when its attempt will not run: a retry's cost,
    /// or guards' admissions.
    pub(crate) fn holds(&self) -> bool {
        self.cost > 0 || self.guards > 0
    }

    /// Adds `delay`, slept waiting at the guards, to what it waited.
    pub(crate) fn waited(&mut self, delay: Duration) {
        let ms = u16::try_from(delay.as_millis()).unwrap_or(u16::MAX);
        self.waited_ms = self.waited_ms.saturating_add(ms);
    }
}

impl Default for Ticket {
    fn default() -> Self {
        Ticket::NONE
    }
}
