//! Attribute fuzzing: the macro's expansion function is called directly on arbitrary token
//! input. It must never panic, and it must always emit the original function: either the
//! rewritten function with the signature, attributes and visibility exactly as written, or
//! the compile errors followed by the item token for token.
//!
//! Inputs mix near-valid attributes (every key, misspelled keys, values of every kind, tricky
//! duration strings and numbers, nested groups, stray punctuation) with free token soup, under
//! several item shapes (async fns of many signatures, a sync fn, a non-`Result` return, items
//! that are not functions).
//!
//! Cases: 512 per property, or `RETRY_FUZZ_CASES` (RELIABILITY.md gives the long run).

use proc_macro2::TokenStream;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use quote::ToTokens;
use retry_keys::AttributeKey;
use std::str::FromStr;

fn cases() -> u32 {
    std::env::var("RETRY_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(512)
}

const ITEMS: &[&str] = &[
    "async fn f() -> Result<u32, E> { Ok(1) }",
    "pub async fn get(&self, key: &str) -> std::io::Result<Vec<u8>> { self.c.get(key).await }",
    "async fn m(&mut self, mut body: String, n: u32) -> Result<(), E> { body.push('x'); Ok(()) }",
    "#[doc = \"x\"] pub(crate) async fn g<T: Clone>(x: T) -> Result<T, E> where T: Send { Ok(x) }",
    "async fn i(x: impl AsRef<str>) -> Result<impl Sized, E> { return Ok(x.as_ref().len()); }",
    "async fn a(self: Arc<Self>) -> anyhow::Result<()> { let _ = async {}; Ok(()) }",
    "async fn l<'a>(x: &'a [u8]) -> Result<&'a [u8], E> { Ok(x?) }",
    "fn not_async() -> Result<(), E> { Ok(()) }",
    "async fn plain() -> u32 { 1 }",
    "async fn unit() {}",
    "fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<(), E>> + Send + '_>> { Box::pin(async move { Ok(()) }) }",
    "struct NotAFunction;",
    "impl S { async fn f() -> Result<(), E> { Ok(()) } }",
    "trait T { async fn f() -> Result<(), E>; }",
    "async fn",
    "const X: u32 = 1;",
];

fn key() -> impl Strategy<Value = String> {
    let names: Vec<String> = AttributeKey::ALL
        .iter()
        .map(|k| k.name().to_owned())
        .collect();
    prop_oneof![
        6 => prop::sample::select(names.clone()),
        // Misspelled: one character dropped, doubled or swapped.
        2 => (prop::sample::select(names), any::<prop::sample::Index>(), 0..3u8).prop_map(|(k, i, how)| {
            let mut c: Vec<char> = k.chars().collect();
            let at = i.index(c.len());
            match how {
                0 if c.len() > 1 => { c.remove(at); }
                1 => { let x = c[at]; c.insert(at, x); }
                _ => { let j = (at + 1) % c.len(); c.swap(at, j); }
            }
            c.into_iter().collect()
        }),
        1 => "[a-z_][a-z0-9_]{0,12}",
        1 => prop::sample::select(vec!["r#type".to_string(), "self".into(), "crate".into(), "Self".into(), "_".into(), "r#mode".into()]),
    ]
}

/// The inside of a string literal: durations, near-durations and garbage.
fn string_body() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (
            "-?[0-9]{0,25}(\\.[0-9]{0,12})?(e[+-]?[0-9]{1,4})?",
            prop::sample::select(vec!["ns", "us", "µs", "ms", "s", "m", "h", "d", "", " s", "S", "sec", "MS", "msms"]),
        ).prop_map(|(n, u)| format!("{n}{u}")),
        1 => prop::sample::select(vec![
            "standard", "adaptive", "Adaptive", "full", "equal", "none", "decorrelated",
            "", " ", "1.5.5s", "inf s", "NaNs", "1e309s", "18446744073709551616ns",
            "99999999999999999999m", "0.0000000001ns", "\\u{0}", "💥", "1_000ms", "+1s", "1 s",
        ]).prop_map(String::from),
        1 => "[ -~]{0,16}".prop_map(|s| s.replace(['\\', '"'], "")),
    ]
}

fn value() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        5 => string_body().prop_map(|s| format!("{s:?}")),
        2 => prop::sample::select(vec![
            "0", "1", "3", "5u32", "5u8", "-1", "- 1", "4294967296", "340282366920938463463374607431768211455",
            "99999999999999999999999999999999999999999", "1.5", "0.5", "2.0f32", "1e308", "1e400", "1e-400",
            "0.0", "-0.0", "1.", "0x10", "0b1", "1_000", "true", "false", "'c'", "b\"x\"", "b'x'",
            "r\"raw\"", "c\"c\"",
        ]).prop_map(String::from),
        2 => prop::sample::select(vec![
            "f", "crate::f", "::std::io::Error", "self::m::g", "Self::f", "<T as Tr>::f", "f::<u8>",
            "super::B", "S3", "x.clone()", "a && b", "|e| true", "{ true }", "&x", "*x", "f()",
        ]).prop_map(String::from),
        1 => "[a-z_][a-z0-9_]{0,8}",
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("({})", v.join(", "))),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(" "))),
            prop::collection::vec(inner, 0..3).prop_map(|v| format!("{{{}}}", v.join("; "))),
        ]
    })
    .boxed()
}

fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (key(), value()).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => (key(), prop::collection::vec("[a-z]{1,6}", 0..4)).prop_map(|(k, v)| format!("{k}({})", v.join(", "))),
        1 => key(),
        1 => (key(), value()).prop_map(|(k, v)| format!("{k}: {v}")),
        1 => (key(), value()).prop_map(|(k, v)| format!("{k} == {v}")),
        1 => value(),
    ]
}

/// A near-valid attribute: entries with mostly commas between them.
fn attribute() -> impl Strategy<Value = String> {
    let sep = prop_oneof![8 => Just(", "), 1 => Just(" "), 1 => Just(";"), 1 => Just(",,")];
    (prop::collection::vec((entry(), sep), 0..7), prop::bool::ANY).prop_map(
        |(entries, trailing)| {
            let mut s = String::new();
            for (i, (e, sep)) in entries.iter().enumerate() {
                s.push_str(e);
                if i + 1 < entries.len() || trailing {
                    s.push_str(sep);
                }
            }
            s
        },
    )
}

/// Token soup: pieces of any kind in any order (rejected by the lexer if unbalanced).
fn soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            ",", "=", "==", ":", "::", ";", "#", "!", "?", "&", "*", "-", "+", "<", ">", "->",
            "=>", ".", "..", "@", "$", "'a", "|", "(", ")", "[", "]", "{", "}", "async", "fn",
            "move", "_", "r#try", "'static",
        ])
        .prop_map(String::from),
        key(),
        value(),
    ];
    prop::collection::vec(piece, 0..16).prop_map(|v| v.join(" "))
}

thread_local! {
    /// Outcomes of the current property: not lexable, compile errors, rewritten function.
    static TALLY: std::cell::Cell<[u64; 3]> = const { std::cell::Cell::new([0; 3]) };
}

fn tally(i: usize) {
    TALLY.with(|t| {
        let mut v = t.get();
        v[i] += 1;
        t.set(v);
    });
}

/// Prints what a property tried (shown with `--nocapture`).
fn report(name: &str) {
    let [unlexable, errors, expanded] = TALLY.with(std::cell::Cell::take);
    eprintln!(
        "{name}: {} inputs: {expanded} expanded, {errors} compile errors + the item, \
         {unlexable} not lexable (skipped)",
        unlexable + errors + expanded
    );
}

fn parse(s: &str) -> Option<TokenStream> {
    TokenStream::from_str(s).ok()
}

/// Expands `attr` on `item` and checks the output keeps the original function.
fn check(attr: &str, item: &str) -> Result<(), TestCaseError> {
    let (Some(attr), Some(item)) = (parse(attr), parse(item)) else {
        // Not lexable: the compiler would never hand these tokens to the macro.
        tally(0);
        return Ok(());
    };
    let out = crate::attribute::expand(attr.clone(), item.clone());
    let text = out.to_string();
    if text.contains("compile_error") {
        prop_assert!(
            text.ends_with(&item.to_string()),
            "errors must be followed by the item as written:\n{text}"
        );
        tally(1);
        return Ok(());
    }
    let before: syn::ItemFn = syn::parse2(item).map_err(|e| {
        TestCaseError::fail(format!("no error for an item that is not a function: {e}"))
    })?;
    let after: syn::ItemFn = syn::parse2(out)
        .map_err(|e| TestCaseError::fail(format!("the expansion does not parse: {e}")))?;
    prop_assert_eq!(
        before.sig.to_token_stream().to_string(),
        after.sig.to_token_stream().to_string(),
        "signature"
    );
    prop_assert_eq!(
        before.vis.to_token_stream().to_string(),
        after.vis.to_token_stream().to_string()
    );
    let attrs = |f: &syn::ItemFn| {
        f.attrs
            .iter()
            .map(|a| a.to_token_stream().to_string())
            .collect::<Vec<_>>()
    };
    prop_assert_eq!(attrs(&before), attrs(&after), "attributes");
    tally(2);
    Ok(())
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn near_valid_attributes_never_panic_and_keep_the_function() {
    let items = prop::sample::select(ITEMS);
    runner()
        .run(&(attribute(), items), |(attr, item)| check(&attr, item))
        .unwrap();
    report("near_valid_attributes_never_panic_and_keep_the_function");
}

#[test]
fn token_soup_never_panics_and_keeps_the_function() {
    let items = prop::sample::select(ITEMS);
    runner()
        .run(&(soup(), items), |(attr, item)| check(&attr, item))
        .unwrap();
    report("token_soup_never_panics_and_keeps_the_function");
}

#[test]
fn arbitrary_items_never_panic() {
    // Valid attributes on token soup for an item.
    let attrs = prop::sample::select(vec![
        "",
        "max_attempts = 5",
        "deadline = \"1s\", idempotent = false",
        "clone(a)",
    ]);
    runner()
        .run(&(attrs, soup()), |(attr, item)| check(attr, &item))
        .unwrap();
    report("arbitrary_items_never_panic");
}

#[test]
fn the_checker_sees_a_lost_function() {
    // The instrument itself works: an output without the item is caught.
    let item = parse(ITEMS[0]).unwrap();
    let lost = quote::quote!(compile_error!("x");).to_string();
    assert!(!lost.ends_with(&item.to_string()));
    assert!(check("max_attempts = 0", ITEMS[0]).is_ok());
}
