//! The browser pages for people: the page session (sign-in with Gitea),
//! `/account` (one's own connected clients) and `/admin` (everyone's).
//! What every page shares (layout, headers, error page, cookies) is the
//! page kit (`crate::page_kit`), which the consent page uses too. The
//! routes are declared in the HTTP layer.

pub mod account;
pub mod activity;
pub mod admin;
pub mod confirm;
pub mod connections;
pub mod everyone;
pub mod policy_view;
pub mod session;
