//! The one way a write that can end a grant, or change what a token
//! resolves to, reaches the database: an [`EndingTx`]. The statements that
//! revoke, delete a client or replace a grant's Gitea session take one (not
//! a bare connection), and it commits only through [`EndingTx::commit`],
//! which moves the resolved tokens' generation on once the commit holds
//! (`super::resolved`). So no such write can leave this replica serving a
//! token it just ended; a test below reads the store's source for a
//! grant-ending statement outside one.

use std::ops::{Deref, DerefMut};

use sqlx::Transaction;

use super::backend::Backend;
use super::resolved::ResolvedCache;
use super::{SqlStore, StoreError};

/// A write transaction that may end a grant: committed with
/// [`EndingTx::commit`] or dropped (rolled back), never committed bare.
pub(super) struct EndingTx<'s, DB: Backend> {
    tx: Transaction<'static, DB>,
    resolved: &'s ResolvedCache,
}

impl<DB: Backend> SqlStore<DB> {
    /// A write transaction (see [`Backend::BEGIN_WRITE`]) for statements
    /// that may end a grant.
    pub(super) async fn begin_ending(&self) -> Result<EndingTx<'_, DB>, StoreError> {
        Ok(EndingTx {
            tx: self.pool.begin_with(DB::BEGIN_WRITE).await?,
            resolved: &self.resolved,
        })
    }
}

impl<DB: Backend> EndingTx<'_, DB> {
    /// Commits, then ends every resolved token cached before: the next
    /// lookup on this replica reads what was just written.
    pub(super) async fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().await?;
        self.resolved.invalidate();
        Ok(())
    }

    pub(super) async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await?;
        Ok(())
    }

    /// The transaction's connection, for a statement.
    pub(super) fn conn(&mut self) -> &mut DB::Connection {
        &mut self.tx
    }
}

impl<DB: Backend> Deref for EndingTx<'_, DB> {
    type Target = Transaction<'static, DB>;

    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl<DB: Backend> DerefMut for EndingTx<'_, DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

#[cfg(test)]
mod tests {
    /// The store's files, as written.
    const SOURCES: [(&str, &str); 5] = [
        ("clients.rs", include_str!("clients.rs")),
        ("grants.rs", include_str!("grants.rs")),
        ("tokens.rs", include_str!("tokens.rs")),
        ("mod.rs", include_str!("mod.rs")),
        ("codes.rs", include_str!("codes.rs")),
    ];

    /// Statements that end a grant or change what its tokens resolve to.
    const ENDING_STATEMENTS: [&str; 5] = [
        "UPDATE grants SET revoked_at",
        "DELETE FROM tokens WHERE grant_id",
        "gitea_tokens_version = gitea_tokens_version + 1",
        "DELETE FROM clients WHERE client_id",
        "UPDATE tokens SET",
    ];

    /// The function around byte `at` of `source`: from its `fn` to `at`.
    fn enclosing_fn(source: &str, at: usize) -> &str {
        let start = source[..at].rfind("fn ").unwrap_or(0);
        &source[start..at]
    }

    #[test]
    fn every_grant_ending_statement_runs_in_an_ending_transaction() {
        let mut outside = Vec::new();
        for (file, source) in SOURCES {
            for statement in ENDING_STATEMENTS {
                for (at, _) in source.match_indices(statement) {
                    let function = enclosing_fn(source, at);
                    if !function.contains("EndingTx") && !function.contains("begin_ending") {
                        let name: String = function
                            .chars()
                            .skip(3)
                            .take_while(|c| *c != '(' && *c != '<')
                            .collect();
                        outside.push(format!("{file}: {name}: {statement}"));
                    }
                }
            }
        }
        assert!(
            outside.is_empty(),
            "grant-ending statements outside an EndingTx: {outside:#?}"
        );
    }

    #[test]
    fn only_an_ending_transactions_commit_ends_the_cached_tokens() {
        let calls: usize = SOURCES
            .iter()
            .map(|(_, source)| source.matches("resolved.invalidate()").count())
            .sum();
        assert_eq!(
            calls, 0,
            "the cache is invalidated by EndingTx::commit alone"
        );
    }
}
