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
//! ejection resource with weight 1. A flow uses link `links[i]` with weight
//! `weights[i]` (a link listed twice, as multipath routes may, adds its
//! weights).
//!
//! # Cost
//! Rates are recomputed only for the connected component (flows ↔ resources)
//! touched by a change (flows started or finished at one instant), in
//! `O((flows + resources + Σ route lengths) · log)` for that component: the
//! filling keeps saturation levels in a min-heap whose keys are lower bounds,
//! refreshed lazily when popped. Each
//! flow keeps its remaining bytes and the time they were last brought up to
//! date, and predicted finish times sit in a heap invalidated lazily by a
//! per-flow version counter; flows outside the component are not touched.
//! Finishes within `tolerance` ps of the earliest are taken as one change
//! (each still reports its own arrival time).
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
    /// Speed at which the rate rises during the filling (1, or 1/w_f).
    speed: f64,
    /// Upper bound on the rate (CM02 TCP window), or infinity.
    bound: f64,
    /// Bumped whenever the predicted finish changes or the flow ends.
    version: u32,
    /// Predicted end of the bandwidth phase ([`NO_FINISH`] if none).
    finish: Ps,
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
            speed: 1.0,
            bound: f64::INFINITY,
            version: 0,
            finish: NO_FINISH,
        }
    }
}

/// Resource entries of a flow stored inline in the flow (the rate
/// computation walks them for every flow of a component, so they must not
/// cost a cache miss of their own); longer lists spill to the heap.
#[derive(Clone, Debug, Default)]
struct Route {
    len: usize,
    inline: [(u32, f64); ROUTE_INLINE],
    spill: Vec<(u32, f64)>,
}

/// Resource entries kept inline (6 links plus the two NICs).
const ROUTE_INLINE: usize = 8;

impl Route {
    fn set(&mut self, items: &[(u32, f64)]) {
        self.len = items.len();
        self.spill.clear();
        if items.len() <= ROUTE_INLINE {
            self.inline[..items.len()].copy_from_slice(items);
        } else {
            self.spill.extend_from_slice(items);
        }
    }

    fn as_slice(&self) -> &[(u32, f64)] {
        if self.len <= ROUTE_INLINE {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

/// Resources as columns (links first, then two per endpoint).
#[derive(Clone, Debug, Default)]
struct Resources {
    cap: Vec<f64>,
    /// Slots of the flowing flows using each resource.
    flows: Vec<Vec<u32>>,
    // scratch of the rate computation
    mark: Vec<u32>,
    free: Vec<f64>,
    coef: Vec<f64>,
    cnt: Vec<u32>,
}

impl Resources {
    fn push(&mut self, cap: f64) {
        self.cap.push(cap);
        self.flows.push(Vec::new());
        self.mark.push(0);
        self.free.push(0.0);
        self.coef.push(0.0);
        self.cnt.push(0);
    }
}

/// A saturation level in the progressive filling (min-heap order).
#[derive(Clone, Copy, Debug)]
struct Level {
    level: f64,
    idx: u32,
    is_flow: bool,
}

impl Ord for Level {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .level
            .total_cmp(&self.level)
            .then_with(|| other.is_flow.cmp(&self.is_flow))
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
    // scratch
    seeds: Vec<u32>,
    comp_res: Vec<u32>,
    comp_flows: Vec<u32>,
    fill: BinaryHeap<Level>,
    route_scratch: Vec<(u32, f64)>,
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
            comp_res: Vec::new(),
            comp_flows: Vec::new(),
            fill: BinaryHeap::new(),
            route_scratch: Vec::new(),
        };
        if fab.nic.is_finite() && cfg.n_endpoints > 0 {
            fab.ensure_endpoint(cfg.n_endpoints - 1);
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
        for &(r, _) in f.res.as_slice() {
            self.res.flows[r as usize].push(slot);
            self.seeds.push(r);
        }
    }

    /// End the bandwidth phase of `slot`, predicted for `t_own`.
    fn complete(&mut self, slot: u32, t_own: Ps) {
        let f = &mut self.flows[slot as usize];
        for &(r, _) in f.res.as_slice() {
            let list = &mut self.res.flows[r as usize];
            if let Some(p) = list.iter().position(|&s| s == slot) {
                list.swap_remove(p);
            }
            self.seeds.push(r);
        }
        let arrival = match self.sharing {
            Sharing::MaxMin => t_own.saturating_add(f.latency),
            Sharing::Cm02 => t_own,
        };
        self.arrivals.push(Reverse((arrival, f.id)));
        f.state = State::Free;
        f.version = f.version.wrapping_add(1);
        f.finish = NO_FINISH;
        f.res.set(&[]);
        self.n_flowing -= 1;
        self.free_slots.push(slot);
    }

    /// Recompute the rates of the component(s) reachable from `self.seeds`
    /// at `now` (see [`fill_component`]), and keep the finish heap's stale
    /// entries bounded.
    fn recompute(&mut self, now: Ps) {
        if self.seeds.is_empty() {
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.res.mark.iter_mut().for_each(|m| *m = 0);
            self.flow_seen.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        let mut sc = Scratch {
            epoch: self.epoch,
            now,
            comp_res: &mut self.comp_res,
            comp_flows: &mut self.comp_flows,
            seen: &mut self.flow_seen,
            frozen: &mut self.flow_frozen,
            fill: &mut self.fill,
            finish_heap: &mut self.finish_heap,
        };
        fill_component(&mut self.res, &mut self.flows, &self.seeds, &mut sc);
        self.seeds.clear();
        if self.finish_heap.len() > 2 * self.n_flowing + 1024 {
            let flows = &self.flows;
            self.finish_heap.retain(|&Reverse((_, s, v))| {
                let f = &flows[s as usize];
                f.state == State::Flowing && f.version == v
            });
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
    epoch: u32,
    now: Ps,
    comp_res: &'a mut Vec<u32>,
    comp_flows: &'a mut Vec<u32>,
    /// Per flow slot: epoch of the last visit, and frozen in this filling.
    seen: &'a mut [u32],
    frozen: &'a mut [bool],
    fill: &'a mut BinaryHeap<Level>,
    finish_heap: &'a mut BinaryHeap<Reverse<(Ps, u32, u32)>>,
}

/// Recompute, at `sc.now`, the rates of the flows in the connected
/// component(s) (flows ↔ resources) of the resources `seeds`, and
/// reschedule those whose rate changed. Two passes over the component:
///
/// 1. breadth-first search from `seeds`; each flow found has its remaining
///    bytes brought up to date at its old rate, and its load
///    `w_{f,r}·speed_f` added to its resources' unfrozen coefficients;
/// 2. weighted progressive filling (Bertsekas & Gallager §6.5.2): flow
///    `f`'s rate is `speed_f · λ` while unfrozen; resource `r` saturates at
///    `λ_r = free_r / Σ_unfrozen w_{f,r}·speed_f`, a flow bound at
///    `bound_f / speed_f`. Levels sit in a min-heap (keys are lower bounds,
///    refreshed when popped); a flow is rescheduled as it freezes.
fn fill_component(res: &mut Resources, flows: &mut [Flow], seeds: &[u32], sc: &mut Scratch) {
    let epoch = sc.epoch;
    let now = sc.now;
    sc.comp_res.clear();
    sc.comp_flows.clear();
    sc.fill.clear();
    let visit = |res: &mut Resources, comp_res: &mut Vec<u32>, r: u32| {
        let ru = r as usize;
        if res.mark[ru] != epoch {
            res.mark[ru] = epoch;
            res.free[ru] = res.cap[ru];
            res.coef[ru] = 0.0;
            res.cnt[ru] = 0;
            comp_res.push(r);
        }
    };
    for &r in seeds {
        visit(res, sc.comp_res, r);
    }
    // 1. The component, breadth-first.
    let mut i = 0;
    while i < sc.comp_res.len() {
        let r = sc.comp_res[i] as usize;
        i += 1;
        for k in 0..res.flows[r].len() {
            let s = res.flows[r][k];
            if sc.seen[s as usize] == epoch {
                continue;
            }
            sc.seen[s as usize] = epoch;
            sc.frozen[s as usize] = false;
            let f = &mut flows[s as usize];
            sc.comp_flows.push(s);
            if f.last < now {
                if f.rate > 0.0 {
                    let sent = f.rate * (now - f.last) as f64 / PS_PER_S;
                    f.remaining = (f.remaining - sent).max(0.0);
                }
                f.last = now;
            }
            for &(r2, w) in f.res.as_slice() {
                visit(res, sc.comp_res, r2);
                res.coef[r2 as usize] += w * f.speed;
                res.cnt[r2 as usize] += 1;
            }
            if f.bound.is_finite() {
                sc.fill.push(Level {
                    level: f.bound / f.speed,
                    idx: s,
                    is_flow: true,
                });
            }
        }
    }
    for &r in sc.comp_res.iter() {
        let ru = r as usize;
        if res.cnt[ru] > 0 {
            sc.fill.push(Level {
                level: res.free[ru] / res.coef[ru],
                idx: r,
                is_flow: false,
            });
        }
    }
    // 2. Progressive filling. Freezing flows only raises the saturation
    //    levels of the other resources (λ'_r = λ + free_r(λ)/coef'_r with
    //    coef'_r < coef_r), so heap keys are lower bounds: a popped resource
    //    whose current level is above its key goes back in with the new key.
    let mut level = 0.0f64;
    let mut n_frozen = 0;
    while let Some(e) = sc.fill.pop() {
        if e.is_flow {
            if sc.frozen[e.idx as usize] {
                continue;
            }
            level = level.max(e.level);
            let rate = flows[e.idx as usize].bound;
            freeze(res, flows, e.idx, rate, sc);
            n_frozen += 1;
            continue;
        }
        let r = e.idx as usize;
        if res.cnt[r] == 0 {
            continue;
        }
        let current = if res.coef[r] > 0.0 {
            (res.free[r] / res.coef[r]).max(level)
        } else {
            level
        };
        if current > e.level {
            sc.fill.push(Level {
                level: current,
                ..e
            });
            continue;
        }
        level = level.max(current);
        // Freeze every unfrozen flow crossing the saturated resource.
        for k in 0..res.flows[r].len() {
            let s = res.flows[r][k];
            if !sc.frozen[s as usize] {
                let rate = flows[s as usize].speed * level;
                freeze(res, flows, s, rate, sc);
                n_frozen += 1;
            }
        }
    }
    // Every flow of the component crosses a finite resource, so all froze;
    // this only guards against that invariant breaking.
    if n_frozen < sc.comp_flows.len() {
        for k in 0..sc.comp_flows.len() {
            let s = sc.comp_flows[k];
            if !sc.frozen[s as usize] {
                let rate = flows[s as usize].bound;
                freeze(res, flows, s, rate, sc);
            }
        }
    }
}

/// Freeze flow `s` at `rate`: take its load off its resources and
/// reschedule it if its rate changed (or it had no prediction yet).
fn freeze(res: &mut Resources, flows: &mut [Flow], s: u32, rate: f64, sc: &mut Scratch) {
    sc.frozen[s as usize] = true;
    let f = &mut flows[s as usize];
    for &(r, w) in f.res.as_slice() {
        let ru = r as usize;
        res.free[ru] -= w * rate;
        res.coef[ru] -= w * f.speed;
        res.cnt[ru] -= 1;
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
        if msg.bytes == 0 || msg.links.is_empty() {
            self.arrivals
                .push(Reverse((now.saturating_add(latency), msg.id)));
            return;
        }
        if self.nic.is_finite() {
            self.ensure_endpoint(msg.src.max(msg.dst) as usize);
        }
        let slot = self.alloc_slot();
        let n_links = self.n_links as u32;
        let nic = self.nic.is_finite();
        let rs = &mut self.route_scratch;
        rs.clear();
        for (i, &l) in msg.links.iter().enumerate() {
            let w = weight(i);
            if w > 0.0 && self.res.cap[l as usize].is_finite() {
                rs.push((l, w));
            }
        }
        if nic {
            rs.push((n_links + 2 * msg.src, 1.0));
            rs.push((n_links + 2 * msg.dst + 1, 1.0));
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

    fn fabric(l: Links, sharing: Sharing, nic: f64, n_ep: usize, tol: Ps) -> FlowFabric {
        FlowFabric::new(
            l,
            FlowConfig {
                sharing,
                nic_bandwidth: nic,
                n_endpoints: n_ep,
                tolerance: tol,
            },
        )
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
