//! A tracing subscriber that keeps every event and every span, with their fields as text: each
//! span's name, fields (as created and as recorded later), parent, events, and when it opened
//! and closed (tokio's clock, paused in the tests), so that a test can read the span tree.

#![allow(dead_code)] // each test binary uses part of it

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

/// One span: its name, fields, parent (its id), events, and when it opened and closed.
#[derive(Clone, Debug)]
pub struct CapturedSpan {
    pub id: u64,
    pub name: String,
    pub target: String,
    pub level: Level,
    pub fields: BTreeMap<String, String>,
    pub parent: Option<u64>,
    pub events: Vec<Captured>,
    pub opened: tokio::time::Instant,
    pub closed: Option<tokio::time::Instant>,
    refs: usize,
}

impl CapturedSpan {
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("no field {name} in {self:?}"))
    }

    /// Milliseconds from `t0` to when it opened, and to when it closed.
    pub fn ms(&self, t0: tokio::time::Instant) -> (u128, Option<u128>) {
        (
            (self.opened - t0).as_millis(),
            self.closed.map(|c| (c - t0).as_millis()),
        )
    }
}

#[derive(Clone, Default)]
pub struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
    spans: Arc<AtomicU64>,
    tree: Arc<Mutex<Vec<CapturedSpan>>>,
}

thread_local! {
    /// The spans entered on this thread, innermost last.
    static STACK: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Capture {
    pub fn events(&self) -> Vec<Captured> {
        self.events.lock().unwrap().clone()
    }

    /// Every span, in the order they opened.
    pub fn spans(&self) -> Vec<CapturedSpan> {
        self.tree.lock().unwrap().clone()
    }

    /// The spans named `name`.
    pub fn spans_named(&self, name: &str) -> Vec<CapturedSpan> {
        self.spans()
            .into_iter()
            .filter(|s| s.name == name)
            .collect()
    }

    /// The children of the span `id`, in the order they opened.
    pub fn children(&self, id: u64) -> Vec<CapturedSpan> {
        self.spans()
            .into_iter()
            .filter(|s| s.parent == Some(id))
            .collect()
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
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.spans.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = if attrs.is_root() {
            None
        } else if let Some(p) = attrs.parent() {
            Some(p.into_u64())
        } else {
            STACK.with(|s| s.borrow().last().copied())
        };
        let meta = attrs.metadata();
        self.tree.lock().unwrap().push(CapturedSpan {
            id,
            name: meta.name().into(),
            target: meta.target().into(),
            level: *meta.level(),
            fields,
            parent,
            events: Vec::new(),
            opened: tokio::time::Instant::now(),
            closed: None,
            refs: 1,
        });
        Id::from_u64(id)
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        let mut tree = self.tree.lock().unwrap();
        if let Some(span) = tree.iter_mut().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let captured = Captured {
            level: *meta.level(),
            target: meta.target().into(),
            fields,
        };
        let parent = if event.is_root() {
            None
        } else if let Some(p) = event.parent() {
            Some(p.into_u64())
        } else {
            STACK.with(|s| s.borrow().last().copied())
        };
        if let Some(parent) = parent {
            let mut tree = self.tree.lock().unwrap();
            if let Some(span) = tree.iter_mut().find(|s| s.id == parent) {
                span.events.push(captured.clone());
            }
        }
        self.events.lock().unwrap().push(captured);
    }
    fn enter(&self, id: &Id) {
        STACK.with(|s| s.borrow_mut().push(id.into_u64()));
    }
    fn exit(&self, id: &Id) {
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(i) = s.iter().rposition(|&x| x == id.into_u64()) {
                s.remove(i);
            }
        });
    }
    fn clone_span(&self, id: &Id) -> Id {
        let mut tree = self.tree.lock().unwrap();
        if let Some(span) = tree.iter_mut().find(|s| s.id == id.into_u64()) {
            span.refs += 1;
        }
        id.clone()
    }
    fn try_close(&self, id: Id) -> bool {
        let mut tree = self.tree.lock().unwrap();
        let Some(span) = tree.iter_mut().find(|s| s.id == id.into_u64()) else {
            return false;
        };
        span.refs -= 1;
        if span.refs == 0 {
            span.closed = Some(tokio::time::Instant::now());
            return true;
        }
        false
    }
}
