//! Activity figures: calls per connection and hour, per connection, day
//! and tool, and each connection's last calls. A batch of finished calls
//! is summed here first, then written in one transaction of upserts that
//! add to what is there, so every replica adds to the same figures.

use crate::outcome::CallOutcome;
use std::collections::BTreeMap;

use async_trait::async_trait;

use super::backend::stmt;
use super::{Backend, SqlStore};
use crate::store::{
    ActivityNote, ActivityStore, HourActivity, RECENT_CALLS_KEPT, RecentCall, StoreError,
    ToolCount, UnixTime,
};

/// How long the figures are kept (8 days: the pages show 7).
pub(super) const ACTIVITY_RETENTION: i64 = 8 * 24 * 60 * 60;

const HOUR: i64 = 60 * 60;
const DAY: i64 = 24 * HOUR;

/// Per (grant, hour): login, client, calls, errors, refusals.
type HourSums<'a> = BTreeMap<(&'a str, i64), (&'a str, &'a str, i64, i64, i64)>;

/// Per (grant, day, tool): login, calls.
type ToolSums<'a> = BTreeMap<(&'a str, i64, &'a str), (&'a str, i64)>;

#[async_trait]
impl<DB: Backend> ActivityStore for SqlStore<DB> {
    async fn record_activity(&self, calls: &[ActivityNote]) -> Result<(), StoreError> {
        if calls.is_empty() {
            return Ok(());
        }
        let (hours, tools) = sum_calls(calls);
        let mut tx = self.begin_write().await?;
        Self::add_hour_sums(&mut tx, hours).await?;
        Self::add_tool_sums(&mut tx, tools).await?;
        Self::keep_recent_calls(&mut tx, calls).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn hourly_activity(
        &self,
        login: Option<&str>,
        since: UnixTime,
    ) -> Result<Vec<HourActivity>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = stmt::<DB>(
            "SELECT grant_id, login, client_id, hour, calls, errors, refusals FROM activity_hours \
             WHERE hour >= $1 AND ($2 = '' OR login = $2) ORDER BY grant_id, hour",
        )
        .bind(since)
        .bind(login.unwrap_or_default())
        .fetch_all(&mut conn)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(HourActivity {
                    grant_id: row.text("grant_id")?,
                    login: row.text("login")?,
                    client_id: row.text("client_id")?,
                    hour: row.int("hour")?,
                    calls: count(row.int("calls")?),
                    errors: count(row.int("errors")?),
                    refusals: count(row.int("refusals")?),
                })
            })
            .collect()
    }

    async fn recent_calls(&self, login: &str) -> Result<Vec<RecentCall>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = stmt::<DB>(
            "SELECT grant_id, at, tool, outcome FROM activity_recent WHERE login = $1 \
             ORDER BY id DESC LIMIT 2000",
        )
        .bind(login)
        .fetch_all(&mut conn)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(RecentCall {
                    grant_id: row.text("grant_id")?,
                    at: row.int("at")?,
                    tool: row.text("tool")?,
                    outcome: CallOutcome::parse(&row.text("outcome")?)
                        .ok_or(StoreError::Corrupt("activity outcome"))?,
                })
            })
            .collect()
    }

    async fn top_tools(
        &self,
        login: Option<&str>,
        since: UnixTime,
        limit: u64,
    ) -> Result<Vec<ToolCount>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = stmt::<DB>(
            "SELECT tool, CAST(SUM(calls) AS BIGINT) AS n FROM activity_tools \
             WHERE day >= $1 AND ($2 = '' OR login = $2) \
             GROUP BY tool ORDER BY n DESC, tool LIMIT $3",
        )
        .bind(since - since.rem_euclid(DAY))
        .bind(login.unwrap_or_default())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut conn)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ToolCount {
                    tool: row.text("tool")?,
                    calls: count(row.int("n")?),
                })
            })
            .collect()
    }
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The batch summed per connection and hour, and per connection, day and
/// tool.
fn sum_calls(calls: &[ActivityNote]) -> (HourSums<'_>, ToolSums<'_>) {
    let mut hours: HourSums<'_> = BTreeMap::new();
    let mut tools: ToolSums<'_> = BTreeMap::new();
    for call in calls {
        let sums = hours
            .entry((&call.grant_id, call.at - call.at.rem_euclid(HOUR)))
            .or_insert((&call.login, &call.client_id, 0, 0, 0));
        sums.2 += 1;
        match call.outcome {
            CallOutcome::Ok => {}
            CallOutcome::Error => sums.3 += 1,
            CallOutcome::Refused => sums.4 += 1,
        }
        tools
            .entry((
                &call.grant_id,
                call.at - call.at.rem_euclid(DAY),
                &call.tool,
            ))
            .or_insert((&call.login, 0))
            .1 += 1;
    }
    (hours, tools)
}

impl<DB: Backend> SqlStore<DB> {
    /// Adds the batch's hourly sums to `activity_hours`.
    async fn add_hour_sums(tx: &mut DB::Connection, hours: HourSums<'_>) -> Result<(), StoreError> {
        for ((grant_id, hour), (login, client_id, n, errors, refusals)) in hours {
            stmt::<DB>(
                "INSERT INTO activity_hours (grant_id, login, client_id, hour, calls, errors, refusals) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (grant_id, hour) DO UPDATE SET \
                 calls = activity_hours.calls + excluded.calls, \
                 errors = activity_hours.errors + excluded.errors, \
                 refusals = activity_hours.refusals + excluded.refusals",
            )
            .bind(grant_id)
            .bind(login)
            .bind(client_id)
            .bind(hour)
            .bind(n)
            .bind(errors)
            .bind(refusals)
            .execute(&mut *tx)
            .await?;
        }
        Ok(())
    }

    /// Adds the batch's daily calls per tool to `activity_tools`.
    async fn add_tool_sums(tx: &mut DB::Connection, tools: ToolSums<'_>) -> Result<(), StoreError> {
        for ((grant_id, day, tool), (login, n)) in tools {
            stmt::<DB>(
                "INSERT INTO activity_tools (grant_id, login, day, tool, calls) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (grant_id, day, tool) DO UPDATE SET \
                 calls = activity_tools.calls + excluded.calls",
            )
            .bind(grant_id)
            .bind(login)
            .bind(day)
            .bind(tool)
            .bind(n)
            .execute(&mut *tx)
            .await?;
        }
        Ok(())
    }

    /// Adds the batch's newest calls of each connection to
    /// `activity_recent`, and trims each to [`RECENT_CALLS_KEPT`].
    async fn keep_recent_calls(
        tx: &mut DB::Connection,
        calls: &[ActivityNote],
    ) -> Result<(), StoreError> {
        // Only the newest few of each connection matter; `seen` ends up
        // holding every connection of the batch, whose rows are trimmed.
        let mut seen: BTreeMap<&str, u64> = BTreeMap::new();
        let mut newest: Vec<&ActivityNote> = calls
            .iter()
            .rev()
            .filter(|call| {
                let n = seen.entry(&call.grant_id).or_insert(0);
                *n += 1;
                *n <= RECENT_CALLS_KEPT
            })
            .collect();
        newest.reverse();
        for call in newest {
            stmt::<DB>(
                "INSERT INTO activity_recent (grant_id, login, at, tool, outcome) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&call.grant_id)
            .bind(&call.login)
            .bind(call.at)
            .bind(&call.tool)
            .bind(call.outcome.as_str())
            .execute(&mut *tx)
            .await?;
        }
        for grant_id in seen.into_keys() {
            stmt::<DB>(
                "DELETE FROM activity_recent WHERE grant_id = $1 AND id NOT IN \
                 (SELECT id FROM activity_recent WHERE grant_id = $1 ORDER BY id DESC LIMIT $2)",
            )
            .bind(grant_id)
            .bind(RECENT_CALLS_KEPT as i64)
            .execute(&mut *tx)
            .await?;
        }
        Ok(())
    }
}
