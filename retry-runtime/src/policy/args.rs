//! What a policy's builders and calls take, by traits that are implemented for the forms
//! each accepts and sealed (no other crate implements them, nor can name them): a
//! `hedge_after`, a `budget` or a `breaker` written as a value or as the attribute writes it;
//! the polling predicate and the hook a policy keeps, or their absence ([`NoRepeat`],
//! [`NoHook`], which a policy's type names); and what `aws_config` needs, the `aws-config`
//! feature ([`AwsConfig`]).

use crate::engine::site::{BreakerRef, BudgetRef};
use crate::observe::event::RetryEvent;
use crate::spec::HedgeSpec;
use std::time::Duration;

/// What [`Policy::aws_config`](super::Policy::aws_config) needs: the `aws-config` feature,
/// which brings the reader of the AWS SDKs' settings. Every type meets it when the feature is
/// on, and none otherwise, so that a call without it is a compile error that names the feature.
#[diagnostic::on_unimplemented(
    message = "`aws_config` reads the AWS SDKs' settings, which needs the `aws-config` feature of `retry-runtime`",
    label = "`aws_config`, in a build without the `aws-config` feature",
    note = "`retry-runtime = {{ version = \"0.1\", features = [\"aws-config\"] }}`"
)]
pub trait AwsConfig {}

#[cfg(feature = "aws-config")]
impl<T: ?Sized> AwsConfig for T {}

/// A value `hedge_after` takes: a [`Duration`], or a percentile (or a duration) written as the
/// attribute writes it (`"p95"`, `"50ms"`).
pub trait HedgeValue {
    /// The delay, or what is wrong with it.
    #[doc(hidden)]
    fn hedge(self) -> Result<HedgeSpec, String>;
}

impl HedgeValue for Duration {
    fn hedge(self) -> Result<HedgeSpec, String> {
        Ok(HedgeSpec::Fixed(self))
    }
}

impl HedgeValue for &str {
    fn hedge(self) -> Result<HedgeSpec, String> {
        retry_keys::parse_hedge(self).map_err(|e| format!("hedge_after: {e}"))
    }
}

/// A value `budget` takes: a `static` budget (its impl is beside `Policy`'s), or a share of the
/// requests such as `"20%"`.
pub trait BudgetValue {
    /// The budget, or what is wrong with it.
    #[doc(hidden)]
    fn budget(self) -> Result<BudgetRef, String>;
}

impl BudgetValue for &str {
    fn budget(self) -> Result<BudgetRef, String> {
        retry_keys::parse_budget_share(self)
            .map(BudgetRef::Share)
            .ok_or_else(|| {
                format!("budget: {self:?} is not a share of the requests such as \"20%\"")
            })
    }
}

/// A value `breaker` takes: a `static` breaker (its impl is beside `Policy`'s), or a failure
/// ratio such as `"50%"`.
pub trait BreakerValue {
    /// The breaker, or what is wrong with it.
    #[doc(hidden)]
    fn breaker(self) -> Result<BreakerRef, String>;
}

impl BreakerValue for &str {
    fn breaker(self) -> Result<BreakerRef, String> {
        retry_keys::parse_failure_ratio(self)
            .map(BreakerRef::Ratio)
            .ok_or_else(|| {
                format!("breaker: {self:?} is not a failure ratio such as \"50%\" (above 0%, at most 100%)")
            })
    }
}

/// No polling: a success ends the call.
#[derive(Clone, Copy, Debug)]
pub struct NoRepeat;

/// Whether a success is polled again (`Policy::retry_if_ok`).
pub trait Repeat<T> {
    /// Whether a success may be repeated (a hedged policy that polls runs its attempts one
    /// at a time).
    const POLLS: bool = true;
    /// `true`: make another attempt.
    fn repeat(&self, value: &T) -> bool;
}

impl<T> Repeat<T> for NoRepeat {
    const POLLS: bool = false;
    #[inline]
    fn repeat(&self, _: &T) -> bool {
        false
    }
}

impl<T, F: Fn(&T) -> bool> Repeat<T> for F {
    #[inline]
    fn repeat(&self, value: &T) -> bool {
        self(value)
    }
}

/// No hook.
#[derive(Clone, Copy, Debug)]
pub struct NoHook;

/// The hook called before each sleep (`Policy::on_retry`).
pub trait Hook<E> {
    /// A retry is about to sleep.
    fn on_retry(&self, event: &RetryEvent<'_, E>);
}

impl<E> Hook<E> for NoHook {
    #[inline]
    fn on_retry(&self, _: &RetryEvent<'_, E>) {}
}

impl<E, F: Fn(&RetryEvent<'_, E>)> Hook<E> for F {
    #[inline]
    fn on_retry(&self, event: &RetryEvent<'_, E>) {
        self(event);
    }
}
