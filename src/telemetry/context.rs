//! W3C Trace Context in and out: the `traceparent` and `tracestate` a
//! client sends (as HTTP headers, or in a request's `_meta` as SEP-414
//! has it) become the parent of our spans, and the Gitea request carries
//! ours on. Parsing and validation are the SDK's
//! (`TraceContextPropagator`); what is offered to it is bounded here.

use http::HeaderMap;
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::HeaderInjector;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Version 00 is 55 characters; later versions may append fields, so a
/// little room, but no more.
const MAX_TRACEPARENT: usize = 128;
/// The W3C recommendation's limit for what a vendor must propagate.
const MAX_TRACESTATE: usize = 512;

/// The two values a caller may send, each ignored when over its bound.
#[derive(Debug, Default, Clone, Copy)]
pub struct Carrier<'a> {
    traceparent: Option<&'a str>,
    tracestate: Option<&'a str>,
}

impl<'a> Carrier<'a> {
    pub fn new(traceparent: Option<&'a str>, tracestate: Option<&'a str>) -> Self {
        Self {
            traceparent: traceparent.filter(|v| v.len() <= MAX_TRACEPARENT),
            // No tracestate without a traceparent: it only qualifies one.
            tracestate: tracestate.filter(|v| v.len() <= MAX_TRACESTATE && traceparent.is_some()),
        }
    }

    /// From HTTP headers (the first value of each; one that is not ASCII
    /// is none).
    pub fn from_headers(headers: &'a HeaderMap) -> Self {
        let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Self::new(value("traceparent"), value("tracestate"))
    }

    /// The remote parent these values name, when they are valid.
    pub fn parent(&self) -> Option<Context> {
        self.traceparent?;
        let cx = TraceContextPropagator::new().extract(self);
        cx.span().span_context().is_valid().then_some(cx)
    }
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent,
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// Gives `span` the caller's span as its parent, when the carrier names a
/// valid one. Call it before the span has children.
pub fn adopt_parent(span: &tracing::Span, carrier: Carrier<'_>) {
    adopt_parent_or(span, carrier, None);
}

/// As [`adopt_parent`], and otherwise `local`: a span of ours that the
/// exporter sees, named explicitly where the contextual parent is a span
/// it does not (another crate's, enabled by the log layer).
pub fn adopt_parent_or(span: &tracing::Span, carrier: Carrier<'_>, local: Option<&tracing::Span>) {
    if span.is_disabled() {
        return;
    }
    let parent = carrier
        .parent()
        .or_else(|| local.map(OpenTelemetrySpanExt::context));
    if let Some(parent) = parent {
        // Fails only for a span already started, which the callers rule out.
        let _ = span.set_parent(parent);
    }
}

/// Adds `traceparent` (and `tracestate`) naming `span` to an outgoing
/// request, when the span is exported.
pub fn inject(span: &tracing::Span, headers: &mut HeaderMap) {
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn trace_id(cx: &Context) -> String {
        cx.span().span_context().trace_id().to_string()
    }

    #[test]
    fn a_valid_traceparent_names_the_remote_parent() {
        let cx = Carrier::new(Some(PARENT), Some("vendor=abc"))
            .parent()
            .unwrap();
        assert_eq!(trace_id(&cx), "4bf92f3577b34da6a3ce929d0e0e4736");
        let span = cx.span();
        let sc = span.span_context();
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(sc.trace_state().header(), "vendor=abc");
    }

    #[test]
    fn malformed_or_oversized_values_are_ignored() {
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        ] {
            assert!(Carrier::new(Some(bad), None).parent().is_none(), "{bad}");
        }
        let long = format!("{PARENT}-{}", "a".repeat(MAX_TRACEPARENT));
        assert!(Carrier::new(Some(&long), None).parent().is_none());
        let state = format!("k={}", "v".repeat(MAX_TRACESTATE));
        let cx = Carrier::new(Some(PARENT), Some(&state)).parent().unwrap();
        assert_eq!(cx.span().span_context().trace_state().header(), "");
    }

    #[test]
    fn headers_are_read_as_the_first_value() {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        let cx = Carrier::from_headers(&headers).parent().unwrap();
        assert_eq!(trace_id(&cx), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(Carrier::from_headers(&HeaderMap::new()).parent().is_none());
    }

    #[test]
    fn nothing_is_injected_for_a_span_nobody_exports() {
        let mut headers = HeaderMap::new();
        inject(&tracing::Span::none(), &mut headers);
        assert!(headers.is_empty());
    }
}
