// What `#[retry]` receives when async-trait 0.1.92 expanded first: each function is that output,
// pretty-printed, for the code in the comment above it. `shape.rs` must find the block that holds
// `user_body` (its test `wrappers_of_known_versions`).

// #[async_trait]
// impl T for S {
//     #[retry]
//     async fn method(&self, x: u32) -> Result<u32, E> {
//         user_body(x)
//     }
// }
#[allow(
    elided_named_lifetimes,
    clippy::async_yields_async,
    clippy::diverging_sub_expression,
    clippy::let_unit_value,
    clippy::needless_arbitrary_self_type,
    clippy::no_effect_underscore_binding,
    clippy::shadow_same,
    clippy::type_complexity,
    clippy::type_repetition_in_bounds,
    clippy::used_underscore_binding
)]
fn method<'life0, 'async_trait>(
    &'life0 self,
    x: u32,
) -> ::core::pin::Pin<
    Box<
        dyn ::core::future::Future<
            Output = Result<u32, E>,
        > + ::core::marker::Send + 'async_trait,
    >,
>
where
    'life0: 'async_trait,
    Self: 'async_trait,
{
    Box::pin(async move {
        if let ::core::option::Option::Some(__ret) = ::core::option::Option::None::<
            Result<u32, E>,
        > {
            #[allow(unreachable_code)] return __ret;
        }
        let __self = self;
        let x = x;
        let __ret: Result<u32, E> = { user_body(x) };
        #[allow(unreachable_code)] __ret
    })
}
