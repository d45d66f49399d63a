//! A tracing subscriber that keeps every event, with its fields as text.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event: its level, target and fields (`message` among them).
#[derive(Clone, Debug, PartialEq)]
pub struct Captured {
    pub level: Level,
    pub target: String,
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("no field {name} in {self:?}"))
    }
}

#[derive(Clone, Default)]
pub struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
    spans: Arc<AtomicU64>,
}

impl Capture {
    pub fn events(&self) -> Vec<Captured> {
        self.events.lock().unwrap().clone()
    }

    /// The events of `target` at `level`.
    pub fn of(&self, target: &str, level: Level) -> Vec<Captured> {
        self.events()
            .into_iter()
            .filter(|e| e.target == target && e.level == level)
            .collect()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.spans.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        self.events.lock().unwrap().push(Captured {
            level: *meta.level(),
            target: meta.target().into(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
