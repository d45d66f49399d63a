//! A call's spans (feature `tracing`), with OpenTelemetry's names: one `retry` span per call,
//! and one `retry.attempt` span per attempt, its child, in which the attempt's body runs (so the
//! spans its client opens nest under it). The backoff between two attempts is the call span's
//! time between two children; the call's events (a retry decided, retries ended early, a
//! refusal, a hedge) are events of the call span.
//!
//! | span | level | fields |
//! |---|---|---|
//! | `retry` | INFO | `otel.name` (the function's name, or the policy's), `retry.function`, `retry.invocation_id`; recorded when the call ends: `retry.attempts` (attempts sent, when its spans close), and `error.type` when it fails (the last error's class: `transient`, `timeout`, `throttling`, `not_sent`, `permanent`) |
//! | `retry.attempt` | INFO | `retry.attempt` (its number), `http.request.resend_count` (number - 1, from the second attempt on), `retry.hedge` (a hedge), `error.type` (when it failed); the integrations record `http.response.status_code`, `rpc.system` and `rpc.grpc.status_code` |
//!
//! The spans open only when a subscriber may record them, which the call learns from one flag
//! of the process's (see [`watch`]) at each poll of an attempt: otherwise the call holds an
//! empty slot, and pays that test and one more where it ends. A call's spans open at its first
//! attempt's first poll (or at its gate, if it has one, or its first report, if that comes
//! first) and live in one box per call, allocated only when they open.

use crate::classify::ErrorClass;
use crate::observe::Source;

#[cfg(feature = "tracing")]
pub(crate) use watch::wanted;

/// Without the `tracing` feature, nobody records spans.
#[cfg(not(feature = "tracing"))]
pub(crate) fn wanted() -> bool {
    false
}

/// Whether any subscriber may record a call's span, as one flag of the process's, kept by a
/// callsite of the crate's own: the `retry` span's metadata (its name, target, level and
/// fields), registered with `tracing-core` the first time a call asks. `tracing-core` tells a
/// registered callsite each subscriber's interest when it registers it and again whenever a
/// dispatcher is created or the interest cache is rebuilt; `Interest::never()` from every
/// subscriber (none at all, or a filter that leaves the target's INFO out) clears the flag.
/// Where it is set, a call asks `tracing` for its span as any `info_span!` does, so a
/// subscriber that enables it only sometimes (by field, by the current span) still decides.
#[cfg(feature = "tracing")]
mod watch {
    use std::sync::Once;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tracing_core::callsite::Callsite;
    use tracing_core::field::FieldSet;
    use tracing_core::metadata::Kind;
    use tracing_core::subscriber::Interest;
    use tracing_core::{Level, Metadata};

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
        FieldSet::new(
            &[
                "otel.name",
                "retry.function",
                "retry.invocation_id",
                "retry.attempts",
                "error.type",
            ],
            tracing_core::identify_callsite!(&WATCH),
        ),
        Kind::SPAN,
    );

    impl Callsite for Watch {
        fn set_interest(&self, interest: Interest) {
            WANTED.store(!interest.is_never(), Ordering::Relaxed);
        }

        fn metadata(&self) -> &Metadata<'_> {
            &META
        }
    }

    /// Whether a subscriber may record the spans of a call: one load where nobody does.
    #[inline(always)]
    pub(crate) fn wanted() -> bool {
        WANTED.load(Ordering::Relaxed) && looked()
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

/// Records an HTTP response's status (`http.response.status_code`) on the current attempt's
/// span: the integrations call it where they read a response inside an attempt's poll (the
/// tower layer's exchange, reqwest's `error_for_status`). Nothing outside an attempt's span.
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
    }
    #[cfg(not(feature = "tracing"))]
    let _ = code;
}

/// Records a gRPC attempt's status (`rpc.system` `grpc`, `rpc.grpc.status_code`) on the current
/// attempt's span, as [`http_status`] does.
#[cfg_attr(
    not(all(feature = "tower", feature = "grpc-config")),
    allow(dead_code, reason = "the gRPC layer's")
)]
pub(crate) fn grpc_status(code: i32) {
    #[cfg(feature = "tracing")]
    if wanted() {
        on_attempt(|span| {
            span.record("rpc.system", "grpc");
            span.record("rpc.grpc.status_code", i64::from(code));
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = code;
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
/// exited last). The call's span is entered too, so that it is busy while any of its
/// attempts is, as `Instrument` keeps a future's span (tracing-opentelemetry ends a span at its
/// last exit).
#[cfg(feature = "tracing")]
pub(crate) type Entered<'a> = (tracing::span::Entered<'a>, tracing::span::Entered<'a>);
/// Without the `tracing` feature, nothing.
#[cfg(not(feature = "tracing"))]
pub(crate) type Entered<'a> = core::marker::PhantomData<&'a ()>;

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
    /// The class of the last attempt that failed, for the call's `error.type`.
    last: Option<ErrorClass>,
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
        use tracing::field::Empty;
        if self.0.is_none() {
            let function = call.who().function;
            let span = tracing::info_span!(
                target: "retry",
                "retry",
                otel.name = function,
                retry.function = function,
                retry.invocation_id = Empty,
                retry.attempts = Empty,
                "error.type" = Empty,
            );
            if span.is_disabled() {
                return;
            }
            self.0 = Some(Box::new(Spans {
                attempt: tracing::Span::none(),
                call: span,
                open: 0,
                hedge: false,
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
            let s = &**s;
            let call = s.call.enter();
            return Some((s.attempt.enter(), call));
        }
        let _ = number;
        None
    }

    /// The open attempt ended: with a failure of `class` (`error.type` on its span), or a
    /// success polled again (`None`). Its span closes.
    #[inline(always)]
    pub(crate) fn attempt_ended(&mut self, class: Option<ErrorClass>) {
        #[cfg(feature = "tracing")]
        if let Some(s) = &mut self.0 {
            s.attempt_ended(class);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = class;
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

    /// The call failed: `error.type` on its span is `class`, or the last failed attempt's.
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
    #[cold]
    #[inline(never)]
    fn attempt_ended(&mut self, class: Option<ErrorClass>) {
        if let Some(class) = class {
            self.attempt.record("error.type", class.as_str());
            self.last = Some(class);
        }
        self.attempt = tracing::Span::none();
    }

    #[cold]
    #[inline(never)]
    fn adopt(&mut self, mut flight: Spans) {
        self.attempt = std::mem::replace(&mut flight.attempt, tracing::Span::none());
        self.open = flight.open;
    }

    #[cold]
    #[inline(never)]
    fn call_failed(&self, class: Option<ErrorClass>) {
        if let Some(class) = class.or(self.last) {
            self.call.record("error.type", class.as_str());
        }
    }

    fn open_attempt(&mut self, number: u32) {
        use tracing::field::Empty;
        // Integers as `i64`: OpenTelemetry's integer attributes (tracing-opentelemetry records
        // an unsigned value as text).
        let resend_count = i64::from(number).checked_sub(1).filter(|&n| n > 0);
        self.attempt = tracing::info_span!(
            target: "retry",
            parent: &self.call,
            "retry.attempt",
            retry.attempt = i64::from(number),
            http.request.resend_count = resend_count,
            retry.hedge = self.hedge.then_some(true),
            "error.type" = Empty,
            http.response.status_code = Empty,
            rpc.system = Empty,
            rpc.grpc.status_code = Empty,
        );
        self.open = number;
        self.attempts = self.attempts.max(number);
    }
}
