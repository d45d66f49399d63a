//! Property test of the guard seam over random guard lists, on tokio's paused clock, through
//! the loops `#[retry]` writes (`Call::run`, and `Call::run_hedged` for `hedge_after`):
//!
//! - `every_admitted_attempt_is_settled_exactly_once`: 1 to 4 guards, each answering from a
//!   random script (go, refuse, or wait a random delay), over random faults, with or without a
//!   deadline, hedged or not, and a caller that may drop the call at a random moment (mid
//!   attempt, mid backoff, mid wait at a guard). Each guard keeps a ledger of the attempts it
//!   admitted: a settlement of an attempt it did not admit (or settled already) is a violation,
//!   and once the call has returned or been dropped every ledger is empty. In a call that does
//!   not hedge, no attempt is admitted while an earlier one is still unsettled. A first attempt a
//!   guard refused returns `Refused` naming that guard, without running the body.
//!
//! Cases: 256, or `RETRY_PROPTEST_CASES` (RELIABILITY.md gives the long run).

use crate::util::{TestError, paused_runtime};
use proptest::prelude::*;
use retry_runtime::__private::{
    Call, Fns, HedgeSpec, Jitter, Keys, Site, Timed, never_repeat, no_hook,
};
use retry_runtime::{
    Admit, AttemptKind, Classify, ErrorClass, Guard, GuardContext, GuardOutcome, TimedOut,
    TokenBucket,
};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

fn cases() -> u32 {
    std::env::var("RETRY_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

/// What a guard answers, in a script it cycles through.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Go,
    Refuse,
    Wait(u64),
}

/// A guard that answers from its script and keeps a ledger of the attempts it admitted.
struct Chaos {
    name: &'static str,
    script: Vec<Answer>,
    state: Mutex<ChaosState>,
}

#[derive(Default)]
struct ChaosState {
    next: usize,
    admitted: BTreeSet<u32>,
    /// The call hedges: attempts may overlap.
    hedged: bool,
    violations: Vec<String>,
    admits: u64,
    settles: u64,
}

impl Guard for Chaos {
    fn admit(&self, cx: &GuardContext<'_>) -> Admit {
        let mut s = self.state.lock().unwrap();
        let answer = self.script[s.next % self.script.len()];
        s.next += 1;
        let admit = match answer {
            Answer::Go => Admit::Go,
            Answer::Refuse => Admit::Refuse,
            Answer::Wait(ms) => Admit::Wait(Duration::from_millis(ms)),
        };
        if admit == Admit::Go {
            if !s.hedged && !s.admitted.is_empty() {
                let held = s.admitted.clone();
                s.violations.push(format!(
                    "attempt {} admitted while {held:?} were not settled",
                    cx.number()
                ));
            }
            if cx.kind() == AttemptKind::Hedge && !s.hedged {
                s.violations
                    .push(format!("a hedge in a call that does not hedge: {cx:?}"));
            }
            if !s.admitted.insert(cx.number()) {
                s.violations
                    .push(format!("attempt {} admitted twice", cx.number()));
            }
            s.admits += 1;
        }
        admit
    }

    fn settle(&self, cx: &GuardContext<'_>, outcome: GuardOutcome) {
        let mut s = self.state.lock().unwrap();
        if !s.admitted.remove(&cx.number()) {
            s.violations.push(format!(
                "attempt {} settled ({outcome:?}) without an admission to settle",
                cx.number()
            ));
        }
        s.settles += 1;
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

/// What one attempt does.
#[derive(Debug, Clone, Copy)]
enum Step {
    Ok(u64),
    Err(u64, ErrorClass),
    Hang,
}

#[derive(Debug, Clone)]
struct Case {
    guards: Vec<Vec<Answer>>,
    max_attempts: u32,
    hedge_ms: Option<u64>,
    deadline_ms: Option<u64>,
    steps: Vec<Step>,
    drop_after_ms: Option<u64>,
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        6 => Just(Answer::Go),
        1 => Just(Answer::Refuse),
        2 => (0..=60u64).prop_map(Answer::Wait),
    ]
}

fn class() -> impl Strategy<Value = ErrorClass> {
    prop_oneof![
        Just(ErrorClass::Transient),
        Just(ErrorClass::Timeout),
        Just(ErrorClass::Throttling),
        Just(ErrorClass::NotSent),
        Just(ErrorClass::Permanent),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..=80u64).prop_map(Step::Ok),
        4 => (0..=80u64, class()).prop_map(|(ms, c)| Step::Err(ms, c)),
        1 => Just(Step::Hang),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(prop::collection::vec(answer(), 1..=6), 1..=4),
        1..=5u32,
        prop::option::weighted(0.3, 5..=40u64),
        prop::option::of(20..=400u64),
        prop::collection::vec(step(), 1..=6),
        prop::option::weighted(0.4, 0..=500u64),
    )
        .prop_map(
            |(guards, max_attempts, hedge_ms, deadline_ms, steps, drop_after_ms)| Case {
                guards,
                max_attempts,
                hedge_ms,
                deadline_ms,
                steps,
                drop_after_ms,
            },
        )
}

fn classify(e: &TestError) -> ErrorClass {
    e.classify()
}

fn hint(_: &TestError) -> Option<Duration> {
    None
}

/// The names the guards of a case take (`Guard::name` returns a `&'static str`).
const NAMES: [&str; 4] = ["g0", "g1", "g2", "g3"];

struct Body<'c> {
    steps: &'c [Step],
    ran: RefCell<usize>,
}

impl Body<'_> {
    async fn play(&self) -> Result<u32, TestError> {
        let n = {
            let mut ran = self.ran.borrow_mut();
            *ran += 1;
            *ran - 1
        };
        match self.steps[n.min(self.steps.len() - 1)] {
            Step::Ok(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(u32::try_from(n).unwrap())
            }
            Step::Err(ms, class) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Err(TestError::fault(class))
            }
            Step::Hang => std::future::pending().await,
        }
    }
}

#[derive(Default)]
struct Tally {
    cases: u64,
    admits: u64,
    settles: u64,
    refused_calls: u64,
    dropped: u64,
}

fn check(case: &Case, tally: &mut Tally) -> Result<(), TestCaseError> {
    let guards: Vec<&'static Chaos> = case
        .guards
        .iter()
        .zip(NAMES)
        .map(|(script, name)| {
            let state = ChaosState {
                hedged: case.hedge_ms.is_some(),
                ..ChaosState::default()
            };
            &*Box::leak(Box::new(Chaos {
                name,
                script: script.clone(),
                state: Mutex::new(state),
            }))
        })
        .collect();
    let mut keys = Keys::new()
        .max_attempts(case.max_attempts)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(40))
        .jitter(Jitter::Full);
    if let Some(d) = case.deadline_ms {
        keys = keys.deadline(Duration::from_millis(d));
    }
    if let Some(h) = case.hedge_ms {
        keys = keys
            .hedge_after(HedgeSpec::Fixed(Duration::from_millis(h)))
            .max_in_flight(3);
    }
    static UNLIMITED: TokenBucket = TokenBucket::unlimited();
    let mut site = Site::new("guarded", keys).bucket(&UNLIMITED);
    for g in &guards {
        site = site.guard(*g);
    }
    let site: &'static Site = Box::leak(Box::new(site));
    let body = Body {
        steps: &case.steps,
        ran: RefCell::new(0),
    };
    let rt = paused_runtime();
    let ended = rt.block_on(async {
        let timed_out: fn(TimedOut) -> TestError = TestError::from;
        let call = Call::new(
            site,
            true,
            Timed(timed_out),
            Fns(classify, hint),
            never_repeat::<u32>,
            no_hook::<TestError>,
        )
        .on_stop(|r| Err(TestError::from(r)));
        // A call whose attempts hang and which has no deadline would wait forever: its caller
        // gives up after a minute.
        let ms = case.drop_after_ms.unwrap_or(60_000);
        if case.hedge_ms.is_some() {
            tokio::time::timeout(Duration::from_millis(ms), call.run_hedged(|| body.play()))
                .await
                .ok()
        } else {
            tokio::time::timeout(Duration::from_millis(ms), call.run(|| body.play()))
                .await
                .ok()
        }
    });
    tally.cases += 1;
    if ended.is_none() {
        tally.dropped += 1;
    }
    let ran = *body.ran.borrow();
    prop_assert!(ran <= case.max_attempts as usize, "{ran} attempts");
    if let Some(Err(TestError::Refused(r))) = &ended {
        tally.refused_calls += 1;
        prop_assert_eq!(ran, 0, "a refused call ran its body");
        prop_assert!(NAMES.contains(&r.by()), "refused by {}", r.by());
    }
    for g in &guards {
        let s = g.state.lock().unwrap();
        tally.admits += s.admits;
        tally.settles += s.settles;
        prop_assert!(
            s.violations.is_empty(),
            "{}: {:?} ({ended:?})",
            g.name,
            s.violations
        );
        prop_assert!(
            s.admitted.is_empty(),
            "{}: attempts {:?} never settled ({ended:?})",
            g.name,
            s.admitted
        );
        prop_assert_eq!(s.admits, s.settles, "{}", g.name);
    }
    Ok(())
}

#[test]
fn every_admitted_attempt_is_settled_exactly_once() {
    let mut tally = Tally::default();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let tally_cell = RefCell::new(&mut tally);
    runner
        .run(&case(), |case| check(&case, &mut tally_cell.borrow_mut()))
        .unwrap();
    eprintln!(
        "every_admitted_attempt_is_settled_exactly_once: {} cases (shrinking included), {} \
         admissions, {} settlements, {} calls refused at their first attempt, {} calls dropped \
         by their caller",
        tally.cases, tally.admits, tally.settles, tally.refused_calls, tally.dropped
    );
}
