// What `#[retry]` receives when tracing-attributes 0.1.31 expanded first (inside an impl that
// async-trait 0.1.92 expanded, for the method): each function is that output, pretty-printed, for
// the code in the comment above it. `shape.rs` must find the block that holds `user_body` (its
// test `wrappers_of_known_versions`).

// #[tracing::instrument]
// #[retry]
// pub async fn instrumented(x: u32) -> Result<u32, E> {
//     user_body(x)
// }
pub async fn instrumented(x: u32) -> Result<u32, E> {
    {}
    let __tracing_attr_span = ::tracing::span!(
        target : module_path!(), ::tracing::Level::INFO, "instrumented", x = x,
    );
    let __tracing_instrument_future = async move {
        #[allow(
            unknown_lints,
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            clippy::let_unit_value,
            clippy::let_with_type_underscore,
            clippy::needless_return,
            clippy::unreachable
        )]
        if false {
            let __tracing_attr_fake_return: Result<u32, E> = loop {};
            return __tracing_attr_fake_return;
        }
        { user_body(x) }
    };
    if !__tracing_attr_span.is_disabled() {
        ::tracing::Instrument::instrument(
                __tracing_instrument_future,
                __tracing_attr_span,
            )
            .await
    } else {
        __tracing_instrument_future.await
    }
}

// #[tracing::instrument]
// #[retry]
// pub async fn instrumented_impl_trait(x: u32) -> Result<impl std::fmt::Debug, E> {
//     user_body(x)
// }
pub async fn instrumented_impl_trait(x: u32) -> Result<impl std::fmt::Debug, E> {
    {}
    let __tracing_attr_span = ::tracing::span!(
        target : module_path!(), ::tracing::Level::INFO, "instrumented_impl_trait", x =
        x,
    );
    let __tracing_instrument_future = async move {
        #[allow(
            unknown_lints,
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            clippy::let_unit_value,
            clippy::let_with_type_underscore,
            clippy::needless_return,
            clippy::unreachable
        )]
        if false {
            let __tracing_attr_fake_return: Result<_, E> = loop {};
            return __tracing_attr_fake_return;
        }
        { user_body(x) }
    };
    if !__tracing_attr_span.is_disabled() {
        ::tracing::Instrument::instrument(
                __tracing_instrument_future,
                __tracing_attr_span,
            )
            .await
    } else {
        __tracing_instrument_future.await
    }
}

// #[async_trait]
// impl T for S {
//     #[tracing::instrument(skip(self))]
//     #[retry]
//     async fn instrumented_method(&self, x: u32) -> Result<u32, E> {
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
fn instrumented_method<'life0, 'async_trait>(
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
    ::std::boxed::Box::pin(async move {
        let __tracing_attr_span = ::tracing::span!(
            target : module_path!(), ::tracing::Level::INFO, "instrumented_method", x =
            x,
        );
        let __tracing_instrument_future = async move {
            if let ::core::option::Option::Some(__ret) = ::core::option::Option::None::<
                Result<u32, E>,
            > {
                #[allow(unreachable_code)] return __ret;
            }
            let __self = self;
            let x = x;
            let __ret: Result<u32, E> = { user_body(x) };
            #[allow(unreachable_code)] __ret
        };
        if !__tracing_attr_span.is_disabled() {
            ::tracing::Instrument::instrument(
                    __tracing_instrument_future,
                    __tracing_attr_span,
                )
                .await
        } else {
            __tracing_instrument_future.await
        }
    })
}
