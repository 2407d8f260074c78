//! Reading an outbound HTTP response body with a ceiling. Every call the
//! gateway makes (Gitea's API, Gitea's OAuth endpoints, client metadata
//! documents) reads through this, so no upstream can make us buffer more
//! than we chose, whatever its `Content-Length` claims.

use bytes::{Bytes, BytesMut};
use futures::StreamExt;

/// A body read up to a ceiling.
#[derive(Debug, Clone)]
pub struct CappedBody {
    pub bytes: Bytes,
    /// True when the body was longer than the ceiling and was cut.
    pub truncated: bool,
}

/// Reads at most `cap` bytes of the body; stops reading (and drops the
/// connection) beyond that.
pub async fn read_capped(
    response: reqwest::Response,
    cap: usize,
) -> Result<CappedBody, reqwest::Error> {
    let mut buffer = BytesMut::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        let room = cap - buffer.len();
        if chunk.len() > room {
            buffer.extend_from_slice(&chunk[..room]);
            return Ok(CappedBody {
                bytes: buffer.freeze(),
                truncated: true,
            });
        }
        buffer.extend_from_slice(&chunk);
    }
    Ok(CappedBody {
        bytes: buffer.freeze(),
        truncated: false,
    })
}

/// The whole body if it fits in `cap` bytes; `None` when it is longer or
/// the read fails (callers that must not act on a partial document).
pub async fn read_whole(response: reqwest::Response, cap: usize) -> Option<Bytes> {
    match read_capped(response, cap).await {
        Ok(CappedBody {
            bytes,
            truncated: false,
        }) => Some(bytes),
        _ => None,
    }
}
