//! Compile-time behaviour of `#[retry]`, `#[derive(Classify)]` (the `derive-classify-*` cases)
//! and `Policy::retry` (the `policy-*` cases): every supported function shape and error type
//! compiles (`tests/ui/pass/`), and every mistake is one clear error on the offending token
//! (`tests/ui/fail/`, with the expected output in the `.stderr` beside each case).
//!
//! After an intended change to a message, `TRYBUILD=overwrite cargo test --test macro_ui`
//! rewrites the `.stderr` files; review their diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
