//! Rate-limit windows shared by the processes on one PostgreSQL store:
//! hits per key and minute in `rate_limit_hits`, counted by one atomic
//! upsert per check. SQLite serves one process, whose in-memory windows
//! are exact; there the table stays empty.

use async_trait::async_trait;

use super::backend::stmt;
use super::{Backend, SqlStore};
use crate::store::{RateLimitStore, StoreError};

/// The end of the upsert: count, then return each key's totals.
/// `$minute` is the placeholder of the minute.
macro_rules! upsert_tail {
    ($minute:literal) => {
        concat!(
            "ON CONFLICT (key, minute) DO UPDATE SET hits = rate_limit_hits.hits + 1 \
             RETURNING key, hits, COALESCE((SELECT p.hits FROM rate_limit_hits p \
             WHERE p.key = rate_limit_hits.key AND p.minute = ",
            $minute,
            " - 1), 0) AS previous"
        )
    };
}

/// Buckets older than this many minutes can no longer be read by a
/// sliding window (the current and the previous minute): pruned.
pub(super) const KEPT_MINUTES: i64 = 2;

#[async_trait]
impl<DB: Backend> RateLimitStore for SqlStore<DB> {
    fn shares_rate_limits(&self) -> bool {
        DB::SHARED_BY_PROCESSES
    }

    async fn add_rate_limit_hits(
        &self,
        keys: &[&str],
        minute: i64,
    ) -> Result<Vec<(u64, u64)>, StoreError> {
        // One upsert counts the hits and returns each minute's total; the
        // sub-select reads the minute before. Statements are static text,
        // so one per key count.
        let query = match keys {
            [one] => stmt::<DB>(concat!(
                "INSERT INTO rate_limit_hits (key, minute, hits) VALUES ($1, $2, 1) ",
                upsert_tail!("$2")
            ))
            .bind(*one)
            .bind(minute),
            [one, two] => stmt::<DB>(concat!(
                "INSERT INTO rate_limit_hits (key, minute, hits) VALUES ($1, $3, 1), ($2, $3, 1) ",
                upsert_tail!("$3")
            ))
            .bind(*one)
            .bind(*two)
            .bind(minute),
            _ => return Err(StoreError::Corrupt("one or two rate-limit keys per check")),
        };
        let mut conn = self.conn().await?;
        let rows = query.fetch_all(&mut conn).await?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        let mut counted = Vec::with_capacity(keys.len());
        for key in keys {
            let row = rows
                .iter()
                .find(|row| row.text("key").is_ok_and(|k| k == *key))
                .ok_or(StoreError::Corrupt("the rate-limit upsert skipped a key"))?;
            counted.push((count(row.int("hits")?), count(row.int("previous")?)));
        }
        Ok(counted)
    }

    async fn remove_rate_limit_hits(&self, keys: &[&str], minute: i64) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        stmt::<DB>(
            "UPDATE rate_limit_hits SET hits = hits - 1 \
             WHERE key IN ($1, $2) AND minute = $3 AND hits > 0",
        )
        .bind(keys.first().copied().unwrap_or(""))
        .bind(keys.get(1).copied().unwrap_or(""))
        .bind(minute)
        .execute(&mut conn)
        .await?;
        Ok(())
    }
}
