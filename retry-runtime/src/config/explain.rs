//! Each function's resolved settings and where they came from, for operators.

use super::Source;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// One setting of a function: its key, the value in effect, where that came from, and the
/// value from outside it shadows, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// The key, as the attribute writes it (`max_attempts`).
    pub key: &'static str,
    /// The value in effect, as the attribute would write it (`"none"` for an unset timeout).
    pub value: String,
    /// Where it came from.
    pub source: Source,
    /// For a key the attribute (or a `Policy`) writes, what the environment or the config file
    /// set for it: the value that would apply without the code's, which the code's value
    /// shadows (the code's values take precedence, as in the AWS SDKs).
    pub shadowed: Option<Shadowed>,
}

/// A value from the environment or the config file that the code's value for the same key
/// shadows.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shadowed {
    /// The value, as the attribute would write it.
    pub value: String,
    /// Where it was set: a variable, or the config file's line.
    pub source: Source,
}

/// The resolved settings of one `#[retry]` function.
///
/// `Display` writes one line per key, with the value from outside that the code's value
/// shadows after it, then the notes:
///
/// ```text
/// get_object (profile store)
///   mode                        standard   default
///   max_attempts                5          env RETRY_STORE_MAX_ATTEMPTS
///   deadline                    10s        attribute; shadows 30s (env RETRY_DEADLINE)
///   ...
///   guard                       bulkhead, adaptive_throttle
///   note: ignoring RETRY_MAX_ATTEMPTS="abc": max_attempts is a whole number from 1 to 4294967295
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Explained {
    /// The function's name.
    pub function: &'static str,
    /// Its profile, if the attribute names one.
    pub profile: Option<&'static str>,
    /// Every key that applies to the function, in the order of the attribute's documentation:
    /// the hedging keys (`hedge_after`, `max_in_flight`, `min_hedge_after`, `max_hedge_after`)
    /// only for a function whose code writes `hedge_after`, and the timer keys
    /// (`attempt_timeout`, `attempt_timeout_multiplier`, `max_attempt_timeout`, `deadline`)
    /// only for one whose attempts run under a timer: elsewhere they can take no effect, and a
    /// value from outside for them is ignored with a warning.
    pub entries: Vec<Entry>,
    /// The names of its guards (`guard = ...`, `Policy::guard`), in the order they are asked.
    pub guards: Vec<&'static str>,
    /// What was set for it from outside and ignored, each as the warning about it said it (a
    /// value in effect may be the default only because the one set for it could not be used):
    /// the config file's own problems (a file that cannot be read, a line that is not TOML, a
    /// table that is not one of its settings); then for the variables and tables the function
    /// reads, most specific first, each value that could not be used and each key they do not
    /// know, but a value of a key that does not apply to it (see `entries`); with
    /// `aws_config = true` the AWS variables and config file are among them, and an
    /// `AWS_PROFILE` that names no profile is noted with why none of the file's values apply;
    /// then each value that broke a rule between keys. A value from outside that the code's own
    /// shadows is shown in its entry instead.
    pub notes: Vec<String>,
}

impl Explained {
    /// The entry of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

impl fmt::Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.function)?;
        if let Some(profile) = self.profile {
            write!(f, " (profile {profile})")?;
        }
        for e in &self.entries {
            write!(f, "\n  {:<27} {:<10} {}", e.key, e.value, e.source)?;
            if let Some(s) = &e.shadowed {
                write!(f, "; shadows {} ({})", s.value, s.source)?;
            }
        }
        if !self.guards.is_empty() {
            write!(f, "\n  {:<27} {}", "guard", self.guards.join(", "))?;
        }
        for note in &self.notes {
            write!(f, "\n  note: {note}")?;
        }
        Ok(())
    }
}

static RESOLVED: Mutex<Vec<Explained>> = Mutex::new(Vec::new());

/// The resolutions kept per function (or policy) name: a policy built at run time with
/// settings of its own each time, such as the caller's time left as its deadline on every
/// request a service serves, is listed with its first ones, and the list stays as small, and
/// a registration as quick, however many requests come.
pub(crate) const PER_FUNCTION: usize = 16;

/// Adds a resolution to the list, once: the policies built at run time with the same
/// settings (one per client, per reload, per request) are one entry, and a name keeps at most
/// [`PER_FUNCTION`] of them, so that the list does not grow with them.
pub(super) fn register(explained: &Explained) {
    // Pushed whole under the lock: a poisoned list is still consistent.
    let mut resolved = RESOLVED.lock().unwrap_or_else(PoisonError::into_inner);
    let mut named = 0;
    for e in resolved.iter() {
        if e == explained {
            return;
        }
        named += usize::from(e.function == explained.function);
    }
    if named < PER_FUNCTION {
        resolved.push(explained.clone());
    }
}

/// The settings of every `#[retry]` function that has run in this process, in the order they
/// first ran: each key that applies to the function ([`Explained::entries`]), its value and
/// where it came from (the attribute, a variable, the config
/// file's line, or the default), and for a key the attribute writes, the value from outside
/// that it shadows ([`Entry::shadowed`]). Policies built at run time are listed as they first
/// run, once per distinct set of settings and at most 16 per name (a policy built per request
/// with the caller's time left as its deadline is listed with its first 16).
///
/// ```
/// use retry_runtime::{config, retry};
///
/// #[retry(max_attempts = 5, profile = "store")]
/// async fn get_object() -> std::io::Result<()> {
///     Ok(())
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// get_object().await?;
/// let all = config::explain();
/// let explained = all.iter().find(|e| e.function == "get_object").unwrap();
/// let attempts = explained.get("max_attempts").unwrap();
/// assert_eq!(attempts.value, "5");
/// assert_eq!(attempts.source, config::Source::Attribute);
/// // Had RETRY_STORE_MAX_ATTEMPTS or RETRY_MAX_ATTEMPTS been set, it would show here.
/// assert_eq!(attempts.shadowed, None);
/// println!("{explained}");
/// # std::io::Result::Ok(())
/// # }).unwrap();
/// ```
#[must_use]
pub fn explain() -> Vec<Explained> {
    RESOLVED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}
