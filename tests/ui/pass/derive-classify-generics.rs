use retry_runtime::{Classify, ErrorClass, retry};
use std::fmt::Debug;

// Type, lifetime and const parameters, a `where` clause, delegated fields of a parameter's type
// (bounded by the derive), of a concrete type and of the type itself.
#[derive(Debug, Classify)]
#[classify(default = transient)]
enum Error<'a, E, T: Debug, const N: usize>
where
    T: Clone,
{
    #[classify(delegate)]
    Inner(E),
    #[classify(delegate)]
    Borrowed(&'a E),
    #[classify(delegate)]
    Io { source: std::io::Error },
    #[classify(delegate)]
    Nested(Box<Self>),
    Value([T; N]),
}

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Context<E> {
    error: E,
}

#[retry(max_attempts = 2)]
async fn call<E: Classify + Debug>(e: fn() -> E) -> Result<(), Context<E>> {
    Err(Context { error: e() })
}

fn main() {
    let e: Error<'_, ErrorClass, u8, 2> = Error::Inner(ErrorClass::Throttling);
    assert_eq!(e.classify(), ErrorClass::Throttling);
    let class = ErrorClass::NotSent;
    let e: Error<'_, ErrorClass, u8, 2> = Error::Borrowed(&class);
    assert_eq!(Error::Nested(Box::new(e)).classify(), ErrorClass::NotSent);
    let e: Error<'_, ErrorClass, u8, 2> = Error::Value([1, 2]);
    assert_eq!(e.classify(), ErrorClass::Transient);
    drop(call(|| ErrorClass::Timeout));
}
