//! `static` policies whose type names at most their classifier's: a classifier function's
//! policy takes a deadline, an attempt timeout and guards (written before `classify` or after
//! it), each asking its conversion of the error type the function names; without a classifier
//! function, a policy that needs nothing of its error type is a plain `Policy`.
use retry_runtime::{
    Admit, Guard, GuardContext, GuardOutcome, Policy, Refused, TimedOut, TokenBucket,
};
use std::time::Duration;

#[derive(Debug)]
enum ApiError {
    Status(u16),
    TimedOut(TimedOut),
    Refused(Refused),
}

impl From<TimedOut> for ApiError {
    fn from(t: TimedOut) -> Self {
        ApiError::TimedOut(t)
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        ApiError::Refused(r)
    }
}

/// Lets every attempt through.
struct Open;

impl Guard for Open {
    fn admit(&self, _: &GuardContext<'_>) -> Admit {
        Admit::Go
    }
    fn settle(&self, _: &GuardContext<'_>, _: GuardOutcome) {}
}

static OPEN: Open = Open;
static SMALL: TokenBucket = TokenBucket::standard().with_capacity(50);

static AFTER: Policy<fn(&ApiError) -> bool> = Policy::new()
    .max_attempts(3)
    .classify(|e| matches!(e, ApiError::Status(500..) | ApiError::TimedOut(_)))
    .attempt_timeout(Duration::from_secs(1))
    .deadline(Duration::from_secs(5))
    .guard(&OPEN);

static BEFORE: Policy<fn(&ApiError) -> bool> = Policy::new()
    .deadline(Duration::from_secs(5))
    .guard(&OPEN)
    .max_attempts(3)
    .classify(|e| matches!(e, ApiError::Status(500..)));

static PLAIN: Policy = Policy::new().max_attempts(2).bucket(&SMALL);

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    for policy in [&AFTER, &BEFORE] {
        let mut calls = 0;
        let out = policy
            .retry(|| {
                calls += 1;
                let n = calls;
                async move {
                    if n < 2 {
                        Err(ApiError::Status(503))
                    } else {
                        Ok(n)
                    }
                }
            })
            .await;
        assert_eq!(out.unwrap(), 2);
    }
    let slow = AFTER
        .retry(|| async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            Ok::<(), ApiError>(())
        })
        .await;
    assert!(matches!(slow, Err(ApiError::TimedOut(_))));
    let out = PLAIN
        .retry(|| async { Err::<(), _>(std::io::Error::other("down")) })
        .await;
    assert!(out.is_err());
}
