//! `retry-sim what-if`: the user's own policy on the user's own topology. The users, tiers of
//! services with replicas, each tier's retry policy (from the project's config file, a gRPC
//! service config, an AWS profile, or the attribute's keys written in the topology) and the
//! faults come from a TOML file ([`topology`]); every process runs the real engine on the
//! paused clock ([`simulate`]); each tier's figures ([`measure`]) are printed, written and
//! checked ([`check`], [`output`]). SIMULATION.md's "What does my policy do?" is the guide.

pub mod aws_file;
pub mod check;
pub mod cli;
pub mod config_file;
pub mod measure;
pub mod model;
pub mod output;
pub mod policy;
pub mod problem;
pub mod progress;
pub mod simulate;
pub mod tomlish;
pub mod topology;
