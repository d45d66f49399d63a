//! `#[derive(Classify)]`: the `Classify` impl of an enum whose variants (or of a struct which)
//! each carry a class, `#[classify(transient)]` and the like, or `#[classify(delegate)]` to be
//! classified by their one field, server hint included.
//!
//! The `#[classify(...)]` attributes are read first, each mistake reported with the span of the
//! offending token and all of them at once (`Errors`). With any error the output is the errors
//! and an impl that classifies everything `Permanent`, so that the rest of the crate, which may
//! use the type as a `Classify`, still type-checks and only the real mistakes are reported.

use crate::errors::{Errors, skip_to_comma};
use proc_macro2::{Span, TokenStream, TokenTree};
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
    /// Something written there was wrong: a variant or struct whose attribute is wrong, or the
    /// variants of an enum whose attribute (its `default`?) is wrong, are not also reported as
    /// bare.
    failed: bool,
}

/// The expansion of `#[derive(Classify)]` on `item`.
pub(crate) fn derive(item: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(item) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let name = &input.ident;
    let (container, body) = match &input.data {
        Data::Enum(data) => {
            let container = read(&input.attrs, Place::Enum, "the enum", &mut errors);
            let mut arms = Vec::new();
            for variant in &data.variants {
                let what = format!("`{}`", variant.ident);
                let written = read(&variant.attrs, Place::Variant, &what, &mut errors);
                let on_fields = fields_carry_none(&variant.fields, "variant", &mut errors);
                let rule = written.rule.or_else(|| container.default.clone());
                match rule {
                    Some(rule) => {
                        if let Some(arm) = arm(&variant.ident, &variant.fields, rule, &mut errors) {
                            arms.push(arm);
                        }
                    }
                    // What was meant is reported already.
                    None if written.failed || on_fields || container.failed => {}
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
            let container = read(&input.attrs, Place::Struct, "the struct", &mut errors);
            let on_fields = fields_carry_none(&data.fields, "struct", &mut errors);
            let body = match container.rule.clone() {
                Some(Rule::Class(_, class)) => Some(Body::Class(class)),
                Some(Rule::Delegate(mark)) => {
                    one_field(&data.fields, &mark, &format!("`{name}`"), &mut errors)
                        .map(|(member, ty)| Body::Delegate(member, ty))
                }
                None if container.failed || on_fields => None,
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
    match errors.into_result() {
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
    }
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

/// The arm of `variant`, or `None` once a `delegate` on a variant without exactly one field is
/// reported.
fn arm<'a>(
    variant: &'a Ident,
    fields: &'a Fields,
    rule: Rule,
    errors: &mut Errors,
) -> Option<Arm<'a>> {
    let rule = match rule {
        Rule::Class(_, class) => ArmRule::Class(class),
        Rule::Delegate(mark) => {
            let (member, ty) = one_field(fields, &mark, &format!("`{variant}`"), errors)?;
            ArmRule::Delegate(member, ty)
        }
    };
    Some(Arm { variant, rule })
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
        Place::Variant => MARKS.to_vec(),
        Place::Struct => MARKS.iter().chain(&KEYS[1..]).copied().collect(),
    };
    let kind = if place == Place::Enum { "key" } else { "class" };
    match retry_keys::suggest(name, &candidates) {
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
