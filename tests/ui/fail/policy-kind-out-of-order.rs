// A policy's type names what its errors convert in one order, `(TimedOut, Refused)`: the other
// order is told which types a policy has.
use retry_runtime::{Policy, Refused, TimedOut};

fn calls(_: &Policy<(Refused, TimedOut)>) {}

fn main() {}
