//! A progress bar on standard error for a run that takes more than a second, when standard
//! error is a terminal: the simulated time (or the calls made) against the run's, redrawn five
//! times a second on one line and erased at the end. Silent otherwise, so a pipe, a file or a
//! CI log never sees it.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How far a run is: a share in millionths, written by the simulation, read by the bar.
#[derive(Debug, Default)]
pub struct Progress {
    millionths: AtomicU64,
}

impl Progress {
    /// Nothing done yet.
    pub fn new() -> Arc<Progress> {
        Arc::new(Progress::default())
    }

    /// The share of the run done, from 0 to 1.
    pub fn set(&self, share: f64) {
        let m = (share.clamp(0.0, 1.0) * 1e6) as u64;
        self.millionths.store(m, Ordering::Relaxed);
    }

    /// The share of the run done.
    pub fn get(&self) -> f64 {
        self.millionths.load(Ordering::Relaxed) as f64 / 1e6
    }
}

/// The bar's line for `share` done after `elapsed`, `width` characters of bar.
pub fn line(share: f64, elapsed: Duration, width: usize) -> String {
    let share = share.clamp(0.0, 1.0);
    let filled = ((share * width as f64).round() as usize).min(width);
    let secs = elapsed.as_secs_f64();
    let left = if share > 0.01 {
        format!(", about {:.0} s left", secs * (1.0 - share) / share)
    } else {
        String::new()
    };
    format!(
        "[{}{}] {:>3.0}% {:.0} s{left}",
        "#".repeat(filled),
        ".".repeat(width - filled),
        share * 100.0,
        secs
    )
}

/// The bar of one run, drawn by a thread of its own while the run goes on.
pub struct Bar {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Bar {
    /// Starts the bar for `progress`, if standard error is a terminal and `enabled`; it shows
    /// once the run has taken a second.
    pub fn start(progress: Arc<Progress>, enabled: bool) -> Bar {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (enabled && std::io::stderr().is_terminal()).then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let mut drawn = false;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    if started.elapsed() < Duration::from_secs(1) || stop.load(Ordering::Relaxed) {
                        continue;
                    }
                    let text = line(progress.get(), started.elapsed(), 30);
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{text}\x1b[K");
                    let _ = err.flush();
                    drawn = true;
                }
                if drawn {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[K");
                    let _ = err.flush();
                }
            })
        });
        Bar { stop, thread }
    }

    /// Stops the bar and erases it.
    pub fn finish(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_fills_with_the_share_done() {
        assert_eq!(
            line(0.5, Duration::from_secs(4), 10),
            "[#####.....]  50% 4 s, about 4 s left"
        );
        assert_eq!(line(0.0, Duration::ZERO, 4), "[....]   0% 0 s");
        assert_eq!(
            line(2.0, Duration::from_secs(1), 4),
            "[####] 100% 1 s, about 0 s left"
        );
        let p = Progress::new();
        p.set(0.25);
        assert_eq!(p.get(), 0.25);
    }

    #[test]
    fn a_bar_not_on_a_terminal_draws_nothing_and_stops() {
        // Under `cargo test` standard error is captured or piped, never this test's terminal:
        // the bar has no thread.
        let bar = Bar::start(Progress::new(), !std::io::stderr().is_terminal());
        assert!(bar.thread.is_none());
        bar.finish();
    }
}
