//! gRPC service config retry policies (feature `grpc-config`), as gRFC A6 "gRPC Retry Design"
//! defines them (<https://github.com/grpc/proposal/blob/master/A6-client-retries.md>): the
//! retry throttling state a service config's `retryThrottling` describes, and the server's
//! pushback read as A6 reads it.

pub(crate) mod pushback;
pub(crate) mod throttle;
