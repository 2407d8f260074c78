//! What `setup` asks of Gitea: that it answers (`GET /api/v1/version`), that
//! the admin token works (`GET /api/v1/user`), and the confidential OAuth2
//! application (`POST /api/v1/user/applications/oauth2`). Failures become
//! messages that say what to check and never include the token.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;

/// Most bytes read from one Gitea answer; its answers here are tiny.
const MAX_BODY: usize = 1024 * 1024;
/// Most characters of Gitea's own error message repeated to the operator.
const MAX_MESSAGE: usize = 200;

/// A failed step. Messages name the request and the way out; the token
/// never appears in them (Gitea's own `message` is repeated with the token
/// masked, in case it ever echoed it).
#[derive(Debug, thiserror::Error)]
pub enum GiteaError {
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    #[error("Gitea is not reachable at {url}: {why}. Check --gitea-url and that Gitea is running")]
    Unreachable { url: String, why: String },
    #[error(
        "Gitea answered {status} to {action} with a redirect{location}; setup follows none: check --gitea-url (https instead of http? a sub-path?)"
    )]
    Redirected {
        action: &'static str,
        status: u16,
        location: String,
    },
    #[error("{url} does not look like Gitea: {action} answered {status} without a version")]
    NotGitea {
        url: String,
        action: &'static str,
        status: u16,
    },
    #[error(
        "Gitea refused the admin token (401 Unauthorized to {action}): check that it is complete, not expired and not revoked"
    )]
    BadToken { action: &'static str },
    #[error("Gitea answered 403 Forbidden to {action}{message}: {hint}")]
    Forbidden {
        action: &'static str,
        message: String,
        hint: &'static str,
    },
    #[error("Gitea answered {status} to {action}{message}")]
    Unexpected {
        action: &'static str,
        status: u16,
        message: String,
    },
    #[error("Gitea's answer to {action} could not be read: {why}")]
    BadAnswer { action: &'static str, why: String },
}

/// The signed-in user behind the admin token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GiteaUser {
    pub login: String,
    pub is_admin: bool,
}

/// The OAuth2 application Gitea created.
#[derive(Debug, Clone)]
pub struct OAuthApp {
    pub id: i64,
    pub name: String,
    pub client_id: String,
    pub client_secret: SecretString,
}

/// A client for one Gitea instance, acting with the admin token.
pub struct Gitea {
    http: reqwest::Client,
    base: String,
    token: SecretString,
}

const VERSION: &str = "GET /api/v1/version";
const USER: &str = "GET /api/v1/user";
const CREATE_APP: &str = "POST /api/v1/user/applications/oauth2";

impl Gitea {
    /// `base` is `GITEA_URL` without a trailing slash.
    pub fn new(base: &str, token: SecretString) -> Result<Self, GiteaError> {
        crate::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("aegis-gitea-mcp-setup/", env!("CARGO_PKG_VERSION")))
            .no_proxy()
            .build()
            .map_err(|err| GiteaError::Client(err.to_string()))?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// `GET /api/v1/version`, without the token: is this Gitea, and up?
    pub async fn version(&self) -> Result<String, GiteaError> {
        let request = self.http.get(self.url("/api/v1/version"));
        let (status, body) = self.send(VERSION, request).await?;
        #[derive(Deserialize)]
        struct Version {
            version: String,
        }
        match serde_json::from_slice::<Version>(&body) {
            Ok(v) if status.is_success() => Ok(v.version),
            _ => Err(GiteaError::NotGitea {
                url: self.base.clone(),
                action: VERSION,
                status: status.as_u16(),
            }),
        }
    }

    /// `GET /api/v1/user` with the token: does it work, and whose is it?
    pub async fn user(&self) -> Result<GiteaUser, GiteaError> {
        let request = self.authorized(self.http.get(self.url("/api/v1/user")));
        let (status, body) = self.send(USER, request).await?;
        self.require_success(
            USER,
            status,
            &body,
            "the token needs at least the read:user scope",
        )?;
        #[derive(Deserialize)]
        struct User {
            login: String,
            #[serde(default)]
            is_admin: bool,
        }
        let user: User = serde_json::from_slice(&body).map_err(|err| GiteaError::BadAnswer {
            action: USER,
            why: err.to_string(),
        })?;
        Ok(GiteaUser {
            login: user.login,
            is_admin: user.is_admin,
        })
    }

    /// `POST /api/v1/user/applications/oauth2`: a confidential client with
    /// the one redirect URI.
    pub async fn create_oauth_app(
        &self,
        name: &str,
        redirect_uri: &str,
    ) -> Result<OAuthApp, GiteaError> {
        let request = self
            .authorized(self.http.post(self.url("/api/v1/user/applications/oauth2")))
            .json(&json!({
                "name": name,
                "redirect_uris": [redirect_uri],
                "confidential_client": true,
            }));
        let (status, body) = self.send(CREATE_APP, request).await?;
        self.require_success(
            CREATE_APP,
            status,
            &body,
            "the token needs the write:user scope (or pass --no-oauth and create the application by hand, see docs/oauth.md)",
        )?;
        #[derive(Deserialize)]
        struct Created {
            id: i64,
            #[serde(default)]
            name: String,
            client_id: String,
            client_secret: String,
        }
        let created: Created =
            serde_json::from_slice(&body).map_err(|err| GiteaError::BadAnswer {
                action: CREATE_APP,
                // serde's message may quote a value; keep only where it broke.
                why: format!(
                    "expected id, client_id and client_secret (line {}, column {})",
                    err.line(),
                    err.column()
                ),
            })?;
        if created.client_id.is_empty() || created.client_secret.is_empty() {
            return Err(GiteaError::BadAnswer {
                action: CREATE_APP,
                why: "client_id or client_secret is empty".to_owned(),
            });
        }
        Ok(OAuthApp {
            id: created.id,
            name: if created.name.is_empty() {
                name.to_owned()
            } else {
                created.name
            },
            client_id: created.client_id,
            client_secret: SecretString::from(created.client_secret),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut value =
            http::HeaderValue::from_str(&format!("token {}", self.token.expose_secret()))
                .unwrap_or_else(|_| http::HeaderValue::from_static("token"));
        value.set_sensitive(true);
        request
            .header(http::header::AUTHORIZATION, value)
            .header(http::header::ACCEPT, "application/json")
    }

    /// Sends, reads at most [`MAX_BODY`] bytes, and turns transport
    /// failures and redirects into errors.
    async fn send(
        &self,
        action: &'static str,
        request: reqwest::RequestBuilder,
    ) -> Result<(reqwest::StatusCode, Vec<u8>), GiteaError> {
        let mut response = request.send().await.map_err(|err| self.unreachable(&err))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|l| format!(" to {}", clip(l)))
                .unwrap_or_default();
            return Err(GiteaError::Redirected {
                action,
                status: status.as_u16(),
                location,
            });
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_BODY.saturating_sub(body.len());
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if room <= chunk.len() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(err) => return Err(self.unreachable(&err)),
            }
        }
        Ok((status, body))
    }

    fn require_success(
        &self,
        action: &'static str,
        status: reqwest::StatusCode,
        body: &[u8],
        forbidden_hint: &'static str,
    ) -> Result<(), GiteaError> {
        if status.is_success() {
            return Ok(());
        }
        let message = self
            .gitea_message(body)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        Err(match status.as_u16() {
            401 => GiteaError::BadToken { action },
            403 => GiteaError::Forbidden {
                action,
                message,
                hint: forbidden_hint,
            },
            code => GiteaError::Unexpected {
                action,
                status: code,
                message,
            },
        })
    }

    /// Gitea's `message`, shortened, control characters dropped, and the
    /// token masked should Gitea ever repeat it.
    fn gitea_message(&self, body: &[u8]) -> Option<String> {
        #[derive(Deserialize)]
        struct Message {
            message: String,
        }
        let message = serde_json::from_slice::<Message>(body).ok()?.message;
        let token = self.token.expose_secret();
        let message = if token.is_empty() {
            message
        } else {
            message.replace(token, "[token]")
        };
        let message = clip(&message);
        (!message.is_empty()).then_some(message)
    }

    fn unreachable(&self, err: &reqwest::Error) -> GiteaError {
        let why = if err.is_timeout() {
            "it did not answer in time".to_owned()
        } else {
            // The innermost cause says most ("Connection refused",
            // "dns error", a certificate problem); none holds the token.
            let mut cause: &dyn std::error::Error = err;
            while let Some(next) = cause.source() {
                cause = next;
            }
            clip(&cause.to_string())
        };
        GiteaError::Unreachable {
            url: self.base.clone(),
            why,
        }
    }
}

/// At most [`MAX_MESSAGE`] characters, control characters dropped.
fn clip(text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim();
    if clean.chars().count() <= MAX_MESSAGE {
        clean.to_owned()
    } else {
        let mut cut: String = clean.chars().take(MAX_MESSAGE).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gitea(token: &str) -> Gitea {
        Gitea::new("http://127.0.0.1:9/", SecretString::from(token.to_owned())).unwrap()
    }

    #[test]
    fn the_base_loses_its_trailing_slash() {
        assert_eq!(
            gitea("t").url("/api/v1/user"),
            "http://127.0.0.1:9/api/v1/user"
        );
    }

    #[test]
    fn gitea_messages_are_clipped_and_never_repeat_the_token() {
        let g = gitea("s3cr3t-token");
        let body = br#"{"message":"token s3cr3t-token is\nbad"}"#;
        assert_eq!(g.gitea_message(body).unwrap(), "token [token] isbad");
        let long = format!(r#"{{"message":"{}"}}"#, "x".repeat(500));
        let clipped = g.gitea_message(long.as_bytes()).unwrap();
        assert_eq!(clipped.chars().count(), MAX_MESSAGE + 1);
        assert!(g.gitea_message(b"not json").is_none());
    }

    #[test]
    fn statuses_map_to_clear_errors() {
        let g = gitea("tok");
        let err = g
            .require_success(USER, reqwest::StatusCode::UNAUTHORIZED, b"{}", "hint")
            .unwrap_err();
        assert!(matches!(err, GiteaError::BadToken { .. }));
        assert!(err.to_string().contains("refused the admin token"));
        let err = g
            .require_success(
                CREATE_APP,
                reqwest::StatusCode::FORBIDDEN,
                br#"{"message":"token does not have required scope"}"#,
                "the token needs the write:user scope",
            )
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("403"), "{msg}");
        assert!(msg.contains("write:user"), "{msg}");
        assert!(msg.contains("required scope"), "{msg}");
        let err = g
            .require_success(USER, reqwest::StatusCode::BAD_GATEWAY, b"", "hint")
            .unwrap_err();
        assert_eq!(err.to_string(), "Gitea answered 502 to GET /api/v1/user");
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let g = Gitea::new(
            &format!("http://127.0.0.1:{port}"),
            SecretString::from("tok".to_owned()),
        )
        .unwrap();
        let err = g.version().await.unwrap_err();
        assert!(matches!(err, GiteaError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains("not reachable"));
    }
}
