//! Everyone's activity on `/admin`: the busiest people and clients of the
//! last 7 days, charted, and the most called tools. Worked out from every
//! connection's hours, which grow with the team (5,000 people over a week
//! are a few hundred thousand rows), so it is recomputed at most once every
//! [`FRESH_FOR`] for all administrators together, not on each view (issue
//! 55); a chart of a week's hours moves little in a minute.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::account::{ActivityItem, clients_by_id};
use super::activity::{chart_start, hourly_chart};
use crate::oauth::OAuthServer;
use crate::store::{HourActivity, StoreError, ToolCount, UnixTime};

/// How long one computation of the charts is shown.
pub const FRESH_FOR: Duration = Duration::from_secs(60);
/// How many users and clients the activity section charts at most.
const CHARTED: usize = 20;

/// The charts as last computed.
#[derive(Debug, Clone)]
pub struct Everyone {
    pub users: Vec<ActivityItem>,
    pub clients: Vec<ActivityItem>,
    pub top_tools: Vec<ToolCount>,
}

/// The charts of one gateway, kept for [`FRESH_FOR`] (a request extension
/// of the page routes, one per application).
#[derive(Debug, Default)]
pub struct EveryonesCharts(Mutex<Option<(Instant, Arc<Everyone>)>>);

impl EveryonesCharts {
    /// The charts as of at most [`FRESH_FOR`] ago.
    pub async fn get(
        &self,
        server: &OAuthServer,
        now: UnixTime,
    ) -> Result<Arc<Everyone>, StoreError> {
        if let Some((at, charts)) = &*self.0.lock().unwrap_or_else(|e| e.into_inner())
            && at.elapsed() < FRESH_FOR
        {
            return Ok(charts.clone());
        }
        let charts = Arc::new(compute(server, now).await?);
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), charts.clone()));
        Ok(charts)
    }
}

async fn compute(server: &OAuthServer, now: UnixTime) -> Result<Everyone, StoreError> {
    let store = server.store();
    let hours = store.hourly_activity(None, chart_start(now)).await?;
    let users = charts_by(&hours, |h| h.login.as_str(), str::to_owned, now);
    let busiest_clients = charts_by(&hours, |h| h.client_id.as_str(), str::to_owned, now);
    let named = clients_by_id(server, busiest_clients.iter().map(|c| c.name.as_str())).await?;
    let names: HashMap<&str, String> = named
        .iter()
        .map(|(id, c)| {
            (
                id.as_str(),
                c.client_name.clone().unwrap_or_else(|| id.clone()),
            )
        })
        .collect();
    let clients = busiest_clients
        .into_iter()
        .map(|mut item| {
            if let Some(name) = names.get(item.name.as_str()) {
                item.name = name.clone();
            }
            item
        })
        .collect();
    Ok(Everyone {
        users,
        clients,
        top_tools: store.top_tools(None, chart_start(now), 10).await?,
    })
}

/// One chart per distinct key of `hours` (a user, a client), busiest first.
fn charts_by<'a>(
    hours: &'a [HourActivity],
    key: impl Fn(&'a HourActivity) -> &'a str,
    name: impl Fn(&str) -> String,
    now: UnixTime,
) -> Vec<ActivityItem> {
    let mut by_key: HashMap<&str, Vec<&HourActivity>> = HashMap::new();
    for hour in hours {
        by_key.entry(key(hour)).or_default().push(hour);
    }
    let mut items: Vec<ActivityItem> = by_key
        .into_iter()
        .map(|(k, hours)| ActivityItem {
            name: name(k),
            tools_at: String::new(),
            chart: hourly_chart(hours, now),
            recent: Vec::new(),
        })
        .filter(|item| item.chart.calls > 0)
        .collect();
    items.sort_by(|a, b| b.chart.calls.cmp(&a.chart.calls).then(a.name.cmp(&b.name)));
    items.truncate(CHARTED);
    items
}
