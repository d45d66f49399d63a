//! `#[retry]` in the browser: the host's `fetch`, retried on a 5xx, a 429 or a network error,
//! honouring the server's `Retry-After`, with an attempt timeout on the host's timers.
//!
//! Built for `wasm32-unknown-unknown`, where the runtime's browser backend is chosen by the
//! target (no feature to turn on, no tokio in the build):
//!
//! ```text
//! cargo build -p retry-runtime --example wasm --target wasm32-unknown-unknown
//! wasm-bindgen --target web --out-dir pkg target/wasm32-unknown-unknown/debug/examples/wasm.wasm
//! ```
//!
//! and loaded from a page (`import init from "./pkg/wasm.js"; await init();`), its `main` fetches
//! `/status` from the page's server and logs each attempt and the answer to the console. The
//! wasm suite (`retry-runtime/tests/wasm.rs`, run in Node) calls the same [`fetch_text`] against
//! a real HTTP server on 127.0.0.1 that answers 503 twice.
//!
//! On other targets it only says how to build it.

// The wasm suite includes this file as a module, where `main` is not called.
#![cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use web::{FetchError, fetch_text};

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod web {
    use js_sys::{Function, Promise, Reflect};
    use retry_runtime::{Classify, ErrorClass, TimedOut, attempt, hint, retry};
    use std::time::Duration;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    /// Why one `fetch` failed.
    #[derive(Debug)]
    pub enum FetchError {
        /// The server answered with this status, and perhaps a `Retry-After`.
        Status {
            /// The HTTP status.
            status: u16,
            /// The server's `Retry-After`, read.
            retry_after: Option<Duration>,
        },
        /// `fetch` rejected: the network failed (a `TypeError` in the browser).
        Network(JsValue),
        /// The attempt's timeout ran out.
        TimedOut(TimedOut),
    }

    impl Classify for FetchError {
        fn classify(&self) -> ErrorClass {
            match self {
                FetchError::Status { status: 429, .. } => ErrorClass::Throttling,
                FetchError::Status {
                    status: 408 | 500..=599,
                    ..
                } => ErrorClass::Transient,
                FetchError::Status { .. } => ErrorClass::Permanent,
                FetchError::Network(_) => ErrorClass::Transient,
                FetchError::TimedOut(_) => ErrorClass::Timeout,
            }
        }

        fn retry_after(&self) -> Option<Duration> {
            match self {
                FetchError::Status { retry_after, .. } => *retry_after,
                _ => None,
            }
        }
    }

    impl From<TimedOut> for FetchError {
        fn from(t: TimedOut) -> Self {
            FetchError::TimedOut(t)
        }
    }

    /// `fetch(url)` and its body as text: one attempt, retried by the attribute.
    #[retry(max_attempts = 4, initial_backoff = "100ms", attempt_timeout = "5s")]
    pub async fn fetch_text(url: &str) -> Result<String, FetchError> {
        log(&format!(
            "attempt {}: GET {url}",
            attempt().map_or(1, |a| a.number())
        ));
        let global = js_sys::global();
        let fetch: Function = get(&global, "fetch")
            .dyn_into()
            .map_err(FetchError::Network)?;
        let response = call(&fetch, &global, &JsValue::from_str(url)).await?;
        let status = get(&response, "status").as_f64().unwrap_or(0.0) as u16;
        if !(200..300).contains(&status) {
            let headers = get(&response, "headers");
            let retry_after = method(&headers, "get")
                .call1(&headers, &JsValue::from_str("retry-after"))
                .ok()
                .and_then(|v| v.as_string())
                .and_then(|v| hint::retry_after(&v));
            return Err(FetchError::Status {
                status,
                retry_after,
            });
        }
        let text = call(&method(&response, "text"), &response, &JsValue::UNDEFINED).await?;
        Ok(text.as_string().unwrap_or_default())
    }

    fn get(target: &JsValue, key: &str) -> JsValue {
        Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    }

    fn method(target: &JsValue, name: &str) -> Function {
        get(target, name).unchecked_into()
    }

    /// Calls `f` on `this` with `arg` and awaits the promise it returns.
    async fn call(f: &Function, this: &JsValue, arg: &JsValue) -> Result<JsValue, FetchError> {
        let promise = f.call1(this, arg).map_err(FetchError::Network)?;
        JsFuture::from(Promise::from(promise))
            .await
            .map_err(FetchError::Network)
    }

    /// `console.log`, through the global object (a page, a worker or Node).
    pub(crate) fn log(line: &str) {
        let console = get(&js_sys::global(), "console");
        let _ = method(&console, "log").call1(&console, &JsValue::from_str(line));
    }
}

/// In a page: fetch `/status` from the page's server and log the answer.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn main() {
    wasm_bindgen_futures::spawn_local(async {
        let line = match fetch_text("/status").await {
            Ok(text) => format!("answer: {text}"),
            Err(e) => format!("gave up: {e:?}"),
        };
        web::log(&line);
    });
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn main() {
    eprintln!(
        "this example runs in a browser: cargo build -p retry-runtime --example wasm \
         --target wasm32-unknown-unknown (its retried call also runs in the wasm suite, \
         retry-runtime/tests/wasm.rs)"
    );
}
