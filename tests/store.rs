//! The store's specification, one behaviour per test.
//!
//! Every behaviour is written once, as an async fn over a `Fixture`
//! (`store_spec/`, one file per table group), and run twice by `spec!`: as
//! `sqlite::NAME` against a real SQLite file in a temporary directory, and
//! as `postgres::NAME` against a fresh database on a PostgreSQL server:
//! `AEGIS_TEST_POSTGRES_URL`'s, or a throwaway cluster the test process
//! starts (`support/postgres.rs`). The PostgreSQL variants are ignored by a
//! plain `cargo test` and run with `cargo test --test store -- --ignored`.
//! Tests about the SQLite file itself are `store_spec::opening::sqlite_file::…`.

#[path = "support/postgres.rs"]
mod postgres_cluster;
mod store_spec;

/// Emits `sqlite::NAME` and `postgres::NAME` for each `group::NAME`.
macro_rules! spec {
    ($($group:ident :: $name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let fixture = crate::store_spec::fixture::Fixture::sqlite();
                    crate::store_spec::$group::$name(&fixture).await;
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "PostgreSQL: run with `cargo test -- --ignored` (a throwaway cluster of its own, or AEGIS_TEST_POSTGRES_URL)"]
                async fn $name() {
                    let fixture = crate::store_spec::fixture::Fixture::postgres().await;
                    crate::store_spec::$group::$name(&fixture).await;
                    fixture.drop_database().await;
                }
            )+
        }
    };
}

spec!(
    opening::migrations_apply_again_on_reopen,
    opening::reports_its_backend_and_answers_ping,
    schema::a_new_store_records_every_migration_as_applied_by_this_binary,
    schema::a_store_from_before_the_history_gets_one_naming_no_applier,
    schema::a_store_behind_is_migrated_and_its_history_names_this_binary,
    schema::a_store_behind_under_never_is_refused_and_nothing_is_written,
    schema::a_newer_store_whose_new_steps_expand_is_served,
    schema::a_newer_store_whose_step_contracts_past_this_binary_is_refused,
    schema::the_schema_status_reads_the_store_as_it_is_now,
    schema::the_opening_keeps_its_indexes_outside_the_migrations,
    compatibility::each_expanding_migration_only_adds,
    listing::a_page_of_live_grants_is_newest_first_filtered_and_counted,
    listing::a_login_filter_finds_the_login_without_regard_to_case,
    listing::a_long_list_is_counted_only_so_far_past_the_page,
    listing::a_page_of_clients_counts_each_ones_live_grants,
    listing::a_pages_clients_are_looked_up_together_and_unknown_ones_left_out,
    clients::client_round_trips,
    clients::full_client_table_evicts_stale_grantless_registrations,
    clients::full_client_table_refuses_when_nothing_is_stale,
    clients::metadata_client_upsert_replaces_the_cached_document,
    clients::delete_client_revokes_its_grants,
    clients::a_network_holds_at_most_its_allowance_of_unused_registrations,
    clients::two_hundred_connects_in_an_hour_from_one_network_all_register,
    clients::a_flood_of_unused_registrations_stops_at_the_allowance,
    clients::unused_registrations_are_pruned_after_an_hour,
    registrations::one_login_connects_a_bounded_number_of_new_clients_an_hour,
    registrations::a_used_registration_whose_grants_all_ended_is_removed_a_day_later,
    registrations::the_per_login_grant_cap_removes_the_clients_it_orphans,
    registrations::the_last_tenth_of_the_table_is_kept_for_networks_that_hold_little,
    registrations::every_client_and_grant_of_a_login_goes_at_once,
    registrations::every_client_and_grant_of_a_network_goes_at_once,
    clients::a_table_filled_by_unused_registrations_frees_up_within_an_hour,
    pending::pending_round_trips_until_it_expires,
    pending::pending_cap_counts_only_unexpired_requests,
    pending::concurrent_capped_inserts_never_exceed_the_cap,
    pending::approve_pending_succeeds_only_once,
    pending::concurrent_approvals_have_one_winner,
    pending::take_pending_by_upstream_state_is_single_use,
    pending::delete_pending_reports_whether_it_existed,
    codes::code_redemption_is_exactly_once_under_concurrency,
    codes::a_spent_code_replays_as_already_redeemed,
    codes::an_expired_unspent_code_is_unknown,
    codes::code_cap_counts_only_unexpired_codes,
    codes::a_sign_in_is_stored_whole_or_not_at_all,
    refresh::an_active_refresh_token_rotates,
    refresh::a_previous_token_is_honoured_until_its_successor_is_used,
    refresh::using_the_successor_retires_the_previous_token,
    refresh::reuse_of_a_retired_token_revokes_the_grant,
    refresh::a_refresh_token_of_another_client_changes_nothing,
    refresh::concurrent_rotations_leave_exactly_one_active_refresh_token,
    refresh::expired_or_unknown_refresh_tokens_are_invalid,
    grants::access_tokens_resolve_until_expiry_or_revocation,
    grants::a_revocation_elsewhere_is_seen_within_the_stale_bound,
    grants::revoke_grant_deletes_its_tokens_and_codes,
    grants::tokens_for_a_revoked_grant_are_not_stored,
    grants::grants_per_login_cap_revokes_the_least_recently_used,
    grants::lists_show_activated_unrevoked_grants_newest_first,
    grants::gitea_tokens_can_be_replaced,
    grants::a_grant_keeps_the_gitea_application_of_its_session,
    grants::an_older_token_pair_never_overwrites_a_newer_one,
    grants::a_revoked_grant_gets_no_new_gitea_tokens,
    grants::revocation_at_a_replaced_version_ends_nothing,
    grants::the_upstream_refresh_lock_excludes_other_replicas,
    grants::consent_can_be_recorded_repeatedly,
    at_rest::secrets_are_not_stored_in_plaintext,
    at_rest::rekey_moves_every_value_to_the_newest_key,
    at_rest::a_store_under_a_wrong_key_fails_verification_naming_the_table,
    maintenance::prune_removes_what_expired_and_counts_it,
    page_sessions::page_session_round_trips_with_its_token_encrypted_at_rest,
    page_sessions::a_page_session_ends_when_it_expires,
    page_sessions::sign_out_deletes_a_page_session_once,
    page_sessions::page_sessions_per_login_cap_deletes_the_oldest,
    page_sessions::concurrent_page_session_inserts_never_exceed_the_cap,
    page_sessions::prune_removes_expired_page_sessions_and_counts_them,
    page_sessions::rekey_covers_page_sessions,
    page_sessions::a_page_session_under_a_wrong_key_is_undecryptable,
    page_sessions::revoke_grants_for_login_revokes_only_that_login,
    activity::calls_add_up_per_connection_and_hour_across_batches,
    activity::each_connection_keeps_its_last_twenty_calls,
    activity::top_tools_count_every_call_of_the_period,
    activity::figures_past_their_retention_are_pruned,
    confirmations::only_its_person_decides_a_confirmation_and_only_once,
    confirmations::an_approval_is_spent_exactly_once_under_concurrency,
    confirmations::an_expired_confirmation_can_be_neither_decided_nor_spent,
    confirmations::a_retry_finds_the_newest_open_request_of_its_grant_and_call,
    confirmations::pending_confirmations_are_bounded_per_grant,
    confirmations::rekey_covers_confirmations,
    confirmations::a_confirmations_summary_and_arguments_are_not_stored_in_plaintext,
);

/// Replicas sharing one store: PostgreSQL only (a SQLite store serves
/// one process, and refuses a file another is creating).
mod shared_store {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "PostgreSQL: run with `cargo test -- --ignored` (a throwaway cluster of its own, or AEGIS_TEST_POSTGRES_URL)"]
    async fn openings_at_the_same_moment_all_open_the_new_store() {
        let fixture = crate::store_spec::fixture::Fixture::postgres().await;
        crate::store_spec::schema::openings_at_the_same_moment_all_open_the_new_store(&fixture)
            .await;
        fixture.drop_database().await;
    }
}

/// The two migration dialects against each other: PostgreSQL only (it
/// compares with a SQLite file of its own).
mod dialects {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "PostgreSQL: run with `cargo test -- --ignored` (a throwaway cluster of its own, or AEGIS_TEST_POSTGRES_URL)"]
    async fn both_dialects_give_the_same_schema() {
        let fixture = crate::store_spec::fixture::Fixture::postgres().await;
        crate::store_spec::dialects::both_dialects_give_the_same_schema(&fixture).await;
        fixture.drop_database().await;
    }
}
