//! Every way a page request can fail (the consent flow, the sign-in, the
//! people's pages), each with one status and one wording for a person:
//! handlers return `Result<Response, PageError>` and use `?`, and no
//! handler writes an error page by hand. Nothing from the request is
//! echoed: the messages of [`PageError::Invalid`] and
//! [`PageError::ClientRequest`] name what is wrong, never a value.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::ErrorPage;

/// Why a page request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// A sign-in or consent that is unknown, expired or already answered.
    #[error("the sign-in is unknown, expired or already answered")]
    Expired,
    /// A form posted from another site.
    #[error("the form was posted from another site")]
    CrossSite,
    /// A form whose CSRF token does not match.
    #[error("the form's security token did not match")]
    BadToken,
    /// No live page session.
    #[error("the page session has ended")]
    NotSignedIn,
    /// The admin page, for someone who is not an administrator.
    #[error("administrators only")]
    AdminsOnly,
    /// The person's Gitea sign-in expired, so their rights cannot be checked.
    #[error("the Gitea sign-in has expired")]
    SignInAgain,
    /// What the request names is not there (any more), or not theirs.
    #[error("what the request names no longer exists")]
    Gone,
    /// A call's confirmation that was decided already, or ran out of time.
    #[error("the confirmation was already decided or has expired")]
    ConfirmationClosed,
    /// The store cannot serve right now, or is full.
    #[error("the server cannot do this right now")]
    Unavailable,
    /// Gitea could not be asked, or did not complete a step.
    #[error("Gitea did not complete the step")]
    UpstreamFailed,
    /// The person declined at Gitea.
    #[error("the person declined at Gitea")]
    Declined,
    /// The sign-in was started in another browser.
    #[error("the sign-in was started in another browser")]
    OtherBrowser,
    /// Gitea's ID token is missing or does not verify: why.
    #[error("the ID token was refused: {0}")]
    IdTokenRefused(String),
    /// A request that cannot be served as sent: a title, and what is wrong.
    #[error("{title}: {message}")]
    Invalid {
        title: &'static str,
        message: String,
    },
    /// An MCP client's request that is not valid, shown with a link back to
    /// the client (where an automatic redirect could be abused).
    #[error("the application's request is not valid: {message}")]
    ClientRequest {
        message: String,
        /// The error redirect the person may follow, and its host.
        continue_to: (String, String),
    },
}

/// The advice that ends every page about a sign-in that cannot go on.
const START_AGAIN: &str = "Start again from where you began.";

impl PageError {
    /// A request that cannot be served as sent.
    pub fn invalid(title: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            title,
            message: message.into(),
        }
    }

    /// The page a person sees.
    pub fn page(&self) -> ErrorPage {
        let (title, message) = self.wording();
        let page = ErrorPage::new(self.status(), title, message);
        match self {
            Self::ClientRequest {
                continue_to: (url, host),
                ..
            } => page.with_continue_link(url.clone(), host.clone()),
            _ => page,
        }
    }

    /// The status of the page.
    fn status(&self) -> StatusCode {
        use StatusCode as S;
        match self {
            Self::Expired | Self::Invalid { .. } | Self::ClientRequest { .. } => S::BAD_REQUEST,
            Self::CrossSite
            | Self::BadToken
            | Self::AdminsOnly
            | Self::Declined
            | Self::OtherBrowser => S::FORBIDDEN,
            Self::NotSignedIn | Self::SignInAgain => S::UNAUTHORIZED,
            Self::Gone => S::NOT_FOUND,
            Self::ConfirmationClosed => S::CONFLICT,
            Self::Unavailable => S::SERVICE_UNAVAILABLE,
            Self::UpstreamFailed | Self::IdTokenRefused(_) => S::BAD_GATEWAY,
        }
    }

    /// The page's title and message.
    fn wording(&self) -> (&'static str, String) {
        match self {
            Self::Expired => (
                "Sign-in expired",
                format!("This sign-in is unknown, expired or already answered. {START_AGAIN}"),
            ),
            Self::CrossSite => (
                "Request refused",
                "The request came from another site. Nothing was changed.".into(),
            ),
            Self::BadToken => (
                "Request refused",
                "The form's security token did not match. Reload the page and try again; nothing was changed.".into(),
            ),
            Self::NotSignedIn => (
                "Signed out",
                "Your session has ended. Sign in again; nothing was changed.".into(),
            ),
            Self::AdminsOnly => (
                "Administrators only",
                "This page is for Gitea site administrators. Nothing was changed.".into(),
            ),
            Self::SignInAgain => (
                "Sign in again",
                "Your Gitea sign-in has expired, so your rights cannot be checked. Sign out, sign in again, and repeat the action. Nothing was changed.".into(),
            ),
            Self::Gone => (
                "Already gone",
                "That no longer exists. Nothing was changed.".into(),
            ),
            Self::ConfirmationClosed => (
                "Already decided",
                "This call was already approved or denied, or its time ran out. Nothing was changed.".into(),
            ),
            Self::Unavailable => (
                "Try again later",
                "The server cannot do this right now. Nothing was changed; try again in a moment.".into(),
            ),
            Self::UpstreamFailed => (
                "Gitea did not answer",
                "Gitea could not complete this step. Nothing was changed; try again.".into(),
            ),
            Self::Declined => (
                "Sign-in cancelled",
                "You declined the sign-in at Gitea.".into(),
            ),
            Self::OtherBrowser => (
                "Sign-in refused",
                format!("This sign-in was started in another browser. {START_AGAIN}"),
            ),
            Self::IdTokenRefused(why) => (
                "Sign-in refused",
                format!("{why}. Nothing was stored. {START_AGAIN}"),
            ),
            Self::Invalid { title, message } => (*title, message.clone()),
            Self::ClientRequest { message, .. } => (
                "The application's sign-in request is not valid",
                message.clone(),
            ),
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        self.page().into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askama::Template;

    /// Every refusal a person can see, as rendered: the page each shows
    /// is a snapshot (`snapshots/`), so a change of wording, status or
    /// structure is a reviewed change.
    #[test]
    fn every_error_page_as_a_person_sees_it() {
        let all = [
            ("expired", PageError::Expired),
            ("cross_site", PageError::CrossSite),
            ("bad_token", PageError::BadToken),
            ("not_signed_in", PageError::NotSignedIn),
            ("admins_only", PageError::AdminsOnly),
            ("sign_in_again", PageError::SignInAgain),
            ("gone", PageError::Gone),
            ("confirmation_closed", PageError::ConfirmationClosed),
            ("unavailable", PageError::Unavailable),
            ("upstream_failed", PageError::UpstreamFailed),
            ("declined", PageError::Declined),
            ("other_browser", PageError::OtherBrowser),
            (
                "id_token_refused",
                PageError::IdTokenRefused("Gitea's ID token names another nonce".into()),
            ),
            (
                "invalid",
                PageError::invalid("Unknown application", "This application is not registered with this server."),
            ),
            (
                "client_request",
                PageError::ClientRequest {
                    message: "the only scope is gitea (invalid_scope).".into(),
                    continue_to: (
                        "https://app.example/cb?error=invalid_scope&iss=https%3A%2F%2Fmcp.example.com".into(),
                        "app.example".into(),
                    ),
                },
            ),
        ];
        for (name, error) in all {
            let page = error.page();
            let html = page.render().unwrap();
            insta::assert_snapshot!(
                format!("error_page_{name}"),
                format!("HTTP {}\n\n{html}", page.status)
            );
        }
    }

    #[test]
    fn each_error_has_its_status() {
        assert_eq!(PageError::Expired.page().status, 400);
        assert_eq!(PageError::CrossSite.page().status, 403);
        assert_eq!(PageError::NotSignedIn.page().status, 401);
        assert_eq!(PageError::Gone.page().status, 404);
        assert_eq!(PageError::Unavailable.page().status, 503);
        assert_eq!(PageError::UpstreamFailed.page().status, 502);
    }

    #[test]
    fn a_client_request_error_offers_the_way_back_without_sending_there() {
        let page = PageError::ClientRequest {
            message: "state is too long (invalid_request).".into(),
            continue_to: (
                "https://app.example/cb?error=x".into(),
                "app.example".into(),
            ),
        }
        .page();
        assert_eq!(page.continue_to.unwrap().1, "app.example");
    }
}
