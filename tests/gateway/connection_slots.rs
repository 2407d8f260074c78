//! The red team's F2 and F5 (issue 53), against the real binary: idle
//! connections from a few addresses cannot hold every slot (at the cap the
//! one idle longest gives its slot up), a client that is not a trusted
//! proxy has the short idle timeout, a head pipelined behind a request is
//! read within the header-read timeout, and a client that never reads its
//! answer loses its connection.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::connections::{ask, closed, get};
use crate::support::FakeGitea;
use crate::support::gateway_process::{ServeProcess, free_port, wait_ready};

async fn connect_from(source: &str, port: u16) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let target: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    socket.connect(target).await.unwrap()
}

/// How long until the gateway closes `stream` (at most `limit`).
async fn closes_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let began = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((began + limit).into(), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(began.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_connections_cannot_hold_the_slots_and_a_client_has_the_short_clocks() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data = crate::support::scratch_dir();
    let port = free_port();
    let mut serve = ServeProcess::new(&fake, &data, port, "connections-test-key-0123456789abcdef");
    serve.extra = &[("MAX_CONNECTIONS", "16"), ("MAX_CONNECTIONS_PER_IP", "4")];
    let mut child = serve.spawn();
    wait_ready(port).await;

    // Four addresses take every slot with kept-alive idle connections.
    let mut holders = Vec::new();
    for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        for _ in 0..4 {
            let mut stream = connect_from(source, port).await;
            assert!(ask(&mut stream).await.contains("200"));
            holders.push(stream);
            // The gateway ends a request a moment after its client has the
            // answer: apart, the order the connections went idle is theirs.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // A new client is served at once: the connection idle longest made room.
    let mut newcomer = connect_from("127.0.0.6", port).await;
    let answer = tokio::time::timeout(Duration::from_secs(2), get(&mut newcomer, "/health/live"))
        .await
        .expect("served within 2 s while the slots are held");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        closed(&mut holders[0]).await,
        "the oldest idle connection gave way"
    );

    // A head pipelined behind a request: read within the header timeout,
    // not the idle one.
    let mut pipelined = connect_from("127.0.0.7", port).await;
    pipelined
        .write_all(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /hea")
        .await
        .unwrap();
    let mut idle = connect_from("127.0.0.8", port).await;
    assert!(ask(&mut idle).await.contains("200"));
    let (pipelined_after, idle_after) = tokio::join!(
        closes_within(&mut pipelined, Duration::from_secs(20)),
        closes_within(&mut idle, Duration::from_secs(20)),
    );
    let pipelined_after = pipelined_after.expect("the pipelined head's connection is closed");
    assert!(
        pipelined_after <= Duration::from_secs(12),
        "{pipelined_after:?}"
    );
    let idle_after = idle_after.expect("a client's idle connection is closed");
    assert!(
        idle_after >= Duration::from_secs(9) && idle_after <= Duration::from_secs(12),
        "a client that is not a trusted proxy waits the header timeout: {idle_after:?}"
    );
    let _ = child.kill();
    let _ = child.wait();
}
