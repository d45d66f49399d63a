//! A call's spans (feature `tracing`), with OpenTelemetry's names: one `retry` span per call,
//! and one `retry.attempt` span per attempt, its child, in which the attempt's body runs (so the
//! spans its client opens nest under it). The backoff between two attempts is the call span's
//! time between two children; the call's events (a retry decided, retries ended early, a
//! refusal, a hedge) are events of the call span.
//!
//! | span | level | fields |
//! |---|---|---|
//! | `retry` | INFO | `otel.name` (the function's name, or the policy's: the name OpenTelemetry gives the span), `retry.function`, `retry.invocation_id`; recorded when the call ends: `retry.attempts` (attempts sent, when its spans close), and when it fails `error.type` (the last failed attempt's, or the class of what ended the call) and `otel.status_code` `ERROR` |
//! | `retry.attempt` | INFO | `retry.attempt` (its number), `http.request.resend_count` (number - 1, from the second attempt on), `retry.hedge` (a hedge); when it failed, `error.type` (the HTTP status, as text, of a response of 400 or more it read (`"503"`), the name of a gRPC status other than `OK` (`UNAVAILABLE`), else the failure's class: `transient`, `timeout`, `throttling`, `not_sent`, `permanent`) and `otel.status_code` `ERROR`; the integrations record `http.response.status_code`, `rpc.system` and `rpc.grpc.status_code` |
//!
//! tracing-opentelemetry sets an OpenTelemetry span's status from `otel.status_code` and its
//! name from `otel.name`. The `error.type` of a status follows OpenTelemetry's conventions for
//! HTTP client spans (the status code as text when it is 400 or more) and for gRPC client spans
//! (the status code's name when it is not `OK`).
//!
//! The spans open only when a subscriber may record them, which the call learns from one flag
//! of the process's (see [`watch`]) at each poll of an attempt: otherwise the call holds an
//! empty slot, and pays that test and one more where it ends. A call's spans open at its first
//! attempt's first poll (or at its gate, if it has one, or its first report, if that comes
//! first) and live in one box per call, allocated only when they open. Each span comes from a
//! callsite of the crate's own (see [`Site`]), which asks the thread's subscriber for every span
//! it opens rather than keep `tracing-core`'s cached interest.

use crate::classify::ErrorClass;
use crate::observe::Source;

#[cfg(feature = "tracing")]
pub(crate) use watch::wanted;

/// Without the `tracing` feature, nobody records spans.
#[cfg(not(feature = "tracing"))]
pub(crate) fn wanted() -> bool {
    false
}

/// The call span's fields, in order: its callsite's and the watch's.
#[cfg(feature = "tracing")]
const CALL_FIELDS: &[&str] = &[
    "otel.name",
    "retry.function",
    "retry.invocation_id",
    "retry.attempts",
    "error.type",
    "otel.status_code",
];

/// The attempt span's fields, in order.
#[cfg(feature = "tracing")]
const ATTEMPT_FIELDS: &[&str] = &[
    "retry.attempt",
    "http.request.resend_count",
    "retry.hedge",
    "error.type",
    "otel.status_code",
    "http.response.status_code",
    "rpc.system",
    "rpc.grpc.status_code",
];

/// Whether any subscriber may record a call's span, as one flag of the process's, kept by a
/// callsite of the crate's own: the `retry` span's metadata (its name, target, level and
/// fields), registered with `tracing-core` the first time a call asks. `tracing-core` tells a
/// registered callsite the subscribers' interest when it registers it and again whenever a
/// dispatcher is created or the interest cache is rebuilt; `Interest::never()` (no subscriber
/// at all, or filters that leave the target's INFO out) clears the flag, unless it may be the
/// answer of the wrong thread (`unsure`). Where it is set, a call asks the thread's subscriber
/// for its spans ([`Site::open`]).
#[cfg(feature = "tracing")]
mod watch {
    use std::sync::Once;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    use tracing_core::callsite::Callsite;
    use tracing_core::field::FieldSet;
    use tracing_core::metadata::Kind;
    use tracing_core::subscriber::{Interest, NoSubscriber};
    use tracing_core::{Level, Metadata, dispatcher};

    /// Set until the callsite is registered (so the first call looks), then the interest.
    static WANTED: AtomicBool = AtomicBool::new(true);
    static REGISTERED: Once = Once::new();

    struct Watch;

    static WATCH: Watch = Watch;

    static META: Metadata<'static> = Metadata::new(
        "retry",
        "retry",
        Level::INFO,
        Some(file!()),
        Some(line!()),
        Some(module_path!()),
        FieldSet::new(super::CALL_FIELDS, tracing_core::identify_callsite!(&WATCH)),
        Kind::SPAN,
    );

    impl Callsite for Watch {
        fn set_interest(&self, interest: Interest) {
            WANTED.store(!interest.is_never() || unsure(), Ordering::Relaxed);
        }

        fn metadata(&self) -> &Metadata<'_> {
            &META
        }
    }

    /// Whether an `Interest::never()` may be another thread's subscriber's to give. While one
    /// dispatcher is registered, `tracing-core` asks the subscriber of the thread that
    /// registers a callsite or rebuilds the cache, not that dispatcher: from a thread without
    /// one (`NoSubscriber`), the answer is `never` even where another thread's subscriber (set
    /// by `set_default`, or made and not set yet) records the span. Such a `never` is kept only
    /// if no dispatcher made so far enables INFO: `LevelFilter::current()` is the most verbose
    /// level of the dispatchers alive when one was last made (`OFF` before any).
    fn unsure() -> bool {
        Level::INFO <= LevelFilter::current() && dispatcher::get_default(|d| d.is::<NoSubscriber>())
    }

    /// Whether a subscriber may record the spans of a call: one load where nobody does (none
    /// in a build whose `tracing` leaves INFO out at compile time).
    #[inline(always)]
    pub(crate) fn wanted() -> bool {
        Level::INFO <= STATIC_MAX_LEVEL && WANTED.load(Ordering::Relaxed) && looked()
    }

    /// Registers the callsite the first time (which sets the flag to the subscribers'
    /// interest), then reads the flag.
    #[cold]
    #[inline(never)]
    fn looked() -> bool {
        REGISTERED.call_once(|| tracing_core::callsite::register(&WATCH));
        WANTED.load(Ordering::Relaxed)
    }
}

/// The callsite of one of the crate's spans (the call's, the attempt's): its metadata, and
/// whether it is registered. A `tracing` macro's callsite keeps the interest `tracing-core`
/// gives it and opens no span where that says `never`; while one dispatcher is registered,
/// `tracing-core` takes that answer from the subscriber of whichever thread first reaches the
/// callsite, so a thread without one would close it for every thread. This callsite keeps no
/// interest: it asks the thread's subscriber (`enabled`) for each span it opens, and registers
/// itself from a thread that has a subscriber, so that subscriber is told of it
/// (`register_callsite`) before its first span.
#[cfg(feature = "tracing")]
struct Site {
    meta: &'static tracing_core::Metadata<'static>,
    registered: std::sync::Once,
}

#[cfg(feature = "tracing")]
impl tracing_core::callsite::Callsite for Site {
    fn set_interest(&self, _: tracing_core::subscriber::Interest) {}

    fn metadata(&self) -> &tracing_core::Metadata<'_> {
        self.meta
    }
}

#[cfg(feature = "tracing")]
static CALL: Site = Site {
    meta: &CALL_META,
    registered: std::sync::Once::new(),
};

#[cfg(feature = "tracing")]
static CALL_META: tracing_core::Metadata<'static> = tracing_core::Metadata::new(
    "retry",
    "retry",
    tracing_core::Level::INFO,
    Some(file!()),
    Some(line!()),
    Some(module_path!()),
    tracing_core::field::FieldSet::new(CALL_FIELDS, tracing_core::identify_callsite!(&CALL)),
    tracing_core::metadata::Kind::SPAN,
);

#[cfg(feature = "tracing")]
static ATTEMPT: Site = Site {
    meta: &ATTEMPT_META,
    registered: std::sync::Once::new(),
};

#[cfg(feature = "tracing")]
static ATTEMPT_META: tracing_core::Metadata<'static> = tracing_core::Metadata::new(
    "retry.attempt",
    "retry",
    tracing_core::Level::INFO,
    Some(file!()),
    Some(line!()),
    Some(module_path!()),
    tracing_core::field::FieldSet::new(ATTEMPT_FIELDS, tracing_core::identify_callsite!(&ATTEMPT)),
    tracing_core::metadata::Kind::SPAN,
);

#[cfg(feature = "tracing")]
impl Site {
    /// The span of this callsite, a child of `parent` (else of the current span), with its
    /// first fields' `values` (the others recorded later), if the thread's subscriber records
    /// it.
    fn open<const N: usize>(
        &'static self,
        parent: Option<&tracing::Span>,
        values: [&dyn tracing::field::Value; N],
    ) -> Option<tracing::Span> {
        use tracing_core::dispatcher;
        if !self.registered.is_completed() {
            if dispatcher::get_default(|d| d.is::<tracing_core::subscriber::NoSubscriber>()) {
                return None;
            }
            self.registered
                .call_once(|| tracing_core::callsite::register(self));
        }
        if !dispatcher::get_default(|d| d.enabled(self.meta)) {
            return None;
        }
        let fields = self.meta.fields();
        let mut names = fields.iter();
        let names: [tracing::field::Field; N] =
            std::array::from_fn(|_| names.next().expect("a field per value"));
        let pairs: [(&tracing::field::Field, Option<&dyn tracing::field::Value>); N] =
            std::array::from_fn(|i| (&names[i], Some(values[i])));
        // The value set tracing's own macros build (and `tracing-log`).
        let values = fields.value_set(&pairs);
        Some(match parent {
            Some(parent) => tracing::Span::child_of(parent, self.meta, &values),
            None => tracing::Span::new(self.meta, &values),
        })
    }
}

/// Records an HTTP response's status (`http.response.status_code`) on the current attempt's
/// span: the integrations call it where they read a response inside an attempt's poll (the
/// tower layer's exchange, reqwest's `error_for_status`). Nothing outside an attempt's span.
/// A status of 400 or more is the attempt's `error.type` if the attempt fails.
#[cfg_attr(
    not(any(feature = "tower", feature = "reqwest")),
    allow(dead_code, reason = "the HTTP integrations'")
)]
pub(crate) fn http_status(code: u16) {
    #[cfg(feature = "tracing")]
    if wanted() {
        on_attempt(|span| {
            span.record("http.response.status_code", i64::from(code));
        });
        heard(if code >= 400 {
            Heard::Http(code)
        } else {
            Heard::Nothing
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = code;
}

/// Records a gRPC attempt's status (`rpc.system` `grpc`, `rpc.grpc.status_code`) on the current
/// attempt's span, as [`http_status`] does; a status other than `OK` (0) is the attempt's
/// `error.type` if the attempt fails, by its `name` (`UNAVAILABLE`).
#[cfg_attr(
    not(all(feature = "tower", feature = "grpc-config")),
    allow(dead_code, reason = "the gRPC layer's")
)]
pub(crate) fn grpc_status(code: i32, name: &'static str) {
    #[cfg(feature = "tracing")]
    if wanted() {
        on_attempt(|span| {
            span.record("rpc.system", "grpc");
            span.record("rpc.grpc.status_code", i64::from(code));
        });
        heard(if code == 0 {
            Heard::Nothing
        } else {
            Heard::Grpc(name)
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (code, name);
}

/// Runs `f` with the current span if it is a `retry.attempt` span of this crate's.
#[cfg(feature = "tracing")]
fn on_attempt(f: impl FnOnce(&tracing::Span)) {
    let span = tracing::Span::current();
    if span
        .metadata()
        .is_some_and(|m| m.target() == "retry" && m.name() == "retry.attempt")
    {
        f(&span);
    }
}

/// What an integration read of an attempt's response, kept for the attempt's `error.type`.
#[cfg(feature = "tracing")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Heard {
    /// No attempt whose spans are recorded is being polled on this thread.
    Away,
    /// Nothing that says the attempt failed: no response, or a status that is not an error.
    Nothing,
    /// An HTTP status of 400 or more.
    Http(u16),
    /// A gRPC status other than `OK`, by its name.
    Grpc(&'static str),
}

#[cfg(feature = "tracing")]
std::thread_local! {
    /// What the integrations read of the attempt being polled on this thread, while its spans
    /// are entered: each poll brings the attempt's own in and takes it back out, so a nested
    /// call's attempts keep theirs.
    static HEARD: std::cell::Cell<Heard> = const { std::cell::Cell::new(Heard::Away) };
}

/// Keeps `what` for the attempt being polled, if its spans are recorded.
#[cfg(feature = "tracing")]
fn heard(what: Heard) {
    HEARD.with(|heard| {
        if heard.get() != Heard::Away {
            heard.set(what);
        }
    });
}

/// What an attempt's span or a call's records as its `error.type`: the status its response
/// carried, else its class.
#[cfg(feature = "tracing")]
#[derive(Clone, Copy)]
enum Failure {
    Class(ErrorClass),
    Http(u16),
    Grpc(&'static str),
}

#[cfg(feature = "tracing")]
impl Failure {
    /// An attempt that failed with `class`, after its response said `heard`.
    fn of(class: ErrorClass, heard: Heard) -> Failure {
        match heard {
            Heard::Http(code) => Failure::Http(code),
            Heard::Grpc(name) => Failure::Grpc(name),
            Heard::Away | Heard::Nothing => Failure::Class(class),
        }
    }

    /// Records the failure on `span`: its `error.type`, and `otel.status_code` `ERROR`.
    fn record(self, span: &tracing::Span) {
        match self {
            Failure::Class(class) => span.record("error.type", class.as_str()),
            Failure::Http(code) => span.record("error.type", tracing::field::display(code)),
            Failure::Grpc(name) => span.record("error.type", name),
        };
        span.record("otel.status_code", "ERROR");
    }
}

/// The spans of a call, or of one attempt of a hedged call (its own attempt span, under the
/// call's span). Empty when nobody records them.
#[cfg(feature = "tracing")]
#[derive(Default)]
pub(crate) struct Trace(Option<Box<Spans>>);

/// Without the `tracing` feature, nothing.
#[cfg(not(feature = "tracing"))]
#[derive(Default)]
pub(crate) struct Trace;

/// No spans.
#[cfg(feature = "tracing")]
pub(crate) static NONE: Trace = Trace(None);
/// No spans.
#[cfg(not(feature = "tracing"))]
#[allow(dead_code, reason = "read by tracing only")]
pub(crate) static NONE: Trace = Trace;

/// The guards of an attempt's poll: the attempt's span's, then the call's (entered first, so
/// exited last), and what the integrations read during the poll, brought in for it. The
/// call's span is entered too, so that it is busy while any of its attempts is, as
/// `Instrument` keeps a future's span (tracing-opentelemetry ends a span at its last exit).
#[cfg(feature = "tracing")]
pub(crate) struct Entered<'a> {
    _attempt: tracing::span::Entered<'a>,
    _call: tracing::span::Entered<'a>,
    _heard: Hearing<'a>,
}
/// Without the `tracing` feature, nothing.
#[cfg(not(feature = "tracing"))]
pub(crate) type Entered<'a> = core::marker::PhantomData<&'a ()>;

/// The attempt's [`Heard`] in the thread's slot for one poll; its drop takes it back and puts
/// back what the slot held before (the outer attempt's, for a nested call).
#[cfg(feature = "tracing")]
struct Hearing<'a> {
    attempt: &'a mut Heard,
    outer: Heard,
}

#[cfg(feature = "tracing")]
impl<'a> Hearing<'a> {
    fn new(attempt: &'a mut Heard) -> Hearing<'a> {
        let outer = HEARD.replace(*attempt);
        Hearing { attempt, outer }
    }
}

#[cfg(feature = "tracing")]
impl Drop for Hearing<'_> {
    fn drop(&mut self) {
        *self.attempt = HEARD.replace(self.outer);
    }
}

#[cfg(feature = "tracing")]
pub(crate) struct Spans {
    /// The open attempt's span (`Span::none()` between attempts). Declared first, so that it
    /// closes before the call's span when the call ends.
    attempt: tracing::Span,
    call: tracing::Span,
    /// The attempt `attempt` is the span of (0: none is open).
    open: u32,
    /// The attempts of this trace are hedges.
    hedge: bool,
    /// What the integrations read of the open attempt's response (`Nothing` between attempts).
    heard: Heard,
    /// How the last attempt that failed failed, for the call's `error.type`.
    last: Option<Failure>,
    /// The call's invocation id is recorded on its span.
    identified: bool,
    /// The attempts sent so far (the highest number opened), recorded on the call's span as
    /// `retry.attempts` when the call's spans close.
    attempts: u32,
    /// The call's own trace, not a hedged attempt's.
    root: bool,
}

#[cfg(feature = "tracing")]
impl Drop for Spans {
    fn drop(&mut self) {
        if self.root && self.attempts > 0 {
            self.call.record("retry.attempts", i64::from(self.attempts));
        }
    }
}

// Each method tests the slot in line and does the rest out of line: a call without spans pays
// one test where it passes one of them.
impl Trace {
    /// No spans (yet).
    pub(crate) const fn none() -> Trace {
        #[cfg(feature = "tracing")]
        return Trace(None);
        #[cfg(not(feature = "tracing"))]
        Trace
    }

    /// Closes the spans.
    pub(crate) fn close(self) {}

    /// Opens the call's span if a subscriber records it and it is not open yet, and records
    /// the call's invocation id on it, once (at its first attempt, or its first report).
    #[inline(always)]
    pub(crate) fn open(&mut self, call: &dyn Source) {
        #[cfg(feature = "tracing")]
        if self.0.is_some() || watch::wanted() {
            self.open_slow(call);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = call;
    }

    #[cfg(feature = "tracing")]
    #[cold]
    #[inline(never)]
    fn open_slow(&mut self, call: &dyn Source) {
        if self.0.is_none() {
            let function = call.who().function;
            let Some(span) = CALL.open(None, [&function, &function]) else {
                return;
            };
            self.0 = Some(Box::new(Spans {
                attempt: tracing::Span::none(),
                call: span,
                open: 0,
                hedge: false,
                heard: Heard::Nothing,
                last: None,
                identified: false,
                attempts: 0,
                root: true,
            }));
        }
        if let Some(s) = &mut self.0
            && !s.identified
        {
            s.identified = true;
            s.call.record(
                "retry.invocation_id",
                tracing::field::display(call.invocation_id()),
            );
        }
    }

    /// Whether the spans are recorded.
    pub(crate) fn is_on(&self) -> bool {
        #[cfg(feature = "tracing")]
        return self.0.is_some();
        #[cfg(not(feature = "tracing"))]
        false
    }

    /// The trace of an attempt of the same call that runs beside the others (a hedged call's):
    /// its attempt spans are children of the call's span (opened first if a subscriber records
    /// it), marked `retry.hedge` if `hedge`.
    #[inline(always)]
    pub(crate) fn fork(&mut self, call: &dyn Source, hedge: bool) -> Trace {
        #[cfg(feature = "tracing")]
        if self.0.is_some() || watch::wanted() {
            return self.fork_slow(call, hedge);
        }
        let _ = (call, hedge);
        Trace::none()
    }

    #[cfg(feature = "tracing")]
    #[cold]
    #[inline(never)]
    fn fork_slow(&mut self, call: &dyn Source, hedge: bool) -> Trace {
        self.open_slow(call);
        match &mut self.0 {
            Some(s) => {
                // The attempt this trace is for was counted: the call has sent that many.
                s.attempts = s.attempts.max(call.attempt());
                Trace(Some(Box::new(Spans {
                    attempt: tracing::Span::none(),
                    call: s.call.clone(),
                    open: 0,
                    hedge,
                    heard: Heard::Nothing,
                    last: None,
                    identified: true,
                    attempts: 0,
                    root: false,
                })))
            }
            None => Trace::none(),
        }
    }

    /// Enters the span of attempt `number` for one poll of it (the span opens at its first
    /// poll; the call's span was [opened](Self::open) before): the span is exited when the
    /// returned guard drops. `None` when the spans are not recorded. Called out of line only.
    pub(crate) fn enter_attempt(&mut self, number: u32) -> Option<Entered<'_>> {
        #[cfg(feature = "tracing")]
        if let Some(s) = &mut self.0 {
            if s.open != number {
                s.open_attempt(number);
            }
            let Spans {
                attempt,
                call,
                heard,
                ..
            } = &mut **s;
            let call = call.enter();
            return Some(Entered {
                _attempt: attempt.enter(),
                _call: call,
                _heard: Hearing::new(heard),
            });
        }
        let _ = number;
        None
    }

    /// The open attempt ended: with a failure of `class` (`error.type` and `otel.status_code`
    /// on its span), or a success polled again (`None`). Its span closes.
    #[inline(always)]
    pub(crate) fn attempt_ended(&mut self, class: Option<ErrorClass>) {
        #[cfg(feature = "tracing")]
        if let Some(s) = &mut self.0 {
            s.attempt_ended(class);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = class;
    }

    /// An attempt of a hedged call, `flight`, failed with `class` while others are in flight:
    /// its span records the failure, and the call keeps it as its last.
    pub(crate) fn flight_failed(&mut self, flight: &mut Trace, class: ErrorClass) {
        #[cfg(feature = "tracing")]
        if let Some(f) = &mut flight.0 {
            let failure = f.attempt_ended(Some(class));
            if let Some(s) = &mut self.0 {
                s.last = failure;
            }
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (flight, class);
    }

    /// Takes the open attempt span of `flight` (a hedged call's attempt that ended), so that
    /// what the call decides about that attempt is recorded on its span.
    #[inline(always)]
    pub(crate) fn adopt(&mut self, flight: Trace) {
        #[cfg(feature = "tracing")]
        if let (Some(s), Some(f)) = (&mut self.0, flight.0) {
            s.adopt(*f);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = flight;
    }

    /// The call failed: its span records `otel.status_code` `ERROR` and, as `error.type`,
    /// `class`, or the last failed attempt's.
    #[inline(always)]
    pub(crate) fn call_failed(&self, class: Option<ErrorClass>) {
        #[cfg(feature = "tracing")]
        if let Some(s) = &self.0 {
            s.call_failed(class);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = class;
    }

    /// Runs `f` (an event of the call's) inside the call's span.
    #[cfg_attr(
        not(feature = "tracing"),
        allow(dead_code, reason = "read by tracing only")
    )]
    pub(crate) fn in_call<T>(&self, f: impl FnOnce() -> T) -> T {
        #[cfg(feature = "tracing")]
        if let Some(s) = &self.0 {
            return s.call.in_scope(f);
        }
        f()
    }
}

#[cfg(feature = "tracing")]
impl Spans {
    /// Records a failure of `class` on the open attempt's span (what it returns), and closes
    /// the span.
    #[cold]
    #[inline(never)]
    fn attempt_ended(&mut self, class: Option<ErrorClass>) -> Option<Failure> {
        let failure = class.map(|class| Failure::of(class, self.heard));
        if let Some(failure) = failure {
            failure.record(&self.attempt);
            self.last = Some(failure);
        }
        self.heard = Heard::Nothing;
        self.attempt = tracing::Span::none();
        failure
    }

    #[cold]
    #[inline(never)]
    fn adopt(&mut self, mut flight: Spans) {
        self.attempt = std::mem::replace(&mut flight.attempt, tracing::Span::none());
        self.open = flight.open;
        self.heard = flight.heard;
    }

    #[cold]
    #[inline(never)]
    fn call_failed(&self, class: Option<ErrorClass>) {
        match class.map(Failure::Class).or(self.last) {
            Some(failure) => failure.record(&self.call),
            None => {
                self.call.record("otel.status_code", "ERROR");
            }
        }
    }

    fn open_attempt(&mut self, number: u32) {
        // Integers as `i64`: OpenTelemetry's integer attributes (tracing-opentelemetry records
        // an unsigned value as text).
        let resend_count = i64::from(number).checked_sub(1).filter(|&n| n > 0);
        let hedge = self.hedge.then_some(true);
        self.attempt = ATTEMPT
            .open(
                Some(&self.call),
                [&i64::from(number), &resend_count, &hedge],
            )
            .unwrap_or_else(tracing::Span::none);
        self.heard = Heard::Nothing;
        self.open = number;
        self.attempts = self.attempts.max(number);
    }
}
