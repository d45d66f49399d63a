//! Types and paths as a message quotes them: as a user writes them (`std::io::Error`,
//! `Result<(), E>`, `&'a mut [u8]`), not with a space between every token, which is how a
//! token stream prints (`std :: io :: Error`).

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

/// `ty` (a type, or a path) as a message quotes it.
pub(crate) fn compact(ty: &impl ToTokens) -> String {
    let mut out = String::new();
    write(ty.to_token_stream(), &mut out);
    out
}

/// One unit of the text: a word (an identifier, a literal or a lifetime), an operator (one or
/// more joined punctuation characters), or a delimited group.
#[derive(Clone, PartialEq)]
enum Atom {
    Word(String),
    Op(String),
    Group(Delimiter, String),
}

/// Keywords after which a type or a group is written with a space (`&mut [u8]`, `dyn Fn()`).
const SPACED_KEYWORDS: &[&str] = &["mut", "const", "dyn", "impl", "as", "unsafe", "extern"];

fn write(tokens: TokenStream, out: &mut String) {
    let mut prev: Option<Atom> = None;
    for atom in atoms(tokens) {
        if let Some(prev) = &prev {
            if spaced(prev, &atom) {
                out.push(' ');
            }
        }
        match &atom {
            Atom::Word(s) | Atom::Op(s) => out.push_str(s),
            Atom::Group(delimiter, inner) => {
                let (open, close) = match delimiter {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                if inner.is_empty() {
                    out.push_str(open.trim_end());
                    out.push_str(close.trim_start());
                } else {
                    out.push_str(open);
                    out.push_str(inner);
                    out.push_str(close);
                }
            }
        }
        prev = Some(atom);
    }
}

/// The atoms of `tokens`: joined punctuation becomes one operator (`::`, `->`), and `'` with
/// the identifier after it one lifetime.
fn atoms(tokens: TokenStream) -> Vec<Atom> {
    let mut atoms = Vec::new();
    let mut op = String::new();
    let mut lifetime = false;
    for tt in tokens {
        match tt {
            TokenTree::Punct(p) => {
                if p.as_char() == '\'' {
                    if !op.is_empty() {
                        atoms.push(Atom::Op(std::mem::take(&mut op)));
                    }
                    lifetime = true;
                    continue;
                }
                op.push(p.as_char());
                if p.spacing() == proc_macro2::Spacing::Alone {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
            }
            other => {
                if !op.is_empty() {
                    atoms.push(Atom::Op(std::mem::take(&mut op)));
                }
                match other {
                    TokenTree::Ident(i) if lifetime => {
                        lifetime = false;
                        atoms.push(Atom::Word(format!("'{i}")));
                    }
                    TokenTree::Ident(i) => atoms.push(Atom::Word(i.to_string())),
                    TokenTree::Literal(l) => atoms.push(Atom::Word(l.to_string())),
                    TokenTree::Group(g) => {
                        let mut inner = String::new();
                        write(g.stream(), &mut inner);
                        atoms.push(Atom::Group(g.delimiter(), inner));
                    }
                    TokenTree::Punct(_) => unreachable!("matched above"),
                }
            }
        }
    }
    if !op.is_empty() {
        atoms.push(Atom::Op(op));
    }
    atoms
}

/// Whether a space goes between `prev` and `next`, as rustc prints types.
fn spaced(prev: &Atom, next: &Atom) -> bool {
    // Operators written with a space on each side (`Output = T`, `Send + 'static`, `-> T`).
    let wide = |op: &str| matches!(op, "=" | "+" | "->" | "=>" | "|" | "..=");
    match (prev, next) {
        (Atom::Op(op), _) if wide(op) || matches!(op.as_str(), "," | ";" | ":") => true,
        // `impl ?Sized`, `dyn ::std::any::Any`.
        (Atom::Word(word), Atom::Op(op)) if SPACED_KEYWORDS.contains(&word.as_str()) => {
            !matches!(op.as_str(), "," | ";" | ">")
        }
        (_, Atom::Op(op)) => wide(op),
        // `for<'a> fn(&'a u8)`, `<T as Trait>::X`.
        (Atom::Op(op), Atom::Word(_)) => op.chars().all(|c| c == '>'),
        (Atom::Op(_), Atom::Group(..)) => false,
        (Atom::Word(word), Atom::Group(..)) => SPACED_KEYWORDS.contains(&word.as_str()),
        (Atom::Word(_) | Atom::Group(..), Atom::Word(_)) => true,
        (Atom::Group(..), Atom::Group(..)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::{Path, Type, parse_quote};

    #[test]
    fn types_read_as_written() {
        let cases: [(Type, &str); 16] = [
            (parse_quote!(std::io::Error), "std::io::Error"),
            (
                parse_quote!(Result<(), std::io::Error>),
                "Result<(), std::io::Error>",
            ),
            (
                parse_quote!(::core::option::Option<u32>),
                "::core::option::Option<u32>",
            ),
            (parse_quote!(Vec<Vec<u8>>), "Vec<Vec<u8>>"),
            (parse_quote!((u32, bool)), "(u32, bool)"),
            (parse_quote!(()), "()"),
            (parse_quote!(&'a mut [u8]), "&'a mut [u8]"),
            (parse_quote!(&mut [u8; 4]), "&mut [u8; 4]"),
            (parse_quote!(*const u8), "*const u8"),
            (
                parse_quote!(impl Future<Output = Result<u32, E>> + Send + 'static),
                "impl Future<Output = Result<u32, E>> + Send + 'static",
            ),
            (
                parse_quote!(Box<dyn std::error::Error + Send + Sync>),
                "Box<dyn std::error::Error + Send + Sync>",
            ),
            (parse_quote!(fn(&E) -> bool), "fn(&E) -> bool"),
            (
                parse_quote!(for<'a> fn(&'a E) -> Option<u8>),
                "for<'a> fn(&'a E) -> Option<u8>",
            ),
            (parse_quote!(<T as Iterator>::Item), "<T as Iterator>::Item"),
            (parse_quote!(impl ?Sized + Fn()), "impl ?Sized + Fn()"),
            (parse_quote!(!), "!"),
        ];
        for (ty, expected) in cases {
            assert_eq!(compact(&ty), expected);
        }
    }

    #[test]
    fn paths_read_as_written() {
        let path: Path = parse_quote!(app::guards::BULKHEAD);
        assert_eq!(compact(&path), "app::guards::BULKHEAD");
        let path: Path = parse_quote!(self::Store::<u8>::LIMIT);
        assert_eq!(compact(&path), "self::Store::<u8>::LIMIT");
    }
}
