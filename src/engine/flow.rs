//! Fluid-flow network model: every in-flight message is a flow on its static
//! route, and flows share link (and NIC) bandwidth either max-min fairly or
//! with SimGrid's CM02 latency-weighted sharing.
//!
//! # Sharing
//! - [`Sharing::MaxMin`]: weighted max-min fairness computed by *progressive
//!   filling* (water-filling; Bertsekas & Gallager, *Data Networks*, 2nd ed.,
//!   §6.5.2): the rates of all unfrozen flows rise together; resource `r`
//!   saturates when `Σ_f w_{f,r}·rate_f = capacity_r`, and the flows crossing
//!   a saturated resource freeze at their current rate.
//! - [`Sharing::Cm02`]: SimGrid's CM02 model (Casanova et al., "Versatile,
//!   scalable, and accurate simulation of distributed applications and
//!   platforms", JPDC 74(10), 2014; Velho et al., "On the validity of
//!   flow-level TCP network models for grid and cloud simulations", ACM
//!   TOMACS 23(4), 2013; SimGrid
//!   `src/kernel/resource/models/network_cm02.cpp` and the `lmm` solver).
//!   A flow's sharing penalty is its route latency `w_f = Σ lat` (seconds;
//!   plain CM02 has `weight-S = 0`, so no `S/bandwidth` term), and on a shared
//!   bottleneck rates are inversely proportional to the penalties: the same
//!   progressive filling, with flow `f`'s rate rising at speed `1/w_f`
//!   (`w_f = max(Σ lat, 1 ps)`, so zero-latency flows share max-min fairly
//!   among themselves; SimGrid itself gives such flows penalty 1.0). Each flow
//!   is also bounded by the TCP window, `rate_f ≤ γ / (2·Σ lat)` with
//!   `γ = 4 194 304 B` ([`TCP_GAMMA`], SimGrid's `network/TCP-gamma`), skipped
//!   when `Σ lat = 0`. SimGrid's latency and bandwidth *factors* are not applied
//!   (plain CM02, factors 1); byte overheads are the caller's business.
//!
//! # Time semantics
//! A message of `bytes` bytes injected at `now` on a route of latency
//! `L = Σ_i latency[links[i]]·weights[i]` (the exact path latency for a single
//! path; for a multipath route, listed path after path with path fractions as
//! weights, it is the *mean* path latency, because the route does not mark
//! where one path ends):
//! - `MaxMin`: its bytes flow from `now` at the rates assigned over time; the
//!   bandwidth phase ends at `t_done`, and the message arrives at `t_done + L`
//!   (the latency is a pipeline tail, as in LogGOPS).
//! - `Cm02` (SimGrid's way): a latency phase from `now` to `now + L` during
//!   which the flow holds no bandwidth, then the bandwidth phase; the message
//!   arrives when the bandwidth phase ends.
//! - A message of 0 bytes, or with an empty route, arrives at `now + L`
//!   (`L = 0` for an empty route) and uses no bandwidth, NIC included.
//! - LogGOPS's `L` (`FlowConfig::wire_latency`: the latency a machine profile
//!   measured end to end, which its network's links do not carry) is added to
//!   the arrival of every message that leaves its host (every message with
//!   `ppn` ≤ 1), as the `loggops` model adds it to a message through the NIC;
//!   it is not a route latency, so CM02's sharing weights do not see it.
//!
//! Durations `bytes / rate` are rounded *up* to whole picoseconds (less a
//! few ulps of slack, so `1e9 B / 1e9 B/s` is exactly `1e12` ps), so a flow
//! never finishes early by rounding (`fabric::ceil_ps`, whose snap-down is
//! 1e-9 relative, could end a 1 s flow up to 1000 ps early, so it is not
//! used here); remaining bytes are `f64`, and a flow with at most
//! [`DONE_BYTES`] left is done.
//!
//! # Resources
//! Every link with a finite positive bandwidth is a resource of that capacity
//! (a link whose bandwidth is `0`, negative, NaN or infinite is treated as
//! unlimited and constrains nothing). With `nic_bandwidth > 0` every endpoint
//! also has an injection and an ejection resource of capacity
//! `nic_bandwidth`; a flow uses its source's injection and its destination's
//! ejection resource with weight 1. With `ppn > 1` ranks per host
//! (`routing::nodes`) the resources are the host's, shared by its ranks,
//! and a message between two ranks of one host uses none. A flow uses link `links[i]` with weight
//! `weights[i]` (a link listed twice, as multipath routes may, adds its
//! weights).
//!
//! # Cost
//! Rates are recomputed incrementally. Progressive filling freezes flows in
//! increasing order of the fill level `λ`; every resource keeps the history
//! of the freezes on it (flow, level, and the resource's residual capacity,
//! unfrozen load and level after it), every flow the level it froze at, so
//! the state of the filling at any level can be restored. A change (flows
//! started or finished at one instant) alters the flow lists of a set `T` of
//! resources only. [`FlowFabric::start_level`] finds `λ*`, the least level
//! at which a resource of `T` saturated in the old filling or would saturate
//! in the new one (replaying the new filling on each resource of `T` alone
//! from its history), a removed flow froze, or an attached flow meets its
//! bound: below `λ*` the new filling makes exactly the same freezes, on the
//! same values, as the old. The filling is then resumed at `λ*` only for the
//! flows frozen at `λ*` or above that the change reaches through resources
//! (the residual problem above `λ*` splits into independent components),
//! plus the attached flows, on residual capacities restored from the
//! histories. The result is bit for bit the rates of a filling of every
//! flow from scratch (checked after every change by the tests). Cost per
//! change: `O(Σ_{r∈T} history_r)` to find `λ*`, then
//! `O((refilled flows + their resources + their route lengths) · log)`;
//! the histories hold `Σ route lengths` entries (48 B each). A resource's
//! flow list carries each flow's `w·speed` (its unfrozen load is summed
//! from the list alone) and each flow's route its index in those lists
//! (a finished flow leaves them without a search). How much is
//! refilled depends on the traffic: all-to-all on a torus refills about a
//! quarter of the flows in flight per change (P = 128), where the whole
//! component was refilled before.
//!
//! Each flow keeps its remaining bytes and the time they were last brought
//! up to date (when it is refilled), and predicted finish times sit in a
//! heap invalidated lazily by a per-flow version counter; flows not refilled
//! are not touched. Finishes within `tolerance` ps of the earliest are taken
//! as one change (each still reports its own arrival time).
//!
//! # The event-loop contract
//! [`Fabric::next_arrival`] returns the earliest time at which *something*
//! happens inside the fabric: a message arrival, the end of a bandwidth phase
//! (whose arrival comes `L` later for `MaxMin`), or the end of a CM02 latency
//! phase. At the internal ones, [`Fabric::advance`] updates the rates and
//! reports nothing; the loop simply asks again. Internal events are never
//! processed beyond the `now` the caller gave (an injection may still come
//! before them), so the answer is a lower bound of the next arrival, exact
//! when no bandwidth phase or latency phase ends first.
//!
//! [`Fabric::link_bytes`] counts `bytes × weight` on every listed link at
//! injection time (the bytes it *will* carry; NIC resources are not links).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::fabric::{Fabric, Links, Message, Ps, PS_PER_S};

/// SimGrid's `network/TCP-gamma`: the TCP window bound, bytes.
pub const TCP_GAMMA: f64 = 4_194_304.0;

/// A flow with at most this many bytes left is done.
pub const DONE_BYTES: f64 = 1e-6;

/// Smallest CM02 sharing penalty, seconds (one picosecond).
const CM02_MIN_PENALTY_S: f64 = 1e-12;

/// How flows share a resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sharing {
    /// Max-min fairness by progressive filling (Bertsekas & Gallager §6.5.2).
    #[default]
    MaxMin,
    /// SimGrid's CM02: rates inversely proportional to route latency, TCP
    /// window bound, latency phase before the bandwidth phase.
    Cm02,
}

/// Configuration of a [`FlowFabric`].
#[derive(Clone, Debug, Default)]
pub struct FlowConfig {
    pub sharing: Sharing,
    /// Bytes per second each endpoint can inject, and eject; `0.0` (or
    /// anything not finite and positive) = unlimited.
    pub nic_bandwidth: f64,
    /// Endpoints with NIC resources made up front (more are added on demand
    /// when a message names a larger endpoint id).
    pub n_endpoints: usize,
    /// Finishes within this many ps of the earliest are processed together.
    pub tolerance: Ps,
    /// Ranks per host (`routing::nodes`): endpoints `h·ppn .. (h+1)·ppn`
    /// share host `h`'s NIC resources, and a message between two of them
    /// uses none (shared memory). 0 or 1: every endpoint its own NIC.
    pub ppn: u32,
    /// LogGOPS `L`, ps: added to the arrival of a message between two hosts
    /// (module docs, "Time semantics").
    pub wire_latency: Ps,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    /// CM02 latency phase: no bandwidth held yet.
    Latency,
    /// Bandwidth phase: attached to its resources.
    Flowing,
}

/// No predicted finish (the flow cannot progress, or is not flowing).
const NO_FINISH: Ps = Ps::MAX;

#[derive(Clone, Debug)]
struct Flow {
    id: u32,
    state: State,
    /// `(resource, weight)`, one entry per distinct resource.
    res: Route,
    remaining: f64,
    /// Time `remaining` was last brought up to date.
    last: Ps,
    /// Bytes per second.
    rate: f64,
    /// Route latency, ps.
    latency: Ps,
    /// LogGOPS `L` this message pays on arrival (0 within a host), ps.
    wire: Ps,
    /// Speed at which the rate rises during the filling (1, or 1/w_f).
    speed: f64,
    /// Upper bound on the rate (CM02 TCP window), or infinity.
    bound: f64,
    /// Bumped whenever the predicted finish changes or the flow ends.
    version: u32,
    /// Predicted end of the bandwidth phase ([`NO_FINISH`] if none).
    finish: Ps,
    /// Filling level at which the flow froze in the current solution.
    level: f64,
}

impl Flow {
    fn empty() -> Self {
        Flow {
            id: 0,
            state: State::Free,
            res: Route::default(),
            remaining: 0.0,
            last: 0,
            rate: 0.0,
            latency: 0,
            wire: 0,
            speed: 1.0,
            bound: f64::INFINITY,
            version: 0,
            finish: NO_FINISH,
            level: f64::INFINITY,
        }
    }
}

/// One resource of a flow's route: the resource, the flow's index in the
/// resource's flow list while it flows (kept up to date as the list
/// changes, so removal and the filling find it without a search), and the
/// flow's weight on it.
#[derive(Clone, Copy, Debug, Default)]
struct Hop {
    r: u32,
    pos: u32,
    w: f64,
}

/// Resource entries of a flow stored inline in the flow (the rate
/// computation walks them for every flow of a component, so they must not
/// cost a cache miss of their own); longer lists spill to the heap.
#[derive(Clone, Debug, Default)]
struct Route {
    len: usize,
    inline: [Hop; ROUTE_INLINE],
    spill: Vec<Hop>,
}

/// Resource entries kept inline (6 links plus the two NICs).
const ROUTE_INLINE: usize = 8;

impl Route {
    fn set(&mut self, items: &[(u32, f64)]) {
        self.len = items.len();
        self.spill.clear();
        let hop = |&(r, w): &(u32, f64)| Hop { r, pos: 0, w };
        if items.len() <= ROUTE_INLINE {
            for (h, it) in self.inline.iter_mut().zip(items) {
                *h = hop(it);
            }
        } else {
            self.spill.extend(items.iter().map(hop));
        }
    }

    fn as_slice(&self) -> &[Hop] {
        if self.len <= ROUTE_INLINE {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Hop] {
        if self.len <= ROUTE_INLINE {
            &mut self.inline[..self.len]
        } else {
            &mut self.spill
        }
    }
}

/// One freeze in a resource's filling history: flow `slot` froze at
/// `level`, which left the resource with residual capacity `free`, unfrozen
/// load `coef` and level `cur` (see [`fill`]); `dcoef` is the flow's
/// `w·speed` on the resource.
#[derive(Clone, Copy, Debug)]
struct Hist {
    slot: u32,
    level: f64,
    free: f64,
    coef: f64,
    cur: f64,
    dcoef: f64,
}

/// Resources as columns (links first, then two per endpoint).
#[derive(Clone, Debug, Default)]
struct Resources {
    cap: Vec<f64>,
    /// Slots of the flowing flows using each resource, each with its
    /// `w·speed` on the resource (summed into `coef0` without touching the
    /// flows themselves).
    flows: Vec<Vec<(u32, f64)>>,
    /// Freezes of the flows of `flows` in filling order (so by level): the
    /// state of the filling at any level can be restored from it.
    hist: Vec<Vec<Hist>>,
    /// `Σ w·speed` over `flows`, in list order.
    coef0: Vec<f64>,
    /// Level at which the resource saturated, or infinity.
    sat: Vec<f64>,
    /// The refilled flows on each visited resource, `(index in its flow
    /// list, slot)`: the only flows a saturation can freeze there.
    refilled: Vec<Vec<(u32, u32)>>,
    // scratch of the rate computation
    mark: Vec<u32>,
    tmark: Vec<u32>,
    free: Vec<f64>,
    coef: Vec<f64>,
    cur: Vec<f64>,
    cnt: Vec<u32>,
}

impl Resources {
    fn push(&mut self, cap: f64) {
        self.cap.push(cap);
        self.flows.push(Vec::new());
        self.hist.push(Vec::new());
        self.coef0.push(0.0);
        self.sat.push(f64::INFINITY);
        self.refilled.push(Vec::new());
        self.mark.push(0);
        self.tmark.push(0);
        self.free.push(0.0);
        self.coef.push(0.0);
        self.cur.push(f64::INFINITY);
        self.cnt.push(0);
    }
}

/// A resource's level before any freeze: capacity over unfrozen load.
fn level0(cap: f64, coef0: f64) -> f64 {
    if coef0 > 0.0 {
        cap / coef0
    } else {
        f64::INFINITY
    }
}

/// A saturation level in the progressive filling (min-heap order).
#[derive(Clone, Copy, Debug)]
struct Level {
    level: f64,
    idx: u32,
}

impl Ord for Level {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .level
            .total_cmp(&self.level)
            .then_with(|| other.idx.cmp(&self.idx))
    }
}

impl PartialOrd for Level {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Level {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Level {}

/// A resource capacity: finite positive, else unlimited.
fn capacity(bw: f64) -> f64 {
    if bw.is_finite() && bw > 0.0 {
        bw
    } else {
        f64::INFINITY
    }
}

/// End of the bandwidth phase of `remaining` bytes at `rate` from `now`,
/// rounded up to whole ps (less a few ulps of slack).
fn finish_time(now: Ps, remaining: f64, rate: f64) -> Ps {
    if remaining <= DONE_BYTES || rate == f64::INFINITY {
        return now;
    }
    if rate.is_nan() || rate <= 0.0 {
        return NO_FINISH;
    }
    let dt = remaining / rate * PS_PER_S;
    let dt = (dt * (1.0 - 4.0 * f64::EPSILON)).ceil();
    if dt >= (NO_FINISH - 1 - now) as f64 {
        NO_FINISH - 1
    } else {
        now + dt as Ps
    }
}

/// Fluid flows sharing link and NIC bandwidth (see the module docs).
#[derive(Clone, Debug)]
pub struct FlowFabric {
    sharing: Sharing,
    tolerance: Ps,
    n_links: usize,
    /// NIC capacity, or infinity for none.
    nic: f64,
    /// Ranks per host sharing one NIC (≥ 1).
    ppn: u32,
    /// LogGOPS `L` of a message between hosts, ps.
    wire_latency: Ps,
    link_latency: Vec<Ps>,
    link_bytes: Vec<f64>,
    res: Resources,
    flows: Vec<Flow>,
    /// Per flow slot (kept apart from `flows` so the component search and
    /// the filling test them without touching the flows themselves).
    flow_seen: Vec<u32>,
    flow_frozen: Vec<bool>,
    free_slots: Vec<u32>,
    n_flowing: usize,
    /// `(predicted finish, slot, version)`.
    finish_heap: BinaryHeap<Reverse<(Ps, u32, u32)>>,
    /// CM02 latency-phase ends: `(time, slot)`.
    start_heap: BinaryHeap<Reverse<(Ps, u32)>>,
    /// Known arrivals: `(time, message id)`.
    arrivals: BinaryHeap<Reverse<(Ps, u32)>>,
    /// Latest time the fabric was told about.
    clock: Ps,
    last_reported: Ps,
    epoch: u32,
    // pending change: resources whose flows changed, flows attached, and
    // the least level of a flow removed or of an attached flow's bound
    seeds: Vec<u32>,
    added: Vec<u32>,
    hint: f64,
    // scratch
    visited: Vec<u32>,
    refill: Vec<u32>,
    pending: Vec<u32>,
    fill: BinaryHeap<Level>,
    /// `(bound level, slot)` of the refilled flows with a finite bound.
    bounds: Vec<(f64, u32)>,
    route_scratch: Vec<(u32, f64)>,
    /// Tests: check every recomputation against one from scratch.
    #[cfg(test)]
    verify: bool,
}

impl FlowFabric {
    /// A fabric over `links` (link ids index `links.bandwidth`/`latency`).
    pub fn new(links: Links, cfg: FlowConfig) -> Self {
        let n_links = links.len();
        let mut res = Resources::default();
        for &bw in &links.bandwidth {
            res.push(capacity(bw));
        }
        let mut link_latency = links.latency;
        link_latency.resize(n_links, 0);
        let mut fab = FlowFabric {
            sharing: cfg.sharing,
            tolerance: cfg.tolerance,
            n_links,
            nic: capacity(cfg.nic_bandwidth),
            ppn: cfg.ppn.max(1),
            wire_latency: cfg.wire_latency,
            link_latency,
            link_bytes: vec![0.0; n_links],
            res,
            flows: Vec::new(),
            flow_seen: Vec::new(),
            flow_frozen: Vec::new(),
            free_slots: Vec::new(),
            n_flowing: 0,
            finish_heap: BinaryHeap::new(),
            start_heap: BinaryHeap::new(),
            arrivals: BinaryHeap::new(),
            clock: 0,
            last_reported: 0,
            epoch: 0,
            seeds: Vec::new(),
            added: Vec::new(),
            hint: f64::INFINITY,
            visited: Vec::new(),
            refill: Vec::new(),
            pending: Vec::new(),
            fill: BinaryHeap::new(),
            bounds: Vec::new(),
            route_scratch: Vec::new(),
            #[cfg(test)]
            verify: false,
        };
        if fab.nic.is_finite() && cfg.n_endpoints > 0 {
            fab.ensure_endpoint((cfg.n_endpoints - 1) / fab.ppn as usize);
        }
        fab
    }

    /// Messages injected whose arrival has not been reported yet.
    pub fn in_flight(&self) -> usize {
        self.flows.len() - self.free_slots.len() + self.arrivals.len()
    }

    fn ensure_endpoint(&mut self, e: usize) {
        let need = self.n_links + 2 * (e + 1);
        while self.res.cap.len() < need {
            self.res.push(self.nic);
        }
    }

    fn alloc_slot(&mut self) -> u32 {
        if let Some(s) = self.free_slots.pop() {
            s
        } else {
            self.flows.push(Flow::empty());
            self.flow_seen.push(0);
            self.flow_frozen.push(false);
            (self.flows.len() - 1) as u32
        }
    }

    /// Earliest valid predicted finish, dropping stale heap entries.
    fn peek_finish(&mut self) -> Option<(Ps, u32)> {
        while let Some(&Reverse((t, slot, ver))) = self.finish_heap.peek() {
            let f = &self.flows[slot as usize];
            if f.state == State::Flowing && f.version == ver {
                return Some((t, slot));
            }
            self.finish_heap.pop();
        }
        None
    }

    /// Process every internal event (latency-phase end, bandwidth-phase end)
    /// at or before `t`, in time order.
    fn process_until(&mut self, t: Ps) {
        if !self.seeds.is_empty() && t > self.clock {
            // flows attached at the clock and not yet given rates, before
            // time moves on (more flows starting at the clock only add seeds)
            self.recompute(self.clock);
        }
        loop {
            let tf = self.peek_finish().map(|(tf, _)| tf);
            let ts = self.start_heap.peek().map(|Reverse((ts, _))| *ts);
            let te = match (tf, ts) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => break,
            };
            if te > t {
                break;
            }
            while let Some(&Reverse((ts, slot))) = self.start_heap.peek() {
                if ts != te {
                    break;
                }
                self.start_heap.pop();
                self.attach(slot, te);
            }
            if tf == Some(te) {
                let horizon = te.saturating_add(self.tolerance);
                while let Some((tf, slot)) = self.peek_finish() {
                    if tf > horizon {
                        break;
                    }
                    self.finish_heap.pop();
                    self.complete(slot, tf);
                }
            }
            self.recompute(te);
        }
    }

    /// Start the bandwidth phase of `slot` at `now`.
    fn attach(&mut self, slot: u32, now: Ps) {
        let f = &mut self.flows[slot as usize];
        f.state = State::Flowing;
        f.last = now;
        f.rate = 0.0;
        f.finish = NO_FINISH;
        self.n_flowing += 1;
        if f.res.len == 0 {
            // Constrained by nothing but its bound (CM02 TCP window).
            f.rate = f.bound;
            schedule(f, slot, now, &mut self.finish_heap);
            return;
        }
        f.level = f64::INFINITY;
        if f.bound.is_finite() {
            self.hint = self.hint.min(f.bound / f.speed);
        }
        let speed = f.speed;
        for h in f.res.as_mut_slice() {
            let list = &mut self.res.flows[h.r as usize];
            h.pos = list.len() as u32;
            list.push((slot, h.w * speed));
            self.seeds.push(h.r);
        }
        self.added.push(slot);
    }

    /// End the bandwidth phase of `slot`, predicted for `t_own`.
    fn complete(&mut self, slot: u32, t_own: Ps) {
        let f = &self.flows[slot as usize];
        if f.res.len > 0 {
            self.hint = self.hint.min(f.level);
        }
        for k in 0..f.res.len {
            let Hop { r, pos, .. } = self.flows[slot as usize].res.as_slice()[k];
            let list = &mut self.res.flows[r as usize];
            debug_assert_eq!(list[pos as usize].0, slot);
            list.swap_remove(pos as usize);
            if let Some(&(moved, _)) = list.get(pos as usize) {
                // the list's last flow took the removed one's place
                let h = self.flows[moved as usize]
                    .res
                    .as_mut_slice()
                    .iter_mut()
                    .find(|h| h.r == r)
                    .expect("a flow on a resource's list routes over it");
                h.pos = pos;
            }
            self.seeds.push(r);
        }
        let f = &mut self.flows[slot as usize];
        let arrival = match self.sharing {
            Sharing::MaxMin => t_own.saturating_add(f.latency),
            Sharing::Cm02 => t_own,
        }
        .saturating_add(f.wire);
        self.arrivals.push(Reverse((arrival, f.id)));
        f.state = State::Free;
        f.version = f.version.wrapping_add(1);
        f.finish = NO_FINISH;
        f.res.set(&[]);
        self.n_flowing -= 1;
        self.free_slots.push(slot);
    }

    /// Recompute the rates after the pending change (flows attached and
    /// completed since the last call) at `now`: the filling is restored at
    /// the level where it first differs from the current solution
    /// ([`FlowFabric::start_level`]) and resumed there for the flows frozen
    /// at or above that level that the change can reach
    /// ([`FlowFabric::refill_from`]). Keeps the finish heap's stale entries
    /// bounded.
    fn recompute(&mut self, now: Ps) {
        if self.seeds.is_empty() {
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.res.mark.iter_mut().for_each(|m| *m = 0);
            self.res.tmark.iter_mut().for_each(|m| *m = 0);
            self.flow_seen.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let lam = self.start_level();
        self.refill_from(now, lam);
        self.seeds.clear();
        self.added.clear();
        self.hint = f64::INFINITY;
        #[cfg(test)]
        if self.verify {
            self.check_from_scratch(now);
        }
        if self.finish_heap.len() > 2 * self.n_flowing + 1024 {
            let flows = &self.flows;
            self.finish_heap.retain(|&Reverse((_, s, v))| {
                let f = &flows[s as usize];
                f.state == State::Flowing && f.version == v
            });
        }
    }

    /// The level `λ*` below which the filling with the pending change does
    /// exactly what the current solution's did. Only the changed resources
    /// `T` (`self.seeds`) see different flows; below `λ*` none of them
    /// saturates, in the old filling (`sat`) or in the new one, and no
    /// attached flow reaches its bound, so every freeze below `λ*` is the
    /// same, in the same order, on the same values. For each `r ∈ T` the new
    /// filling is replayed on `r` alone from its history: `coef0` is summed
    /// again over the new flow list, the old freezes (their `free` values do
    /// not depend on `coef`) are applied in order while the resource's new
    /// level `cur` stays above the next freeze's level; `r` would saturate
    /// at `cur` otherwise (or once its history is used up, if it still has
    /// unfrozen flows). `λ*` is also at most the level of every removed flow
    /// (`self.hint`). The replayed entries get their new `coef` and `cur`.
    fn start_level(&mut self) -> f64 {
        let epoch = self.epoch;
        let mut lam = self.hint;
        let res = &mut self.res;
        let flows = &self.flows;
        for &r in &self.seeds {
            let ru = r as usize;
            if res.tmark[ru] == epoch {
                continue;
            }
            res.tmark[ru] = epoch;
            let mut c0 = 0.0;
            for &(_, ws) in &res.flows[ru] {
                c0 += ws;
            }
            res.coef0[ru] = c0;
            lam = lam.min(res.sat[ru]);
            let mut coef = c0;
            let mut cur = level0(res.cap[ru], c0);
            let mut cnt = res.flows[ru].len();
            for e in res.hist[ru].iter_mut() {
                if e.level >= lam
                    || cur <= e.level
                    || flows[e.slot as usize].state != State::Flowing
                {
                    break;
                }
                coef -= e.dcoef;
                cnt = cnt.saturating_sub(1);
                if coef > 0.0 {
                    cur = cur.max(e.free / coef);
                }
                e.coef = coef;
                e.cur = cur;
            }
            if cnt > 0 {
                lam = lam.min(cur);
            }
        }
        lam
    }

    /// Restore resource `r`'s filling state at level `lam` (dropping the
    /// freezes at or above it from its history, whose flows will be filled
    /// again) and add it to the refill.
    fn visit(&mut self, r: u32, lam: f64) {
        let ru = r as usize;
        let res = &mut self.res;
        if res.mark[ru] == self.epoch {
            return;
        }
        res.mark[ru] = self.epoch;
        let h = &mut res.hist[ru];
        while let Some(e) = h.last() {
            if e.level < lam {
                break;
            }
            self.pending.push(e.slot);
            h.pop();
        }
        (res.free[ru], res.coef[ru], res.cur[ru]) = match h.last() {
            Some(e) => (e.free, e.coef, e.cur),
            None => (
                res.cap[ru],
                res.coef0[ru],
                level0(res.cap[ru], res.coef0[ru]),
            ),
        };
        res.cnt[ru] = 0;
        res.sat[ru] = f64::INFINITY;
        res.refilled[ru].clear();
        self.visited.push(r);
    }

    /// Refill from level `lam`: the flows attached, and every flow frozen at
    /// `lam` or above reachable from the changed resources through flows
    /// frozen at `lam` or above (the residual problem above `lam` splits
    /// into independent components along the resources; only those holding
    /// a changed resource change). Each such flow has its remaining bytes
    /// brought up to date at its old rate, then [`fill`] runs.
    fn refill_from(&mut self, now: Ps, lam: f64) {
        let epoch = self.epoch;
        self.visited.clear();
        self.refill.clear();
        self.pending.clear();
        self.bounds.clear();
        for i in 0..self.seeds.len() {
            let r = self.seeds[i];
            self.visit(r, lam);
        }
        self.pending.extend_from_slice(&self.added);
        while let Some(s) = self.pending.pop() {
            let su = s as usize;
            if self.flow_seen[su] == epoch || self.flows[su].state != State::Flowing {
                continue;
            }
            self.flow_seen[su] = epoch;
            self.flow_frozen[su] = false;
            self.refill.push(s);
            let f = &mut self.flows[su];
            if f.last < now {
                if f.rate > 0.0 {
                    let sent = f.rate * (now - f.last) as f64 / PS_PER_S;
                    f.remaining = (f.remaining - sent).max(0.0);
                }
                f.last = now;
            }
            if f.bound.is_finite() {
                self.bounds.push((f.bound / f.speed, s));
            }
            for k in 0..self.flows[su].res.len {
                let Hop { r, pos, .. } = self.flows[su].res.as_slice()[k];
                self.visit(r, lam);
                self.res.cnt[r as usize] += 1;
                self.res.refilled[r as usize].push((pos, s));
            }
        }
        // the resources' levels, heapified at once
        let mut heap = std::mem::take(&mut self.fill).into_vec();
        heap.clear();
        for &r in &self.visited {
            let ru = r as usize;
            if self.res.cnt[ru] > 0 {
                heap.push(Level {
                    level: self.res.cur[ru],
                    idx: r,
                });
            }
        }
        self.fill = BinaryHeap::from(heap);
        let mut sc = Scratch {
            now,
            frozen: &mut self.flow_frozen,
            fill: &mut self.fill,
            bounds: &mut self.bounds,
            finish_heap: &mut self.finish_heap,
        };
        fill(&mut self.res, &mut self.flows, &self.refill, &mut sc);
    }

    /// Tests: recompute every rate from scratch on a copy (every flowing
    /// flow refilled from level −∞, every `coef0` summed again) and check
    /// the rates and levels are bit for bit the incremental ones.
    #[cfg(test)]
    fn check_from_scratch(&self, now: Ps) {
        let mut g = self.clone();
        g.verify = false;
        g.seeds = (0..g.res.cap.len() as u32)
            .filter(|&r| !g.res.flows[r as usize].is_empty())
            .collect();
        g.hint = f64::NEG_INFINITY;
        g.recompute(now);
        for (s, (a, b)) in self.flows.iter().zip(&g.flows).enumerate() {
            if a.state == State::Flowing {
                assert_eq!(
                    (a.rate.to_bits(), a.level.to_bits()),
                    (b.rate.to_bits(), b.level.to_bits()),
                    "slot {s} at {now} ps: incremental rate {} (level {}), from scratch {} ({})",
                    a.rate,
                    a.level,
                    b.rate,
                    b.level
                );
            }
        }
    }
}

/// New predicted finish of `f` (in `slot`) from `now` at its current rate.
fn schedule(f: &mut Flow, slot: u32, now: Ps, heap: &mut BinaryHeap<Reverse<(Ps, u32, u32)>>) {
    f.version = f.version.wrapping_add(1);
    f.finish = finish_time(now, f.remaining, f.rate);
    if f.finish != NO_FINISH {
        heap.push(Reverse((f.finish, slot, f.version)));
    }
}

/// Working state of one rate recomputation.
struct Scratch<'a> {
    now: Ps,
    /// Per flow slot: frozen (in the refill).
    frozen: &'a mut [bool],
    /// Resource levels (lazy min-heap).
    fill: &'a mut BinaryHeap<Level>,
    /// Bound levels of the refilled flows, sorted only if one may bind.
    bounds: &'a mut [(f64, u32)],
    finish_heap: &'a mut BinaryHeap<Reverse<(Ps, u32, u32)>>,
}

/// Weighted progressive filling (Bertsekas & Gallager §6.5.2) of the flows
/// `refill` (unfrozen) over resources whose state (`free`, `coef`, `cur`,
/// `cnt`, `refilled`) is set and whose levels are in `sc.fill`, the refill
/// flows' bound levels in `sc.bounds`. Flow `f`'s rate is `speed_f · λ` while unfrozen; resource
/// `r` saturates at its level `cur_r`, the running maximum of
/// `free_r / coef_r` (`coef_r = Σ_unfrozen w_{f,r}·speed_f`) over its
/// freezes so far (mathematically `free/coef` never falls when a flow
/// freezes below it; the running maximum makes that hold in floating point
/// too, so a heap key, an earlier `cur`, is a lower bound of the current
/// one and the lazy heap pops exactly the least current level, whatever
/// stale entries it holds: the result depends on the state only). A flow
/// is bounded at `bound_f / speed_f`. Levels sit in a min-heap, refreshed
/// when popped; a flow is rescheduled as it freezes, and every freeze is
/// appended to its resources' histories. A saturated resource freezes its
/// unfrozen flows in the order of its flow list. The filling stops once
/// every refilled flow is frozen (what is left in the heap would be
/// skipped).
fn fill(res: &mut Resources, flows: &mut [Flow], refill: &[u32], sc: &mut Scratch) {
    let mut n_frozen = 0;
    // The bound levels are a second queue merged with the heap in the
    // heap's order (level, then resources before flows, then index): they
    // are sorted only once a resource level exceeds the least of them, which
    // under CM02 (γ/2 for every flow with a route latency) is almost never.
    let mut min_bound = f64::INFINITY;
    for &(l, _) in sc.bounds.iter() {
        min_bound = min_bound.min(l);
    }
    let mut sorted = false;
    let mut next_bound = 0;
    // Once every refilled flow is frozen, the entries left are resources
    // with no unfrozen flow, which popping would skip.
    while n_frozen < refill.len() {
        let top = sc.fill.peek().map(|e| e.level);
        let resource_first = match top {
            Some(l) if l <= min_bound => true,
            _ => {
                if !sorted {
                    sc.bounds
                        .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    sorted = true;
                }
                while next_bound < sc.bounds.len() && sc.frozen[sc.bounds[next_bound].1 as usize] {
                    next_bound += 1;
                }
                match (top, sc.bounds.get(next_bound)) {
                    (None, None) => break,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (Some(l), Some(&(b, _))) => l.total_cmp(&b) != Ordering::Greater,
                }
            }
        };
        if !resource_first {
            let (level, s) = sc.bounds[next_bound];
            next_bound += 1;
            let rate = flows[s as usize].bound;
            freeze(res, flows, s, rate, level, sc);
            n_frozen += 1;
            continue;
        }
        let e = sc.fill.pop().expect("a resource level");
        let r = e.idx as usize;
        if res.cnt[r] == 0 {
            continue;
        }
        let current = res.cur[r];
        if current > e.level {
            sc.fill.push(Level {
                level: current,
                ..e
            });
            continue;
        }
        res.sat[r] = current;
        // Freeze every unfrozen flow crossing the saturated resource, in the
        // order of its flow list: the others there are frozen already.
        let mut on = std::mem::take(&mut res.refilled[r]);
        on.sort_unstable_by_key(|&(pos, _)| pos);
        for &(_, s) in &on {
            if !sc.frozen[s as usize] {
                let rate = flows[s as usize].speed * current;
                freeze(res, flows, s, rate, current, sc);
                n_frozen += 1;
            }
        }
        res.refilled[r] = on;
    }
    // Every refilled flow crosses a finite resource, so all froze; this
    // only guards against that invariant breaking.
    if n_frozen < refill.len() {
        for &s in refill {
            if !sc.frozen[s as usize] {
                let rate = flows[s as usize].bound;
                freeze(res, flows, s, rate, f64::INFINITY, sc);
            }
        }
    }
}

/// Freeze flow `s` at `rate` (filling level `level`): take its load off its
/// resources, record the freeze in their histories, and reschedule it if
/// its rate changed (or it had no prediction yet).
fn freeze(
    res: &mut Resources,
    flows: &mut [Flow],
    s: u32,
    rate: f64,
    level: f64,
    sc: &mut Scratch,
) {
    sc.frozen[s as usize] = true;
    let f = &mut flows[s as usize];
    f.level = level;
    for &Hop { r, w, .. } in f.res.as_slice() {
        let ru = r as usize;
        let dcoef = w * f.speed;
        res.free[ru] -= w * rate;
        res.coef[ru] -= dcoef;
        res.cnt[ru] -= 1;
        if res.coef[ru] > 0.0 {
            res.cur[ru] = res.cur[ru].max(res.free[ru] / res.coef[ru]);
        }
        res.hist[ru].push(Hist {
            slot: s,
            level,
            free: res.free[ru],
            coef: res.coef[ru],
            cur: res.cur[ru],
            dcoef,
        });
    }
    if rate != f.rate || f.finish == NO_FINISH {
        f.rate = rate;
        schedule(f, s, sc.now, sc.finish_heap);
    }
}

impl Fabric for FlowFabric {
    fn inject(&mut self, now: Ps, msg: &Message) {
        let now = now.max(self.clock);
        self.process_until(now);
        self.clock = now;
        let weight = |i: usize| msg.weights.get(i).copied().unwrap_or(1.0);
        let mut lat = 0.0f64;
        for (i, &l) in msg.links.iter().enumerate() {
            let w = weight(i);
            self.link_bytes[l as usize] += msg.bytes as f64 * w;
            lat += self.link_latency[l as usize] as f64 * w;
        }
        let latency = if lat.is_finite() && lat > 0.0 {
            lat.round() as Ps
        } else {
            0
        };
        // the NIC is the host's; two ranks of one host do not use it, nor pay L
        let (hs, hd) = (msg.src / self.ppn, msg.dst / self.ppn);
        let wire = if self.ppn == 1 || hs != hd {
            self.wire_latency
        } else {
            0
        };
        if msg.bytes == 0 || msg.links.is_empty() {
            self.arrivals.push(Reverse((
                now.saturating_add(latency).saturating_add(wire),
                msg.id,
            )));
            return;
        }
        let nic = self.nic.is_finite() && (self.ppn == 1 || hs != hd);
        if nic {
            self.ensure_endpoint(hs.max(hd) as usize);
        }
        let slot = self.alloc_slot();
        let n_links = self.n_links as u32;
        let rs = &mut self.route_scratch;
        rs.clear();
        for (i, &l) in msg.links.iter().enumerate() {
            let w = weight(i);
            if w > 0.0 && self.res.cap[l as usize].is_finite() {
                rs.push((l, w));
            }
        }
        if nic {
            rs.push((n_links + 2 * hs, 1.0));
            rs.push((n_links + 2 * hd + 1, 1.0));
        }
        // One entry per distinct resource.
        rs.sort_unstable_by_key(|&(r, _)| r);
        rs.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 += b.1;
                true
            } else {
                false
            }
        });
        let f = &mut self.flows[slot as usize];
        f.res.set(rs);
        f.id = msg.id;
        f.remaining = msg.bytes as f64;
        f.last = now;
        f.rate = 0.0;
        f.latency = latency;
        f.wire = wire;
        f.finish = NO_FINISH;
        let lat_s = latency as f64 / PS_PER_S;
        (f.speed, f.bound) = match self.sharing {
            Sharing::MaxMin => (1.0, f64::INFINITY),
            Sharing::Cm02 => (
                1.0 / lat_s.max(CM02_MIN_PENALTY_S),
                if latency > 0 {
                    TCP_GAMMA / (2.0 * lat_s)
                } else {
                    f64::INFINITY
                },
            ),
        };
        if self.sharing == Sharing::Cm02 && latency > 0 {
            f.state = State::Latency;
            self.start_heap
                .push(Reverse((now.saturating_add(latency), slot)));
        } else {
            // Rates are refilled once for every flow that starts at this
            // instant, when the loop next asks (next_arrival / advance), not
            // once per injection: an all-at-once collective starts P² flows
            // at t = 0.
            self.attach(slot, now);
        }
    }

    fn next_arrival(&mut self) -> Option<Ps> {
        if !self.seeds.is_empty() {
            self.recompute(self.clock);
        }
        let a = self.arrivals.peek().map(|Reverse((t, _))| *t);
        let f = self.peek_finish().map(|(t, _)| t);
        let s = self.start_heap.peek().map(|Reverse((t, _))| *t);
        [a, f, s]
            .into_iter()
            .flatten()
            .min()
            .map(|t| t.max(self.clock))
    }

    fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        self.process_until(now);
        self.clock = self.clock.max(now);
        while let Some(&Reverse((t, id))) = self.arrivals.peek() {
            if t > now {
                break;
            }
            self.arrivals.pop();
            let t = t.max(self.last_reported);
            self.last_reported = t;
            arrived.push((t, id));
        }
    }

    fn link_bytes(&self) -> &[f64] {
        &self.link_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Ps = 1_000_000_000_000; // one second in ps

    /// A test message: injection time, src, dst, bytes, links, weights.
    #[derive(Clone, Debug)]
    struct M {
        t: Ps,
        src: u32,
        dst: u32,
        bytes: u64,
        links: Vec<u32>,
        weights: Vec<f64>,
    }

    fn m(t: Ps, bytes: u64, links: &[u32]) -> M {
        M {
            t,
            src: 0,
            dst: 1,
            bytes,
            links: links.to_vec(),
            weights: vec![1.0; links.len()],
        }
    }

    fn links(bw: &[f64], lat: &[Ps]) -> Links {
        Links {
            bandwidth: bw.to_vec(),
            latency: lat.to_vec(),
        }
    }

    /// A fabric that checks every recomputation against one from scratch.
    fn fabric(l: Links, sharing: Sharing, nic: f64, n_ep: usize, tol: Ps) -> FlowFabric {
        let mut f = FlowFabric::new(
            l,
            FlowConfig {
                sharing,
                nic_bandwidth: nic,
                n_endpoints: n_ep,
                tolerance: tol,
                ppn: 1,
                wire_latency: 0,
            },
        );
        f.verify = true;
        f
    }

    /// Drive `fab` like the event loop: inject `msgs` (sorted by time) and
    /// advance to each `next_arrival`; returns each message's arrival time.
    /// Checks the contract on the way.
    fn drive(fab: &mut FlowFabric, msgs: &[M]) -> Vec<Ps> {
        let mut out = vec![Ps::MAX; msgs.len()];
        let mut i = 0;
        let mut last_now = 0;
        let mut last_reported = 0;
        let mut arrived = Vec::new();
        let mut steps = 0usize;
        loop {
            steps += 1;
            assert!(
                steps < 20 * msgs.len() + 1000,
                "the fabric does not progress"
            );
            let na = fab.next_arrival();
            if let Some(t) = na {
                assert!(t >= last_now, "next_arrival {t} before last now {last_now}");
            }
            let ni = msgs.get(i).map(|x| x.t);
            let adv = match (na, ni) {
                (None, None) => break,
                (Some(t), Some(ti)) => (t <= ti).then_some(t),
                (Some(t), None) => Some(t),
                (None, Some(_)) => None,
            };
            if let Some(t) = adv {
                arrived.clear();
                fab.advance(t, &mut arrived);
                last_now = t;
                for &(ta, id) in &arrived {
                    assert!(ta <= t, "reported arrival {ta} after now {t}");
                    assert!(ta >= last_reported, "arrivals out of order");
                    last_reported = ta;
                    assert_eq!(out[id as usize], Ps::MAX, "message {id} arrived twice");
                    out[id as usize] = ta;
                }
            } else {
                let x = &msgs[i];
                fab.inject(
                    x.t,
                    &Message {
                        id: i as u32,
                        src: x.src,
                        dst: x.dst,
                        bytes: x.bytes,
                        links: &x.links,
                        weights: &x.weights,
                    },
                );
                last_now = x.t;
                i += 1;
            }
        }
        assert!(out.iter().all(|&t| t != Ps::MAX), "a message never arrived");
        assert_eq!(fab.in_flight(), 0);
        out
    }

    fn close(got: Ps, want: f64, tol_ps: f64) {
        assert!(
            (got as f64 - want).abs() <= tol_ps,
            "arrival {got} ps, expected {want} ps (±{tol_ps})"
        );
    }

    #[test]
    fn one_flow_one_link_takes_bytes_over_bandwidth() {
        let mut f = fabric(links(&[1e9], &[0]), Sharing::MaxMin, 0.0, 0, 0);
        let t = drive(&mut f, &[m(0, 1_000_000_000, &[0])]);
        close(t[0], 1e12, 1.0);
        assert_eq!(f.link_bytes(), &[1e9]);
    }

    /// LogGOPS `L` (wire_latency) 3 µs, ranks 0,1 on host 0 and 2,3 on host 1,
    /// one 1 GB/s link of 1 µs latency on every route: 1 MB takes 1 ms on the
    /// link; between hosts it arrives at 1 ms + 1 µs + 3 µs, within host 0 at
    /// 1 ms + 1 µs (no L, as in `loggops`); under CM02 the latency phase is
    /// 1 µs (L is no sharing weight) and L still comes on arrival.
    #[test]
    fn wire_latency_is_paid_between_hosts_only() {
        for sharing in [Sharing::MaxMin, Sharing::Cm02] {
            let mut f = FlowFabric::new(
                links(&[1e9], &[1_000_000]),
                FlowConfig {
                    sharing,
                    nic_bandwidth: 0.0,
                    n_endpoints: 4,
                    tolerance: 0,
                    ppn: 2,
                    wire_latency: 3_000_000,
                },
            );
            let mut inter = m(0, 1_000_000, &[0]);
            inter.dst = 2;
            let t = drive(&mut f, &[inter]);
            close(t[0], 1e9 + 1e6 + 3e6, 2.0);
            let mut f2 = FlowFabric::new(
                links(&[1e9], &[1_000_000]),
                FlowConfig {
                    sharing: Sharing::MaxMin,
                    nic_bandwidth: 0.0,
                    n_endpoints: 4,
                    tolerance: 0,
                    ppn: 2,
                    wire_latency: 3_000_000,
                },
            );
            let t = drive(&mut f2, &[m(0, 1_000_000, &[0]), m(0, 0, &[0])]);
            close(t[0], 1e9 + 1e6, 2.0);
            close(t[1], 1e6, 0.5);
        }
    }

    #[test]
    fn two_flows_share_one_link_equally() {
        let mut f = fabric(links(&[1e9], &[0]), Sharing::MaxMin, 0.0, 0, 0);
        let t = drive(
            &mut f,
            &[m(0, 1_000_000_000, &[0]), m(0, 1_000_000_000, &[0])],
        );
        close(t[0], 2e12, 1.0);
        close(t[1], 2e12, 1.0);
    }

    #[test]
    fn flow_on_idle_path_gets_full_bandwidth() {
        let mut f = fabric(links(&[1e9, 1e9], &[0, 0]), Sharing::MaxMin, 0.0, 0, 0);
        let g = 1_000_000_000;
        let t = drive(&mut f, &[m(0, g, &[0]), m(0, g, &[0]), m(0, g, &[1])]);
        close(t[0], 2e12, 1.0);
        close(t[1], 2e12, 1.0);
        close(t[2], 1e12, 1.0);
    }

    /// Links A, B, C of 10, 10, 4 GB/s; f1 on {A}, f2 on {A,B}, f3 on {B,C},
    /// f4 on {C}. Progressive filling (level λ, all rates = λ): C holds f3,
    /// f4 and saturates first at λ = 2 (f3 = f4 = 2); then A (f1 + f2 = 2λ)
    /// saturates at λ = 5 while B carries f2 + f3 = 5 + 2 = 7 < 10. Max-min
    /// rates: f1 = f2 = 5, f3 = f4 = 2 GB/s.
    ///
    /// Equal sizes, 10 GB each: f1, f2 end at 10/5 = 2 s; f3, f4 have sent
    /// 4 GB by then and C still limits them to 2 each: 2 + 6/2 = 5 s.
    ///
    /// Sizes f1 = 5, f2 = 10, f3 = 10, f4 = 4 GB:
    /// - [0, 1]: rates 5, 5, 2, 2; f1 ends at 5/5 = 1 s. Left: f2 5, f3 8, f4 2.
    /// - [1, 1.625]: f2, f3, f4. C saturates at λ = 2 (f3 = f4 = 2), then B
    ///   (f2 + 2 ≤ 10) at f2 = 8 (A alone would allow 10): f2 speeds up 5 → 8
    ///   and ends at 1 + 5/8 = 1.625 s. Left: f3 8 − 1.25 = 6.75, f4 0.75.
    /// - [1.625, 2]: f3, f4 on C, 2 each; f4 ends at 1.625 + 0.75/2 = 2 s.
    ///   Left: f3 6.75 − 0.75 = 6.
    /// - [2, 3.5]: f3 alone, C gives it 4 (2 → 4): ends at 2 + 6/4 = 3.5 s.
    #[test]
    fn hand_computed_max_min_four_flows() {
        let g = 1_000_000_000u64;
        let l = || links(&[10e9, 10e9, 4e9], &[0, 0, 0]);
        let routes: [&[u32]; 4] = [&[0], &[0, 1], &[1, 2], &[2]];
        let mut f = fabric(l(), Sharing::MaxMin, 0.0, 0, 0);
        let msgs: Vec<M> = routes.iter().map(|r| m(0, 10 * g, r)).collect();
        let t = drive(&mut f, &msgs);
        for (got, want) in t.iter().zip([2.0, 2.0, 5.0, 5.0]) {
            close(*got, want * 1e12, 2.0);
        }
        let mut f = fabric(l(), Sharing::MaxMin, 0.0, 0, 0);
        let sizes = [5 * g, 10 * g, 10 * g, 4 * g];
        let msgs: Vec<M> = routes.iter().zip(sizes).map(|(r, b)| m(0, b, r)).collect();
        let t = drive(&mut f, &msgs);
        for (got, want) in t.iter().zip([1.0, 1.625, 3.5, 2.0]) {
            close(*got, want * 1e12, 4.0);
        }
    }

    #[test]
    fn staggered_injection_slows_the_first_flow() {
        let g = 1_000_000_000;
        let mut f = fabric(links(&[1e9], &[0]), Sharing::MaxMin, 0.0, 0, 0);
        let t = drive(&mut f, &[m(0, g, &[0]), m(S / 2, g, &[0])]);
        close(t[0], 1.5e12, 2.0);
        close(t[1], 2.0e12, 2.0);
    }

    #[test]
    fn independent_pairs_do_not_slow_each_other() {
        for k in [2usize, 8, 64] {
            for nic in [0.0, 1e9] {
                let bw = vec![1e9; k];
                let mut f = fabric(links(&bw, &vec![0; k]), Sharing::MaxMin, nic, 2 * k, 0);
                let msgs: Vec<M> = (0..k)
                    .map(|p| M {
                        t: 0,
                        src: 2 * p as u32,
                        dst: 2 * p as u32 + 1,
                        bytes: if p == 0 { 1 << 20 } else { 8 },
                        links: vec![p as u32],
                        weights: vec![1.0],
                    })
                    .collect();
                let t = drive(&mut f, &msgs);
                // 2^20 B at 1e9 B/s = 1 048 576 000 ps exactly.
                assert_eq!(t[0], 1_048_576_000, "k = {k}, nic = {nic}");
                for &x in &t[1..] {
                    assert_eq!(x, 8_000, "k = {k}, nic = {nic}");
                }
            }
        }
    }

    #[test]
    fn latency_is_added_after_the_bandwidth_phase() {
        let us = 1_000_000;
        for sharing in [Sharing::MaxMin, Sharing::Cm02] {
            let mut f = fabric(links(&[1e9, 1e9], &[us, us]), sharing, 0.0, 0, 0);
            let t = drive(&mut f, &[m(0, 1_000_000, &[0, 1])]);
            // 1e6 B / 1e9 B/s = 1 ms = 1e9 ps, plus 2 µs (CM02: before).
            assert_eq!(t[0], 1_000_000_000 + 2 * us, "{sharing:?}");
        }
    }

    #[test]
    fn empty_route_and_zero_bytes_take_latency_only() {
        let mut f = fabric(links(&[1e9], &[5_000]), Sharing::MaxMin, 1e9, 2, 0);
        let msgs = [m(10, 1_000_000, &[]), m(20, 0, &[0]), m(30, 1000, &[0])];
        let t = drive(&mut f, &msgs);
        assert_eq!(t[0], 10);
        assert_eq!(t[1], 20 + 5_000);
        assert_eq!(t[2], 30 + 1_000_000 + 5_000);
        assert_eq!(f.link_bytes(), &[1000.0]);
    }

    #[test]
    fn nic_limits_two_flows_from_one_source() {
        // Disjoint links of 2 GB/s, one NIC of 1 GB/s: 0.5 GB/s each.
        let g = 1_000_000_000;
        let mut f = fabric(links(&[2e9, 2e9], &[0, 0]), Sharing::MaxMin, 1e9, 3, 0);
        let mut a = m(0, g, &[0]);
        let mut b = m(0, g, &[1]);
        (a.src, a.dst, b.src, b.dst) = (0, 1, 0, 2);
        let t = drive(&mut f, &[a.clone(), b.clone()]);
        close(t[0], 2e12, 1.0);
        close(t[1], 2e12, 1.0);
        // Without the NIC limit each gets its 2 GB/s link.
        let mut f = fabric(links(&[2e9, 2e9], &[0, 0]), Sharing::MaxMin, 0.0, 3, 0);
        let t = drive(&mut f, &[a, b]);
        close(t[0], 0.5e12, 1.0);
        // Ejection: two sources into one destination.
        let mut f = fabric(links(&[2e9, 2e9], &[0, 0]), Sharing::MaxMin, 1e9, 0, 0);
        let mut a = m(0, g, &[0]);
        let mut b = m(0, g, &[1]);
        (a.src, a.dst, b.src, b.dst) = (1, 0, 2, 0);
        let t = drive(&mut f, &[a, b]);
        close(t[0], 2e12, 1.0);
        close(t[1], 2e12, 1.0);
    }

    /// CM02: flows a (route latency 1 µs) and b (3 µs) share link 0
    /// (1 GB/s). a flows alone from 1 µs to 3 µs (2000 B), then the rates
    /// are 3:1 (0.75 and 0.25 GB/s) until a ends; b then gets the link.
    #[test]
    fn cm02_shares_inversely_to_latency() {
        let us: Ps = 1_000_000;
        let l = links(&[1e9, 1e15, 1e15], &[0, us, 3 * us]);
        let mut f = fabric(l, Sharing::Cm02, 0.0, 0, 0);
        let g = 1_000_000_000u64;
        fn msg(id: u32, bytes: u64, links: &[u32]) -> Message<'_> {
            Message {
                id,
                src: 0,
                dst: 1,
                bytes,
                links,
                weights: &[1.0, 1.0],
            }
        }
        f.inject(0, &msg(0, g, &[0, 1]));
        f.inject(0, &msg(1, g, &[0, 2]));
        // Only latency-phase ends before 3 µs; nothing arrives.
        let mut arrived = Vec::new();
        assert_eq!(f.next_arrival(), Some(us));
        f.advance(us, &mut arrived);
        assert_eq!(f.next_arrival(), Some(3 * us));
        f.advance(3 * us, &mut arrived);
        assert!(arrived.is_empty());
        let rate = |f: &FlowFabric, id| {
            f.flows
                .iter()
                .find(|x| x.state == State::Flowing && x.id == id)
                .map(|x| x.rate)
                .unwrap()
        };
        let (ra, rb) = (rate(&f, 0), rate(&f, 1));
        assert!((ra / rb - 3.0).abs() <= 3e-9, "ratio {}", ra / rb);
        assert!((ra + rb - 1e9).abs() <= 1e-6 * 1e9);
        // Finish times: a after (1e9 − 2000)/0.75e9 s more; b sent a third
        // of that meanwhile, then runs alone at 1 GB/s.
        let left_a = 1e9 - 2000.0;
        let ta = 3e6 + left_a / 0.75e9 * 1e12;
        let tb = ta + (1e9 - left_a / 3.0) / 1e9 * 1e12;
        let mut out = [0; 2];
        while let Some(t) = f.next_arrival() {
            arrived.clear();
            f.advance(t, &mut arrived);
            for &(t, id) in &arrived {
                out[id as usize] = t;
            }
        }
        close(out[0], ta, 2.0);
        close(out[1], tb, 2.0);
    }

    #[test]
    fn cm02_tcp_window_bounds_the_rate() {
        // 1 ms latency: bound γ / 2 ms = 2.097152 GB/s < 10 GB/s link.
        // γ bytes take 2 ms after the 1 ms latency phase.
        let ms: Ps = 1_000_000_000;
        let mut f = fabric(links(&[1e10], &[ms]), Sharing::Cm02, 0.0, 0, 0);
        let t = drive(&mut f, &[m(0, TCP_GAMMA as u64, &[0])]);
        close(t[0], 3.0 * ms as f64, 1.0);
        // MaxMin has no window bound: 1 ms + γ / 10 GB/s.
        let mut f = fabric(links(&[1e10], &[ms]), Sharing::MaxMin, 0.0, 0, 0);
        let t = drive(&mut f, &[m(0, TCP_GAMMA as u64, &[0])]);
        close(t[0], ms as f64 + TCP_GAMMA / 1e10 * 1e12, 1.0);
    }

    #[test]
    fn multipath_weights_split_bytes_and_latency() {
        // Half on each of two 1 GB/s paths: 2 GB in 1 s; latency the mean.
        let mut f = fabric(
            links(&[1e9, 1e9], &[1000, 3000]),
            Sharing::MaxMin,
            0.0,
            0,
            0,
        );
        let mut x = m(0, 2_000_000_000, &[0, 1]);
        x.weights = vec![0.5, 0.5];
        let t = drive(&mut f, &[x]);
        close(t[0], 1e12 + 2000.0, 1.0);
        assert_eq!(f.link_bytes(), &[1e9, 1e9]);
        // A link listed on both paths carries the whole message.
        let mut f = fabric(
            links(&[1e9, 1e15, 1e15], &[0, 0, 0]),
            Sharing::MaxMin,
            0.0,
            0,
            0,
        );
        let mut x = m(0, 1_000_000_000, &[0, 1, 0, 2]);
        x.weights = vec![0.5; 4];
        let t = drive(&mut f, &[x]);
        close(t[0], 1e12, 1.0);
    }

    /// Flow 0 (1000 B) is alone on link 0 (1 GB/s): ends at 1e6 ps. Flows 1
    /// (1000 B) and 2 (1 MB) share link 1 (1.9999 GB/s, 0.99995 GB/s each):
    /// flow 1 ends at ⌈1000.0500025e3⌉ = 1 000 051 ps, 51 ps after flow 0.
    /// - tolerance 0 (or 10 < 51): flow 2 runs alone from 1 000 051 ps;
    /// - tolerance 1000: flow 1 is taken with flow 0 at 1e6 ps (it still
    ///   reports its own 1 000 051 ps) and flow 2 gets the whole link from
    ///   1e6 ps, ending ~25 ps earlier.
    #[test]
    fn tolerance_batches_close_finishes() {
        let (b1, half) = (1.9999e9, 0.99995e9);
        let msgs = [m(0, 1000, &[0]), m(0, 1000, &[1]), m(0, 1_000_000, &[1])];
        let mut ends = Vec::new();
        for tol in [0, 10, 1000] {
            let mut f = fabric(links(&[1e9, b1], &[0, 0]), Sharing::MaxMin, 0.0, 0, tol);
            let t = drive(&mut f, &msgs);
            assert_eq!(t[0], 1_000_000, "tolerance {tol}");
            assert_eq!(t[1], 1_000_051, "tolerance {tol}");
            let t1 = if tol >= 51 { 1e6 } else { 1_000_051.0 };
            let want = t1 + (1e6 - half * t1 / 1e12) / b1 * 1e12;
            close(t[2], want, 2.0);
            ends.push(t[2]);
        }
        assert_eq!(ends[0], ends[1]);
        assert!(ends[0] - ends[2] > 20, "{ends:?}");
    }

    /// A tiny xorshift64 generator (fixed seeds, no crates).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn random_route(rng: &mut Rng, n_links: u32, max_len: u64) -> Vec<u32> {
        let len = 1 + rng.below(max_len.min(n_links as u64)) as usize;
        let mut r: Vec<u32> = Vec::new();
        while r.len() < len {
            let l = rng.below(n_links as u64) as u32;
            if !r.contains(&l) {
                r.push(l);
            }
        }
        r
    }

    /// Brute-force reference: global max-min (progressive filling by
    /// scanning) recomputed at every event, times in f64 seconds.
    fn reference(bw: &[f64], lat: &[Ps], msgs: &[M]) -> Vec<f64> {
        let n = msgs.len();
        let mut out = vec![f64::NAN; n];
        let mut rem: Vec<f64> = msgs.iter().map(|x| x.bytes as f64).collect();
        let mut active: Vec<usize> = Vec::new();
        let mut next = 0;
        let mut t = 0.0f64;
        let lat_of = |x: &M| x.links.iter().map(|&l| lat[l as usize] as f64).sum::<f64>() / 1e12;
        loop {
            // Rates by progressive filling.
            let mut rate = vec![0.0; n];
            let mut frozen = vec![false; n];
            let mut free = bw.to_vec();
            loop {
                let mut best = f64::INFINITY;
                for (l, &fr) in free.iter().enumerate() {
                    let c = active
                        .iter()
                        .filter(|&&i| !frozen[i] && msgs[i].links.contains(&(l as u32)))
                        .count();
                    if c > 0 {
                        best = best.min(fr / c as f64);
                    }
                }
                if best == f64::INFINITY {
                    break;
                }
                let inc = best;
                let mut sat = vec![false; bw.len()];
                for &i in &active {
                    if !frozen[i] {
                        rate[i] += inc;
                        for &l in &msgs[i].links {
                            free[l as usize] -= inc;
                        }
                    }
                }
                for (l, s) in sat.iter_mut().enumerate() {
                    *s = free[l] <= 1e-9 * bw[l];
                }
                for &i in &active {
                    if msgs[i].links.iter().any(|&l| sat[l as usize]) {
                        frozen[i] = true;
                    }
                }
            }
            let t_inj = msgs.get(next).map(|x| x.t as f64 / 1e12);
            let t_fin = active
                .iter()
                .map(|&i| t + rem[i] / rate[i])
                .fold(f64::INFINITY, f64::min);
            let t_next = t_inj.unwrap_or(f64::INFINITY).min(t_fin);
            if t_next == f64::INFINITY {
                break;
            }
            for &i in &active {
                rem[i] -= rate[i] * (t_next - t);
            }
            t = t_next;
            active.retain(|&i| {
                if rem[i] <= 1e-6 * msgs[i].bytes as f64 {
                    out[i] = t + lat_of(&msgs[i]);
                    false
                } else {
                    true
                }
            });
            while next < n && msgs[next].t as f64 / 1e12 <= t {
                if msgs[next].bytes == 0 {
                    out[next] = t + lat_of(&msgs[next]);
                } else {
                    active.push(next);
                }
                next += 1;
            }
        }
        out
    }

    #[test]
    fn matches_a_brute_force_global_max_min() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _case in 0..20 {
            let n_links = 2 + rng.below(6) as u32;
            let bw: Vec<f64> = (0..n_links)
                .map(|_| 1e9 * (1.0 + 9.0 * rng.unit()))
                .collect();
            let lat: Vec<Ps> = (0..n_links).map(|_| rng.below(5_000_000)).collect();
            let n = 1 + rng.below(40) as usize;
            let mut msgs: Vec<M> = (0..n)
                .map(|_| {
                    let r = random_route(&mut rng, n_links, 3);
                    m(rng.below(2 * S / 1000), 1 + rng.below(1_000_000), &r)
                })
                .collect();
            msgs.sort_by_key(|x| x.t);
            let mut f = fabric(links(&bw, &lat), Sharing::MaxMin, 0.0, 0, 0);
            let got = drive(&mut f, &msgs);
            let want = reference(&bw, &lat, &msgs);
            for i in 0..n {
                let w = want[i] * 1e12;
                close(got[i], w, 50.0 + 1e-9 * w);
            }
        }
    }

    /// CM02 rates where the TCP window binds some flows and links bind
    /// others (the bound levels are a queue of their own in [`fill`],
    /// merged with the resource heap): after every latency phase has ended,
    /// every rate against a progressive filling by scanning (rate
    /// `λ / Σ lat` until a link saturates or the window `γ / (2 Σ lat)` is
    /// reached), to 1e-9 relative.
    #[test]
    fn cm02_window_and_links_bind_together() {
        let mut rng = Rng(0x51ed_2701_9e37_79b9);
        let mut bound_bound = 0;
        for _case in 0..60 {
            let n_links = 2 + rng.below(8) as u32;
            // windows γ / (2 Σ lat) from 2.8e11 (3 links of 2.5 µs) to 2e13 B/s
            let bw: Vec<f64> = (0..n_links)
                .map(|_| 1e11 * (1.0 + 40.0 * rng.unit()))
                .collect();
            let lat: Vec<Ps> = (0..n_links)
                .map(|_| 100_000 + rng.below(2_400_000))
                .collect();
            let n = 1 + rng.below(30) as usize;
            let msgs: Vec<M> = (0..n)
                .map(|_| {
                    m(
                        rng.below(1_000_000),
                        1 << 50,
                        &random_route(&mut rng, n_links, 3),
                    )
                })
                .collect();
            let mut f = fabric(links(&bw, &lat), Sharing::Cm02, 0.0, 0, 0);
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| msgs[i].t);
            for &i in &order {
                let x = &msgs[i];
                f.inject(
                    x.t,
                    &Message {
                        id: i as u32,
                        src: x.src,
                        dst: x.dst,
                        bytes: x.bytes,
                        links: &x.links,
                        weights: &x.weights,
                    },
                );
            }
            let mut arrived = Vec::new();
            f.advance(10_000_000, &mut arrived);
            f.next_arrival();
            assert!(arrived.is_empty());
            // the reference: progressive filling by scanning
            let lat_s: Vec<f64> = msgs
                .iter()
                .map(|x| {
                    x.links
                        .iter()
                        .map(|&l| lat[l as usize] as f64)
                        .sum::<f64>()
                        .round()
                        / 1e12
                })
                .collect();
            let mut rate = vec![f64::NAN; n];
            let mut free = bw.clone();
            loop {
                let unfrozen: Vec<usize> = (0..n).filter(|&i| rate[i].is_nan()).collect();
                if unfrozen.is_empty() {
                    break;
                }
                let mut best = f64::INFINITY;
                for (l, &fr) in free.iter().enumerate() {
                    let c: f64 = unfrozen
                        .iter()
                        .filter(|&&i| msgs[i].links.contains(&(l as u32)))
                        .map(|&i| 1.0 / lat_s[i])
                        .sum();
                    if c > 0.0 {
                        best = best.min(fr / c);
                    }
                }
                // every window binds at level (γ / (2 Σ lat)) · Σ lat = γ / 2
                best = best.min(TCP_GAMMA / 2.0);
                for &i in &unfrozen {
                    let window = TCP_GAMMA / (2.0 * lat_s[i]);
                    let at_link = msgs[i].links.iter().any(|&l| {
                        let c: f64 = unfrozen
                            .iter()
                            .filter(|&&j| msgs[j].links.contains(&l))
                            .map(|&j| 1.0 / lat_s[j])
                            .sum();
                        free[l as usize] / c <= best * (1.0 + 1e-12)
                    });
                    if at_link || window <= best / lat_s[i] * (1.0 + 1e-12) {
                        rate[i] = (best / lat_s[i]).min(window);
                    }
                }
                for &i in &unfrozen {
                    if !rate[i].is_nan() {
                        for &l in &msgs[i].links {
                            free[l as usize] -= rate[i];
                        }
                    }
                }
            }
            for (s, fl) in f.flows.iter().enumerate() {
                if fl.state != State::Flowing {
                    continue;
                }
                let want = rate[fl.id as usize];
                assert!(
                    (fl.rate - want).abs() <= 1e-9 * want,
                    "slot {s}: rate {} expected {want}",
                    fl.rate
                );
                if fl.rate == fl.bound {
                    bound_bound += 1;
                }
            }
        }
        assert!(
            bound_bound > 20,
            "the window bound only {bound_bound} flows"
        );
    }

    /// The incremental recomputation against one from scratch after every
    /// change (`fabric` sets `verify`), bit for bit: random arrivals, sizes
    /// and routes, both sharings, NICs, multipath weights, tolerance
    /// batching; half the cases draw bandwidths, latencies and sizes from
    /// small sets so that levels tie exactly.
    #[test]
    fn incremental_matches_from_scratch_on_random_sequences() {
        for seed in 1..=120u64 {
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ seed.wrapping_mul(0x9e37_79b9));
            let ties = seed % 2 == 0;
            let sharing = if seed % 3 == 0 {
                Sharing::MaxMin
            } else {
                Sharing::Cm02
            };
            let n_links = 3 + rng.below(10) as u32;
            let n_ep = 2 + rng.below(8) as u32;
            let bw: Vec<f64> = (0..n_links)
                .map(|_| {
                    if ties {
                        [1e9, 2e9, 4e9][rng.below(3) as usize]
                    } else {
                        1e9 * (1.0 + 9.0 * rng.unit())
                    }
                })
                .collect();
            let lat: Vec<Ps> = (0..n_links)
                .map(|_| {
                    if ties {
                        [0, 1_000_000][rng.below(2) as usize]
                    } else {
                        rng.below(3_000_000)
                    }
                })
                .collect();
            let nic = match rng.below(3) {
                0 => 0.0,
                1 => 3e9,
                _ => 1e9 * (1.0 + 4.0 * rng.unit()),
            };
            let tol = [0, 0, 1000, 100_000][rng.below(4) as usize];
            let n = 5 + rng.below(120) as usize;
            let mut msgs: Vec<M> = (0..n)
                .map(|_| {
                    let t = if ties {
                        rng.below(4) * 500_000_000
                    } else {
                        rng.below(2 * S / 1000)
                    };
                    let bytes = if ties {
                        [1000, 4096, 1 << 20][rng.below(3) as usize]
                    } else {
                        1 + rng.below(3_000_000)
                    };
                    let mut x = m(t, bytes, &random_route(&mut rng, n_links, 4));
                    if rng.below(3) == 0 {
                        // two paths, fractions p and 1 − p
                        let p = [0.5, 0.25, 1.0 / 3.0][rng.below(3) as usize];
                        let second = random_route(&mut rng, n_links, 4);
                        x.weights = vec![p; x.links.len()];
                        x.weights.extend(vec![1.0 - p; second.len()]);
                        x.links.extend(second);
                    }
                    x.src = rng.below(n_ep as u64) as u32;
                    x.dst = rng.below(n_ep as u64) as u32;
                    x
                })
                .collect();
            msgs.sort_by_key(|x| x.t);
            let mut f = fabric(links(&bw, &lat), sharing, nic, n_ep as usize, tol);
            drive(&mut f, &msgs);
        }
    }

    #[test]
    fn stress_many_flows_on_few_links() {
        let n_links = 10u32;
        let n = 2000usize;
        for (sharing, tol) in [
            (Sharing::MaxMin, 0),
            (Sharing::MaxMin, 1000),
            (Sharing::Cm02, 0),
        ] {
            let mut rng = Rng(12345);
            let bw: Vec<f64> = (0..n_links)
                .map(|_| 1e9 * (1.0 + 9.0 * rng.unit()))
                .collect();
            let lat: Vec<Ps> = (0..n_links).map(|_| rng.below(2_000_000)).collect();
            let msgs: Vec<M> = (0..n)
                .map(|_| {
                    let mut x = m(
                        0,
                        1 + rng.below(10_000_000),
                        &random_route(&mut rng, n_links, 3),
                    );
                    x.src = rng.below(16) as u32;
                    x.dst = rng.below(16) as u32;
                    x
                })
                .collect();
            let mut f = fabric(links(&bw, &lat), sharing, 20e9, 16, tol);
            let t = drive(&mut f, &msgs);
            let mut load = vec![0.0; n_links as usize];
            for x in &msgs {
                for &l in &x.links {
                    load[l as usize] += x.bytes as f64;
                }
            }
            let total: f64 = load.iter().sum();
            let carried: f64 = f.link_bytes().iter().sum();
            assert!(
                (total - carried).abs() <= 1e-9 * total,
                "{total} vs {carried}"
            );
            // No link can move its load faster than its bandwidth.
            let last = *t.iter().max().unwrap() as f64;
            for l in 0..n_links as usize {
                assert!(last >= load[l] / bw[l] * 1e12 * (1.0 - 1e-9));
            }
            // Nor any message faster than its slowest link.
            for (x, &ti) in msgs.iter().zip(&t) {
                let slow = x
                    .links
                    .iter()
                    .map(|&l| bw[l as usize])
                    .fold(f64::INFINITY, f64::min);
                assert!(ti as f64 >= x.bytes as f64 / slow * 1e12 * (1.0 - 1e-9));
            }
        }
    }

    #[test]
    fn one_congested_link_is_work_conserving() {
        // 2000 random flows on one link: the link never idles, so the last
        // byte leaves at Σ bytes / bandwidth (plus ≤ 1 ps rounding per event).
        let mut rng = Rng(777);
        let n = 2000;
        let msgs: Vec<M> = (0..n)
            .map(|_| m(0, 1 + rng.below(10_000_000), &[0]))
            .collect();
        let mut f = fabric(links(&[3e9], &[0]), Sharing::MaxMin, 0.0, 0, 0);
        let t = drive(&mut f, &msgs);
        let total: f64 = msgs.iter().map(|x| x.bytes as f64).sum();
        let want = total / 3e9 * 1e12;
        let last = *t.iter().max().unwrap() as f64;
        assert!((last - want).abs() <= n as f64 + 1.0, "{last} vs {want}");
        // Max-min on one link: smaller messages never finish later.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| msgs[i].bytes);
        for w in order.windows(2) {
            assert!(t[w[0]] <= t[w[1]]);
        }
    }
}
