//! Activity at a glance: each finished tool call of an OAuth connection is
//! noted here and written to the store in batches (`ActivityStore`), every
//! [`FLUSH_EVERY`], off the call's path. The figures feed `/account` and
//! `/admin`; they are a summary kept a few days, not a record (the audit
//! log is the record), so a crash may lose the last seconds of them.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::clock::Clock;
use crate::identity::Connection;
use crate::outcome::CallOutcome;
use crate::store::{ActivityNote, Store};

/// How often noted calls are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(2);
/// Calls held at most between writes; past it (a store down for long) the
/// newest are dropped and counted in the log.
const MAX_HELD: usize = 20_000;

pub struct ActivityRecorder {
    held: Mutex<Vec<ActivityNote>>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ActivityRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityRecorder").finish_non_exhaustive()
    }
}

impl ActivityRecorder {
    /// A recorder writing to `store`, with its writer task.
    pub fn spawn(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Arc<Self> {
        let recorder = Arc::new(Self {
            held: Mutex::new(Vec::new()),
            store,
            clock,
        });
        let weak: Weak<Self> = Arc::downgrade(&recorder);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(FLUSH_EVERY).await;
                let Some(recorder) = weak.upgrade() else {
                    return;
                };
                recorder.flush().await;
            }
        });
        recorder
    }

    /// Notes a finished call of `connection` (of `login`) to `tool`.
    pub fn note(&self, connection: &Connection, login: &str, tool: &str, outcome: CallOutcome) {
        let note = ActivityNote {
            grant_id: connection.grant_id.clone(),
            login: login.to_owned(),
            client_id: connection.client_id.clone(),
            tool: tool.to_owned(),
            outcome,
            at: self.clock.now(),
        };
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() < MAX_HELD {
            held.push(note);
        }
    }

    /// Writes what is held; on failure keeps it for the next round.
    pub async fn flush(&self) {
        let batch = std::mem::take(&mut *self.held.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() {
            return;
        }
        if let Err(err) = self.store.record_activity(&batch).await {
            tracing::warn!(error = %err, calls = batch.len(), "activity figures could not be written; kept for the next try");
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let room = MAX_HELD.saturating_sub(held.len());
            let dropped = batch.len().saturating_sub(room);
            if dropped > 0 {
                tracing::warn!(
                    calls = dropped,
                    "activity figures dropped: the store has been unavailable too long"
                );
            }
            let mut kept: Vec<ActivityNote> = batch.into_iter().take(room).collect();
            kept.append(&mut held);
            *held = kept;
        }
    }
}
