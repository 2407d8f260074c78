//! The behaviours of `tests/store.rs`, by table group, and their fixture.

pub mod activity;
pub mod at_rest;
pub mod clients;
pub mod codes;
pub mod compatibility;
pub mod confirmations;
pub mod dialects;
pub mod fixture;
pub mod grants;
pub mod listing;
pub mod maintenance;
pub mod opening;
pub mod page_sessions;
pub mod pending;
pub mod refresh;
pub mod registrations;
pub mod schema;
