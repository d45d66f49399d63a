//! What the runtime knows of the libraries users call: `std::io` always, and each other
//! integration behind its cargo feature, classifies that library's errors and responses ([`Classify`](crate::Classify)),
//! reads the server's hints, and writes the current attempt into its requests
//! ([`wire::WithAttempt`]).

#[cfg(feature = "anyhow")]
mod anyhow;
pub(crate) mod boxed;
pub(crate) mod chain;
#[cfg(feature = "grpc-config")]
pub mod grpc;
#[cfg(feature = "http2")]
mod h2;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "hyper")]
mod hyper;
pub(crate) mod io;
#[cfg(feature = "reqwest")]
pub mod reqwest;
#[cfg(feature = "tonic")]
mod tonic;
#[cfg(feature = "tower")]
pub mod tower;
pub mod wire;
