//! The syslog sink: each entry as one RFC 5424 message whose MSG is the
//! line exactly as written (so the copy verifies with `audit verify`),
//! framed by octet counting (RFC 5425 over TLS, RFC 6587 over TCP).
//!
//! `<110>1 TS HOST aegis-gitea-mcp PID EVENT - {"v":1,"seq":…,"chain":"…"}`
//!
//! PRI 110 is facility 13 (log audit) and severity 6 (informational); TS
//! is the entry's own `ts`; HOST is `REPLICA_ID`; MSGID the event. The
//! message carries no BOM: the line is JSON, which names its own encoding.
//!
//! Syslog has no acknowledgement: a write the kernel took may still be lost
//! if the sink dies before reading it. Before each batch the connection is
//! checked for an end the sink already sent, which covers a sink that was
//! stopped while idle; an entry in flight at the moment a sink dies can be
//! lost (`docs/audit.md` says so, and names RELP through a local relay).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::rustls::pki_types::ServerName;

use super::ForwardError;
use super::follow::LogLine;

/// Facility 13 (log audit) × 8 + severity 6 (informational).
const PRI: u8 = 110;
const APP_NAME: &str = "aegis-gitea-mcp";
/// RFC 5424's bound on MSGID.
const MAX_MSGID: usize = 32;
/// How long a connection (and its TLS handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One entry as an RFC 5424 message, framed by octet counting.
pub fn frame(line: &LogLine, host: &str, pid: u32) -> String {
    let timestamp = entry_timestamp(&line.text).unwrap_or("-");
    let msgid: String = line
        .event
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(MAX_MSGID)
        .collect();
    let msgid = if msgid.is_empty() {
        "-".to_owned()
    } else {
        msgid
    };
    let message = format!(
        "<{PRI}>1 {timestamp} {host} {APP_NAME} {pid} {msgid} - {}",
        line.text
    );
    format!("{} {message}", message.len())
}

/// The entry's `ts` (RFC 3339, UTC, milliseconds: a valid syslog
/// TIMESTAMP), read from its fixed place near the start of the line.
fn entry_timestamp(text: &str) -> Option<&str> {
    let start = text.find(",\"ts\":\"")? + 7;
    let end = start + text[start..].find('"')?;
    let ts = &text[start..end];
    ts.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':' | b'.' | b'+'))
        .then_some(ts)
}

/// Plain TCP (to a loopback relay) or TLS.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Stream for T {}

/// A connection to the syslog sink, made when needed and dropped on error.
pub struct SyslogSink {
    host: String,
    port: u16,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// HOSTNAME of the messages.
    hostname: String,
    pid: u32,
    stream: Option<Box<dyn Stream>>,
}

impl SyslogSink {
    pub fn new(
        host: String,
        port: u16,
        tls: Option<Arc<ClientConfig>>,
        hostname: String,
    ) -> Result<Self, ForwardError> {
        let tls = match tls {
            None => None,
            Some(config) => {
                let name = ServerName::try_from(host.clone())
                    .map_err(|_| ForwardError::Config("the syslog host is not a valid TLS name"))?;
                Some((TlsConnector::from(config), name))
            }
        };
        Ok(Self {
            host,
            port,
            tls,
            hostname,
            pid: std::process::id(),
            stream: None,
        })
    }

    /// Sends `lines`, in order, on one connection.
    pub async fn send(&mut self, lines: &[LogLine]) -> Result<(), ForwardError> {
        if let Some(stream) = &mut self.stream
            && ended(stream.as_mut()).await
        {
            self.stream = None;
        }
        if self.stream.is_none() {
            self.stream = Some(self.connect().await?);
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err(ForwardError::Sink("no connection".to_owned()));
        };
        let mut batch = String::new();
        for line in lines {
            batch.push_str(&frame(line, &self.hostname, self.pid));
        }
        let written = async {
            stream.write_all(batch.as_bytes()).await?;
            stream.flush().await
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, written).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => {
                self.stream = None;
                Err(ForwardError::Sink(err.to_string()))
            }
            Err(_) => {
                self.stream = None;
                Err(ForwardError::Sink(
                    "the sink did not take the entries in 10 s".to_owned(),
                ))
            }
        }
    }

    async fn connect(&self) -> Result<Box<dyn Stream>, ForwardError> {
        let connecting = async {
            let tcp = TcpStream::connect((self.host.as_str(), self.port)).await?;
            tcp.set_nodelay(true)?;
            Ok::<_, std::io::Error>(match &self.tls {
                None => Box::new(tcp) as Box<dyn Stream>,
                Some((connector, name)) => {
                    Box::new(connector.connect(name.clone(), tcp).await?) as Box<dyn Stream>
                }
            })
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(err)) => Err(ForwardError::Sink(err.to_string())),
            Err(_) => Err(ForwardError::Sink(format!(
                "no connection to {}:{} in 10 s",
                self.host, self.port
            ))),
        }
    }
}

/// Whether the sink has ended the connection (it sends nothing else): a
/// read that would not block returns end of file or an error.
async fn ended(stream: &mut dyn Stream) -> bool {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(Duration::from_millis(1), stream.read(&mut byte)).await {
        // Nothing to read: still open.
        Err(_) => false,
        Ok(Ok(0) | Err(_)) => true,
        // A syslog receiver sends nothing; whatever it is, start afresh.
        Ok(Ok(_)) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, event: &str) -> LogLine {
        LogLine {
            seq: 7,
            event: event.to_owned(),
            text: text.to_owned(),
            written_at: None,
        }
    }

    const TEXT: &str = r#"{"v":1,"seq":7,"ts":"2026-12-02T10:00:00.123Z","event":"tool_call_started","chain":"ab"}"#;

    #[test]
    fn a_message_is_rfc5424_with_the_line_as_written_and_octet_counted() {
        let framed = frame(&line(TEXT, "tool_call_started"), "gw-1", 42);
        let message = format!(
            "<110>1 2026-12-02T10:00:00.123Z gw-1 aegis-gitea-mcp 42 tool_call_started - {TEXT}"
        );
        assert_eq!(framed, format!("{} {message}", message.len()));
    }

    #[test]
    fn the_count_is_of_octets_not_characters() {
        let text = r#"{"v":1,"seq":7,"ts":"2026-12-02T10:00:00.123Z","event":"x","tool":"é"}"#;
        let framed = frame(&line(text, "x"), "gw", 1);
        let (count, message) = framed.split_once(' ').unwrap();
        assert_eq!(count.parse::<usize>().unwrap(), message.len());
        assert!(message.len() > message.chars().count());
    }

    #[test]
    fn an_odd_timestamp_or_event_cannot_break_the_header() {
        let text = r#"{"v":1,"seq":7,"ts":"2026 12 02","event":"a b"}"#;
        let framed = frame(&line(text, "a b\nc"), "gw", 1);
        assert!(
            framed.contains("<110>1 - gw aegis-gitea-mcp 1 abc - {"),
            "{framed}"
        );
    }
}
