//! The process log: JSON lines (or text) on stderr, written so that a
//! stderr that cannot take them (a full disk under a log file, a closed
//! pipe) never holds up or breaks a request. A leaf.
//!
//! `tracing-subscriber` writes each event with `write_all` and, on an
//! error, reports it with `eprintln!`, which panics when stderr itself is
//! what failed: every request that logged then died with its connection
//! (issue 29). [`StderrSink`] takes the line or drops it, counts the drop,
//! and says it succeeded.
//!
//! It also assembles the process's subscriber: this log, and beside it
//! the trace exporter's layer when traces are on (`crate::telemetry`).

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_subscriber::Registry;
use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Log lines stderr refused since start.
static DROPPED_LINES: AtomicU64 = AtomicU64::new(0);

/// How many log lines could not be written (exported as a metric).
pub fn dropped_lines() -> u64 {
    DROPPED_LINES.load(Ordering::Relaxed)
}

/// A layer beside the log's own: the trace exporter's, when traces are on.
pub type ExtraLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Logs go to stderr only: stdout belongs to JSON-RPC under stdio. JSON
/// lines by default (what a log pipeline parses); `LOG_FORMAT=text` for
/// people reading a terminal. `traces` is the OpenTelemetry layer when
/// traces are exported; the log never shows the spans made for it.
pub fn init(traces: Option<ExtraLayer>) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        .and(filter_fn(crate::telemetry::not_trace_spans));
    let format = std::env::var("LOG_FORMAT").unwrap_or_default();
    let text = format.eq_ignore_ascii_case("text");
    let log = tracing_subscriber::fmt::layer()
        .with_writer(StderrSink)
        .log_internal_errors(false)
        .with_ansi(false);
    let log: ExtraLayer = if text {
        Box::new(log.with_filter(filter))
    } else {
        Box::new(log.json().flatten_event(true).with_filter(filter))
    };
    let layers: Vec<ExtraLayer> = std::iter::once(log).chain(traces).collect();
    tracing_subscriber::registry().with(layers).init();
    if !text && !format.is_empty() && !format.eq_ignore_ascii_case("json") {
        tracing::warn!(setting = "LOG_FORMAT", "unknown value: logging JSON lines");
    }
}

/// Makes a [`LossyWriter`] on stderr for each event.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrSink;

impl<'a> MakeWriter<'a> for StderrSink {
    type Writer = LossyWriter<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        LossyWriter::new(io::stderr())
    }
}

/// A writer that never fails: a write its inner writer refuses is
/// dropped and counted. One event is one `write_all` of one line, so a
/// dropped write loses at most the rest of that line.
#[derive(Debug)]
pub struct LossyWriter<W> {
    inner: W,
    failed: bool,
}

impl<W: Write> LossyWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            failed: false,
        }
    }
}

impl<W: Write> Write for LossyWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.failed {
            match self.inner.write(buf) {
                Ok(0) if !buf.is_empty() => self.failed = true,
                Ok(n) => return Ok(n),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => return Err(err),
                Err(_) => self.failed = true,
            }
            DROPPED_LINES.fetch_add(1, Ordering::Relaxed);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.failed {
            let _ = self.inner.flush();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `room` bytes, then fails every write as a full disk does.
    struct FullAfter {
        room: usize,
        taken: Vec<u8>,
    }

    impl Write for FullAfter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::from_raw_os_error(27)); // EFBIG
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            self.taken.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_that_does_not_fit_is_dropped_and_counted_not_an_error() {
        let before = dropped_lines();
        let mut writer = LossyWriter::new(FullAfter {
            room: 4,
            taken: Vec::new(),
        });
        writer.write_all(b"{\"msg\":\"hello\"}\n").unwrap();
        writer.flush().unwrap();
        assert_eq!(writer.inner.taken, b"{\"ms");
        assert!(dropped_lines() > before);
    }

    #[test]
    fn a_line_that_fits_is_written_whole() {
        let mut writer = LossyWriter::new(Vec::new());
        writer.write_all(b"line\n").unwrap();
        assert_eq!(writer.inner, b"line\n");
    }
}
