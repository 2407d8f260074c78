//! What the operator's policy does to each connection, as the pages say
//! it: `/account` asks with the signed-in person's own session, `/admin`
//! with what is known of the person without asking Gitea as them.

use std::collections::HashMap;

use secrecy::SecretString;

use crate::pages::connections::connection_at;
use crate::policy::view::PolicyView;
use crate::policy::{ActivePolicy, ClientUse};
use crate::store::GrantSummary;

/// The policy on each of `grants`, by grant id. With `person_token` (the
/// grants' person's own Gitea session) the whole policy is evaluated;
/// without it, what is known.
pub async fn policy_by_grant(
    policy: Option<&ActivePolicy>,
    grants: &[GrantSummary],
    person_token: Option<&SecretString>,
) -> HashMap<String, PolicyView> {
    let mut out = HashMap::new();
    let Some(policy) = policy else {
        return out;
    };
    for grant in grants {
        let (url, _) = connection_at(&grant.resource, false);
        let client = ClientUse {
            client_id: &grant.client_id,
            redirect_uri: grant.redirect_uri.as_deref(),
        };
        let view = match person_token {
            Some(token) => policy
                .narrowing_of(&grant.login, token, client, &url)
                .await
                .map(|n| PolicyView::of(n, false)),
            None => policy
                .known_narrowing(&grant.login, client, &url)
                .await
                .map(|(n, more)| PolicyView::of(n, more)),
        };
        out.insert(
            grant.id.clone(),
            view.unwrap_or_else(|_| PolicyView::unknown()),
        );
    }
    out
}
