//! What the runtime knows of the libraries users call: each integration, behind its cargo
//! feature, classifies that library's errors and responses ([`Classify`](crate::Classify)),
//! reads the server's hints, and writes the current attempt into its requests
//! ([`wire::WithAttempt`]).

#[cfg(feature = "anyhow")]
mod anyhow;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "hyper")]
mod hyper;
#[cfg(feature = "reqwest")]
pub mod reqwest;
#[cfg(feature = "tonic")]
mod tonic;
#[cfg(feature = "tower")]
pub mod tower;
pub mod wire;
