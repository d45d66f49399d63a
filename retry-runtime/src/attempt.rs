//! The attempt a body runs in, as the body (and whatever it calls) sees it: [`Attempt`] and
//! the call's [`InvocationId`], values that [`attempt()`](crate::attempt()) reads from the frame
//! the engine publishes while it polls an attempt.

use crate::runtime::{self, Instant};
use core::fmt;
use std::time::{Duration, SystemTime};

/// A call's invocation id: 128 random bits (a version-4 UUID), the same for every attempt of
/// one call and new for each call. `Display` writes it as a UUID
/// (`6f1c2a4e-93b0-4d7e-a2c5-0b8e4f7d9a31`), as the AWS SDKs send it in
/// `amz-sdk-invocation-id`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InvocationId(u128);

impl InvocationId {
    /// A version-4 (random) UUID from 128 random bits: the version and variant bits are set.
    pub(crate) fn v4(bits: u128) -> Self {
        let bits = (bits & !(0xf << 76) & !(0b11 << 62)) | (0x4 << 76) | (0b10 << 62);
        InvocationId(bits)
    }

    pub(crate) fn from_halves(hi: u64, lo: u64) -> Self {
        InvocationId((u128::from(hi) << 64) | u128::from(lo))
    }

    pub(crate) fn halves(self) -> (u64, u64) {
        ((self.0 >> 64) as u64, self.0 as u64)
    }

    /// The id's 128 bits.
    #[must_use]
    pub fn as_u128(&self) -> u128 {
        self.0
    }
}

impl fmt::Display for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            (b >> 96) as u32,
            (b >> 80) as u16,
            (b >> 64) as u16,
            (b >> 48) as u16,
            b & 0xffff_ffff_ffff,
        )
    }
}

impl fmt::Debug for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InvocationId({self})")
    }
}

/// One attempt of a `#[retry]` call, as [`attempt()`](crate::attempt()) saw it.
#[derive(Clone, Copy)]
pub struct Attempt {
    pub(crate) function: &'static str,
    pub(crate) partition: Option<&'static str>,
    pub(crate) number: u32,
    pub(crate) max_attempts: u32,
    pub(crate) depth: u32,
    pub(crate) cutoff: Option<Instant>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) id: InvocationId,
    /// The call sends its invocation id as its requests' idempotency key.
    pub(crate) keyed: bool,
}

impl Attempt {
    /// This attempt's number, 1 for the first.
    #[must_use]
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The attempts this call may make, as resolved for it (the attribute, then the
    /// environment and the config file, then a test scope's cap).
    #[must_use]
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// When this attempt is cut off: its attempt timeout or the call's deadline, whichever
    /// comes first; `None` if nothing cuts it. A [`crate::Instant`]: on `std`'s clock whatever
    /// the runtime on native targets (under tokio, what `tokio::time::Instant::into_std` gives:
    /// tokio's paused clock still drives it), `web_time`'s on `wasm32-unknown-unknown`.
    #[must_use]
    pub fn cutoff(&self) -> Option<runtime::PublicInstant> {
        self.cutoff.map(runtime::to_public)
    }

    /// The time this attempt has left before it is cut off (zero once passed), or `None` if
    /// nothing cuts it. This is what a request made now should carry as its own timeout:
    /// `min(attempt timeout, deadline left)`, never a stale figure.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        self.cutoff
            .map(|c| c.saturating_duration_since(Instant::now()))
    }

    /// The call's deadline: its own `deadline`, clamped to the cutoff of an outer `#[retry]`
    /// attempt it runs inside, or to the caller's deadline
    /// ([`with_deadline`](crate::with_deadline)); `None` if it has none of them. On the clock of
    /// [`cutoff`](Self::cutoff), a [`crate::Instant`].
    #[must_use]
    pub fn deadline(&self) -> Option<runtime::PublicInstant> {
        self.deadline.map(runtime::to_public)
    }

    /// The call's invocation id: random, the same for every attempt of one call.
    #[must_use]
    pub fn invocation_id(&self) -> InvocationId {
        self.id
    }

    /// The idempotency key this attempt's requests carry: the call's invocation id, for a
    /// function with `idempotency_key = true` (a policy with
    /// [`Policy::idempotency_key`](crate::Policy::idempotency_key)); `None` otherwise.
    /// [`wire::WithAttempt`](crate::wire::WithAttempt) writes it as the `Idempotency-Key`
    /// header, and the attempt is then retried as an idempotent one; a request built another
    /// way (a client of your own, a message queue's deduplication id) can carry it as its
    /// protocol has it, and its function says `idempotent = true` to be retried after any
    /// failure (the engine cannot see what such a request carried: see
    /// [`wire`](crate::wire#idempotency-keys)).
    #[must_use]
    pub fn idempotency_key(&self) -> Option<InvocationId> {
        self.keyed.then_some(self.id)
    }

    /// The `#[retry]` function's name.
    #[must_use]
    pub fn function(&self) -> &'static str {
        self.function
    }

    /// The function's named partition, if any.
    #[must_use]
    pub fn partition(&self) -> Option<&'static str> {
        self.partition
    }

    /// 1 for an outermost call; 2 for a `#[retry]` call made inside another's attempt, and so
    /// on.
    #[must_use]
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Whether this is a retry (not the first attempt).
    #[must_use]
    pub fn is_retry(&self) -> bool {
        self.number > 1
    }

    /// The value of the AWS SDKs' `amz-sdk-request` header for this attempt:
    /// `ttl=20250101T120000Z; attempt=2; max=3`, the `ttl` (when the client gives up on this
    /// attempt, in UTC, to the second) only when something cuts the attempt off.
    #[must_use]
    pub fn amz_sdk_request(&self) -> String {
        let (attempt, max) = (self.number, self.max_attempts);
        match self.time_left() {
            Some(left) => {
                let ttl = runtime::system_now() + left;
                format!("ttl={}; attempt={attempt}; max={max}", BasicUtc(ttl))
            }
            None => format!("attempt={attempt}; max={max}"),
        }
    }
}

impl fmt::Debug for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attempt")
            .field("function", &self.function())
            .field("partition", &self.partition())
            .field("number", &self.number)
            .field("max_attempts", &self.max_attempts)
            .field("depth", &self.depth)
            .field("cutoff", &self.cutoff)
            .field("deadline", &self.deadline)
            .field("invocation_id", &self.id)
            .field("idempotency_key", &self.keyed)
            .finish()
    }
}

/// A wall-clock time in UTC, written `YYYYMMDDTHHMMSSZ` (ISO 8601's basic format, to the
/// second): the AWS SDKs' `ttl`.
struct BasicUtc(SystemTime);

impl fmt::Display for BasicUtc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self
            .0
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocation_ids_are_version_4_uuids() {
        let id = InvocationId::v4(u128::MAX);
        assert_eq!(id.to_string(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let id = InvocationId::v4(0);
        assert_eq!(id.to_string(), "00000000-0000-4000-8000-000000000000");
        let id = InvocationId::v4(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert_eq!(id.to_string(), "01234567-89ab-4def-8123-456789abcdef");
        let (hi, lo) = id.halves();
        assert_eq!(InvocationId::from_halves(hi, lo), id);
        assert_ne!(
            InvocationId::v4(0).as_u128(),
            0,
            "never the 'not drawn' mark"
        );
    }

    #[test]
    fn ttl_is_written_in_basic_utc() {
        let at = |secs| BasicUtc(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)).to_string();
        assert_eq!(at(0), "19700101T000000Z");
        // 2000-02-29 (a leap day of a century leap year) 23:59:59.
        assert_eq!(at(951_868_799), "20000229T235959Z");
        // 2024-12-31 12:34:56.
        assert_eq!(at(1_735_648_496), "20241231T123456Z");
        // 2100-03-01 (2100 is not a leap year).
        assert_eq!(at(4_107_542_400), "21000301T000000Z");
    }
}
