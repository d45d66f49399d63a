//! Expansion snapshots: every file in this package's `tests/expand/` holds one item under
//! `#[retry(...)]`; its expansion, pretty-printed, must match the committed snapshot in
//! `tests/expand/snapshots/`, so that every change to the generated code is reviewed.
//!
//! After an intended change, run `INSTA_UPDATE=always cargo test -p retry-macros snapshots`
//! and review the diff of `retry-macros/tests/expand/snapshots/`.

use quote::ToTokens;
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable directory").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

/// What the compiler hands the macro: the attribute's arguments and the item without it.
fn split(source: &str) -> (proc_macro2::TokenStream, proc_macro2::TokenStream) {
    let file: syn::File = syn::parse_str(source).expect("the case parses");
    let [item] = &file.items[..] else {
        panic!("one item per case")
    };
    let mut item = item.clone();
    let attrs = match &mut item {
        syn::Item::Fn(f) => &mut f.attrs,
        syn::Item::Impl(i) => &mut i.attrs,
        other => panic!("unexpected item: {}", other.to_token_stream()),
    };
    let at = attrs
        .iter()
        .position(|a| a.path().is_ident("retry"))
        .expect("a #[retry] attribute");
    let attr = attrs.remove(at);
    let args = match attr.meta {
        syn::Meta::List(list) => list.tokens,
        _ => proc_macro2::TokenStream::new(),
    };
    (args, item.into_token_stream())
}

#[test]
fn expansions_match_snapshots() {
    let cases = cases();
    assert!(
        cases.len() >= 5,
        "expected the expansion cases in tests/expand"
    );
    for case in cases {
        let name = case.file_stem().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(&case).unwrap();
        let (args, item) = split(&source);
        let out = crate::attribute::expand(args, item);
        let file: syn::File = syn::parse2(out.clone())
            .unwrap_or_else(|e| panic!("{name}: the expansion does not parse ({e}): {out}"));
        let pretty = prettyplease::unparse(&file);
        insta::with_settings!({
            snapshot_path => "../tests/expand/snapshots",
            prepend_module_to_snapshot => false,
            input_file => &case,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name, pretty);
        });
    }
}
