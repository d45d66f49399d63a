//! `#[derive(Classify)]`: the `Classify` impl of an enum whose variants (or of a struct which)
//! each carry a class, `#[classify(transient)]` and the like, or `#[classify(delegate)]` to be
//! classified by their one field, server hint included.
//!
//! Beside `delegate`, `from(A, B)` asks for a `From<A>` and a `From<B>` of the type, each through
//! the delegated field's own `From`, and a field written as reqwest's own `reqwest::Error` draws a
//! warning (its server hint is lost), which `allow(hint_lost)` silences.
//!
//! The `#[classify(...)]` attributes are read first, each mistake reported with the span of the
//! offending token and all of them at once (`Errors`). With any error the output is the errors
//! and an impl that classifies everything `Permanent`, so that the rest of the crate, which may
//! use the type as a `Classify`, still type-checks and only the real mistakes are reported; the
//! `From` impls that are not mistaken are written too, for the same reason.

use crate::errors::{Errors, skip_to_comma};
use crate::text::compact;
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Member, Token};

/// The classes as `#[classify(...)]` writes them, with the `ErrorClass` variant of each.
const CLASSES: [(&str, &str); 5] = [
    ("transient", "Transient"),
    ("throttling", "Throttling"),
    ("timeout", "Timeout"),
    ("not_sent", "NotSent"),
    ("permanent", "Permanent"),
];

/// What a variant (or a struct) may carry: a class, or `delegate`.
const MARKS: [&str; 6] = [
    "transient",
    "throttling",
    "timeout",
    "not_sent",
    "permanent",
    "delegate",
];

/// The keys of the type itself.
const KEYS: [&str; 2] = ["default", "crate"];

/// What goes beside `delegate` on a variant or a struct: `from(types)`, `allow(warnings)`.
const BESIDE_DELEGATE: [&str; 2] = ["from", "allow"];

/// The derive's warnings, which `allow(...)` names.
const WARNINGS: [&str; 1] = ["hint_lost"];

/// What decides the class of a variant or a struct, with the identifier it was written as.
#[derive(Clone)]
enum Rule {
    /// A fixed class: the `ErrorClass` variant's name.
    Class(Ident, &'static str),
    /// The one field's own `Classify`.
    Delegate(Ident),
}

/// Where a list of `#[classify(...)]` attributes is written, which decides what it may hold.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// On an enum: `default` and `crate`.
    Enum,
    /// On a variant: its rule.
    Variant,
    /// On a struct: its rule and `crate`.
    Struct,
}

/// What the `#[classify(...)]` attributes of one place hold.
#[derive(Default)]
struct Written {
    rule: Option<Rule>,
    default: Option<Rule>,
    krate: Option<syn::Path>,
    /// `crate = ...` was written but its value could not be read.
    krate_failed: bool,
    /// `from(...)`: its first key, and the types listed, in order.
    from: Option<(Ident, Vec<syn::Type>)>,
    /// `allow(...)`: its first key, and the warnings it names.
    allow: Option<(Ident, Vec<&'static str>)>,
    /// Something written there was wrong: a variant or struct whose attribute is wrong, or the
    /// variants of an enum whose attribute (its `default`?) is wrong, are not also reported as
    /// bare.
    failed: bool,
}

impl Written {
    /// Whether `allow(...)` names `warning`.
    fn allows(&self, warning: &str) -> bool {
        self.allow
            .as_ref()
            .is_some_and(|(_, names)| names.contains(&warning))
    }

    /// Reports `from(...)` and `allow(...)` written on `what`, whose rule is `rule`, when that
    /// rule is not `delegate`; whether one was. Nothing is reported when the rule itself could
    /// not be read.
    fn beside_no_delegate(&self, rule: Option<&Rule>, what: &str, errors: &mut Errors) -> bool {
        if matches!(rule, Some(Rule::Delegate(_))) || (rule.is_none() && self.failed) {
            return false;
        }
        if let Some((key, _)) = &self.from {
            errors.at(
                key.span(),
                format!(
                    "`from(...)` goes with `delegate`: it converts each type it lists into the \
                     field that `delegate` classifies by, and {what} has no `delegate`. Write \
                     `#[classify(delegate, from(...))]`, or implement `From` by hand"
                ),
            );
        }
        if let Some((key, _)) = &self.allow {
            errors.at(
                key.span(),
                format!(
                    "`allow(...)` goes with `delegate`: it silences the warning of a `delegate` \
                     over reqwest's own `reqwest::Error`, and {what} has no `delegate`"
                ),
            );
        }
        self.from.is_some() || self.allow.is_some()
    }
}

/// The expansion of `#[derive(Classify)]` on `item`.
pub(crate) fn derive(item: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(item) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let mut beside = Beside::default();
    let name = &input.ident;
    let (container, body) = match &input.data {
        Data::Enum(data) => {
            let container = read(&input.attrs, Place::Enum, "the enum", &mut errors);
            let mut arms = Vec::new();
            for variant in &data.variants {
                let what = format!("`{}`", variant.ident);
                let written = read(&variant.attrs, Place::Variant, &what, &mut errors);
                let on_fields = fields_carry_none(&variant.fields, "variant", &mut errors);
                let rule = written.rule.clone().or_else(|| container.default.clone());
                let misplaced = written.beside_no_delegate(rule.as_ref(), &what, &mut errors);
                match rule {
                    Some(rule) => {
                        let arm = arm(variant, rule, written, &container, &mut beside, &mut errors);
                        arms.extend(arm);
                    }
                    // What was meant is reported already.
                    None if written.failed || on_fields || container.failed || misplaced => {}
                    None => errors.at(
                        variant.ident.span(),
                        format!(
                            "variant `{}` has no class: write `#[classify(transient)]` (or \
                             `throttling`, `timeout`, `not_sent`, `permanent`, `delegate`) on \
                             it, or give the enum a default for its bare variants: \
                             `#[classify(default = permanent)]`",
                            variant.ident
                        ),
                    ),
                }
            }
            (container, Body::Enum(arms))
        }
        Data::Struct(data) => {
            let mut container = read(&input.attrs, Place::Struct, "the struct", &mut errors);
            let on_fields = fields_carry_none(&data.fields, "struct", &mut errors);
            let what = format!("`{name}`");
            let misplaced =
                container.beside_no_delegate(container.rule.as_ref(), &what, &mut errors);
            let body = match container.rule.clone() {
                Some(Rule::Class(_, class)) => Some(Body::Class(class)),
                Some(Rule::Delegate(mark)) => one_field(&data.fields, &mark, &what, &mut errors)
                    .map(|(member, ty)| {
                        let from = container.from.take();
                        let hint_lost_ok = container.allows("hint_lost");
                        let krate = container.krate.as_ref();
                        beside.delegate(None, &member, ty, from, hint_lost_ok, krate);
                        Body::Delegate(member, ty)
                    }),
                None if container.failed || on_fields || misplaced => None,
                None => {
                    errors.at(
                        name.span(),
                        format!(
                            "`#[derive(Classify)]` needs the class of `{name}`: write \
                             `#[classify(transient)]` (or `throttling`, `timeout`, `not_sent`, \
                             `permanent`) on the struct, or `#[classify(delegate)]` to classify \
                             it by its one field"
                        ),
                    );
                    None
                }
            };
            (container, body.unwrap_or(Body::Class("Permanent")))
        }
        Data::Union(data) => {
            errors.at(
                data.union_token.span,
                "`Classify` cannot be derived for a union: the derive needs to know which field \
                 is set. Implement `Classify` by hand",
            );
            (Written::default(), Body::Class("Permanent"))
        }
    };
    let conversions = coherent(beside.conversions, &input, &mut errors);
    let mut out = match errors.into_result() {
        Ok(()) => implement(&input, container.krate, &body),
        Err(e) => {
            let mut out = e.to_compile_error();
            if !container.krate_failed {
                // Classified as anything: it does not build anyway, and uses of the type as a
                // `Classify` elsewhere are not reported as errors of their own.
                out.extend(implement(
                    &input,
                    container.krate,
                    &Body::Class("Permanent"),
                ));
            }
            out
        }
    };
    // The conversions that are not mistaken and the warnings, whatever else is.
    out.extend(from_impls(&input, &conversions));
    out.extend(beside.warnings);
    out
}

/// What the impl's methods do.
enum Body<'a> {
    /// An enum: one arm per variant.
    Enum(Vec<Arm<'a>>),
    /// A struct of one class.
    Class(&'static str),
    /// A struct classified by its field.
    Delegate(Member, &'a syn::Type),
}

/// A variant's arm.
struct Arm<'a> {
    variant: &'a Ident,
    rule: ArmRule<'a>,
}

enum ArmRule<'a> {
    Class(&'static str),
    Delegate(Member, &'a syn::Type),
}

/// The arm of `variant`, whose rule is `rule`, or `None` once a `delegate` on a variant without
/// exactly one field is reported. A `delegate` arm tells `beside` what `written` asks beside it.
fn arm<'a>(
    variant: &'a syn::Variant,
    rule: Rule,
    written: Written,
    container: &Written,
    beside: &mut Beside<'a>,
    errors: &mut Errors,
) -> Option<Arm<'a>> {
    let ident = &variant.ident;
    let rule = match rule {
        Rule::Class(_, class) => ArmRule::Class(class),
        Rule::Delegate(mark) => {
            let (member, ty) = one_field(&variant.fields, &mark, &format!("`{ident}`"), errors)?;
            let hint_lost_ok = written.allows("hint_lost");
            let krate = container.krate.as_ref();
            beside.delegate(Some(ident), &member, ty, written.from, hint_lost_ok, krate);
            ArmRule::Delegate(member, ty)
        }
    };
    Some(Arm {
        variant: ident,
        rule,
    })
}

/// What the derive writes beside the `Classify` impl, as the `delegate` variants (or struct)
/// ask for it.
#[derive(Default)]
struct Beside<'a> {
    /// The `From` impls `from(...)` lists, before their coherence is checked.
    conversions: Vec<Conversion<'a>>,
    /// The warnings, each an item that makes rustc print one.
    warnings: TokenStream,
}

/// A `From` impl that `from(...)` asks for: from `source` into the one field of `variant` (or
/// of the struct, for `None`), through the field's own `From<source>`.
struct Conversion<'a> {
    source: syn::Type,
    variant: Option<&'a Ident>,
    member: Member,
    field: &'a syn::Type,
}

impl<'a> Beside<'a> {
    /// A `delegate` to `field` (`member`) of `variant` (or of the struct), with the `from(...)`
    /// written beside it, and whether `allow(hint_lost)` was; `krate` is the runtime's path if
    /// renamed.
    fn delegate(
        &mut self,
        variant: Option<&'a Ident>,
        member: &Member,
        field: &'a syn::Type,
        from: Option<(Ident, Vec<syn::Type>)>,
        hint_lost_ok: bool,
        krate: Option<&syn::Path>,
    ) {
        if !hint_lost_ok {
            if let Some(at) = reqwest_own_error(field, krate) {
                self.warnings.extend(hint_lost(at, krate));
            }
        }
        let sources = from.map(|(_, sources)| sources).unwrap_or_default();
        self.conversions
            .extend(sources.into_iter().map(|source| Conversion {
                source,
                variant,
                member: member.clone(),
                field,
            }));
    }
}

/// The span of `reqwest` in `ty` when `ty` is written as reqwest's own error: a path ending in
/// `reqwest::Error` whose segment before `reqwest`, if any, does not name the runtime
/// (`retry_runtime`, or the last segment of `crate = ...`). Only the tokens are read: an import
/// (`use reqwest::Error;`, or `use retry_runtime::reqwest;` before `reqwest::Error`), an alias
/// or a renamed dependency is not seen through.
pub(crate) fn reqwest_own_error(ty: &syn::Type, krate: Option<&syn::Path>) -> Option<Span> {
    let path = match ty {
        syn::Type::Path(ty) if ty.qself.is_none() => &ty.path,
        syn::Type::Group(group) => return reqwest_own_error(&group.elem, krate),
        syn::Type::Paren(paren) => return reqwest_own_error(&paren.elem, krate),
        _ => return None,
    };
    let segments: Vec<&syn::PathSegment> = path.segments.iter().collect();
    let [before @ .., reqwest, error] = segments.as_slice() else {
        return None;
    };
    let plain = |s: &syn::PathSegment| s.arguments.is_none();
    if reqwest.ident != "reqwest" || error.ident != "Error" || !plain(reqwest) || !plain(error) {
        return None;
    }
    let renamed = krate.and_then(|k| k.segments.last()).map(|s| &s.ident);
    let through_runtime = before
        .last()
        .is_some_and(|s| s.ident == "retry_runtime" || renamed.is_some_and(|r| s.ident == *r));
    (!through_runtime).then(|| reqwest.ident.span())
}

/// The warning of a `delegate` over reqwest's own error, at `at`. Stable Rust has no API for a
/// macro's warnings, so this is the use, spanned at `at`, of a `#[deprecated]` constant whose note
/// is the message: rustc prints it as a warning there, under the lint `deprecated` (which a
/// module's `#[allow(deprecated)]` silences too).
fn hint_lost(at: Span, krate: Option<&syn::Path>) -> TokenStream {
    let runtime = krate.map_or_else(
        || "retry_runtime".to_owned(),
        |k| compact(k).trim_start_matches("::").to_owned(),
    );
    let note = format!(
        "`#[classify(delegate)]` over reqwest's own `reqwest::Error` never sees the server's \
         `Retry-After`: that error keeps only the status. Hold `{runtime}::reqwest::Error` \
         instead, check responses with `{runtime}::reqwest::error_for_status`, and list \
         `reqwest::Error` in `from(...)` beside `delegate` so that `?` still converts it; or \
         write `#[classify(delegate, allow(hint_lost))]` to keep reqwest's error"
    );
    let used = Ident::new("hint_lost", at);
    quote! {
        const _: () = {
            #[deprecated(note = #note)]
            #[allow(non_upper_case_globals)]
            const hint_lost: () = ();
            #used
        };
    }
}

/// The conversions that no other `From` impl of the same source type conflicts with, as far as
/// the input's tokens show; each one that does is reported on its type: a type listed twice
/// (once more in the same `from(...)`, or in another variant's), one whose `From` a `#[from]`
/// field (thiserror's) implements, and the type itself (`Self` or its name), which `core`'s
/// `impl<T> From<T> for T` converts already. Types are compared as written.
fn coherent<'a>(
    conversions: Vec<Conversion<'a>>,
    input: &'a DeriveInput,
    errors: &mut Errors,
) -> Vec<Conversion<'a>> {
    let name = &input.ident;
    let owner = |variant: Option<&Ident>| format!("`{}`", variant.unwrap_or(name));
    // The types a `#[from]` field converts from, with the variant (or struct) that has it.
    let mut from_fields: Vec<(String, String)> = Vec::new();
    let mut with_fields = |variant: Option<&Ident>, fields: &Fields| {
        for field in fields {
            if field.attrs.iter().any(|a| a.path().is_ident("from")) {
                from_fields.push((compact(&field.ty), owner(variant)));
            }
        }
    };
    match &input.data {
        Data::Enum(data) => {
            for variant in &data.variants {
                with_fields(Some(&variant.ident), &variant.fields);
            }
        }
        Data::Struct(data) => with_fields(None, &data.fields),
        Data::Union(_) => {}
    }
    let mut kept: Vec<(String, Conversion<'a>)> = Vec::new();
    for conversion in conversions {
        let source = compact(&conversion.source);
        let at = &conversion.source;
        if source == "Self" || *name == source {
            errors.on(
                at,
                format!(
                    "`{source}` is the type itself, which every type converts from already \
                     (`impl<T> From<T> for T`): drop it from `from(...)`"
                ),
            );
        } else if let Some((_, other)) = kept.iter().find(|(s, _)| *s == source) {
            let msg = if other.variant == conversion.variant {
                format!("`{source}` is listed twice in `from(...)`")
            } else {
                format!(
                    "`From<{source}>` is asked for already, by the `from(...)` of {}: a type \
                     converts into one variant only",
                    owner(other.variant)
                )
            };
            errors.on(at, msg);
        } else if let Some((_, by)) = from_fields.iter().find(|(s, _)| *s == source) {
            errors.on(
                at,
                format!(
                    "`From<{source}>` is implemented already, by the `#[from]` on the field of \
                     {by}: drop `{source}` from `from(...)` or that `#[from]`"
                ),
            );
        } else {
            kept.push((source, conversion));
        }
    }
    kept.into_iter().map(|(_, conversion)| conversion).collect()
}

/// The `From` impls of `conversions`. Each impl's header is spanned at the source type written in
/// `from(...)`, so that rustc reports a conflict with an impl the tokens do not show there, and
/// a field type without the `From` the impl calls is reported there too.
fn from_impls(input: &DeriveInput, conversions: &[Conversion<'_>]) -> TokenStream {
    let name = &input.ident;
    let params: Vec<String> = input
        .generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    let value = Ident::new("value", Span::mixed_site());
    let mut out = TokenStream::new();
    for Conversion {
        source,
        variant,
        member,
        field,
    } in conversions
    {
        let mut tokens = source.to_token_stream().into_iter();
        let first = tokens.next().map_or_else(Span::call_site, |t| t.span());
        let last = tokens.last().map_or(first, |t| t.span());
        let mut generics = input.generics.clone();
        let generic = |tokens: TokenStream| params.iter().any(|p| mentions(tokens.clone(), p));
        if generic(source.to_token_stream()) || generic(field.to_token_stream()) {
            generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote_spanned!(last=> #field: ::core::convert::From<#source>));
        }
        let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
        // The field's type is inferred (`_`), not named, so that a field type without this
        // `From` is reported on the type listed (its last token) rather than on the field.
        let converted = quote_spanned!(last=> <_ as ::core::convert::From<#source>>::from(#value));
        let built = match (variant, member) {
            (Some(variant), Member::Named(field)) => quote!(Self::#variant { #field: #converted }),
            (Some(variant), Member::Unnamed(_)) => quote!(Self::#variant(#converted)),
            (None, Member::Named(field)) => quote!(Self { #field: #converted }),
            (None, Member::Unnamed(_)) => quote!(Self(#converted)),
        };
        let impl_token = quote_spanned!(first=> impl);
        let name = respan(name, last);
        out.extend(quote_spanned! {last=>
            #[automatically_derived]
            #impl_token #impl_generics ::core::convert::From<#source> for #name #ty_generics
            #where_clause
            {
                // `from(...)` may list the field's own type, which converts into itself.
                #[allow(clippy::useless_conversion)]
                fn from(#value: #source) -> Self {
                    #built
                }
            }
        });
    }
    out
}

/// The one field of what `delegate` (`mark`) is written on, or `None` once it is reported that
/// there is not exactly one.
fn one_field<'a>(
    fields: &'a Fields,
    mark: &Ident,
    what: &str,
    errors: &mut Errors,
) -> Option<(Member, &'a syn::Type)> {
    let mut members = fields.members().zip(fields.iter());
    match (members.next(), fields.len()) {
        (Some((member, field)), 1) => Some((member, &field.ty)),
        (_, n) => {
            let has = if n == 0 {
                "has no field".to_owned()
            } else {
                format!("has {n} fields")
            };
            errors.at(
                mark.span(),
                format!(
                    "`delegate` classifies {what} by its one field, but {what} {has}: write a \
                     class instead (`#[classify(transient)]`, ...), or wrap the fields in one \
                     type that implements `Classify`"
                ),
            );
            None
        }
    }
}

/// Reports a `#[classify]` written on a field (where the derive does not read it); whether there
/// was one.
fn fields_carry_none(fields: &Fields, owner: &str, errors: &mut Errors) -> bool {
    let mut found = false;
    for attr in fields.iter().flat_map(|f| &f.attrs) {
        if attr.path().is_ident("classify") {
            found = true;
            errors.on(
                attr,
                format!(
                    "`#[classify]` goes on the {owner}, not on its field: \
                     `#[classify(delegate)]` on the {owner} classifies it by its one field"
                ),
            );
        }
    }
    found
}

/// Reads the `#[classify(...)]` attributes among `attrs`, written on `what` at `place`.
fn read(attrs: &[Attribute], place: Place, what: &str, errors: &mut Errors) -> Written {
    let before = errors.count();
    let mut written = Written::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("classify")) {
        let list = match &attr.meta {
            syn::Meta::List(list) => list,
            syn::Meta::Path(_) | syn::Meta::NameValue(_) => {
                errors.on(attr, expected(place));
                continue;
            }
        };
        if !matches!(list.delimiter, syn::MacroDelimiter::Paren(_)) {
            errors.on(attr, expected(place));
            continue;
        }
        if list.tokens.is_empty() {
            errors.at(list.delimiter.span().join(), expected(place));
            continue;
        }
        let parser = |input: ParseStream<'_>| {
            read_list(input, place, what, &mut written, errors);
            Ok(())
        };
        if let Err(e) = parser.parse2(list.tokens.clone()) {
            errors.push(e);
        }
    }
    written.failed = errors.count() > before;
    written
}

/// What an attribute at `place` looks like.
fn expected(place: Place) -> &'static str {
    match place {
        Place::Enum => {
            "expected `#[classify(default = permanent)]` (a class for the bare variants) or \
             `#[classify(crate = path)]` on the enum"
        }
        Place::Variant => {
            "expected a class: `#[classify(transient)]`, `#[classify(throttling)]`, \
             `#[classify(timeout)]`, `#[classify(not_sent)]`, `#[classify(permanent)]` or \
             `#[classify(delegate)]`"
        }
        Place::Struct => {
            "expected a class: `#[classify(transient)]`, `#[classify(throttling)]`, \
             `#[classify(timeout)]`, `#[classify(not_sent)]`, `#[classify(permanent)]` or \
             `#[classify(delegate)]`, and `crate = path` if the runtime is renamed"
        }
    }
}

fn read_list(
    input: ParseStream<'_>,
    place: Place,
    what: &str,
    written: &mut Written,
    errors: &mut Errors,
) {
    while !input.is_empty() {
        if let Err(e) = read_item(input, place, what, written, errors) {
            errors.push(e);
            skip_to_comma(input);
        }
        if input.is_empty() {
            break;
        }
        if let Err(e) = input.parse::<Token![,]>() {
            errors.at(
                e.span(),
                "expected `,` between the items of `#[classify(...)]`",
            );
            skip_to_comma(input);
            let _ = input.parse::<Token![,]>();
        }
    }
}

/// Reads one item: a class or `delegate`, `default = class` or `crate = path`.
fn read_item(
    input: ParseStream<'_>,
    place: Place,
    what: &str,
    written: &mut Written,
    errors: &mut Errors,
) -> syn::Result<()> {
    let ident = Ident::parse_any(input).map_err(|e| syn::Error::new(e.span(), expected(place)))?;
    let name = ident.to_string();
    if BESIDE_DELEGATE.contains(&name.as_str()) {
        read_beside(input, ident, place, written, errors);
        return Ok(());
    }
    if input.peek(Token![=]) {
        if MARKS.contains(&name.as_str()) {
            errors.at(
                ident.span(),
                format!("`{name}` takes no value: write `#[classify({name})]`"),
            );
            skip_to_comma(input);
            return Ok(());
        }
        input.parse::<Token![=]>()?;
        return match name.as_str() {
            "default" => read_default(input, &ident, place, written, errors),
            "crate" => read_crate(input, &ident, place, written, errors),
            _ => {
                errors.at(ident.span(), unknown(&name, place));
                skip_to_comma(input);
                Ok(())
            }
        };
    }
    if !(input.is_empty() || input.peek(Token![,])) {
        let msg = match name.as_str() {
            "default" | "crate" => format!("expected `=` after `{name}`"),
            _ if MARKS.contains(&name.as_str()) => {
                format!("`{name}` takes no arguments: write `#[classify({name})]`")
            }
            _ => unknown(&name, place),
        };
        errors.at(input.span(), msg);
        skip_to_comma(input);
        return Ok(());
    }
    let rule = match name.as_str() {
        "delegate" => Rule::Delegate(ident.clone()),
        "default" => {
            errors.at(
                ident.span(),
                "`default` needs a class: `#[classify(default = permanent)]`",
            );
            return Ok(());
        }
        "crate" => {
            errors.at(
                ident.span(),
                "`crate` needs the path of the runtime: `#[classify(crate = ::my_retry)]`",
            );
            return Ok(());
        }
        _ => match class(&name) {
            Some(class) => Rule::Class(ident.clone(), class),
            None => {
                errors.at(ident.span(), unknown(&name, place));
                return Ok(());
            }
        },
    };
    if place == Place::Enum {
        let msg = match rule {
            Rule::Delegate(_) => {
                "`delegate` goes on each variant to classify by its one field, not on the enum"
                    .to_owned()
            }
            Rule::Class(..) => format!(
                "a class on the enum itself: write it on each variant, or make it the default of \
                 the variants left bare: `#[classify(default = {name})]`"
            ),
        };
        errors.at(ident.span(), msg);
        return Ok(());
    }
    match &written.rule {
        Some(Rule::Class(first, _) | Rule::Delegate(first)) => errors.at(
            ident.span(),
            format!(
                "{what} already has a class (`{first}`): one `#[classify(...)]` with one class \
                 per {}",
                if place == Place::Variant {
                    "variant"
                } else {
                    "struct"
                }
            ),
        ),
        None => written.rule = Some(rule),
    }
    Ok(())
}

/// `from(types)` or `allow(warnings)`, after its key.
fn read_beside(
    input: ParseStream<'_>,
    key: Ident,
    place: Place,
    written: &mut Written,
    errors: &mut Errors,
) {
    let from = key == "from";
    let (name, example) = if from {
        ("from", "from(reqwest::Error, TimedOut)")
    } else {
        ("allow", "allow(hint_lost)")
    };
    if place == Place::Enum {
        errors.at(
            key.span(),
            format!(
                "`{name}(...)` goes on a variant, beside its `delegate`, not on the enum: \
                 `#[classify(delegate, {example})]`"
            ),
        );
        skip_to_comma(input);
        return;
    }
    let group = match input.fork().parse::<TokenTree>() {
        Ok(TokenTree::Group(group)) if group.delimiter() == Delimiter::Parenthesis => group,
        _ => {
            let what = if from {
                "a list of types"
            } else {
                "the warnings it silences"
            };
            errors.at(
                key.span(),
                format!("`{name}` takes {what} in parentheses: `#[classify(delegate, {example})]`"),
            );
            skip_to_comma(input);
            return;
        }
    };
    let _ = input.parse::<TokenTree>();
    if group.stream().is_empty() {
        let none = if from { "no type" } else { "no warning" };
        errors.at(
            group.span(),
            format!("`{name}()` lists {none}: `#[classify(delegate, {example})]`"),
        );
        return;
    }
    let listed = if from {
        read_types.parse2(group.stream()).map(|types| {
            let (_, all) = written.from.get_or_insert_with(|| (key, Vec::new()));
            all.extend(types);
        })
    } else {
        let read = |content: ParseStream<'_>| read_warnings(content, errors);
        read.parse2(group.stream()).map(|names| {
            let (_, all) = written.allow.get_or_insert_with(|| (key, Vec::new()));
            all.extend(names);
        })
    };
    if let Err(e) = listed {
        errors.push(e);
    }
}

/// The types of `from(...)`, separated by commas.
fn read_types(content: ParseStream<'_>) -> syn::Result<Vec<syn::Type>> {
    let mut types = Vec::new();
    while !content.is_empty() {
        types.push(content.parse::<syn::Type>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected a type: `from(...)` lists the types to convert from, \
                 `from(reqwest::Error, TimedOut)`",
            )
        })?);
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>().map_err(|e| {
            syn::Error::new(e.span(), "expected `,` between the types of `from(...)`")
        })?;
    }
    Ok(types)
}

/// The warnings of `allow(...)`, separated by commas; an unknown one is reported and left out.
fn read_warnings(content: ParseStream<'_>, errors: &mut Errors) -> syn::Result<Vec<&'static str>> {
    let mut names = Vec::new();
    while !content.is_empty() {
        let ident = Ident::parse_any(content).map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the name of a warning: `allow(hint_lost)`",
            )
        })?;
        match WARNINGS.iter().find(|w| ident == **w) {
            Some(warning) => names.push(*warning),
            None => {
                let name = ident.to_string();
                let msg = match retry_keys::suggest(&name, &WARNINGS) {
                    Some(s) => format!("unknown warning `{name}`: did you mean `{s}`?"),
                    None => format!(
                        "unknown warning `{name}`: the derive's one warning is `hint_lost`, for a \
                         `delegate` over reqwest's own `reqwest::Error`"
                    ),
                };
                errors.at(ident.span(), msg);
            }
        }
        if content.is_empty() {
            break;
        }
        content.parse::<Token![,]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `,` between the warnings of `allow(...)`",
            )
        })?;
    }
    Ok(names)
}

/// `default = class`, after the `=`.
fn read_default(
    input: ParseStream<'_>,
    key: &Ident,
    place: Place,
    written: &mut Written,
    errors: &mut Errors,
) -> syn::Result<()> {
    let value = if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        errors.on(
            &lit,
            format!(
                "write the class without quotes: `default = {}`",
                lit.value()
            ),
        );
        return Ok(());
    } else {
        Ident::parse_any(input).map_err(|e| {
            syn::Error::new(
                e.span(),
                "`default` takes a class: `#[classify(default = permanent)]`",
            )
        })?
    };
    let name = value.to_string();
    let Some(class) = class(&name) else {
        let msg = if name == "delegate" {
            "only a class may be the default: `delegate` classifies a variant by its own field, so \
             write `#[classify(delegate)]` on each variant that has one"
                .to_owned()
        } else {
            match retry_keys::suggest(&name, &CLASSES.map(|(c, _)| c)) {
                Some(s) => format!("unknown class `{name}`: did you mean `{s}`?"),
                None => format!("unknown class `{name}`: the default is one of {}", list(5)),
            }
        };
        errors.at(value.span(), msg);
        return Ok(());
    };
    match place {
        Place::Enum => {}
        Place::Variant => {
            errors.at(
                key.span(),
                "`default` goes on the enum, for the variants left bare: on a variant, write its \
                 class: `#[classify(permanent)]`",
            );
            return Ok(());
        }
        Place::Struct => {
            errors.at(
                key.span(),
                "`default` is for the variants of an enum: on a struct, write its class: \
                 `#[classify(permanent)]`",
            );
            return Ok(());
        }
    }
    if written.default.is_some() {
        errors.at(key.span(), "`default` is given twice");
    } else {
        written.default = Some(Rule::Class(value, class));
    }
    Ok(())
}

/// `crate = path`, after the `=`; a string holding a path is accepted too, as `#[retry]` does.
fn read_crate(
    input: ParseStream<'_>,
    key: &Ident,
    place: Place,
    written: &mut Written,
    errors: &mut Errors,
) -> syn::Result<()> {
    let start = input.span();
    let path = if input.peek(LitStr) {
        input.parse::<LitStr>()?.parse::<syn::Path>()
    } else {
        input.call(syn::Path::parse_mod_style)
    };
    let path = match path {
        Ok(path) if input.is_empty() || input.peek(Token![,]) => path,
        _ => {
            written.krate_failed = true;
            return Err(syn::Error::new(
                start,
                "`crate` takes a path to the runtime crate: `crate = ::my_retry`",
            ));
        }
    };
    if place == Place::Variant {
        errors.at(
            key.span(),
            "`crate` goes on the enum, not on a variant: `#[classify(crate = ...)]` above the \
             enum",
        );
    } else if written.krate.is_some() {
        errors.at(key.span(), "`crate` is given twice");
    } else {
        written.krate = Some(path);
    }
    Ok(())
}

/// The `ErrorClass` variant of the class written `name`.
fn class(name: &str) -> Option<&'static str> {
    CLASSES.iter().find(|(c, _)| *c == name).map(|(_, v)| *v)
}

/// The first `n` marks, as a sentence's list.
fn list(n: usize) -> String {
    let marks: Vec<String> = MARKS[..n].iter().map(|m| format!("`{m}`")).collect();
    let (last, rest) = marks.split_last().expect("at least one mark");
    format!("{} or {last}", rest.join(", "))
}

/// Why `name` is not an item of `#[classify(...)]` at `place`, with the closest one it may mean.
fn unknown(name: &str, place: Place) -> String {
    let candidates: Vec<&str> = match place {
        Place::Enum => KEYS.to_vec(),
        Place::Variant => MARKS.iter().chain(&BESIDE_DELEGATE).copied().collect(),
        Place::Struct => MARKS
            .iter()
            .chain(&KEYS[1..])
            .chain(&BESIDE_DELEGATE)
            .copied()
            .collect(),
    };
    let kind = if place == Place::Enum { "key" } else { "class" };
    match retry_keys::suggest(name, &candidates) {
        Some(s) if BESIDE_DELEGATE.contains(&s) => {
            format!("unknown key `{name}`: did you mean `{s}`?")
        }
        Some(s) => format!("unknown {kind} `{name}`: did you mean `{s}`?"),
        None => format!("unknown {kind} `{name}`: {}", expected(place)),
    }
}

/// The impl of `Classify` for `input`.
fn implement(input: &DeriveInput, krate: Option<syn::Path>, body: &Body<'_>) -> TokenStream {
    let krate = krate.unwrap_or_else(|| syn::parse_quote!(::retry_runtime));
    let name = &input.ident;
    let class_path = |c: &str| {
        let c = Ident::new(c, Span::call_site());
        quote!(#krate::ErrorClass::#c)
    };
    let field = format_ident!("__classify_field", span = Span::mixed_site());
    let mut delegated: Vec<&syn::Type> = Vec::new();
    let (classify, retry_after) = match body {
        Body::Class(c) => (class_path(c), None),
        Body::Delegate(member, ty) => {
            delegated.push(ty);
            let of = |method: &str| {
                let method = Ident::new(method, Span::call_site());
                quote_spanned!(ty.span()=> <#ty as #krate::Classify>::#method(&self.#member))
            };
            (of("classify"), Some(of("retry_after")))
        }
        Body::Enum(arms) if arms.is_empty() => (quote!(match *self {}), None),
        Body::Enum(arms) => {
            // Variants of one class share an arm, in the order of their first variant.
            let mut classes: Vec<(&'static str, Vec<&Ident>)> = Vec::new();
            let mut classify = Vec::new();
            let mut hinted = Vec::new();
            let mut bare = Vec::new();
            for arm in arms {
                let variant = &arm.variant;
                match &arm.rule {
                    ArmRule::Class(c) => {
                        bare.push(quote!(Self::#variant { .. }));
                        match classes.iter_mut().find(|(k, _)| k == c) {
                            Some((_, variants)) => variants.push(variant),
                            None => classes.push((c, vec![variant])),
                        }
                    }
                    ArmRule::Delegate(member, ty) => {
                        delegated.push(ty);
                        let pattern = quote!(Self::#variant { #member: #field });
                        // Named through the field's type, which a missing impl is reported on.
                        classify.push(quote_spanned! {ty.span()=>
                            #pattern => <#ty as #krate::Classify>::classify(#field),
                        });
                        hinted.push(quote_spanned! {ty.span()=>
                            #pattern => <#ty as #krate::Classify>::retry_after(#field),
                        });
                    }
                }
            }
            for (c, variants) in classes {
                let c = class_path(c);
                classify.push(quote!(#(Self::#variants { .. })|* => #c,));
            }
            let retry_after = (!hinted.is_empty()).then(|| {
                let rest =
                    (!bare.is_empty()).then(|| quote!(#(#bare)|* => ::core::option::Option::None,));
                quote!(match self { #(#hinted)* #rest })
            });
            (quote!(match self { #(#classify)* }), retry_after)
        }
    };
    let mut generics = input.generics.clone();
    let params: Vec<String> = generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    for ty in delegated {
        // A bound for each field whose type depends on a parameter (a concrete type is checked
        // where the field is classified); none for a type that names the type itself, whose
        // bound would ask for the impl being defined.
        let mentions = |name: &str| mentions(ty.to_token_stream(), name);
        if params.iter().any(|p| mentions(p)) && !mentions("Self") && !mentions(&name.to_string()) {
            generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote_spanned!(ty.span()=> #ty: #krate::Classify));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let retry_after = retry_after.map(|body| {
        quote! {
            fn retry_after(&self) -> ::core::option::Option<::core::time::Duration> {
                #body
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::Classify for #name #ty_generics #where_clause {
            fn classify(&self) -> #krate::ErrorClass {
                #classify
            }
            #retry_after
        }
    }
}

/// `ident` at `span`.
fn respan(ident: &Ident, span: Span) -> Ident {
    let mut ident = ident.clone();
    ident.set_span(span);
    ident
}

/// Whether `tokens` hold the identifier `name`, at any depth.
fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => mentions(g.stream(), name),
        TokenTree::Punct(_) | TokenTree::Literal(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(item: &str) -> String {
        derive(item.parse().expect("tokens")).to_string()
    }

    #[test]
    fn variants_of_one_class_share_an_arm() {
        let out = expand(
            "enum E { #[classify(transient)] A, #[classify(transient)] B(u8), \
             #[classify(permanent)] C { x: u8 } }",
        );
        assert!(
            out.contains(
                "Self :: A { .. } | Self :: B { .. } => :: retry_runtime :: ErrorClass :: Transient"
            ),
            "{out}"
        );
        assert!(!out.contains("retry_after"), "{out}");
    }

    #[test]
    fn a_delegated_field_of_a_parameter_type_is_bounded() {
        let out = expand(
            "enum E<T, U> { #[classify(delegate)] A(T), #[classify(delegate)] B { inner: Vec<u8> }, \
             #[classify(delegate)] C(Box<Self>), #[classify(timeout)] D(U) }",
        );
        assert!(
            out.contains("where T : :: retry_runtime :: Classify"),
            "{out}"
        );
        assert!(!out.contains("Vec < u8 > :"), "{out}");
        assert!(!out.contains("Box < Self > :"), "{out}");
        assert!(!out.contains("U :"), "{out}");
        assert!(out.contains("fn retry_after"), "{out}");
    }

    #[test]
    fn a_renamed_runtime_is_the_only_path_named() {
        let out = expand(
            "#[classify(crate = ::resilience)] enum E { #[classify(transient)] A, \
             #[classify(delegate)] B(u8) }",
        );
        assert!(!out.contains("retry_runtime"), "{out}");
        assert!(
            out.contains(":: resilience :: ErrorClass :: Transient"),
            "{out}"
        );
        let out = expand("#[classify(crate = \"my::retry\", permanent)] struct S;");
        assert!(out.contains("impl my :: retry :: Classify for S"), "{out}");
    }

    #[test]
    fn a_struct_with_only_the_crate_key_has_no_class() {
        let out = expand("#[classify(crate = ::resilience)] struct S;");
        assert!(out.contains("needs the class of `S`"), "{out}");
        let out = expand("#[classify(crate = ::resilience)] enum E { A }");
        assert!(out.contains("variant `A` has no class"), "{out}");
    }

    #[test]
    fn an_empty_enum_matches_nothing() {
        let out = expand("#[classify(default = permanent)] enum Never {}");
        assert!(out.contains("match * self { }"), "{out}");
    }

    #[test]
    fn errors_come_with_an_impl_unless_the_path_is_unreadable() {
        let out = expand("enum E { A }");
        assert!(out.contains("compile_error"), "{out}");
        assert!(
            out.contains("impl :: retry_runtime :: Classify for E"),
            "{out}"
        );
        let out = expand("#[classify(crate = 5)] enum E { #[classify(transient)] A }");
        assert!(out.contains("compile_error"), "{out}");
        assert!(!out.contains("impl"), "{out}");
    }

    #[test]
    fn reqwests_own_error_is_told_from_the_runtimes_by_its_path() {
        let renamed: syn::Path = syn::parse_quote!(::resilience);
        let cases: [(&str, Option<&syn::Path>, bool); 12] = [
            ("reqwest::Error", None, true),
            ("::reqwest::Error", None, true),
            ("(reqwest::Error)", None, true),
            ("crate::deps::reqwest::Error", None, true),
            ("retry_runtime::reqwest::Error", None, false),
            ("::retry_runtime::reqwest::Error", None, false),
            ("resilience::reqwest::Error", Some(&renamed), false),
            ("resilience::reqwest::Error", None, true),
            ("Error", None, false),
            ("reqwest::Response", None, false),
            ("Box<reqwest::Error>", None, false),
            ("<reqwest::Error as Trait>::Error", None, false),
        ];
        for (ty, krate, warned) in cases {
            let parsed: syn::Type = syn::parse_str(ty).expect("a type");
            assert_eq!(reqwest_own_error(&parsed, krate).is_some(), warned, "{ty}");
        }
        let out = expand("enum E { #[classify(delegate)] A(reqwest::Error) }");
        assert!(out.contains("deprecated"), "{out}");
        assert!(out.contains("retry_runtime::reqwest::Error"), "{out}");
        let out = expand(
            "#[classify(crate = ::resilience)] enum E { #[classify(delegate)] A(reqwest::Error) }",
        );
        assert!(out.contains("resilience::reqwest::Error"), "{out}");
        assert!(!out.contains("retry_runtime"), "{out}");
        let out = expand("enum E { #[classify(delegate, allow(hint_lost))] A(reqwest::Error) }");
        assert!(!out.contains("deprecated"), "{out}");
    }

    #[test]
    fn from_converts_through_the_field_into_each_shape() {
        let out = expand(
            "enum E<T> { #[classify(delegate, from(u8, u16))] A { inner: Wire }, \
             #[classify(delegate, from(T))] B(Box<T>) }",
        );
        assert!(
            out.contains("From < u8 > for E < T >")
                && out.contains(
                    "Self :: A { inner : < _ as :: core :: convert :: From < u8 >> :: from"
                ),
            "{out}"
        );
        assert!(out.contains("From < u16 > for E < T >"), "{out}");
        assert!(
            out.contains("where Box < T > : :: core :: convert :: From < T >")
                && out.contains("Self :: B (< _ as :: core :: convert :: From < T >> :: from"),
            "{out}"
        );
        // Only the conversion whose types name a parameter is bounded (beside `Classify`'s).
        assert_eq!(out.matches("where").count(), 2, "{out}");
        let out = expand("#[classify(delegate, from(u8))] struct S(Wire);");
        assert!(out.contains("From < u8 > for S"), "{out}");
        assert!(out.contains("Self (< _ as"), "{out}");
        let out = expand("#[classify(delegate, from(u8))] struct S { wire: Wire }");
        assert!(out.contains("Self { wire : < _ as"), "{out}");
    }

    #[test]
    fn conflicting_conversions_are_errors_and_not_written() {
        let out = expand(
            "enum E { #[classify(delegate, from(u8))] A(Wire), \
             #[classify(delegate, from(u8, u16))] B(Wire), \
             #[classify(delegate)] C(#[from] u16) }",
        );
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
        assert_eq!(out.matches("From < u8 > for E").count(), 1, "{out}");
        assert!(!out.contains("From < u16 > for E"), "{out}");
        // A variant's other mistakes leave the conversions of the others.
        let out =
            expand("enum E { #[classify(delegate, from(u8))] A(Wire), #[classify(transent)] B }");
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("From < u8 > for E"), "{out}");
    }

    /// No input, however malformed, makes the derive panic.
    #[test]
    fn malformed_attributes_are_errors() {
        for attr in [
            "#[classify]",
            "#[classify = 1]",
            "#[classify()]",
            "#[classify[transient]]",
            "#[classify(,)]",
            "#[classify(transient,,)]",
            "#[classify(transient timeout)]",
            "#[classify(default =)]",
            "#[classify(default = 5)]",
            "#[classify(default = \"permanent\")]",
            "#[classify(crate =)]",
            "#[classify(crate = ::a::)]",
            "#[classify(crate)]",
            "#[classify(delegate(x))]",
            "#[classify(1)]",
            "#[classify(transient = 1)]",
            "#[classify(delegate, from)]",
            "#[classify(delegate, from = u8)]",
            "#[classify(delegate, from())]",
            "#[classify(delegate, from(1))]",
            "#[classify(delegate, from(u8 u16))]",
            "#[classify(delegate, from(u8,,))]",
            "#[classify(delegate, from(Self))]",
            "#[classify(transient, from(u8))]",
            "#[classify(delegate, allow)]",
            "#[classify(delegate, allow())]",
            "#[classify(delegate, allow(1))]",
            "#[classify(delegate, allow(hint))]",
            "#[classify(transient, allow(hint_lost))]",
        ] {
            for item in [
                format!("{attr} enum E {{ #[classify(transient)] A }}"),
                format!("enum E {{ {attr} A(u8) }}"),
                format!("{attr} struct S(u8);"),
            ] {
                let out = expand(&item);
                assert!(out.contains("compile_error"), "{item}: {out}");
            }
        }
    }
}
