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
    /// This binary will not serve on the store's schema; the message says
    /// why and the way back (the CLI exits 3).
    #[error("{0}")]
    Schema(#[from] crate::store::schema::SchemaRefusal),
    #[error("not on this backend: {0}")]
    Unsupported(&'static str),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        Self::Database(err)
    }
}

impl StoreError {
    /// Whether the connection the operation ran on is gone: the server
    /// ended the session (PostgreSQL's class 57P, "operator intervention",
    /// as a restart or `pg_terminate_backend` does; class 08, connection
    /// exceptions) or the socket failed. Another connection may well work.
    pub fn is_lost_connection(&self) -> bool {
        match self {
            Self::Database(sqlx::Error::Io(_)) => true,
            Self::Database(sqlx::Error::Database(err)) => err
                .code()
                .is_some_and(|code| code.starts_with("57P") || code.starts_with("08")),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_socket_is_a_lost_connection() {
        let err = StoreError::Database(sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert!(err.is_lost_connection());
    }

    #[test]
    fn a_full_store_or_a_timeout_is_not_a_lost_connection() {
        assert!(!StoreError::Full { what: "clients" }.is_lost_connection());
        assert!(!StoreError::Database(sqlx::Error::PoolTimedOut).is_lost_connection());
        assert!(!StoreError::Corrupt("x").is_lost_connection());
    }
}
