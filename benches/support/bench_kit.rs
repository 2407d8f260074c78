//! What more than one bench needs: the process's CPU time, and a client
//! record as dynamic registration stores it.

use std::time::Duration;

use aegis_gitea_mcp::store::{ClientRecord, Registration, TokenEndpointAuthMethod};
use serde_json::json;

/// User plus system CPU time of this process so far (client, gateway and
/// fake Gitea together, when they share the process).
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// A public client registered by DCR at `now`, named `name`, redirecting
/// to `redirect_uri`.
pub fn registered_client(id: &str, name: &str, redirect_uri: &str, now: i64) -> ClientRecord {
    ClientRecord {
        client_id: id.to_owned(),
        client_name: Some(name.to_owned()),
        redirect_uris: vec![redirect_uri.to_owned()],
        token_endpoint_auth_method: TokenEndpointAuthMethod::None,
        grant_types: vec!["authorization_code".into(), "refresh_token".into()],
        response_types: vec!["code".into()],
        scope: None,
        registration: Registration::Dynamic,
        secret_hash: None,
        metadata: json!({}),
        created_at: now,
        expires_at: None,
    }
}
