//! The store's one error type.

/// Storage failures. None of them carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store is full ({what})")]
    Full { what: &'static str },
    #[error("the quota is spent ({what})")]
    QuotaSpent { what: &'static str },
    #[error("a {table} row ({row}) could not be decrypted with any TOKEN_ENCRYPTION_KEY")]
    Undecryptable { table: &'static str, row: String },
    #[error("the store refused the operation: {0}")]
    Database(#[source] sqlx::Error),
    #[error("store migrations failed: {0}")]
    Migration(#[source] sqlx::migrate::MigrateError),
    #[error("the store could not be opened: {0}")]
    Open(String),
    #[error("a stored value is malformed ({0})")]
    Corrupt(&'static str),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        Self::Database(err)
    }
}
