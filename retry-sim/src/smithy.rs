//! The AWS Rust SDK's retry loop as a simulated client: aws-smithy-runtime's orchestrator,
//! built with the public `Operation::builder()`, with its own `StandardRetryStrategy`, retry
//! token bucket and (in adaptive mode) `ClientRateLimiter`. Only the edges are ours: an HTTP
//! client that answers from the simulated server, a classifier that reads the status code,
//! and a time source and sleep tied to tokio's paused clock.

use crate::sim::{SimError, Strategy};
use crate::world::World;
use aws_smithy_async::rt::sleep::{AsyncSleep, Sleep};
use aws_smithy_async::time::TimeSource;
use aws_smithy_runtime::client::orchestrator::operation::Operation;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::interceptors::context::InterceptorContext;
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse, OrchestratorError};
use aws_smithy_runtime_api::client::retries::classifiers::{ClassifyRetry, RetryAction};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// The status code a simulated answer travels as.
fn status(answer: &Result<(), SimError>) -> u16 {
    match answer {
        Ok(()) => 200,
        Err(SimError::Throttled) => 429,
        Err(SimError::TimedOut(_)) => 504,
        Err(SimError::Unavailable | SimError::Conflict) => 503,
        // Never a server's answer (only our breaker and guards refuse calls), but it would be
        // a 503.
        Err(SimError::CircuitOpen(_) | SimError::Refused(_)) => 503,
        // Only the call graph's services answer it, and no smithy client calls them.
        Err(SimError::DoNotRetry) => 503,
    }
}

/// An HTTP client whose every request is one attempt against the simulated server.
#[derive(Clone)]
struct SimHttp {
    world: World,
}

impl fmt::Debug for SimHttp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimHttp")
    }
}

impl HttpConnector for SimHttp {
    fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
        let attempt = self.world.attempt();
        HttpConnectorFuture::new(async move {
            let code = status(&attempt.await);
            let code = StatusCode::try_from(code).expect("a valid status code");
            Ok(HttpResponse::new(code, SdkBody::empty()))
        })
    }
}

impl HttpClient for SimHttp {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}

/// 429 is throttling; other 5xx are server errors (both cost 5 in smithy's bucket, as in
/// ours), as the AWS SDK's own classifiers would say.
#[derive(Debug)]
struct StatusClassifier;

impl ClassifyRetry for StatusClassifier {
    fn classify_retry(&self, ctx: &InterceptorContext) -> RetryAction {
        match ctx.response().map(|r| u16::from(r.status())) {
            Some(429) => RetryAction::throttling_error(),
            Some(500..=599) => RetryAction::server_error(),
            _ => RetryAction::NoActionIndicated,
        }
    }

    fn name(&self) -> &'static str {
        "simulated status code"
    }
}

/// Wall-clock time that moves with tokio's paused clock.
#[derive(Debug)]
struct PausedClock {
    t0: Instant,
    base: SystemTime,
}

impl TimeSource for PausedClock {
    fn now(&self) -> SystemTime {
        self.base + self.t0.elapsed()
    }
}

/// Sleeps on tokio's (paused) clock.
#[derive(Debug)]
struct TokioPausedSleep;

impl AsyncSleep for TokioPausedSleep {
    fn sleep(&self, duration: Duration) -> Sleep {
        Sleep::new(tokio::time::sleep(duration))
    }
}

/// The error a non-200 answer deserializes to.
#[derive(Debug)]
struct Status(u16);

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "status {}", self.0)
    }
}

impl std::error::Error for Status {}

/// One simulated client process running smithy's orchestrator, with its own retry partition
/// (so its own token bucket and rate limiter, as one SDK client has).
pub(crate) struct SmithyClient {
    operation: Operation<(), (), Status>,
}

/// Makes each client's retry partition name unique in the process: smithy keeps buckets and
/// limiters in process-wide maps keyed by it.
static PARTITIONS: AtomicU64 = AtomicU64::new(0);

impl SmithyClient {
    /// A client with `RetryConfig::standard()` or `adaptive()`; `deadline` becomes the
    /// operation timeout. `Strategy::NoBucket`, the budgets and the breakers have no smithy
    /// equivalent and run as standard; the 2026 policies are not compared with smithy (its
    /// retry behavior 2.1 is not driven here) and run as the classic mode of theirs.
    pub(crate) fn new(strategy: Strategy, deadline: Option<Duration>, world: World) -> Self {
        let retry = match strategy {
            Strategy::Adaptive | Strategy::Adaptive2026 => RetryConfig::adaptive(),
            Strategy::Standard
            | Strategy::NoBucket
            | Strategy::Budget
            | Strategy::GrpcThrottling
            | Strategy::Breaker
            | Strategy::BreakerBudget
            | Strategy::BreakerShortBreak
            | Strategy::Standard2026 => RetryConfig::standard(),
        };
        let timeouts = match deadline {
            Some(d) => TimeoutConfig::builder().operation_timeout(d).build(),
            None => TimeoutConfig::disabled(),
        };
        let n = PARTITIONS.fetch_add(1, Ordering::Relaxed);
        let t0 = world.t0();
        let operation = Operation::builder()
            .service_name(format!("sim-{n}"))
            .operation_name("call")
            .http_client(SimHttp { world })
            .endpoint_url("http://simulated")
            .no_auth()
            .standard_retry(&retry)
            .retry_classifier(StatusClassifier)
            .timeout_config(timeouts)
            .sleep_impl(TokioPausedSleep)
            .time_source(PausedClock {
                t0,
                base: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            })
            .serializer(|(): ()| Ok(HttpRequest::new(SdkBody::empty())))
            .deserializer::<(), Status>(|response| match u16::from(response.status()) {
                200 => Ok(()),
                code => Err(OrchestratorError::operation(Status(code))),
            })
            .build();
        SmithyClient { operation }
    }

    /// One call; whether it succeeded.
    pub(crate) async fn call(&self) -> bool {
        self.operation.invoke(()).await.is_ok()
    }
}
