use retry_runtime::{Classify, ErrorClass};

#[derive(Debug, Classify)]
#[classify(throttling)]
struct SlowDown;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Flaky {
    _code: u16,
}

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Wrapped(std::io::Error);

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Named {
    inner: SlowDown,
}

fn main() {
    assert_eq!(SlowDown.classify(), ErrorClass::Throttling);
    assert_eq!(Flaky { _code: 503 }.classify(), ErrorClass::Transient);
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    assert_eq!(Wrapped(refused).classify(), ErrorClass::NotSent);
    assert_eq!(Named { inner: SlowDown }.retry_after(), None);
}
