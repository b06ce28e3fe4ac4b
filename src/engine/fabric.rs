//! The seam between the event loop ([`super::core`]) and a network model.
//!
//! The loop decides *when* a message may enter the network (its send was
//! posted, its rendezvous matched); a [`Fabric`] decides *when its last byte
//! arrives*. Four fabrics:
//! - [`super::loggops::Reservation`]: LogGOPS per-byte gap on k NIC lanes plus
//!   first-come reservations of the routed links (LogGOPSim with contention);
//! - [`super::flow::FlowFabric`]: fluid flows sharing link bandwidth max-min
//!   fairly (or SimGrid's CM02 weighting), rates recomputed on every change;
//! - [`super::congestion::RoundFixed`]: each message takes a duration fixed when it
//!   starts (the ORCS congestion model of the network-noise paper, §3);
//! - [`super::packet::PacketFabric`]: packets through finite, credit-controlled
//!   virtual-channel buffers, virtual cut-through.
//!
//! Time is integer picoseconds ([`Ps`]) everywhere in the engine.

use std::collections::{BTreeMap, VecDeque};

/// Simulated time in picoseconds (2^64 ps ≈ 213 days).
pub type Ps = u64;

/// Picoseconds per second.
pub const PS_PER_S: f64 = 1e12;

/// A duration given in (possibly fractional) ps, rounded up, except that a
/// value within 1e-9 (relative) above an integer is that integer: products
/// such as `bytes · (1e12 / bandwidth)` carry floating-point excess that must
/// not add a picosecond per message.
pub fn ceil_ps(x: f64) -> Ps {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let below = x.floor();
    if x - below <= 1e-9 * x.max(1.0) {
        below as Ps
    } else {
        x.ceil() as Ps
    }
}

/// A priority queue of items by time, first in first out among equal
/// times (the `(time, sequence)` order). Collective schedules put many
/// events on few distinct instants (every rank of a round at once), so
/// items are grouped per instant: the ordered map holds one entry per
/// distinct time, and an item costs O(1) within its instant.
#[derive(Debug)]
pub struct TimeQueue<T> {
    at: BTreeMap<Ps, VecDeque<T>>,
    spare: Vec<VecDeque<T>>,
}

impl<T> Default for TimeQueue<T> {
    fn default() -> Self {
        TimeQueue {
            at: BTreeMap::new(),
            spare: Vec::new(),
        }
    }
}

impl<T> TimeQueue<T> {
    pub fn push(&mut self, t: Ps, item: T) {
        let spare = &mut self.spare;
        self.at
            .entry(t)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(item);
    }

    pub fn next(&self) -> Option<Ps> {
        self.at.first_key_value().map(|(t, _)| *t)
    }

    pub fn pop(&mut self) -> Option<(Ps, T)> {
        let mut entry = self.at.first_entry()?;
        let t = *entry.key();
        let item = entry
            .get_mut()
            .pop_front()
            .expect("instants are never empty");
        if entry.get().is_empty() {
            self.spare.push(entry.remove());
        }
        Some((t, item))
    }
}

/// Messages whose arrival time is known when they are injected (the
/// LogGOPS reservations and the congestion model's fixed durations), in
/// arrival order, message id order among equal times (an order that does
/// not depend on how the loop happened to process one instant).
#[derive(Default, Debug)]
pub struct Due(TimeQueue<u32>);

impl Due {
    pub fn push(&mut self, arrival: Ps, id: u32) {
        self.0.push(arrival, id);
    }

    pub fn next(&self) -> Option<Ps> {
        self.0.next()
    }

    /// Move every message arrived by `now` to `arrived`.
    pub fn drain_until(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        while let Some(t) = self.0.next().filter(|&t| t <= now) {
            let first = arrived.len();
            while self.0.next() == Some(t) {
                arrived.push(self.0.pop().expect("peeked"));
            }
            arrived[first..].sort_unstable_by_key(|&(_, id)| id);
        }
    }
}

/// A directed link of the modelled network: bandwidth in bytes per second
/// and wire latency in picoseconds (`graph` link ids index these).
#[derive(Clone, Debug)]
pub struct Links {
    pub bandwidth: Vec<f64>,
    pub latency: Vec<Ps>,
}

impl Links {
    pub fn len(&self) -> usize {
        self.bandwidth.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bandwidth.is_empty()
    }
}

/// One message handed to a fabric. `links` is its static route from `src`
/// to `dst` endpoint in path order; `weights[i]` is the fraction of the
/// message carried by `links[i]` (1.0 except for multipath routing, where a
/// message is split over several paths and its links are listed path after
/// path). An empty route is a message to the same endpoint.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    /// Fabric-wide message id, dense from 0 (application messages first,
    /// then background traffic).
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub links: &'a [u32],
    pub weights: &'a [f64],
}

/// A network model driven by the event loop.
///
/// The loop calls `inject` in non-decreasing `now` order, interleaved with
/// `next_arrival` and `advance`; `advance(now, ..)` is only called with
/// `now` at least the last `inject`'s time.
pub trait Fabric {
    /// `msg` enters the network at `now`.
    fn inject(&mut self, now: Ps, msg: &Message);
    /// Earliest time at which an in-flight message will have fully arrived,
    /// or `None` with nothing in flight. May move forward when later
    /// injections slow current messages down, never before the last `now`.
    fn next_arrival(&mut self) -> Option<Ps>;
    /// Move the fabric's clock to `now` and append `(arrival time, id)` of
    /// every message whose last byte arrived at or before `now`.
    fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>);
    /// Bytes each link carried so far (weights applied), indexed by link id.
    fn link_bytes(&self) -> &[f64];
    /// Whether the model wants [`Fabric::round_loaded`] (the op stores skip
    /// gathering a round's messages for the models that do not).
    fn wants_rounds(&self) -> bool {
        false
    }
    /// The op store loaded round `k` ([`super::core::OpStore::start`], the
    /// streamed window's pulls), whose messages are `msgs` (ids in send
    /// order): a model that fixes a round's messages together (the
    /// congestion model) does it here. Called before any of them is
    /// injected; nothing to do for the other models.
    fn round_loaded(
        &mut self,
        _k: usize,
        _msgs: &[RoundMessage],
    ) -> Result<(), crate::error::CoreError> {
        Ok(())
    }
}

/// A message of a round just loaded by the streamed event loop: id,
/// source and destination endpoints, bytes.
#[derive(Clone, Copy, Debug)]
pub struct RoundMessage {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
}
