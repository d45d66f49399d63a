//! The error types and transports of the ecosystem: the mapping tables, reqwest, hyper and
//! tonic clients against loopback servers, the tower layer, what the servers see of the loop,
//! the README's code, one module each, in one test binary (see `tests/README.md`). `cargo test
//! -p retry-workspace --test integration NAME::` runs one module.
//!
//! The examples and the `metrics` feature run in the `workspace` binary (`examples.rs` and
//! `metrics.rs`), which runs cargo.

#[path = "../faults/mod.rs"]
mod faults;
#[path = "../grpc_server/mod.rs"]
mod grpc_server;
#[path = "../http_server/mod.rs"]
mod http_server;
#[path = "../keyed_server/mod.rs"]
mod keyed_server;
#[path = "../util/resettable.rs"]
mod resettable;
#[path = "../util/mod.rs"]
mod util;

mod chain;
mod classify;
mod deadline;
mod derive;
mod grpc;
mod grpc_config;
mod h2;
mod hedging;
mod http;
mod idempotency_keys;
mod readme;
mod spans;
mod tower;
mod wire;
