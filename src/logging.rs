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
//!
//! The log's filter is asked on every event ([`AskEveryTime`]): a
//! per-layer filter that lets the registry cache a callsite as always
//! enabled loses lines. `tracing-subscriber` carries each per-layer
//! filter's verdict from `enabled` to `on_event` in thread-local state;
//! a callsite cached as always enabled skips `enabled`, so it reads the
//! verdict left by whatever asked last. sqlx asks whether its query log is
//! enabled after every statement, and the access-log line that followed
//! was dropped: 10 lines for 200 requests on PostgreSQL (issue 43;
//! tokio-rs/tracing#2519, whose fix upstream is this same cap).

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::subscriber::Interest;
use tracing::{Event, Metadata, span};
use tracing_subscriber::Registry;
use tracing_subscriber::filter::{FilterExt, LevelFilter, filter_fn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, Filter, Layer, SubscriberExt};
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
    let filter = AskEveryTime(
        tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
            .and(filter_fn(crate::telemetry::not_trace_spans)),
    );
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

/// A per-layer filter whose callsites are never cached as always enabled,
/// so that `enabled` runs before every event and span and the verdict
/// `on_event` reads is this event's (see the module's comment). The
/// registry combines the interests of every per-layer filter, and one
/// that says "sometimes" makes the combination "sometimes": capping the
/// log's filter keeps the trace layer's verdicts fresh too. Everything
/// else is the inner filter's.
struct AskEveryTime<F>(F);

impl<S, F: Filter<S>> Filter<S> for AskEveryTime<F> {
    fn enabled(&self, meta: &Metadata<'_>, cx: &Context<'_, S>) -> bool {
        self.0.enabled(meta, cx)
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        let interest = self.0.callsite_enabled(meta);
        if interest.is_always() {
            Interest::sometimes()
        } else {
            interest
        }
    }

    fn event_enabled(&self, event: &Event<'_>, cx: &Context<'_, S>) -> bool {
        self.0.event_enabled(event, cx)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.0.max_level_hint()
    }

    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, cx: Context<'_, S>) {
        self.0.on_new_span(attrs, id, cx);
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, cx: Context<'_, S>) {
        self.0.on_record(id, values, cx);
    }

    fn on_enter(&self, id: &span::Id, cx: Context<'_, S>) {
        self.0.on_enter(id, cx);
    }

    fn on_exit(&self, id: &span::Id, cx: Context<'_, S>) {
        self.0.on_exit(id, cx);
    }

    fn on_close(&self, id: span::Id, cx: Context<'_, S>) {
        self.0.on_close(id, cx);
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
