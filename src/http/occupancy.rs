//! Who holds the listener's connection slots: every open connection with
//! the network it counts against and its [`ConnectionWatch`], and which
//! connection gives its slot up when a new one finds them all taken.
//!
//! The caps: `MAX_CONNECTIONS` for everyone together, and
//! `MAX_CONNECTIONS_PER_IP` per client, counted per IPv4 address and per
//! IPv6 /64, as the rate limiter counts (one machine holds a whole /64: the
//! red team's F2, issue 53); the trusted proxies of `FORWARDED_ALLOW_IPS`
//! are not capped per address (every connection behind a balancer comes
//! from it).
//!
//! At a cap a new connection takes the slot of the connection that has sat
//! idle longest (no request in flight, no head arriving, no answer
//! stalled), a client's before a trusted proxy's: holding slots with idle
//! connections then buys nothing (F2: 64 addresses held all 4,096 slots for
//! 6.6 requests a second). Only when every connection in the way is busy is
//! the new one closed at once.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::connection_watch::ConnectionWatch;
use super::listener::ConnectionLimits;

/// The network a client's connections count against: an IPv4 address (an
/// IPv4-mapped IPv6 address as its IPv4 one), or an IPv6 /64.
pub(super) fn network_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(std::net::Ipv6Addr::from(prefix))
            }
        },
    }
}

/// One open connection.
struct Held {
    /// The network it counts against; `None` for a trusted proxy.
    network: Option<IpAddr>,
    watch: Arc<ConnectionWatch>,
}

/// The open connections of one listener.
#[derive(Default)]
pub(super) struct Occupancy {
    held: HashMap<u64, Held>,
    per_network: HashMap<IpAddr, usize>,
    next_id: u64,
    /// `aegis_connections_open`, when metrics are kept.
    gauge: Option<prometheus_client::metrics::gauge::Gauge>,
}

impl Occupancy {
    pub(super) fn with_gauge(gauge: prometheus_client::metrics::gauge::Gauge) -> Self {
        Self {
            gauge: Some(gauge),
            ..Self::default()
        }
    }

    fn total(&self) -> usize {
        self.held.len()
    }

    /// The connection idle longest among those `from` accepts, a client's
    /// before a proxy's.
    fn longest_idle(&self, from: impl Fn(&Held) -> bool) -> Option<u64> {
        self.held
            .iter()
            .filter(|(_, held)| from(held))
            .filter_map(|(id, held)| held.watch.idle_since().map(|since| (since, *id, held)))
            .min_by_key(|(since, _, held)| (held.network.is_none(), *since))
            .map(|(_, id, _)| id)
    }

    /// Takes a connection's slot back: it closes at once and gives the slot
    /// up when its task ends.
    fn evict(&self, id: u64) {
        if let Some(held) = self.held.get(&id) {
            held.watch.evict();
        }
    }

    fn release(&mut self, id: u64) {
        if let Some(held) = self.held.remove(&id)
            && let Some(network) = held.network
            && let Some(count) = self.per_network.get_mut(&network)
        {
            *count -= 1;
            if *count == 0 {
                self.per_network.remove(&network);
            }
        }
        if let Some(gauge) = &self.gauge {
            gauge.set(self.held.len() as i64);
        }
    }
}

/// One connection's slot; dropping it gives the slot back.
pub(super) struct Slot {
    occupancy: Arc<Mutex<Occupancy>>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.occupancy).release(self.id);
    }
}

pub(super) fn lock(occupancy: &Mutex<Occupancy>) -> std::sync::MutexGuard<'_, Occupancy> {
    // The counters stay consistent even if a holder panicked.
    occupancy
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `ip` is one of the trusted proxies.
pub(super) fn is_proxy(limits: &ConnectionLimits, ip: IpAddr) -> bool {
    limits.exempt.iter().any(|net| net.contains(&ip))
}

/// A slot for a connection from `ip` watched by `watch`: a free one, or
/// the one an idle connection in the way gives up (evicted); `None` when
/// every connection in the way is busy.
pub(super) fn take_slot(
    occupancy: &Arc<Mutex<Occupancy>>,
    limits: &ConnectionLimits,
    ip: IpAddr,
    watch: Arc<ConnectionWatch>,
) -> Option<Slot> {
    let network = (!is_proxy(limits, ip)).then(|| network_of(ip));
    let mut state = lock(occupancy);
    if let Some(network) = network
        && state.per_network.get(&network).copied().unwrap_or(0) >= limits.max_per_ip
    {
        // The network's own longest idle connection makes room.
        let id = state.longest_idle(|held| held.network == Some(network))?;
        state.evict(id);
        state.release(id);
    }
    if state.total() >= limits.max_connections {
        let id = state.longest_idle(|_| true)?;
        state.evict(id);
        state.release(id);
    }
    let id = state.next_id;
    state.next_id += 1;
    if let Some(network) = network {
        *state.per_network.entry(network).or_insert(0) += 1;
    }
    state.held.insert(id, Held { network, watch });
    if let Some(gauge) = &state.gauge {
        gauge.set(state.total() as i64);
    }
    Some(Slot {
        occupancy: occupancy.clone(),
        id,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits(max: usize, per_ip: usize) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: max,
            max_per_ip: per_ip,
            exempt: vec!["10.0.0.1/32".parse().unwrap()],
            idle_timeout: Duration::from_secs(620),
        }
    }

    /// A connection in the middle of a request (never idle).
    fn busy() -> Arc<ConnectionWatch> {
        let watch = ConnectionWatch::new(Duration::from_secs(620));
        std::mem::forget(watch.request_started());
        watch
    }

    /// A connection waiting for its next request.
    fn idle() -> Arc<ConnectionWatch> {
        let watch = ConnectionWatch::new(Duration::from_secs(620));
        drop(watch.request_started());
        watch
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn total(occupancy: &Arc<Mutex<Occupancy>>) -> usize {
        lock(occupancy).total()
    }

    #[test]
    fn one_address_gets_at_most_its_share_of_busy_connections() {
        let occupancy = Arc::default();
        let limits = limits(100, 2);
        let a = take_slot(&occupancy, &limits, ip("192.0.2.7"), busy()).unwrap();
        let _b = take_slot(&occupancy, &limits, ip("192.0.2.7"), busy()).unwrap();
        assert!(take_slot(&occupancy, &limits, ip("192.0.2.7"), busy()).is_none());
        assert!(take_slot(&occupancy, &limits, ip("192.0.2.8"), busy()).is_some());
        drop(a);
        assert!(take_slot(&occupancy, &limits, ip("192.0.2.7"), busy()).is_some());
    }

    #[test]
    fn a_whole_ipv6_64_counts_as_one_client() {
        let occupancy = Arc::default();
        let limits = limits(100, 2);
        let _a = take_slot(&occupancy, &limits, ip("2001:db8:1:2::1"), busy()).unwrap();
        let _b = take_slot(&occupancy, &limits, ip("2001:db8:1:2:ffff::9"), busy()).unwrap();
        assert!(take_slot(&occupancy, &limits, ip("2001:db8:1:2:abcd::3"), busy()).is_none());
        assert!(take_slot(&occupancy, &limits, ip("2001:db8:1:3::1"), busy()).is_some());
        assert_eq!(network_of(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
    }

    #[test]
    fn busy_connections_hold_the_global_cap() {
        let occupancy = Arc::default();
        let limits = limits(2, 10);
        let _a = take_slot(&occupancy, &limits, ip("192.0.2.1"), busy()).unwrap();
        let _b = take_slot(&occupancy, &limits, ip("192.0.2.2"), busy()).unwrap();
        assert!(take_slot(&occupancy, &limits, ip("192.0.2.3"), busy()).is_none());
    }

    #[test]
    fn at_the_cap_a_new_client_takes_the_slot_of_the_connection_idle_longest() {
        let occupancy = Arc::default();
        let limits = limits(3, 10);
        let first = idle();
        std::thread::sleep(Duration::from_millis(5));
        let (second, third) = (idle(), busy());
        let _a = take_slot(&occupancy, &limits, ip("192.0.2.1"), first.clone()).unwrap();
        let _b = take_slot(&occupancy, &limits, ip("192.0.2.2"), second.clone()).unwrap();
        let _c = take_slot(&occupancy, &limits, ip("192.0.2.3"), third).unwrap();
        let _d = take_slot(&occupancy, &limits, ip("192.0.2.4"), busy()).unwrap();
        assert!(first.idle_since().is_none(), "evicted");
        assert!(second.idle_since().is_some(), "kept");
        assert_eq!(total(&occupancy), 3);
    }

    #[test]
    fn a_proxys_idle_connection_gives_way_only_after_every_clients() {
        let occupancy = Arc::default();
        let limits = limits(2, 10);
        let proxy = idle();
        std::thread::sleep(Duration::from_millis(5));
        let client = idle();
        let _a = take_slot(&occupancy, &limits, ip("10.0.0.1"), proxy.clone()).unwrap();
        let _b = take_slot(&occupancy, &limits, ip("192.0.2.2"), client.clone()).unwrap();
        let _c = take_slot(&occupancy, &limits, ip("192.0.2.3"), busy()).unwrap();
        assert!(client.idle_since().is_none(), "the client's gave way");
        assert!(proxy.idle_since().is_some(), "the older proxy's stayed");
    }

    #[test]
    fn an_address_at_its_share_gives_up_its_own_idle_connection_not_anothers() {
        let occupancy = Arc::default();
        let limits = limits(100, 1);
        let other = idle();
        let own = idle();
        let _a = take_slot(&occupancy, &limits, ip("192.0.2.9"), other.clone()).unwrap();
        let _b = take_slot(&occupancy, &limits, ip("192.0.2.7"), own.clone()).unwrap();
        let _c = take_slot(&occupancy, &limits, ip("192.0.2.7"), busy()).unwrap();
        assert!(own.idle_since().is_none());
        assert!(other.idle_since().is_some());
    }

    #[test]
    fn a_trusted_proxy_is_not_capped_per_address() {
        let occupancy = Arc::default();
        let limits = limits(100, 1);
        let held: Vec<_> = (0..5)
            .map(|_| take_slot(&occupancy, &limits, ip("10.0.0.1"), busy()).unwrap())
            .collect();
        assert_eq!(total(&occupancy), 5);
        drop(held);
        let state = lock(&occupancy);
        assert_eq!(state.total(), 0);
        assert!(state.per_network.is_empty());
    }
}
