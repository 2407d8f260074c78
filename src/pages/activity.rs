//! Activity at a glance, as the pages show it: calls per hour over the
//! last 7 days as an SVG bar chart (no script; drawn by the server, styled
//! by the stylesheet under the same CSP), with errors and refusals marked,
//! and the last calls of a connection. Pure: the figures come from the
//! store (`ActivityStore`), already summed per connection and hour.

use std::collections::BTreeMap;

use crate::store::{HourActivity, RecentCall, UnixTime};

use super::connections::format_time;

/// The days a chart covers.
pub const DAYS: i64 = 7;
const HOUR: i64 = 3600;
const HOURS: i64 = DAYS * 24;
/// A bar's width and the gap after it, in SVG units.
const BAR: i64 = 3;
const GAP: i64 = 1;
/// The plot's height; a bar of the busiest hour fills it.
pub const CHART_HEIGHT: i64 = 48;

/// One hour's bar: a stack of calls that went well, errors and refusals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    pub x: i64,
    /// Top of each part and its height (SVG y grows downwards).
    pub ok_y: i64,
    pub ok_h: i64,
    pub error_y: i64,
    pub error_h: i64,
    pub refused_y: i64,
    pub refused_h: i64,
    /// What a pointer over it shows.
    pub title: String,
}

/// A 7-day chart of one connection, user or client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    pub width: i64,
    pub height: i64,
    /// Only hours with calls have a bar.
    pub bars: Vec<Bar>,
    pub calls: u64,
    pub errors: u64,
    pub refusals: u64,
    pub busiest: u64,
    /// Read aloud in place of the picture.
    pub label: String,
}

/// The first hour a chart drawn at `now` covers.
pub fn chart_start(now: UnixTime) -> UnixTime {
    now - now.rem_euclid(HOUR) - (HOURS - 1) * HOUR
}

/// The chart of `hours` (any mix of connections: summed per hour) as of
/// `now`; hours outside the last 7 days are left out.
pub fn hourly_chart<'a>(hours: impl IntoIterator<Item = &'a HourActivity>, now: UnixTime) -> Chart {
    let start = chart_start(now);
    let mut per_hour: BTreeMap<i64, (u64, u64, u64)> = BTreeMap::new();
    for hour in hours {
        if hour.hour < start || hour.hour > now {
            continue;
        }
        let sums = per_hour.entry((hour.hour - start) / HOUR).or_default();
        sums.0 += hour.calls;
        sums.1 += hour.errors;
        sums.2 += hour.refusals;
    }
    let busiest = per_hour.values().map(|s| s.0).max().unwrap_or(0);
    let scale = |n: u64| -> i64 {
        if busiest == 0 || n == 0 {
            return 0;
        }
        // At least one unit, so a single call in a busy week still shows.
        ((n as i64 * CHART_HEIGHT) / busiest as i64).max(1)
    };
    let mut chart = Chart {
        width: HOURS * (BAR + GAP),
        height: CHART_HEIGHT,
        bars: Vec::new(),
        calls: 0,
        errors: 0,
        refusals: 0,
        busiest,
        label: String::new(),
    };
    for (index, (calls, errors, refusals)) in per_hour {
        let failed = (errors + refusals).min(calls);
        let total_h = scale(calls);
        let refused_h = scale(refusals.min(calls)).min(total_h);
        let error_h = scale(errors.min(calls - refusals.min(calls))).min(total_h - refused_h);
        let ok_h = if calls > failed {
            total_h - refused_h - error_h
        } else {
            0
        };
        let refused_y = CHART_HEIGHT - refused_h;
        let error_y = refused_y - error_h;
        chart.bars.push(Bar {
            x: index * (BAR + GAP),
            ok_y: error_y - ok_h,
            ok_h,
            error_y,
            error_h,
            refused_y,
            refused_h,
            title: format!(
                "{}: {calls} call(s), {errors} error(s), {refusals} refused",
                format_time(start + index * HOUR)
            ),
        });
        chart.calls += calls;
        chart.errors += errors;
        chart.refusals += refusals;
    }
    chart.label = format!(
        "Calls per hour over the last {DAYS} days: {} in all, {} error(s), {} refused; the busiest hour had {busiest}.",
        chart.calls, chart.errors, chart.refusals
    );
    chart
}

/// One of the last calls, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentRow {
    pub tool: String,
    pub outcome: &'static str,
    pub at: String,
}

/// The last calls of connection `grant_id`, newest first.
pub fn recent_rows(calls: &[RecentCall], grant_id: &str) -> Vec<RecentRow> {
    calls
        .iter()
        .filter(|call| call.grant_id == grant_id)
        .map(|call| RecentRow {
            tool: call.tool.clone(),
            outcome: call.outcome.as_str(),
            at: format_time(call.at),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::CallOutcome;

    const NOW: i64 = 1_800_000_000;

    fn hour(at: i64, calls: u64, errors: u64, refusals: u64) -> HourActivity {
        HourActivity {
            grant_id: "g".into(),
            login: "alice".into(),
            client_id: "c".into(),
            hour: at - at.rem_euclid(HOUR),
            calls,
            errors,
            refusals,
        }
    }

    #[test]
    fn no_calls_draw_no_bars_and_say_so() {
        let chart = hourly_chart(&[], NOW);
        assert!(chart.bars.is_empty());
        assert_eq!(chart.calls, 0);
        assert!(chart.label.contains("0 in all"));
        assert_eq!(chart.width, 168 * 4);
    }

    #[test]
    fn the_busiest_hour_fills_the_height_and_the_current_hour_is_the_last_bar() {
        let chart = hourly_chart(&[hour(NOW, 10, 0, 0), hour(NOW - 2 * HOUR, 5, 0, 0)], NOW);
        let last = chart.bars.last().unwrap();
        assert_eq!(last.x, 167 * 4);
        assert_eq!((last.ok_y, last.ok_h), (0, CHART_HEIGHT));
        assert_eq!(chart.bars[0].ok_h, CHART_HEIGHT / 2);
        assert_eq!(chart.calls, 15);
    }

    #[test]
    fn errors_and_refusals_are_stacked_at_the_bottom_of_their_bar() {
        let chart = hourly_chart(&[hour(NOW, 8, 2, 2)], NOW);
        let bar = &chart.bars[0];
        assert_eq!(bar.refused_h, 12);
        assert_eq!(bar.error_h, 12);
        assert_eq!(bar.ok_h, 24);
        assert_eq!(bar.refused_y + bar.refused_h, CHART_HEIGHT);
        assert_eq!(bar.error_y + bar.error_h, bar.refused_y);
        assert_eq!(bar.ok_y + bar.ok_h, bar.error_y);
        assert!(bar.title.contains("8 call(s), 2 error(s), 2 refused"));
    }

    #[test]
    fn a_lone_call_in_a_busy_week_still_shows() {
        let chart = hourly_chart(&[hour(NOW, 1000, 0, 0), hour(NOW - HOUR, 1, 1, 0)], NOW);
        assert_eq!(chart.bars[0].error_h, 1);
    }

    #[test]
    fn hours_older_than_seven_days_are_left_out_and_hours_of_several_connections_add_up() {
        let old = hour(NOW - 7 * 24 * HOUR, 50, 0, 0);
        let other = HourActivity {
            grant_id: "g2".into(),
            ..hour(NOW, 3, 0, 1)
        };
        let chart = hourly_chart(&[old, hour(NOW, 2, 1, 0), other], NOW);
        assert_eq!(chart.bars.len(), 1);
        assert_eq!((chart.calls, chart.errors, chart.refusals), (5, 1, 1));
    }

    #[test]
    fn recent_rows_are_those_of_the_connection() {
        let calls = [
            RecentCall {
                grant_id: "g1".into(),
                tool: "gitea_repo_get".into(),
                outcome: CallOutcome::Refused,
                at: NOW,
            },
            RecentCall {
                grant_id: "g2".into(),
                tool: "other".into(),
                outcome: CallOutcome::Ok,
                at: NOW,
            },
        ];
        let rows = recent_rows(&calls, "g1");
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].tool.as_str(), rows[0].outcome),
            ("gitea_repo_get", "refused")
        );
    }
}
