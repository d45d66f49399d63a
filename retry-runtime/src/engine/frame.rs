//! The attempt a `#[retry]` body runs in, as the body (and whatever it calls) sees it.
//!
//! While the retry loop polls an attempt it publishes the call's [`Frame`] in a scoped
//! thread-local: set before each poll of the attempt's future, restored after it, so only code
//! running inside that poll sees it (a task spawned from the body does not). Nothing is copied
//! or allocated for a body that never asks: the frame lives in the call's own future, and
//! [`attempt`] reads it only when called. The invocation id is drawn the first time anyone
//! asks for it.
//!
//! A `#[retry]` call that starts inside another's attempt reads the outer frame once, at its
//! start: its depth is one more, and its deadline is clamped to the outer attempt's cutoff
//! (deadline propagation inside the process).
//!
//! The same slot carries a caller's deadline ([`with_deadline`](crate::with_deadline)): while
//! its future is polled, the slot holds a [`Bound`] instead of a frame, and a call started
//! there reads it where it would read an outer attempt (its depth 0, its cutoff the deadline),
//! so the one look a call makes at its start (a timed call) or at each poll (an untimed one)
//! finds either.
//!
//! A server's handler (`tower::ServerLayer`) publishes a bound too, which also points to the
//! [`Served`] request: what the handler's calls tell it (one of them gave up retrying), and
//! what they take from it (the request was a retry, so they make one attempt each).

use crate::attempt::{Attempt, InvocationId};
use crate::engine::Current;
use crate::engine::scope;
use crate::engine::site::Resolved;
use crate::observe::trace::{self, Trace};
use crate::observe::{Levels, Source, Who};
use crate::runtime::Instant;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use rand::RngExt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The frame of the attempt being polled on this thread: the one place the crate uses
/// `unsafe` (a scoped thread-local, as the `scoped-tls` crate has it, but read and written
/// inline rather than through a `&'static LocalKey`, whose every access is an indirect call;
/// BENCHMARKS.md gives what that costs the success path).
///
/// The slot belongs to the thread, not to the task: it holds a frame only while the retry
/// loop is inside a poll of the attempt's future on this thread, and is empty (or holds the
/// outer attempt's frame) the rest of the time. Code the attempt's poll does not run sees no
/// attempt: a task spawned from the body, or a future the body hands to another thread (or
/// keeps for later) and that is polled there outside the attempt's poll.
///
/// It holds a [`Bound`] instead while a caller's deadline polls its future: the pointer's low
/// bit tells which (both types are aligned to more than one byte, so the bit of an address is
/// free), and an empty slot is null as before, so the test a call makes of the slot is one
/// comparison with null, as it was with frames alone.
#[allow(unsafe_code)]
mod slot {
    use super::{Bound, Frame, NESTED_GAVE_UP, Outer, Served};
    use std::cell::Cell;
    use std::ptr;
    use std::sync::atomic::Ordering;

    // The published frame's lifetime is erased here: it is alive while published (see
    // `enter`), and `with` lends it out only for a call that cannot keep it. A bound is
    // published the same way (see `enter_bound`).
    thread_local! {
        static CURRENT: Cell<*const ()> = const { Cell::new(ptr::null()) };
    }

    /// The low bit of a published pointer that marks a [`Bound`].
    const BOUND: usize = 1;
    const _: () = assert!(align_of::<Bound<'_>>() > BOUND && align_of::<Frame<'_>>() > BOUND);

    // `with` lends the published `Frame<'static>` out as a `Frame<'x>` of its caller's shorter
    // `'x`, which is sound only while `Frame` is covariant in its lifetime (and the same for a
    // `Bound`). This stops compiling if a field makes either invariant (a `Cell<&'a T>`, a
    // `&'a mut T`, ...).
    const _: () = {
        #[allow(dead_code)]
        fn covariant<'x>(frame: &'x Frame<'static>) -> &'x Frame<'x> {
            frame
        }
        #[allow(dead_code)]
        fn covariant_bound<'x>(bound: &'x Bound<'static>) -> &'x Bound<'x> {
            bound
        }
    };

    /// What a published pointer points to.
    enum Published<'x> {
        Frame(&'x Frame<'x>),
        Bound(&'x Bound<'x>),
    }

    /// Reads what `p` points to.
    ///
    /// # Safety
    ///
    /// `p` is not null, and was read from `CURRENT` on this thread: only `enter` and
    /// `enter_bound` write a non-null pointer there, taken from a `&Frame` or a `&Bound` that
    /// they borrow until they have put the previous pointer back (on return or unwind), in LIFO
    /// order on this thread. So it points to a live frame or bound, borrowed shared, for as
    /// long as the caller runs inside the `enter` or `enter_bound` that published it (and so
    /// does the served request a bound borrows); the caller does not keep the reference past
    /// its own call.
    #[inline(always)]
    unsafe fn published<'x>(p: *const ()) -> Published<'x> {
        if p.addr() & BOUND == 0 {
            // SAFETY: see above; untagged, it is a frame.
            Published::Frame(unsafe { &*p.cast::<Frame<'x>>() })
        } else {
            // SAFETY: see above; tagged, it is a bound, at the untagged address.
            Published::Bound(unsafe { &*p.map_addr(|a| a & !BOUND).cast::<Bound<'x>>() })
        }
    }

    /// What a call started now takes from what is published: an outer attempt's depth and
    /// cutoff, or a caller's deadline.
    #[inline(always)]
    fn outer_of(p: *const ()) -> Option<Outer> {
        if p.is_null() {
            return None;
        }
        // SAFETY: not null, read from `CURRENT` just now; the reference ends here.
        Some(match unsafe { published(p) } {
            Published::Frame(frame) => frame.as_outer(),
            Published::Bound(bound) => bound.outer,
        })
    }

    /// Publishes `frame` while `f` runs, and restores what was published before, also when
    /// `f` panics. What was published before (an outer attempt, or a caller's deadline) is
    /// first handed to `outer` with `frame`.
    #[inline]
    pub(super) fn enter<'a, T>(
        frame: &mut Frame<'a>,
        outer: impl FnOnce(&mut Frame<'a>, Outer),
        f: impl FnOnce() -> T,
    ) -> T {
        let prev = CURRENT.get();
        // `frame` is borrowed mutably here, so it is not what is published.
        if let Some(o) = outer_of(prev) {
            outer(frame, o);
        }
        let frame: *const Frame<'a> = frame;
        CURRENT.set(frame.cast());
        let _restore = Restore(prev);
        f()
    }

    /// Publishes a bound of `outer` (a caller's deadline, and the request being served, if
    /// any) while `f` runs, and restores what was published before, also when `f` panics.
    pub(super) fn enter_bound<T>(
        outer: Outer,
        served: Option<&Served>,
        f: impl FnOnce() -> T,
    ) -> T {
        let prev = CURRENT.get();
        let bound = Bound {
            outer,
            below: prev,
            served,
        };
        let p: *const Bound<'_> = &bound;
        CURRENT.set(p.cast::<()>().map_addr(|a| a | BOUND));
        let _restore = Restore(prev);
        f()
    }

    /// Puts a pointer back into the slot when dropped.
    struct Restore(*const ());

    impl Drop for Restore {
        #[inline]
        fn drop(&mut self) {
            CURRENT.set(self.0);
        }
    }

    /// What a call started now inside what is published takes from it, if anything is.
    #[inline]
    pub(super) fn outer() -> Option<Outer> {
        outer_of(CURRENT.get())
    }

    /// Tells what is published that a call made inside it gave up: the attempt it runs
    /// inside (marked, for the call that made that attempt to pass on when it fails), or else
    /// the request being served. A caller's deadline in between is looked through.
    pub(super) fn gave_up() {
        let mut p = CURRENT.get();
        while !p.is_null() {
            // SAFETY: not null, read from `CURRENT` or from a published bound's `below`, as in
            // `with`; the references end here.
            match unsafe { published(p) } {
                Published::Frame(frame) => {
                    frame.depth.fetch_or(NESTED_GAVE_UP, Ordering::Relaxed);
                    return;
                }
                Published::Bound(b) => match b.served {
                    Some(served) => {
                        served.gave_up.store(true, Ordering::Relaxed);
                        return;
                    }
                    None => p = b.below,
                },
            }
        }
    }

    /// Runs `f` with the frame of the attempt the current code runs inside, if any, and the
    /// cutoff of the innermost caller's deadline published over it (which is clamped to
    /// everything below it), if any.
    pub(super) fn with<T>(f: impl for<'x> FnOnce(&'x Frame<'x>, Option<Outer>) -> T) -> Option<T> {
        let mut p = CURRENT.get();
        let mut bound = None;
        while !p.is_null() {
            // SAFETY: not null, read from `CURRENT`, or from a published bound's `below`
            // (what was published when it was, and is put back when it is no longer: alive
            // longer than the bound). `f` cannot keep the reference past its own call (`T`
            // does not borrow it), nor anything the frame borrows (it sees the frame's
            // lifetime as its own call's).
            match unsafe { published(p) } {
                Published::Frame(frame) => return Some(f(frame, bound)),
                Published::Bound(b) => {
                    bound = bound.or(Some(b.outer));
                    p = b.below;
                }
            }
        }
        None
    }
}

/// What a caller's deadline publishes while its future is polled: what a call started there
/// takes from it (the depth of the attempt it runs inside, 0 outside any, and the deadline,
/// already clamped to that attempt's cutoff), what was published before it, and the request
/// a server's handler serves, if it is one's.
pub(crate) struct Bound<'s> {
    outer: Outer,
    below: *const (),
    served: Option<&'s Served>,
}

/// A request a server's handler serves (`tower::ServerLayer`), as the calls the handler makes
/// see it: one of them gave up retrying (its retries spent, refused by a protection, told not
/// to retry), which the server's answer passes on; and whether the request was itself a
/// caller's retry, after which each of them makes one attempt.
#[derive(Debug, Default)]
pub(crate) struct Served {
    gave_up: AtomicBool,
    single: bool,
}

impl Served {
    /// A request; `single`: its calls make one attempt each.
    pub(crate) const fn new(single: bool) -> Served {
        Served {
            gave_up: AtomicBool::new(false),
            single,
        }
    }

    /// Whether a call made while serving it gave up retrying.
    pub(crate) fn gave_up(&self) -> bool {
        self.gave_up.load(Ordering::Relaxed)
    }
}

/// What a call publishes about its current attempt.
pub(crate) struct Frame<'a> {
    /// The function's site, as its calls use it.
    pub(crate) r: &'a Resolved,
    /// The attempt being made (1-based; 0 before the first).
    pub(crate) number: u32,
    /// The call's depth less one (0 for an outermost call, one more for each `#[retry]`
    /// attempt it runs inside) and, in the top bit, whether a call nested in the current
    /// attempt retried and still failed (read and cleared when this call decides what follows
    /// the attempt); the next bits, whether its attempts wrote the call's idempotency key into
    /// a request ([`KEY_SENT`]), whether a call nested in its attempts gave up retrying
    /// ([`NESTED_GAVE_UP`]), whether it makes one attempt only ([`SINGLE`]), and whether the
    /// current attempt's request gave up at its own timeout ([`REQUEST_TIMED_OUT`]). One word
    /// beside the attempt number, both 0 for a new outermost call, so that it sets them up with
    /// the zeros around them.
    depth: AtomicU32,
    /// When the current attempt is cut off (its timeout or the deadline), if anything cuts it.
    pub(crate) cutoff: Option<Instant>,
    /// The call's deadline: its own, clamped to the cutoff of the attempt it runs inside.
    pub(crate) deadline: Option<Instant>,
    /// The invocation id's two halves; zero until someone asks (a version-4 UUID is never 0).
    id: [AtomicU64; 2],
}

/// The bit of `Frame::depth` that marks a nested call that retried and failed.
const NESTED_RETRIED: u32 = 1 << 31;

/// The bit of `Frame::depth` that marks a frame whose attempts wrote the call's idempotency key
/// into a request (`wire`): the error responses they read are the key's answers. Set once, it
/// stays for the frame's later attempts, which run the same body (a hedge has a frame of its
/// own).
const KEY_SENT: u32 = 1 << 30;

/// The bit of `Frame::depth` that marks a frame in whose attempts a nested call gave up
/// retrying: when the call fails in turn, it gave up too (see [`call_gave_up`]). Set once, it
/// stays for the call.
const NESTED_GAVE_UP: u32 = 1 << 29;

/// The bit of `Frame::depth` that marks a call that makes one attempt whatever its settings:
/// it runs while a server serves a request that was its caller's retry (gRPC's and Kitex's
/// rule that a retry is not retried again downstream). Nested calls take it from their outer
/// attempt.
const SINGLE: u32 = 1 << 28;

/// The bit of `Frame::depth` that marks an attempt whose request gave up at its client's own
/// timeout (reqwest's, which `with_attempt` sets to the attempt's time left, see
/// [`mark_request_timed_out`]): both it and the loop's timer run out at the attempt's cutoff,
/// and the attempt, polled first, would end with the client's error rather than the loop's
/// `TimedOut`. Read and cleared when the attempt ends ([`Frame::take_cut_by_request`]).
const REQUEST_TIMED_OUT: u32 = 1 << 27;

/// The bits of `Frame::depth` that are marks, not the depth.
const MARKS: u32 = NESTED_RETRIED | KEY_SENT | NESTED_GAVE_UP | SINGLE | REQUEST_TIMED_OUT;

/// The marks a hedged attempt's frame passes on to its call's when the attempt ends.
const PASSED_ON: u32 = NESTED_RETRIED | KEY_SENT | NESTED_GAVE_UP;

/// The outer attempt a call starts inside, if any: its depth and cutoff; or the caller's
/// deadline it starts under (the depth of the attempt that runs inside, 0 outside any, and the
/// deadline as the cutoff); and whether calls started there make one attempt each.
#[derive(Clone, Copy)]
pub(crate) struct Outer {
    pub(crate) depth: u32,
    pub(crate) cutoff: Option<Instant>,
    pub(crate) single: bool,
}

/// The attempt the current code runs inside, or the caller's deadline, if any.
pub(crate) fn outer() -> Option<Outer> {
    slot::outer()
}

/// Runs `f` under a caller's deadline `at` (published for the calls `f` starts; `None`: only
/// `below`'s cutoff), inside the attempt (or the caller's deadline) `below`, which [`outer`]
/// gave; `at` is already clamped to its cutoff. `served`: the request a server's handler
/// serves, if `f` runs for one.
pub(crate) fn enter_bound<T>(
    at: Option<Instant>,
    below: Option<Outer>,
    served: Option<&Served>,
    f: impl FnOnce() -> T,
) -> T {
    let outer = Outer {
        depth: below.map_or(0, |o| o.depth),
        cutoff: at,
        single: below.is_some_and(|o| o.single) || served.is_some_and(|s| s.single),
    };
    slot::enter_bound(outer, served, f)
}

/// Tells the attempt the calling code runs inside (or else the request a server serves) that
/// a call made there gave up retrying: its retries spent, refused by a protection, ended by
/// the deadline or a server's long hint, told not to retry (an error no retry fixes), or a
/// call of its own gave up. Nothing outside both.
pub(crate) fn call_gave_up() {
    slot::gave_up();
}

impl<'a> Frame<'a> {
    /// The frame of a call of `site` whose own deadline is `deadline`, started inside `outer`.
    #[inline]
    pub(crate) fn new(r: &'a Resolved, deadline: Option<Instant>, outer: Option<Outer>) -> Self {
        let (word, deadline) = match outer {
            None => (0, deadline),
            Some(outer) => {
                let (depth, deadline) = nested(deadline, outer);
                ((depth - 1) | single_bit(outer), deadline)
            }
        };
        Frame {
            r,
            number: 0,
            depth: AtomicU32::new(word),
            cutoff: None,
            deadline,
            id: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// What a call started inside this frame's attempt takes from it.
    fn as_outer(&self) -> Outer {
        Outer {
            depth: self.depth(),
            cutoff: self.cutoff_or_deadline(),
            single: self.single(),
        }
    }

    /// When the current attempt is cut off: its own cutoff, else the deadline.
    pub(crate) fn cutoff_or_deadline(&self) -> Option<Instant> {
        self.cutoff.or(self.deadline)
    }

    /// The call's invocation id, drawn the first time it is asked for (from the thread's
    /// generator, never a test scope's seeded one, whose jitter draws it would shift).
    pub(crate) fn invocation_id(&self) -> InvocationId {
        let (hi, lo) = (
            self.id[0].load(Ordering::Relaxed),
            self.id[1].load(Ordering::Relaxed),
        );
        if hi != 0 || lo != 0 {
            return InvocationId::from_halves(hi, lo);
        }
        let bits = scope::thread_rng().random::<u128>();
        let id = InvocationId::v4(bits);
        let (hi, lo) = id.halves();
        self.id[0].store(hi, Ordering::Relaxed);
        self.id[1].store(lo, Ordering::Relaxed);
        id
    }

    /// A frame of its own for attempt `number` of a hedged call, cut off at `cutoff`, which
    /// runs while other attempts of the call run: the call's depth, deadline and invocation id
    /// (if drawn).
    #[inline]
    pub(crate) fn fork(&self, number: u32, cutoff: Option<Instant>) -> Frame<'a> {
        Frame {
            r: self.r,
            number,
            depth: AtomicU32::new(self.depth.load(Ordering::Relaxed) & (!MARKS | SINGLE)),
            cutoff,
            deadline: self.deadline,
            id: [
                AtomicU64::new(self.id[0].load(Ordering::Relaxed)),
                AtomicU64::new(self.id[1].load(Ordering::Relaxed)),
            ],
        }
    }

    /// Whether the invocation id has been drawn.
    pub(crate) fn has_id(&self) -> bool {
        self.id[0].load(Ordering::Relaxed) != 0 || self.id[1].load(Ordering::Relaxed) != 0
    }

    /// The invocation id's halves as drawn (zero if not yet).
    #[inline]
    pub(crate) fn id_halves(&self) -> [u64; 2] {
        [
            self.id[0].load(Ordering::Relaxed),
            self.id[1].load(Ordering::Relaxed),
        ]
    }

    /// Takes an invocation id drawn by a frame forked from this one, if this one has none.
    pub(crate) fn adopt_id(&self, halves: [u64; 2]) {
        if halves != [0, 0] && !self.has_id() {
            self.id[0].store(halves[0], Ordering::Relaxed);
            self.id[1].store(halves[1], Ordering::Relaxed);
        }
    }

    /// Takes `other`'s invocation id if this frame has none yet (the body of one attempt of a
    /// hedged call asked for it first), so that every attempt and event of a call has one.
    pub(crate) fn share_id(&self, other: &Frame<'_>) {
        self.adopt_id(other.id_halves());
    }

    /// Whether a call nested in the attempt just ended retried and failed; clears the mark.
    pub(crate) fn take_nested_retried(&self) -> bool {
        // A load first: the mark is rare, and a locked read-modify-write is not free.
        if self.depth.load(Ordering::Relaxed) & NESTED_RETRIED == 0 {
            return false;
        }
        self.depth.fetch_and(!NESTED_RETRIED, Ordering::Relaxed);
        true
    }

    /// 1 for an outermost call, one more for each `#[retry]` attempt it runs inside.
    pub(crate) fn depth(&self) -> u32 {
        (self.depth.load(Ordering::Relaxed) & !MARKS) + 1
    }

    /// Whether the call makes one attempt whatever its settings (see [`SINGLE`]).
    #[inline]
    pub(crate) fn single(&self) -> bool {
        self.depth.load(Ordering::Relaxed) & SINGLE != 0
    }

    /// Whether a call nested in this call's attempts gave up retrying.
    pub(crate) fn nested_gave_up(&self) -> bool {
        self.depth.load(Ordering::Relaxed) & NESTED_GAVE_UP != 0
    }

    /// Whether an attempt of this call wrote its idempotency key into a request.
    pub(crate) fn key_sent(&self) -> bool {
        self.depth.load(Ordering::Relaxed) & KEY_SENT != 0
    }

    /// The marks a hedged attempt's frame passes on to its call's when the attempt ends
    /// (clearing the ones that are read per attempt), and whether its request gave up at its
    /// own timeout ([`REQUEST_TIMED_OUT`], which [`merge`](Self::merge) leaves out).
    pub(crate) fn take_passed_on(&self) -> u32 {
        self.depth
            .fetch_and(!(NESTED_RETRIED | REQUEST_TIMED_OUT), Ordering::Relaxed)
            & (PASSED_ON | REQUEST_TIMED_OUT)
    }

    /// Whether the attempt that just ended gave up at its request's own timeout at or after
    /// its cutoff (see [`REQUEST_TIMED_OUT`]): it was cut off as the loop's timer cuts an
    /// attempt off. Clears the mark.
    pub(crate) fn take_cut_by_request(&self) -> bool {
        // A load first: the mark is rare, and a locked read-modify-write is not free.
        if self.depth.load(Ordering::Relaxed) & REQUEST_TIMED_OUT == 0 {
            return false;
        }
        self.depth.fetch_and(!REQUEST_TIMED_OUT, Ordering::Relaxed);
        cut_by_request(REQUEST_TIMED_OUT, self.cutoff_or_deadline())
    }

    /// Takes the marks a hedged attempt's frame passed on.
    pub(crate) fn merge(&self, marks: u32) {
        if marks != 0 {
            self.depth.fetch_or(marks & PASSED_ON, Ordering::Relaxed);
        }
    }

    /// Runs `f` with this frame published as the current attempt's; a frame published
    /// before (the attempt this call runs inside) gives it its depth and clamps its deadline.
    pub(crate) fn enter<T>(&mut self, f: impl FnOnce() -> T) -> T {
        slot::enter(self, Frame::adopt, f)
    }

    /// [`enter`](Self::enter) inside the attempt's span of `trace` (opened at its first poll),
    /// if it is recorded: a hedged call's attempt, whose spans opened with the call's. One test
    /// when they are not: the poll in the span is out of line.
    #[inline(always)]
    pub(crate) fn enter_traced<T>(&mut self, trace: &mut Trace, f: impl FnOnce() -> T) -> T {
        if trace.is_on() {
            return self.enter_in_span(trace, false, f);
        }
        self.enter(f)
    }

    /// [`enter`](Self::enter) inside the attempt's span of the call's `trace`, opening the
    /// call's span first if a subscriber may record it. One test of the process's flag when
    /// nobody does.
    #[inline(always)]
    pub(crate) fn enter_watched<T>(&mut self, trace: &mut Trace, f: impl FnOnce() -> T) -> T {
        if trace::wanted() {
            return self.enter_in_span(trace, true, f);
        }
        self.enter(f)
    }

    #[cold]
    #[inline(never)]
    fn enter_in_span<T>(&mut self, trace: &mut Trace, open: bool, f: impl FnOnce() -> T) -> T {
        if open {
            trace.open(self);
        }
        let _span = trace.enter_attempt(self.number);
        self.enter(f)
    }

    /// Takes what the code runs inside now, if anything: as [`adopt`](Self::adopt).
    pub(crate) fn adopt_outer(&mut self) {
        if let Some(outer) = outer() {
            self.adopt(outer);
        }
    }

    /// Takes the depth and deadline of a call run inside `outer` (an attempt, or a caller's
    /// deadline): the same answer at every poll, so looking again changes nothing.
    fn adopt(&mut self, outer: Outer) {
        let (depth, deadline) = nested(self.deadline, outer);
        let word = self.depth.get_mut();
        *word = (*word & MARKS) | (depth - 1) | single_bit(outer);
        self.deadline = deadline;
    }

    /// The attempt as the code sees it, under `bound` (a caller's deadline inside the attempt)
    /// if any: its cutoff is then the earlier of the two.
    fn snapshot(&self, bound: Option<Outer>) -> Attempt {
        let configured = if self.single() {
            1
        } else {
            self.r.settings.max_attempts
        };
        let cutoff = match (self.cutoff_or_deadline(), bound.and_then(|b| b.cutoff)) {
            (Some(own), Some(bound)) => Some(own.min(bound)),
            (own, bound) => own.or(bound),
        };
        Attempt {
            function: self.r.function(),
            partition: self.r.partition(),
            number: self.number,
            max_attempts: scope::around().max_attempts(configured),
            depth: self.depth(),
            cutoff,
            deadline: self.deadline,
            id: self.invocation_id(),
            keyed: self.r.idempotency_key,
        }
    }
}

/// The depth and deadline of a call started inside `outer`.
fn nested(deadline: Option<Instant>, outer: Outer) -> (u32, Option<Instant>) {
    let deadline = match (deadline, outer.cutoff) {
        (Some(own), Some(cut)) => Some(own.min(cut)),
        (own, cut) => own.or(cut),
    };
    (
        outer.depth.saturating_add(1).min(REQUEST_TIMED_OUT),
        deadline,
    )
}

/// The mark of a call started inside `outer` that makes one attempt, if it must.
fn single_bit(outer: Outer) -> u32 {
    if outer.single { SINGLE } else { 0 }
}

/// Marks the attempt the calling code runs inside, if any, as one that wrote its call's
/// idempotency key into a request.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn mark_key_sent() {
    slot::with(|f, _| f.depth.fetch_or(KEY_SENT, Ordering::Relaxed));
}

/// Whether the attempt the calling code runs inside wrote its call's idempotency key into a
/// request (so an error response it reads now answers a keyed request).
#[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
pub(crate) fn key_sent() -> bool {
    slot::with(|f, _| f.depth.load(Ordering::Relaxed) & KEY_SENT != 0).unwrap_or(false)
}

/// Marks the attempt the calling code runs inside, if any, as one whose request gave up at
/// its client's own timeout (see [`REQUEST_TIMED_OUT`]).
#[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
pub(crate) fn mark_request_timed_out() {
    slot::with(|f, _| f.depth.fetch_or(REQUEST_TIMED_OUT, Ordering::Relaxed));
}

/// Whether an attempt whose frame had `marks` when it ended, cut off at `cutoff`, gave up at
/// its request's own timeout at or after that cutoff: the loop's timeout cut it off.
pub(crate) fn cut_by_request(marks: u32, cutoff: Option<Instant>) -> bool {
    marks & REQUEST_TIMED_OUT != 0 && cutoff.is_some_and(|c| c <= Instant::now())
}

/// Marks the attempt this call runs inside, if any: a call nested in it retried and failed.
pub(crate) fn nested_call_retried() {
    slot::with(|f, _| f.depth.fetch_or(NESTED_RETRIED, Ordering::Relaxed));
}

pin_project_lite::pin_project! {
    /// An attempt's future, polled with its call's frame published (and inside its span, when
    /// the call's spans are recorded).
    pub struct InFrame<'c, 'a, F> {
        current: &'c mut Current<'a>,
        #[pin]
        attempt: F,
    }
}

/// What the reports of a call's decisions say of it (`crate::observe`).
impl Source for Frame<'_> {
    fn who(&self) -> Who<'_> {
        self.r.who()
    }

    fn invocation_id(&self) -> InvocationId {
        Frame::invocation_id(self)
    }

    fn attempt(&self) -> u32 {
        self.number
    }

    fn levels(&self) -> Levels {
        self.r.levels()
    }
}

impl<'c, 'a, F> InFrame<'c, 'a, F> {
    pub(crate) fn new(current: &'c mut Current<'a>, attempt: F) -> Self {
        InFrame { current, attempt }
    }
}

impl<F: Future> Future for InFrame<'_, '_, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let current = &mut **this.current;
        current
            .frame
            .enter_watched(&mut current.trace, || this.attempt.poll(cx))
    }
}

/// The attempt of a `#[retry]` function the calling code runs inside, or `None` outside any.
///
/// Inside the body (and in anything the body calls and awaits in place) it tells which attempt
/// this is, how long it has, and which call it belongs to, so that a request can carry them
/// (see the `reqwest`, `tonic` and `http` helpers). Reading it allocates nothing; a body that
/// never asks pays nothing for it.
///
/// The attempt is known per thread, not per task: only while the retry loop polls the
/// attempt's future, on the thread polling it. A task spawned from the body, or a future the
/// body hands to another thread and that is polled there outside the attempt's poll, sees
/// `None`; such code needs the [`Attempt`] passed to it (it is `Copy`), read in the body.
///
/// A caller's deadline ([`with_deadline`](crate::with_deadline)) is no attempt: outside any
/// call it leaves `attempt()` at `None`, and inside a body it shows the body's attempt, cut off
/// at the earlier of its own cutoff and the deadline.
///
/// ```
/// use retry_runtime::{attempt, retry};
///
/// #[retry(max_attempts = 3, attempt_timeout = "2s", deadline = "5s")]
/// async fn fetch() -> Result<u32, std::io::Error> {
///     let a = attempt().expect("inside a #[retry] body");
///     assert_eq!((a.number(), a.max_attempts(), a.depth()), (1, 3, 1));
///     assert_eq!(a.time_left(), Some(std::time::Duration::from_secs(2)));
///     assert_eq!(a.function(), "fetch");
///     Ok(a.number())
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// assert!(attempt().is_none());
/// assert_eq!(fetch().await.unwrap(), 1);
/// # }
/// ```
#[must_use]
pub fn attempt() -> Option<Attempt> {
    slot::with(|f, bound| f.snapshot(bound))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn nesting_clamps_the_deadline_to_the_outer_cutoff() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let outer = Outer {
            depth: 1,
            cutoff: Some(now + s(2)),
            single: false,
        };
        assert_eq!(nested(Some(now + s(5)), outer), (2, Some(now + s(2))));
        assert_eq!(nested(Some(now + s(1)), outer), (2, Some(now + s(1))));
        assert_eq!(nested(None, outer), (2, Some(now + s(2))));
        let unbounded = Outer {
            depth: 2,
            cutoff: None,
            single: false,
        };
        assert_eq!(nested(Some(now + s(1)), unbounded), (3, Some(now + s(1))));
        assert_eq!(nested(None, unbounded), (3, None));
    }
}
