//! `#[derive(Classify)]`'s `from(...)`: the `From` impls it writes convert through the delegated
//! field's own `From` into a variant with a named or an unnamed field, into a struct of either
//! shape and into a generic enum, and are what `?` and the loop's `From<TimedOut>` use (on
//! tokio's paused clock).

use retry_runtime::{Classify, ErrorClass, TimedOut, TimeoutKind, retry};
use std::io;
use std::num::ParseIntError;
use std::time::Duration;

/// A wrapped error that converts from several types, as `retry_runtime::reqwest::Error` does.
#[derive(Debug, Classify)]
enum Wire {
    #[classify(not_sent)]
    Refused(u16),
    #[classify(delegate)]
    TimedOut(TimedOut),
}

impl From<u16> for Wire {
    fn from(port: u16) -> Self {
        Self::Refused(port)
    }
}

impl From<TimedOut> for Wire {
    fn from(t: TimedOut) -> Self {
        Self::TimedOut(t)
    }
}

#[derive(Debug, Classify)]
#[classify(default = permanent)]
enum AppError {
    #[classify(delegate, from(u16, TimedOut))]
    Wire {
        inner: Wire,
    },
    #[classify(delegate, from(io::ErrorKind))]
    Io(io::Error),
    Parse(ParseIntError),
}

#[derive(Debug, Classify)]
#[classify(delegate, from(u16))]
struct WireFailure(Wire);

#[derive(Debug, Classify)]
#[classify(delegate, from(io::ErrorKind, TimedOut))]
struct IoFailure {
    source: io::Error,
}

/// `from(E)` into a `Box<E>`: the impl has the enum's parameter and a `Box<E>: From<E>` bound.
#[derive(Debug, Classify)]
enum Generic<E> {
    #[classify(delegate, from(E))]
    Boxed(Box<E>),
    #[classify(permanent)]
    Other,
}

#[test]
fn each_type_listed_becomes_its_variant_through_the_fields_from() {
    let error = AppError::from(8080_u16);
    assert!(
        matches!(
            error,
            AppError::Wire {
                inner: Wire::Refused(8080)
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.classify(), ErrorClass::NotSent);

    let error = AppError::from(io::ErrorKind::ConnectionReset);
    let AppError::Io(io) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(io.kind(), io::ErrorKind::ConnectionReset);
    assert_eq!(error.classify(), ErrorClass::Transient);

    // The variant without `from(...)` keeps its class and converts from nothing of the derive's.
    let parse = "x".parse::<u8>().unwrap_err();
    assert_eq!(AppError::Parse(parse).classify(), ErrorClass::Permanent);
}

#[test]
fn a_struct_of_either_shape_converts_into_its_field() {
    let WireFailure(wire) = WireFailure::from(443_u16);
    assert!(matches!(wire, Wire::Refused(443)), "{wire:?}");
    assert_eq!(WireFailure(wire).classify(), ErrorClass::NotSent);

    let failure = IoFailure::from(io::ErrorKind::ConnectionRefused);
    assert_eq!(failure.source.kind(), io::ErrorKind::ConnectionRefused);
    assert_eq!(failure.classify(), ErrorClass::NotSent);
}

#[test]
fn a_generic_enum_converts_from_its_parameter() {
    let error = Generic::from(AppError::from(80_u16));
    let Generic::Boxed(inner) = &error else {
        panic!("{error:?}")
    };
    assert!(matches!(**inner, AppError::Wire { .. }), "{inner:?}");
    assert_eq!(error.classify(), ErrorClass::NotSent);
    assert_eq!(Generic::<AppError>::Other.classify(), ErrorClass::Permanent);
}

/// `?` on a `u16` and on a `ParseIntError` (mapped by hand: it is not listed).
fn port(text: &str) -> Result<u16, AppError> {
    let port: u16 = text.parse().map_err(AppError::Parse)?;
    if port < 1024 {
        Err(port)?;
    }
    Ok(port)
}

#[test]
fn question_mark_converts_a_type_listed() {
    assert_eq!(port("8080").unwrap(), 8080);
    let error = port("80").unwrap_err();
    assert!(
        matches!(
            error,
            AppError::Wire {
                inner: Wire::Refused(80)
            }
        ),
        "{error:?}"
    );
    let Err(AppError::Parse(e)) = port("x") else {
        panic!("not a number")
    };
    assert_eq!(e.kind(), &std::num::IntErrorKind::InvalidDigit);
}

/// Never answers: each attempt is cut off by its timeout, which the loop converts with the
/// `From<TimedOut>` that `from(u16, TimedOut)` wrote.
#[retry(
    max_attempts = 3,
    initial_backoff = "10ms",
    jitter = "none",
    attempt_timeout = "1s"
)]
async fn never_answers() -> Result<(), AppError> {
    std::future::pending().await
}

/// The same for a struct, through `io::Error`'s `From<TimedOut>`.
#[retry(
    max_attempts = 2,
    initial_backoff = "10ms",
    jitter = "none",
    attempt_timeout = "1s"
)]
async fn never_answers_either() -> Result<(), IoFailure> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn the_loops_timeouts_convert_through_the_wrapped_error() {
    let started = tokio::time::Instant::now();
    let error = never_answers().await.unwrap_err();
    let AppError::Wire {
        inner: Wire::TimedOut(t),
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!((t.kind(), t.attempt()), (TimeoutKind::Attempt, 3));
    assert_eq!(error.classify(), ErrorClass::Timeout);
    // Three attempts of 1 s, and two backoffs of 10 ms then 20 ms.
    assert_eq!(started.elapsed(), Duration::from_millis(3030));

    let failure = never_answers_either().await.unwrap_err();
    assert_eq!(failure.source.kind(), io::ErrorKind::TimedOut);
    assert_eq!(failure.classify(), ErrorClass::Timeout);
}
