//! The call's side of its guards ([`crate::Guard`]): the context it gives them, asking them
//! for an attempt (and again after a wait), and settling what an attempt's ticket holds of
//! them. Both drivers (the sequential loop and the hedged one) go through these, so that the
//! guards meet the same steps in the same order whichever loop runs.

use super::scope::{self, Around};
use super::site::Resolved;
use crate::classify::ErrorClass;
use crate::protect::Ticket;
use crate::protect::guard::{Answer, AttemptKind, GuardContext, GuardOutcome};
use rand::RngExt;
use std::time::Duration;

/// Sets `ticket` up for attempt `number` of `kind`, following a failure of `after`, unless
/// the guards were asked about it already (some admitted it, or it waited): then it keeps
/// what it holds, and asking goes on from there.
pub(crate) fn begin(
    ticket: &mut Ticket,
    kind: AttemptKind,
    number: u32,
    after: Option<ErrorClass>,
) {
    if ticket.guards == 0 && ticket.waited_ms == 0 {
        ticket.kind = kind;
        ticket.number = number;
        ticket.after = after;
    }
}

/// Whether the guards of `r` still have to be asked about the attempt `ticket` is for.
pub(crate) fn pending(r: &Resolved, ticket: &Ticket) -> bool {
    ticket.guards < r.guards.len()
}

/// Asks the guards of `r` that have not admitted the attempt `ticket` is for, in order, and
/// keeps in the ticket how many admitted it. On a refusal the ticket holds no admission (the
/// ones before were settled as cancelled).
pub(crate) fn ask(r: &Resolved, ticket: &mut Ticket, a: &Around) -> Answer {
    let draw = || a.draw(|rng| rng.random::<f64>());
    let cx = context(r, ticket, &draw);
    let answer = r.guards.admit(ticket.guards, &cx);
    ticket.guards = match answer {
        Answer::Go(n) => n,
        Answer::Wait { admitted, .. } => admitted,
        Answer::Refused(_) => 0,
    };
    answer
}

/// Tells the guards that admitted the attempt `ticket` is for how it ended; the ticket then
/// holds none of them.
pub(crate) fn settle(r: &Resolved, ticket: &mut Ticket, outcome: GuardOutcome) {
    let admitted = std::mem::take(&mut ticket.guards);
    if admitted == 0 {
        return;
    }
    // The ambient is looked up only if a guard draws.
    let draw = || scope::around().draw(|rng| rng.random::<f64>());
    let cx = context(r, ticket, &draw);
    r.guards.settle(admitted, &cx, outcome);
}

/// The outcome a guard is told of an attempt that ended with `failure` (`None`: a success).
pub(crate) fn outcome(failure: Option<ErrorClass>) -> GuardOutcome {
    match failure {
        Some(class) => GuardOutcome::Failure(class),
        None => GuardOutcome::Success,
    }
}

fn context<'a>(r: &Resolved, ticket: &Ticket, random: &'a dyn Fn() -> f64) -> GuardContext<'a> {
    GuardContext::of(
        ticket.kind,
        ticket.number,
        r.function,
        r.partition,
        if ticket.kind == AttemptKind::Retry {
            ticket.after
        } else {
            None
        },
        Duration::from_millis(u64::from(ticket.waited_ms)),
        random,
    )
}
