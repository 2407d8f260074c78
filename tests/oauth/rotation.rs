//! `/token`, refresh-token grant: rotation, reuse detection with the grace
//! rule, concurrency, scope, client binding (#21–#25).

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::{OAuthGateway, Tokens, on_both_backends, tokens_from};

async fn error_of(response: reqwest::Response) -> String {
    let body: Value = response.json().await.unwrap();
    body["error"].as_str().unwrap_or_default().to_owned()
}

async fn works_at_mcp(gateway: &OAuthGateway, tokens: &Tokens) -> bool {
    let (status, _) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    status == StatusCode::OK
}

/// #21: every refresh returns a new refresh token; the new access token works.
async fn refresh_rotates_the_refresh_token(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let second = tokens_from(gateway.refresh(&client, &first.refresh_token).await).await;
    assert_ne!(second.refresh_token, first.refresh_token);
    assert_ne!(second.access_token, first.access_token);
    assert!(works_at_mcp(&gateway, &second).await);
    let third = tokens_from(gateway.refresh(&client, &second.refresh_token).await).await;
    assert!(works_at_mcp(&gateway, &third).await);
}
on_both_backends!(refresh_rotates_the_refresh_token);

/// #22: the grace rule — the previous token is honoured while its
/// successor is unused (a client that lost the response retries) …
async fn the_previous_refresh_token_is_honoured_until_its_successor_is_used(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let lost = tokens_from(gateway.refresh(&client, &first.refresh_token).await).await;
    let retried = gateway.refresh(&client, &first.refresh_token).await;
    assert_eq!(retried.status(), StatusCode::OK);
    let retried = tokens_from(retried).await;
    assert!(works_at_mcp(&gateway, &retried).await);
    // The pair the retry replaced is gone: one live pair at a time.
    assert!(!works_at_mcp(&gateway, &lost).await);
    // The successor that was never used is now retired: presenting it is reuse.
    assert_eq!(
        error_of(gateway.refresh(&client, &lost.refresh_token).await).await,
        "invalid_grant"
    );
    assert!(
        !works_at_mcp(&gateway, &retried).await,
        "reuse revokes the grant"
    );
}
on_both_backends!(the_previous_refresh_token_is_honoured_until_its_successor_is_used);

/// #22: … and once the successor has been used, the old token is reuse and
/// the whole grant ends.
async fn reusing_a_rotated_out_refresh_token_revokes_the_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let second = tokens_from(gateway.refresh(&client, &first.refresh_token).await).await;
    let third = tokens_from(gateway.refresh(&client, &second.refresh_token).await).await;
    assert!(works_at_mcp(&gateway, &third).await);
    let reuse = gateway.refresh(&client, &first.refresh_token).await;
    assert_eq!(reuse.status(), StatusCode::BAD_REQUEST);
    assert_eq!(error_of(reuse).await, "invalid_grant");
    assert!(!works_at_mcp(&gateway, &third).await);
    assert_eq!(
        error_of(gateway.refresh(&client, &third.refresh_token).await).await,
        "invalid_grant"
    );
}
on_both_backends!(reusing_a_rotated_out_refresh_token_revokes_the_grant);

/// #23: concurrent refreshes of one token serialise on the grant: each
/// answer is a success or `invalid_grant`, the grant survives, and exactly
/// one of the issued refresh tokens is the current one afterwards.
async fn concurrent_refreshes_leave_one_current_token(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let attempts =
        futures::future::join_all((0..8).map(|_| gateway.refresh(&client, &first.refresh_token)))
            .await;
    let mut issued = Vec::new();
    for response in attempts {
        match response.status() {
            StatusCode::OK => issued.push(tokens_from(response).await),
            StatusCode::BAD_REQUEST => assert_eq!(error_of(response).await, "invalid_grant"),
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(!issued.is_empty(), "at least one refresh wins");
    // The last issued pair is current: find the one whose refresh works.
    let mut current = None;
    for tokens in issued.iter().rev() {
        let attempt = gateway.refresh(&client, &tokens.refresh_token).await;
        if attempt.status() == StatusCode::OK {
            current = Some(tokens_from(attempt).await);
            break;
        }
    }
    // Presenting a retired one may have revoked the grant (reuse); then no
    // token works, which is also consistent. Check there is no half state.
    match current {
        Some(tokens) => assert!(works_at_mcp(&gateway, &tokens).await),
        None => {
            for tokens in &issued {
                assert!(!works_at_mcp(&gateway, tokens).await);
            }
        }
    }
}
on_both_backends!(concurrent_refreshes_leave_one_current_token);

/// F6: twenty concurrent refreshes of one token leave exactly one live
/// pair: one access token that works and one refresh token that refreshes.
async fn concurrent_refreshes_leave_exactly_one_live_pair(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let attempts =
        futures::future::join_all((0..20).map(|_| gateway.refresh(&client, &first.refresh_token)))
            .await;
    let mut issued = Vec::new();
    for response in attempts {
        if response.status() == StatusCode::OK {
            issued.push(tokens_from(response).await);
        }
    }
    assert!(!issued.is_empty());
    let mut live = Vec::new();
    for tokens in &issued {
        if works_at_mcp(&gateway, tokens).await {
            live.push(tokens);
        }
    }
    assert_eq!(
        live.len(),
        1,
        "live access tokens among {} issued",
        issued.len()
    );
    assert_eq!(
        gateway
            .refresh(&client, &live[0].refresh_token)
            .await
            .status(),
        StatusCode::OK
    );
}
on_both_backends!(concurrent_refreshes_leave_exactly_one_live_pair);

/// F6: the previous token's grace is bounded: used after it, it is reuse,
/// and the grant ends.
async fn the_previous_token_is_reuse_once_its_grace_has_passed(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let second = tokens_from(gateway.refresh(&client, &first.refresh_token).await).await;
    gateway.clock.advance(11);
    let late = gateway.refresh(&client, &first.refresh_token).await;
    assert_eq!(error_of(late).await, "invalid_grant");
    assert!(
        !works_at_mcp(&gateway, &second).await,
        "reuse revokes the grant"
    );
}
on_both_backends!(the_previous_token_is_reuse_once_its_grace_has_passed);

/// #24
async fn refresh_never_widens_the_scope(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let wider = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &first.refresh_token),
                ("scope", "gitea admin"),
            ],
        )
        .await;
    assert_eq!(error_of(wider).await, "invalid_scope");
    let same = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &first.refresh_token),
                ("scope", "gitea:read"),
            ],
        )
        .await;
    assert_eq!(same.status(), StatusCode::OK);
    assert_eq!(tokens_from(same).await.body["scope"], "gitea:read");
}
on_both_backends!(refresh_never_widens_the_scope);

/// #25: another client cannot use the refresh token, and trying changes
/// nothing for its owner.
async fn a_refresh_token_is_bound_to_its_client(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let thief = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    assert_eq!(
        error_of(gateway.refresh(&thief, &first.refresh_token).await).await,
        "invalid_grant"
    );
    let own = gateway.refresh(&client, &first.refresh_token).await;
    assert_eq!(own.status(), StatusCode::OK);
}
on_both_backends!(a_refresh_token_is_bound_to_its_client);

async fn an_expired_refresh_token_is_invalid_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    gateway.clock.advance(30 * 24 * 3600 + 1);
    assert_eq!(
        error_of(gateway.refresh(&client, &first.refresh_token).await).await,
        "invalid_grant"
    );
}
on_both_backends!(an_expired_refresh_token_is_invalid_grant);
