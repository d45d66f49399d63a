// What `#[retry]` receives when tokio-macros 2.7.2 expanded first (and tracing-attributes 0.1.31,
// where `#[tracing::instrument]` is written): each function is that output, pretty-printed, for
// the code in the comment above it. `shape.rs` must find the block that holds `user_body` (its
// test `wrappers_of_known_versions`).

// #[tokio::test]
// #[retry]
// async fn test() -> Result<(), E> {
//     user_body()
// }
#[::core::prelude::v1::test]
fn test() -> Result<(), E> {
    let body = async { user_body() };
    tokio::pin!(body);
    let body: ::core::pin::Pin<
        &mut dyn ::core::future::Future<Output = Result<(), E>>,
    > = body;
    #[allow(
        clippy::expect_used,
        clippy::diverging_sub_expression,
        clippy::needless_return,
        clippy::unwrap_in_result
    )]
    {
        use tokio::runtime::Builder;
        return Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("Failed building the Runtime")
            .block_on(body);
    }
}

// #[tokio::main(flavor = "current_thread")]
// #[retry]
// async fn main() -> Result<(), E> {
//     user_body()
// }
fn main() -> Result<(), E> {
    let body = async { user_body() };
    let body = {
        if false {
            let _: &dyn ::core::future::Future<Output = Result<(), E>> = &body;
        }
        body
    };
    #[allow(
        clippy::expect_used,
        clippy::diverging_sub_expression,
        clippy::needless_return,
        clippy::unwrap_in_result
    )]
    {
        use tokio::runtime::Builder;
        return Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("Failed building the Runtime")
            .block_on(body);
    }
}

// #[tokio::test]
// #[tracing::instrument]
// #[retry]
// async fn test_above_instrument() -> Result<(), E> {
//     user_body()
// }
#[::core::prelude::v1::test]
fn test_above_instrument() -> Result<(), E> {
    {}
    #[allow(clippy::suspicious_else_formatting)]
    {
        let __tracing_attr_span;
        let __tracing_attr_guard;
        if ::tracing::level_enabled!(::tracing::Level::INFO)
            || ::tracing::if_log_enabled!(
                ::tracing::Level::INFO, { true } else { false }
            )
        {
            __tracing_attr_span = ::tracing::span!(
                target : module_path!(), ::tracing::Level::INFO, "test_above_instrument",
            );
            __tracing_attr_guard = __tracing_attr_span.enter();
        }
        #[warn(clippy::suspicious_else_formatting)]
        {
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
                let __tracing_attr_fake_return: Result<(), E> = loop {};
                return __tracing_attr_fake_return;
            }
            {
                let body = async { user_body() };
                tokio::pin!(body);
                let body: ::core::pin::Pin<
                    &mut dyn ::core::future::Future<Output = Result<(), E>>,
                > = body;
                #[allow(
                    clippy::expect_used,
                    clippy::diverging_sub_expression,
                    clippy::needless_return,
                    clippy::unwrap_in_result
                )]
                {
                    use tokio::runtime::Builder;
                    return Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("Failed building the Runtime")
                        .block_on(body);
                }
            }
        }
    }
}

// #[tracing::instrument]
// #[tokio::test]
// #[retry]
// async fn instrument_above_test() -> Result<(), E> {
//     user_body()
// }
#[::core::prelude::v1::test]
fn instrument_above_test() -> Result<(), E> {
    let body = async {
        {}
        let __tracing_attr_span = ::tracing::span!(
            target : module_path!(), ::tracing::Level::INFO, "instrument_above_test",
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
                let __tracing_attr_fake_return: Result<(), E> = loop {};
                return __tracing_attr_fake_return;
            }
            { user_body() }
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
    };
    tokio::pin!(body);
    let body: ::core::pin::Pin<
        &mut dyn ::core::future::Future<Output = Result<(), E>>,
    > = body;
    #[allow(
        clippy::expect_used,
        clippy::diverging_sub_expression,
        clippy::needless_return,
        clippy::unwrap_in_result
    )]
    {
        use tokio::runtime::Builder;
        return Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("Failed building the Runtime")
            .block_on(body);
    }
}
