//! What the operator's policy does to a connection, in the pages' words
//! (the consent page, `/account`, `/admin`). Pure, but for the lookups
//! [`before_sign_in`] makes through [`ActivePolicy`].

use super::{ActivePolicy, ClientUse, describe};
use crate::surface::Narrowing;

/// The policy the pages are handed (an axum extension on their routes).
#[derive(Debug, Clone, Default)]
pub struct PagePolicy(pub Option<std::sync::Arc<ActivePolicy>>);

/// The policy on one grant: the words, and whether it makes the
/// connection read only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyView {
    pub text: String,
    pub read_only: bool,
}

impl PolicyView {
    pub fn of(narrowing: Option<Narrowing>, more: bool) -> Self {
        let more = if more {
            "; rules about the person may narrow it further"
        } else {
            ""
        };
        match narrowing {
            None if more.is_empty() => Self::none(),
            None => Self {
                text: format!("none known{more}"),
                read_only: false,
            },
            Some(n) => Self {
                text: format!("{} (rules {}){more}", describe(&n), n.rules.join(", ")),
                read_only: n.read_only,
            },
        }
    }

    pub fn none() -> Self {
        Self {
            text: "none".into(),
            read_only: false,
        }
    }

    pub fn unknown() -> Self {
        Self {
            text: "unknown right now (Gitea did not answer)".into(),
            read_only: false,
        }
    }
}

/// What the policy is known to do to a connection of `client` at the MCP
/// URL `url` before the person signs in (the consent page): `None` when
/// nothing is known.
pub async fn before_sign_in(
    policy: &PagePolicy,
    client: ClientUse<'_>,
    url: &str,
) -> Option<String> {
    let policy = policy.0.as_deref()?;
    let path = url::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.path().to_owned());
    match policy.before_sign_in(client, &path).await {
        Ok((None, false)) => None,
        Ok((narrowing, more)) => Some(PolicyView::of(narrowing, more).text),
        Err(_) => Some(PolicyView::unknown().text),
    }
}
