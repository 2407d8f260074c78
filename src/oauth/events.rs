//! The OAuth server's audit events, typed. Each variant says what happened
//! and carries identifiers only (a login, a client id, a grant id), never a
//! token or a secret. They are recorded through [`OAuthServer::record`],
//! best effort: a failed audit write is logged and never stops the OAuth
//! step it describes.

use super::OAuthServer;
use crate::audit::{Event, EventKind};

/// One OAuth event.
#[derive(Debug, Clone, Copy)]
pub enum OAuthEvent<'a> {
    ClientRegistered {
        client_id: &'a str,
        auth_method: &'a str,
    },
    /// With the scope the person granted (`gitea:read`, or with
    /// `gitea:write`).
    ConsentApproved {
        client_id: &'a str,
        scope: &'a str,
    },
    ConsentDenied {
        client_id: &'a str,
    },
    CodeIssued {
        login: &'a str,
        client_id: &'a str,
    },
    CodeReplayed {
        client_id: &'a str,
    },
    TokenIssued {
        grant_id: &'a str,
    },
    TokenRefreshed {
        login: &'a str,
        client_id: &'a str,
    },
    RefreshReuseDetected {
        client_id: &'a str,
    },
    TokenRevoked {
        login: &'a str,
        client_id: &'a str,
    },
    /// The user's Gitea session was refreshed upstream, because its stored
    /// expiry passed (`expired`) or Gitea refused the token (`refused`).
    UpstreamRefreshed {
        login: &'a str,
        client_id: &'a str,
        trigger: &'static str,
    },
    /// A Gitea refresh failed; `revoked_because` is set when the failure
    /// ended our grant.
    UpstreamRefreshFailed {
        login: &'a str,
        client_id: &'a str,
        revoked_because: Option<&'static str>,
    },
    /// A sign-in refused: the login connected its limit of new clients
    /// within the hour.
    RegistrationLimited {
        login: &'a str,
        client_id: &'a str,
    },
}

impl OAuthEvent<'_> {
    /// The audit entry of this event.
    pub fn to_event(self) -> Event {
        let with_client = |kind, client_id: &str| Event::new(kind).detail("client_id", client_id);
        match self {
            Self::ClientRegistered {
                client_id,
                auth_method,
            } => with_client(EventKind::ClientRegistered, client_id)
                .detail("auth_method", auth_method),
            Self::ConsentApproved { client_id, scope } => {
                with_client(EventKind::ConsentApproved, client_id).detail("scope", scope)
            }
            Self::ConsentDenied { client_id } => with_client(EventKind::ConsentDenied, client_id),
            Self::CodeIssued { login, client_id } => {
                with_client(EventKind::CodeIssued, client_id).oauth_login(login)
            }
            Self::CodeReplayed { client_id } => with_client(EventKind::CodeReplayed, client_id),
            Self::TokenIssued { grant_id } => {
                Event::new(EventKind::TokenIssued).detail("grant", grant_id)
            }
            Self::TokenRefreshed { login, client_id } => {
                with_client(EventKind::TokenRefreshed, client_id).oauth_login(login)
            }
            Self::RefreshReuseDetected { client_id } => {
                with_client(EventKind::RefreshReuseDetected, client_id)
            }
            Self::TokenRevoked { login, client_id } => {
                with_client(EventKind::TokenRevoked, client_id).oauth_login(login)
            }
            Self::UpstreamRefreshed {
                login,
                client_id,
                trigger,
            } => with_client(EventKind::UpstreamRefreshed, client_id)
                .oauth_login(login)
                .detail("trigger", trigger),
            Self::UpstreamRefreshFailed {
                login,
                client_id,
                revoked_because,
            } => {
                let event = with_client(EventKind::UpstreamRefreshFailed, client_id)
                    .oauth_login(login)
                    .detail("grant_revoked", revoked_because.is_some());
                match revoked_because {
                    Some(why) => event.detail("why", why),
                    None => event,
                }
            }
            Self::RegistrationLimited { login, client_id } => {
                with_client(EventKind::RegistrationLimited, client_id).oauth_login(login)
            }
        }
    }
}

impl OAuthServer {
    /// Records `event` in the audit log, best effort.
    pub async fn record(&self, event: OAuthEvent<'_>) {
        self.audit.record_best_effort(event.to_event()).await;
    }
}
