//! The event loop: one op program, one fabric, one clock.
//!
//! Semantics (LogGOPSim's, on the IR's exact dependencies):
//! - an op is *released* when every op it depends on has completed and, under
//!   [`Sync::Rounds`] / [`Sync::Barrier`], when its rank's (every rank's)
//!   earlier rounds have completed;
//! - each rank has one CPU that runs released work, without preemption, in
//!   (release time, communication before computation, op id) order: a send
//!   costs `o_send + O·bytes`, a reduction `γ·bytes`, a copy `copy·bytes`,
//!   posting a receive nothing, and completing a receive `o_recv`; OS-noise
//!   detours stretch that work ([`super::noise`]). The CPU chooses only once
//!   every event of the current instant has been handled, so work released
//!   at the same instant is ordered by that rule, not by which event came
//!   first. Communication first is LogGOPSim's rule (it sorts the ops that
//!   become executable by type: sends, receives, then local computation) and
//!   a non-blocking program's: post the next transfers, then compute while
//!   the NIC moves them (e.g. shift-based compositing, Cavin & Demengeon
//!   2012 §3.2: a node "composes the pixels received during previous stage
//!   s − 1 while it does the send and receive operations");
//! - a posted send of at most `eager_threshold` bytes completes at once (the
//!   data is buffered) and, under [`Small::Eager`], enters the network at
//!   once; under [`Small::Detached`] (SimGrid's detached sends, SMPI's
//!   default below `smpi/send-is-detached-thresh`) it enters the network
//!   only once its receive is posted too. A larger send waits for its
//!   receive to be posted (rendezvous) and completes when it has arrived;
//! - a receive completes, after `o_recv` of CPU, once it is posted and its
//!   message has arrived.
//!
//! Events are ordered by `(time, sequence)` ([`super::fabric::TimeQueue`]);
//! time is integer ps. Nothing is global: a simulation is this function's
//! locals, so many can run at once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::fabric::{ceil_ps, Fabric, Message, Ps, TimeQueue};
use super::noise::OsNoise;
use super::program::{Matching, Program, COPY, NONE, RECV, REDUCE, SEND};
use crate::error::CoreError;
use crate::routing::graph::mix64;

/// What, besides dependencies, holds an op back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// Dependencies only: an op starts as soon as its data allows (the
    /// executor's semantics; `mpi/executor.py`).
    Deps,
    /// A rank starts round `k + 1` once its own ops of round `k` completed
    /// (blocking `MPI_Sendrecv` per round, as MPI libraries run these).
    Rounds,
    /// Round `k + 1` starts once every rank's round `k` completed (the
    /// α-β-γ model's synchronous rounds).
    Barrier,
}

/// What happens to a send of at most the eager threshold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Small {
    /// Its data enters the network when the send is posted (MPI eager).
    #[default]
    Eager,
    /// The send completes when posted, but the data moves only once the
    /// receive is posted too (SimGrid's detached communications).
    Detached,
}

/// CPU and protocol costs of the LogGOPS model (ps, ps per byte).
#[derive(Clone, Debug)]
pub struct Costs {
    pub o_send: Ps,
    pub o_recv: Ps,
    /// `O`: sender CPU per byte.
    pub o_per_byte: f64,
    /// `γ`: per byte reduced.
    pub gamma: f64,
    /// Per byte copied locally.
    pub copy: f64,
    /// `S`: largest eager message, bytes.
    pub eager_threshold: u64,
    /// Eager or detached sends up to `eager_threshold`.
    pub small: Small,
    /// At most this many messages of one rank in the network at once, 0 =
    /// no limit (throttling: the all-to-all paper's §3 on BG/L injection);
    /// further sends wait, in posting order.
    pub window: u32,
}

/// Network noise for the event-driven models (network-noise paper §2): every
/// endpoint of `endpoints` streams `bytes`-byte messages to random peers of
/// the set, back to back, until the application finishes.
#[derive(Clone, Debug)]
pub struct Background {
    pub endpoints: Vec<u32>,
    pub bytes: u64,
    pub seed: u64,
}

/// A source of static routes between endpoints.
pub trait Routes {
    fn route(
        &mut self,
        src: u32,
        dst: u32,
        links: &mut Vec<u32>,
        weights: &mut Vec<f64>,
    ) -> Result<(), CoreError>;
}

/// Everything a run reports; per-op and per-message times only with `trace`.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub time: Ps,
    pub rank_done: Vec<Ps>,
    /// CPU start of each op (a receive: when it was posted).
    pub op_start: Vec<Ps>,
    pub op_end: Vec<Ps>,
    pub msg_inject: Vec<Ps>,
    pub msg_arrive: Vec<Ps>,
    pub link_bytes: Vec<f64>,
    pub app_messages: u64,
    pub bg_messages: u64,
    pub events: u64,
    pub os_stolen: Ps,
}

const NEVER: Ps = Ps::MAX;

/// Released CPU work: `(release time, class, op, phase)`, class 0 for
/// communication (sends, receives), 1 for computation (reductions, copies).
type Work = (Ps, u8, u32, u8);

struct Cpu {
    busy: bool,
    /// On the list of ranks whose CPU chooses at the end of the instant.
    listed: bool,
    /// The first of the released work when set (most of the time the only
    /// one: kept out of the heap, whose buffer is one more cache miss).
    first: Option<Work>,
    queue: BinaryHeap<Reverse<Work>>,
}

impl Cpu {
    fn push(&mut self, w: Work) {
        match self.first {
            None if self.queue.is_empty() => self.first = Some(w),
            Some(f) if w < f => {
                self.queue.push(Reverse(f));
                self.first = Some(w);
            }
            _ => self.queue.push(Reverse(w)),
        }
    }

    fn pop(&mut self) -> Option<Work> {
        self.first
            .take()
            .or_else(|| self.queue.pop().map(|Reverse(w)| w))
    }
}

/// Round gates of [`Sync::Rounds`] and [`Sync::Barrier`]: segments are
/// contiguous op ranges (one round of one rank, or one round).
struct Gates {
    seg_of: Vec<u32>,
    seg_ptr: Vec<u64>,
    left: Vec<u32>,
    next: Vec<u32>,
    open: Vec<bool>,
}

impl Gates {
    fn new(prog: &Program, sync: Sync) -> Option<Gates> {
        if sync == Sync::Deps {
            return None;
        }
        let n = prog.n_ops();
        let mut seg_ptr = vec![0u64];
        for k in 0..prog.n_rounds() {
            let (a, b) = (prog.round_ptr[k] as usize, prog.round_ptr[k + 1] as usize);
            for i in a..b {
                if sync == Sync::Rounds && i > a && prog.rank[i] != prog.rank[i - 1] {
                    seg_ptr.push(i as u64);
                }
            }
            if b > a {
                seg_ptr.push(b as u64);
            }
        }
        let n_seg = seg_ptr.len() - 1;
        let mut seg_of = vec![0u32; n];
        let mut left = vec![0u32; n_seg];
        for s in 0..n_seg {
            seg_of[seg_ptr[s] as usize..seg_ptr[s + 1] as usize].fill(s as u32);
            left[s] = (seg_ptr[s + 1] - seg_ptr[s]) as u32;
        }
        let mut next = vec![NONE; n_seg];
        let mut open = vec![false; n_seg];
        match sync {
            Sync::Barrier => {
                for s in 1..n_seg {
                    next[s - 1] = s as u32;
                }
                if n_seg > 0 {
                    open[0] = true;
                }
            }
            _ => {
                let mut last = vec![NONE; prog.n_ranks as usize];
                for s in 0..n_seg {
                    let r = prog.rank[seg_ptr[s] as usize] as usize;
                    if last[r] == NONE {
                        open[s] = true;
                    } else {
                        next[last[r] as usize] = s as u32;
                    }
                    last[r] = s as u32;
                }
            }
        }
        Some(Gates {
            seg_of,
            seg_ptr,
            left,
            next,
            open,
        })
    }
}

struct Sim<'a> {
    prog: &'a Program,
    m: &'a Matching,
    order: &'a [u32],
    costs: &'a Costs,
    fabric: &'a mut dyn Fabric,
    routes: &'a mut dyn Routes,
    os: &'a mut OsNoise,
    deps_left: Vec<u32>,
    gates: Option<Gates>,
    cpu: Vec<Cpu>,
    events: TimeQueue<(u32, u8)>,
    /// CPU work that ended at the current time, in the order it ended.
    now: VecDeque<(Ps, u32, u8)>,
    /// The current instant.
    clock: Ps,
    /// Ranks whose CPU may start work once the current instant is handled.
    choosing: Vec<u32>,
    send_post: Vec<Ps>,
    recv_post: Vec<Ps>,
    arrived: Vec<Ps>,
    injected: Vec<bool>,
    in_flight: Vec<u32>,
    throttled: Vec<VecDeque<u32>>,
    done: usize,
    links: Vec<u32>,
    weights: Vec<f64>,
    bg: Option<&'a Background>,
    bg_src: Vec<u32>,
    rng: u64,
    out: Outcome,
    trace: bool,
}

impl Sim<'_> {
    fn cpu_work(&self, op: u32, phase: u8) -> Ps {
        let i = op as usize;
        let bytes = self.prog.nbytes[i] as f64;
        let c = self.costs;
        if phase == 1 {
            return c.o_recv;
        }
        match self.prog.kind[i] {
            SEND => c.o_send + ceil_ps(bytes * c.o_per_byte),
            REDUCE => ceil_ps(bytes * c.gamma),
            COPY => ceil_ps(bytes * c.copy),
            _ => 0,
        }
    }

    /// Communication (class 0) goes before computation (class 1) among work
    /// released at the same instant.
    fn class(&self, op: u32, phase: u8) -> u8 {
        match (self.prog.kind[op as usize], phase) {
            (SEND | RECV, _) | (_, 1) => 0,
            _ => 1,
        }
    }

    /// `op`'s CPU work (`phase` 1: completing a receive) is released at `t`.
    fn push_cpu(&mut self, t: Ps, op: u32, phase: u8) {
        let r = self.prog.rank[op as usize] as usize;
        let class = self.class(op, phase);
        self.cpu[r].push((t, class, op, phase));
        self.list_cpu(r);
    }

    /// Rank `r`'s CPU chooses its next work once the current instant is
    /// handled ([`Sim::choose`]).
    fn list_cpu(&mut self, r: usize) {
        if !self.cpu[r].busy && !self.cpu[r].listed {
            self.cpu[r].listed = true;
            self.choosing.push(r as u32);
        }
    }

    /// Every listed idle CPU starts its first released work, at the current
    /// instant; called when no event of this instant is left.
    fn choose(&mut self) {
        let mut listed = std::mem::take(&mut self.choosing);
        for &r in &listed {
            let r = r as usize;
            self.cpu[r].listed = false;
            if self.cpu[r].busy {
                continue;
            }
            if let Some((ready, _, op, phase)) = self.cpu[r].pop() {
                self.run_cpu(r, self.clock.max(ready), op, phase);
            }
        }
        listed.clear();
        self.choosing = listed;
    }

    /// The CPU of rank `r` starts `op`'s work at `start`. Work that takes no
    /// time (posting a receive, free overheads) ends at once, through the
    /// `now` queue rather than the heap: most ops of a schedule are such.
    fn run_cpu(&mut self, r: usize, start: Ps, op: u32, phase: u8) {
        let end = self.os.run(r, start, self.cpu_work(op, phase));
        if self.trace && phase == 0 {
            self.out.op_start[op as usize] = start;
        }
        self.cpu[r].busy = true;
        if end == start {
            self.now.push_back((end, op, phase));
        } else {
            self.events.push(end, (op, phase));
        }
    }

    fn gate_open(&self, op: u32) -> bool {
        match &self.gates {
            None => true,
            Some(g) => g.open[g.seg_of[op as usize] as usize],
        }
    }

    fn complete(&mut self, t: Ps, op: u32) {
        let i = op as usize;
        if self.trace {
            self.out.op_end[i] = t;
        }
        let r = self.prog.rank[i] as usize;
        self.out.rank_done[r] = self.out.rank_done[r].max(t);
        self.done += 1;
        for k in self.m.succ_ptr[i] as usize..self.m.succ_ptr[i + 1] as usize {
            let s = self.m.succ_idx[k];
            self.deps_left[s as usize] -= 1;
            if self.deps_left[s as usize] == 0 && self.gate_open(s) {
                self.push_cpu(t, s, 0);
            }
        }
        let mut opened = None;
        if let Some(g) = &mut self.gates {
            let seg = g.seg_of[i] as usize;
            g.left[seg] -= 1;
            if g.left[seg] == 0 && g.next[seg] != NONE {
                let nx = g.next[seg] as usize;
                g.open[nx] = true;
                opened = Some((g.seg_ptr[nx] as usize, g.seg_ptr[nx + 1] as usize));
            }
        }
        if let Some((a, b)) = opened {
            for s in a..b {
                if self.deps_left[s] == 0 {
                    self.push_cpu(t, s as u32, 0);
                }
            }
        }
    }

    fn inject(&mut self, t: Ps, id: u32, src: u32, dst: u32, bytes: u64) -> Result<(), CoreError> {
        self.links.clear();
        self.weights.clear();
        if src != dst {
            self.routes
                .route(src, dst, &mut self.links, &mut self.weights)?;
        }
        self.fabric.inject(
            t,
            &Message {
                id,
                src,
                dst,
                bytes,
                links: &self.links,
                weights: &self.weights,
            },
        );
        Ok(())
    }

    fn inject_app(&mut self, t: Ps, msg: u32) -> Result<(), CoreError> {
        let s = self.m.send[msg as usize] as usize;
        self.injected[msg as usize] = true;
        let r = self.prog.rank[s] as usize;
        if self.costs.window > 0 {
            if self.in_flight[r] >= self.costs.window {
                self.throttled[r].push_back(msg);
                return Ok(());
            }
            self.in_flight[r] += 1;
        }
        self.put_on_wire(t, msg)
    }

    fn put_on_wire(&mut self, t: Ps, msg: u32) -> Result<(), CoreError> {
        let s = self.m.send[msg as usize] as usize;
        if self.trace {
            self.out.msg_inject[msg as usize] = t;
        }
        self.out.app_messages += 1;
        let (src, dst) = (
            self.order[self.prog.rank[s] as usize],
            self.order[self.prog.peer[s] as usize],
        );
        self.inject(t, msg, src, dst, self.prog.nbytes[s])
    }

    fn bg_send(&mut self, t: Ps, src: u32, dst: u32) -> Result<(), CoreError> {
        let bg = self.bg.expect("background configured");
        let id = self.m.send.len() as u64 + self.bg_src.len() as u64;
        if id > u32::MAX as u64 {
            return Err(CoreError::InvalidArgument(
                "simulate: over 2^32 messages; shorten the run or the background traffic".into(),
            ));
        }
        self.bg_src.push(src);
        self.out.bg_messages += 1;
        self.inject(t, id as u32, src, dst, bg.bytes)
    }

    fn random_peer(&mut self, src: u32) -> u32 {
        let eps = &self.bg.expect("background").endpoints;
        loop {
            self.rng = mix64(self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15));
            let d = eps[(self.rng % eps.len() as u64) as usize];
            if d != src {
                return d;
            }
        }
    }

    fn on_cpu_done(&mut self, t: Ps, op: u32, phase: u8) -> Result<(), CoreError> {
        let i = op as usize;
        let r = self.prog.rank[i] as usize;
        self.cpu[r].busy = false;
        let msg = self.m.msg_of[i];
        let eager = self.prog.nbytes[i] <= self.costs.eager_threshold;
        match (self.prog.kind[i], phase) {
            (SEND, 0) => {
                self.send_post[msg as usize] = t;
                let posted = self.recv_post[msg as usize] != NEVER;
                if eager {
                    if self.costs.small == Small::Eager || posted {
                        self.inject_app(t, msg)?;
                    }
                    self.complete(t, op);
                } else if posted {
                    self.inject_app(t, msg)?;
                }
            }
            (RECV, 0) => {
                self.recv_post[msg as usize] = t;
                let waits = !eager || self.costs.small == Small::Detached;
                if waits && self.send_post[msg as usize] != NEVER && !self.injected[msg as usize] {
                    self.inject_app(t, msg)?;
                }
                if self.arrived[msg as usize] != NEVER {
                    self.push_cpu(t, op, 1);
                }
            }
            _ => self.complete(t, op),
        }
        self.list_cpu(r);
        Ok(())
    }

    fn on_arrival(&mut self, t: Ps, id: u32) -> Result<(), CoreError> {
        let n_app = self.m.send.len();
        if id as usize >= n_app {
            if self.done < self.prog.n_ops() {
                let src = self.bg_src[id as usize - n_app];
                let dst = self.random_peer(src);
                self.bg_send(t, src, dst)?;
            }
            return Ok(());
        }
        let msg = id as usize;
        self.arrived[msg] = t;
        if self.costs.window > 0 {
            let r = self.prog.rank[self.m.send[msg] as usize] as usize;
            if let Some(next) = self.throttled[r].pop_front() {
                self.put_on_wire(t, next)?;
            } else {
                self.in_flight[r] -= 1;
            }
        }
        if self.trace {
            self.out.msg_arrive[msg] = t;
        }
        let (s, rv) = (self.m.send[msg], self.m.recv[msg]);
        if self.prog.nbytes[s as usize] > self.costs.eager_threshold {
            self.complete(t, s);
        }
        if self.recv_post[msg] != NEVER {
            self.push_cpu(t, rv, 1);
        }
        Ok(())
    }

    fn start_background(&mut self) -> Result<(), CoreError> {
        let Some(bg) = self.bg else { return Ok(()) };
        if bg.endpoints.len() < 2 || bg.bytes == 0 {
            return Ok(());
        }
        // One random permutation first (every endpoint receives from one
        // peer, as in the paper's perturbation pattern), then random peers.
        let mut eps = bg.endpoints.clone();
        for k in (1..eps.len()).rev() {
            self.rng = mix64(self.rng.wrapping_add(k as u64));
            eps.swap(k, (self.rng % (k as u64 + 1)) as usize);
        }
        for k in 0..eps.len() {
            self.bg_send(0, eps[k], eps[(k + 1) % eps.len()])?;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), CoreError> {
        let n = self.prog.n_ops();
        for i in 0..n {
            if self.deps_left[i] == 0 && self.gate_open(i as u32) {
                self.push_cpu(0, i as u32, 0);
            }
        }
        self.start_background()?;
        let mut arrived = Vec::new();
        while self.done < n {
            if let Some((t, op, phase)) = self.now.pop_front() {
                self.on_cpu_done(t, op, phase)?;
                continue;
            }
            let t_ev = self.events.next();
            let t_fab = self.fabric.next_arrival();
            let t_next = match (t_ev, t_fab) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if !self.choosing.is_empty() && t_next.is_none_or(|t| t > self.clock) {
                // the instant is handled: every release of it is known
                self.choose();
                continue;
            }
            self.out.events += 1;
            // Arrivals go first at equal times: a receive completes before
            // the CPU work that finishes at the same instant looks at it.
            let fabric_first = match (t_ev, t_fab) {
                (Some(te), Some(tf)) => tf <= te,
                (None, Some(_)) => true,
                _ => false,
            };
            if fabric_first {
                arrived.clear();
                self.fabric
                    .advance(t_fab.expect("fabric has a next arrival"), &mut arrived);
                for &(t, id) in &arrived {
                    self.clock = t;
                    self.on_arrival(t, id)?;
                }
            } else if let Some((t, (op, phase))) = self.events.pop() {
                self.clock = t;
                self.on_cpu_done(t, op, phase)?;
            } else {
                return Err(CoreError::InvalidArgument(format!(
                    "simulate: {} of {} ops can never start (a receive waits for a send that \
                     waits for it: rendezvous deadlock)",
                    n - self.done,
                    n
                )));
            }
        }
        Ok(())
    }
}

/// Simulate `prog` (matched by `m`) with ranks on endpoints `order`.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    prog: &Program,
    m: &Matching,
    order: &[u32],
    costs: &Costs,
    sync: Sync,
    fabric: &mut dyn Fabric,
    routes: &mut dyn Routes,
    os: &mut OsNoise,
    bg: Option<&Background>,
    trace: bool,
) -> Result<Outcome, CoreError> {
    if order.len() != prog.n_ranks as usize {
        return Err(CoreError::InvalidArgument(format!(
            "simulate: order has {} entries, expected one per rank ({})",
            order.len(),
            prog.n_ranks
        )));
    }
    let n = prog.n_ops();
    let n_msg = m.send.len();
    let deps_left = (0..n).map(|i| prog.deps(i).len() as u32).collect();
    let mut out = Outcome {
        rank_done: vec![0; prog.n_ranks as usize],
        ..Default::default()
    };
    if trace {
        out.op_start = vec![0; n];
        out.op_end = vec![0; n];
        out.msg_inject = vec![0; n_msg];
        out.msg_arrive = vec![0; n_msg];
    }
    let mut sim = Sim {
        prog,
        m,
        order,
        costs,
        fabric,
        routes,
        os,
        deps_left,
        gates: Gates::new(prog, sync),
        cpu: (0..prog.n_ranks)
            .map(|_| Cpu {
                busy: false,
                listed: false,
                first: None,
                queue: BinaryHeap::new(),
            })
            .collect(),
        events: TimeQueue::default(),
        now: VecDeque::new(),
        clock: 0,
        choosing: Vec::new(),
        send_post: vec![NEVER; n_msg],
        recv_post: vec![NEVER; n_msg],
        arrived: vec![NEVER; n_msg],
        injected: vec![false; n_msg],
        in_flight: vec![
            0;
            if costs.window > 0 {
                prog.n_ranks as usize
            } else {
                0
            }
        ],
        throttled: vec![
            VecDeque::new();
            if costs.window > 0 {
                prog.n_ranks as usize
            } else {
                0
            }
        ],
        done: 0,
        links: Vec::with_capacity(64),
        weights: Vec::with_capacity(64),
        bg,
        bg_src: Vec::new(),
        rng: bg.map_or(0, |b| mix64(b.seed)),
        out,
        trace,
    };
    sim.run()?;
    let mut out = std::mem::take(&mut sim.out);
    out.time = out.rank_done.iter().copied().max().unwrap_or(0);
    out.link_bytes = sim.fabric.link_bytes().to_vec();
    out.os_stolen = sim.os.stolen;
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::fabric::Links;
    use crate::engine::loggops::{LogGopsNic, Reservation};
    use crate::engine::noise::Detours;
    use crate::engine::program::tests::ring_round;

    /// A crossbar: endpoint e reaches the switch on link e and is reached on link n + e.
    pub struct Crossbar(pub u32);

    impl Routes for Crossbar {
        fn route(
            &mut self,
            s: u32,
            d: u32,
            l: &mut Vec<u32>,
            w: &mut Vec<f64>,
        ) -> Result<(), CoreError> {
            l.extend([s, self.0 + d]);
            w.extend([1.0, 1.0]);
            Ok(())
        }
    }

    fn loggops(n: u32) -> Reservation {
        let links = Links {
            bandwidth: vec![1e9; 2 * n as usize],
            latency: vec![0; 2 * n as usize],
        };
        Reservation::new(
            links,
            n as usize,
            LogGopsNic {
                g: 0,
                big_g: 0.0,
                l: 0,
                ports: 1,
            },
        )
    }

    fn costs(o: Ps) -> Costs {
        Costs {
            o_send: o,
            o_recv: 0,
            o_per_byte: 0.0,
            gamma: 1000.0,
            copy: 0.0,
            eager_threshold: 1 << 16,
            small: Small::Eager,
            window: 0,
        }
    }

    fn run(prog: &Program, sync: Sync, c: &Costs) -> Outcome {
        let m = prog.match_messages().unwrap();
        let order: Vec<u32> = (0..prog.n_ranks).collect();
        let mut f = loggops(prog.n_ranks);
        let mut os = OsNoise::new(Detours::Quiet, prog.n_ranks as usize);
        simulate(
            prog,
            &m,
            &order,
            c,
            sync,
            &mut f,
            &mut Crossbar(prog.n_ranks),
            &mut os,
            None,
            true,
        )
        .unwrap()
    }

    #[test]
    fn a_ring_round_costs_alpha_plus_bytes_over_bandwidth() {
        let out = run(&ring_round(4, 1000), Sync::Deps, &costs(500_000));
        assert_eq!(out.time, 500_000 + 1_000_000);
        assert_eq!(out.app_messages, 4);
        assert!(out.rank_done.iter().all(|&t| t == out.time));
    }

    /// Two rounds on 2 ranks; round 2's receive on rank 1 follows a reduction.
    fn two_rounds(bytes: u64) -> Program {
        // round 0: r0 send→1, r1 recv←0, r1 reduce (dep recv);
        // round 1: r0 recv←1, r1 send→0 (dep reduce)
        Program {
            n_ranks: 2,
            rank: vec![0, 1, 1, 0, 1],
            kind: vec![SEND, RECV, REDUCE, RECV, SEND],
            peer: vec![1, 0, NONE, 1, 0],
            tag: vec![0; 5],
            nbytes: vec![bytes; 5],
            dep_ptr: vec![0, 0, 0, 1, 1, 2],
            dep_idx: vec![1, 2],
            round_ptr: vec![0, 3, 5],
        }
    }

    #[test]
    fn reduction_then_send_follow_the_dependencies() {
        // 1000 B: 1 µs on the wire, 1 µs of reduction (γ = 1000 ps/B)
        let out = run(&two_rounds(1000), Sync::Deps, &costs(0));
        assert_eq!(out.op_end[1], 1_000_000);
        assert_eq!(out.op_end[2], 2_000_000);
        assert_eq!(out.time, 3_000_000);
    }

    #[test]
    fn rendezvous_waits_for_the_receive_and_round_gates_hold_ops_back() {
        // A rank-0 op in round 1 with no dependency: under Deps it starts at 0.
        let mut p = two_rounds(100_000); // > eager threshold: rendezvous
        let c = costs(0);
        let deps = run(&p, Sync::Deps, &c);
        // rank 0 posts its round-1 receive at 0
        assert_eq!(deps.op_start[3], 0);
        let rounds = run(&p, Sync::Rounds, &c);
        // under Rounds it waits for rank 0's round 0 (the rendezvous send done at 100 µs)
        assert_eq!(rounds.op_start[3], 100_000_000);
        // barrier: round 1 waits for rank 1's reduction too (100 µs more)
        let barrier = run(&p, Sync::Barrier, &c);
        assert_eq!(barrier.op_start[3], 200_000_000);
        assert_eq!(barrier.time, 300_000_000);
        // rendezvous: a send posted before its receive waits for it
        // rank 1's round-1 send no longer waits; rank 0's receive waits for its own send
        p.dep_ptr = vec![0, 0, 0, 1, 2, 2];
        p.dep_idx = vec![1, 0];
        let out = run(&p, Sync::Deps, &c);
        assert_eq!(out.op_start[4], 0, "the send is posted at once");
        assert_eq!(
            out.msg_inject[1], 100_000_000,
            "but injected when its receive is posted"
        );
    }

    #[test]
    fn a_detached_send_completes_at_once_but_moves_when_its_receive_is_posted() {
        // 1000 B (eager size), rank 0's receive (op 3) held back until rank
        // 1's reduction ends at 2 µs (message 0: 1 µs on the wire, then 1 µs
        // of reduction), rank 1's send (op 4) posted at 0. Eager: its data
        // leaves at 0. Detached: the send still completes at 0, but the data
        // leaves when op 3 is posted, at 2 µs, and arrives 1 µs later.
        let mut p = two_rounds(1000);
        p.dep_ptr = vec![0, 0, 0, 1, 2, 2];
        p.dep_idx = vec![1, 2];
        let mut c = costs(0);
        let eager = run(&p, Sync::Deps, &c);
        assert_eq!((eager.op_end[4], eager.msg_inject[1]), (0, 0));
        assert_eq!(eager.op_start[3], 2_000_000);
        c.small = Small::Detached;
        let detached = run(&p, Sync::Deps, &c);
        assert_eq!(detached.op_end[4], 0, "the send completes when posted");
        assert_eq!(
            detached.msg_inject[1], 2_000_000,
            "the data moves when the receive is posted"
        );
        assert_eq!(detached.op_end[3], 3_000_000);
        // A receive posted before the send: the data moves at the send's post.
        assert_eq!(detached.msg_inject[0], 0);
    }

    /// Two stages of a two-rank exchange in lockstep, as shift-based
    /// compositing: each stage's piece is composited (dep: its receive) while
    /// the next stage's send (dep: the previous send and receive) moves.
    fn two_stages(bytes: u64) -> Program {
        // round 0: r0 [0 send→1, 1 recv←1, 2 reduce(1)], r1 [3 send→0, 4 recv←0, 5 reduce(4)]
        // round 1: r0 [6 send(0,1), 7 recv, 8 reduce(7,2)], r1 [9 send(3,4), 10 recv, 11 reduce(10,5)]
        Program {
            n_ranks: 2,
            rank: vec![0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1],
            kind: vec![
                SEND, RECV, REDUCE, SEND, RECV, REDUCE, SEND, RECV, REDUCE, SEND, RECV, REDUCE,
            ],
            peer: vec![1, 1, NONE, 0, 0, NONE, 1, 1, NONE, 0, 0, NONE],
            tag: vec![0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 0],
            nbytes: vec![bytes; 12],
            dep_ptr: vec![0, 0, 0, 1, 1, 1, 2, 4, 4, 6, 8, 8, 10],
            dep_idx: vec![1, 4, 0, 1, 7, 2, 3, 4, 10, 5],
            round_ptr: vec![0, 6, 12],
        }
    }

    #[test]
    fn a_send_released_with_a_composite_is_posted_first_and_moves_while_it_runs() {
        // o = 0.5 µs, 1000 B: 1 µs on the wire, 1 µs of composite (γ = 1000 ps/B), eager.
        // Stage 1 arrives at T1 = o + 1 µs = 1.5 µs; the stage-2 send and the stage-1
        // composite are both released at T1 (by the receive). Communication first: the
        // send's o takes 1.5..2.0, its message moves 2.0..3.0 while the composite runs
        // 2.0..3.0; the stage-2 composite runs 3.0..4.0: 2(o + βn) + γn = 4 µs. Composite
        // first (op id order) would give 1.5..2.5, send 2.5..3.0, arrival 4.0, end 5 µs.
        let prog = two_stages(1000);
        let m = prog.match_messages().unwrap();
        let out = run(&prog, Sync::Deps, &costs(500_000));
        for (send, composite) in [(6, 2), (9, 5)] {
            assert_eq!(out.op_start[send], 1_500_000, "send posted at T1");
            let msg = m.msg_of[send] as usize;
            assert_eq!(
                (out.msg_inject[msg], out.msg_arrive[msg]),
                (2_000_000, 3_000_000)
            );
            assert_eq!(
                (out.op_start[composite], out.op_end[composite]),
                (2_000_000, 3_000_000),
                "the composite runs while the message moves"
            );
        }
        assert_eq!((out.op_start[8], out.op_end[8]), (3_000_000, 4_000_000));
        assert_eq!(out.time, 4_000_000);
    }

    #[test]
    fn the_cpu_is_not_preempted_by_work_released_while_it_composites() {
        // r0: [0 reduce, 1 recv←1], round 1: [3 send→1 (dep 1)]; r1: [2 send→0], [4 recv←0].
        // At 0 the receive is posted before the composite (communication first), the
        // composite runs 0..1 µs; the message (r1's o = 0.25 µs, then 500 B: 0.5 µs) arrives
        // at 0.75 µs, but completing the receive needs the CPU: at 1 µs; then r0's send
        // takes o, 1.0..1.25, and its message arrives at 1.75 µs.
        let prog = Program {
            n_ranks: 2,
            rank: vec![0, 0, 1, 0, 1],
            kind: vec![REDUCE, RECV, SEND, SEND, RECV],
            peer: vec![NONE, 1, 0, 1, 0],
            tag: vec![0; 5],
            nbytes: vec![1000, 500, 500, 500, 500],
            dep_ptr: vec![0, 0, 0, 0, 1, 1],
            dep_idx: vec![1],
            round_ptr: vec![0, 3, 5],
        };
        let mut c = costs(0);
        c.o_send = 250_000;
        let out = run(&prog, Sync::Deps, &c);
        assert_eq!(
            out.op_start[1], 0,
            "the receive is posted before the composite"
        );
        assert_eq!((out.op_start[0], out.op_end[0]), (0, 1_000_000));
        assert_eq!(out.msg_arrive[0], 250_000 + 500_000);
        assert_eq!(
            out.op_end[1], 1_000_000,
            "completing it waits for the composite"
        );
        assert_eq!((out.op_start[3], out.time), (1_000_000, 1_750_000));
    }

    #[test]
    fn a_window_of_one_sends_a_ranks_messages_one_after_another() {
        // rank 0 sends to 1, 2, 3 at once (three disjoint routes of the crossbar but one NIC link)
        let prog = Program {
            n_ranks: 4,
            rank: vec![0, 0, 0, 1, 2, 3],
            kind: vec![SEND, SEND, SEND, RECV, RECV, RECV],
            peer: vec![1, 2, 3, 0, 0, 0],
            tag: vec![0; 6],
            nbytes: vec![1000; 6],
            dep_ptr: vec![0; 7],
            dep_idx: vec![],
            round_ptr: vec![0, 6],
        };
        let mut c = costs(0);
        let free = run(&prog, Sync::Deps, &c);
        c.window = 1;
        let one = run(&prog, Sync::Deps, &c);
        // the shared first link serialises them either way; the window holds
        // the 2nd and 3rd back until the previous one arrived
        assert_eq!(free.msg_inject, vec![0, 0, 0]);
        assert_eq!(one.msg_inject, vec![0, 1_000_000, 2_000_000]);
        assert_eq!(one.time, 3_000_000);
    }

    #[test]
    fn background_traffic_slows_a_message_sharing_its_links() {
        let prog = ring_round(2, 1_000_000);
        let m = prog.match_messages().unwrap();
        let c = costs(0);
        let mut os = OsNoise::new(Detours::Quiet, 2);
        // endpoints 0,1 for the app, 2,3 background, all on one crossbar of 4
        let mut go = |bg: Option<&Background>| {
            let mut f = loggops(4);
            let (order, sync, mut xbar) = ([0, 1], Sync::Deps, Crossbar(4));
            simulate(
                &prog, &m, &order, &c, sync, &mut f, &mut xbar, &mut os, bg, false,
            )
            .unwrap()
        };
        let clean = go(None);
        let bg = Background {
            endpoints: vec![2, 3, 0],
            bytes: 1_000_000,
            seed: 3,
        };
        let noisy = go(Some(&bg));
        assert_eq!(clean.time, 1_000_000_000);
        assert!(
            noisy.time > clean.time && noisy.bg_messages >= 3,
            "{noisy:?}"
        );
    }
}
