//! Our scopes, and what a token with them may do. Pure.
//!
//! | scope | means |
//! | --- | --- |
//! | `gitea:read` | read what the person can read at Gitea, at one MCP URL |
//! | `gitea:write` | also change it (only together with `gitea:read`) |
//! | `gitea` | the scope of tokens from before these two: read and write |
//!
//! A client starts with `gitea:read` (the minimum, which the discovery
//! documents and the 401 challenge name); a write on a read grant gets a
//! 403 `insufficient_scope` challenge naming `gitea:read gitea:write`, and
//! the client's new authorization asks the person again (step-up, MCP
//! 2025-11-25). A refresh may narrow a token to read, never widen it.

use crate::identity::Access;

/// Reading: every grant holds it.
pub const SCOPE_READ: &str = "gitea:read";
/// Writing, on top of reading.
pub const SCOPE_WRITE: &str = "gitea:write";
/// The one scope of grants made before `gitea:read` and `gitea:write`:
/// read and write. Still accepted from clients that cached it.
pub const LEGACY_SCOPE: &str = "gitea";

/// Every scope a client may ask for, in the order the authorization
/// server's metadata lists them.
pub const SCOPES: [&str; 2] = [SCOPE_READ, SCOPE_WRITE];

/// The minimal scope: what the protected-resource metadata and the 401
/// challenge name.
pub const MINIMAL_SCOPE: &str = SCOPE_READ;

/// A `scope` value with a scope we do not know; names the first one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope `{0}`: the scopes are gitea:read and gitea:write")]
pub struct UnknownScope(pub String);

/// What a `scope` parameter asks for: `None` (no scope, or only
/// `gitea:read`) asks for reading; `gitea:write` or the legacy `gitea`
/// for writing too. An unknown scope is refused (RFC 6749 §4.1.2.1,
/// `invalid_scope`); the scope shown back is cut to 64 characters.
pub fn asked_access(scope: Option<&str>) -> Result<Access, UnknownScope> {
    let mut access = Access::Read;
    for scope in scope.unwrap_or_default().split_whitespace() {
        match scope {
            SCOPE_READ => {}
            SCOPE_WRITE | LEGACY_SCOPE => access = Access::ReadWrite,
            other => return Err(UnknownScope(other.chars().take(64).collect())),
        }
    }
    Ok(access)
}

/// What a granted scope (a grant's, a token's) lets its holder do. Fails
/// closed: anything without a write scope only reads.
pub fn granted_access(scope: &str) -> Access {
    if scope
        .split_whitespace()
        .any(|s| s == SCOPE_WRITE || s == LEGACY_SCOPE)
    {
        Access::ReadWrite
    } else {
        Access::Read
    }
}

/// The scope value that grants `access`: what grants, codes and tokens
/// carry and the token response returns.
pub fn scope_of(access: Access) -> &'static str {
    match access {
        Access::Read => SCOPE_READ,
        Access::ReadWrite => "gitea:read gitea:write",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_scope_or_read_asks_for_reading() {
        assert_eq!(asked_access(None), Ok(Access::Read));
        assert_eq!(asked_access(Some("")), Ok(Access::Read));
        assert_eq!(asked_access(Some("gitea:read")), Ok(Access::Read));
    }

    #[test]
    fn write_or_the_legacy_scope_asks_for_writing() {
        for asked in ["gitea:write", "gitea:read gitea:write", "gitea"] {
            assert_eq!(asked_access(Some(asked)), Ok(Access::ReadWrite), "{asked}");
        }
    }

    #[test]
    fn an_unknown_scope_is_refused_by_name() {
        assert_eq!(
            asked_access(Some("gitea:read admin")),
            Err(UnknownScope("admin".into()))
        );
        let long = "x".repeat(500);
        assert_eq!(asked_access(Some(&long)).unwrap_err().0.len(), 64);
    }

    #[test]
    fn a_granted_scope_without_write_only_reads() {
        assert_eq!(granted_access("gitea:read"), Access::Read);
        assert_eq!(granted_access(""), Access::Read);
        assert_eq!(granted_access("gitea:writes"), Access::Read);
        assert_eq!(granted_access("gitea"), Access::ReadWrite);
        assert_eq!(granted_access("gitea:read gitea:write"), Access::ReadWrite);
    }

    #[test]
    fn each_access_round_trips_through_its_scope() {
        for access in [Access::Read, Access::ReadWrite] {
            assert_eq!(granted_access(scope_of(access)), access);
            assert_eq!(asked_access(Some(scope_of(access))), Ok(access));
        }
    }
}
