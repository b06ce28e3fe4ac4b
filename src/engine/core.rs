//! The event loop, written once: one op program, one fabric, one clock.
//!
//! [`Core`] holds every rule of the simulation — the CPU of each rank, the
//! eager / rendezvous / detached protocol, the injection window, arrivals,
//! background traffic, tracing and the main loop — and is generic
//! (monomorphised) over an [`OpStore`], which holds the ops and messages
//! and decides when an op is released. Two stores:
//! - [`super::run::WholeProgram`]: the whole program in memory, compiled
//!   once and run many times (noise sweeps, the tuner);
//! - [`super::stream::Window`]: the program pulled round by round into a
//!   window of ops, memory bounded by what is in flight.
//!
//! Both see the same events in the same order, so their results are bit
//! for bit the same (the streamed store refuses, [`OpStore::late`], where
//! it cannot guarantee that).
//!
//! Semantics (LogGOPSim's, on the IR's exact dependencies):
//! - an op is *released* when every op it depends on has completed and, under
//!   [`Sync::Rounds`] / [`Sync::Barrier`], when its rank's (every rank's)
//!   earlier rounds have completed (the store's rule);
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
//!   message has arrived;
//! - with [`Rendezvous::Handshake`] a send above `eager_threshold` bytes
//!   first sends a control message (request to send) to its receiver when
//!   it is posted; the receiver answers (clear to send) once that request
//!   has arrived and its receive is posted; the data leaves when the answer
//!   is back (MPICH's and Open MPI's RTS/CTS rendezvous). Control messages
//!   take no CPU, carry `envelope` bytes and cross the same fabric: a
//!   rendezvous ping-pong pays one round trip of the route's latency more
//!   than with [`Rendezvous::Direct`] (SMPI's, where the data leaves once
//!   both sides are posted);
//! - every application message puts `envelope` bytes on the wire beyond its
//!   payload (SMPI's 16-byte MPI envelope: `smpi_request.cpp`, SimGrid 3.32
//!   line 617, `payload_size_ = size_ + 16`).
//!
//! Events are ordered by `(time, sequence)` ([`super::fabric::TimeQueue`]);
//! time is integer ps. Nothing is global: a simulation is a [`Core`] value,
//! so many can run at once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::fabric::{ceil_ps, Fabric, Message, Ps, TimeQueue};
use super::noise::OsNoise;
use super::program::{COPY, NONE, RECV, REDUCE, SEND};
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

/// The clock's guard: a run whose simulated time passes 2^62 ps (about 53
/// days) ends with an error rather than wrap the 64-bit clock. Every time
/// the edge hands in is bounded (10^18 ps: `bindings/config.rs`) and
/// `topocoll.sim.engine` refuses runs whose upper bound passes 2^60 ps, so
/// no single step adds 2^62: the clock stops before it can wrap.
pub const CLOCK_LIMIT: Ps = 1 << 62;

/// Whether the user asked to stop (Ctrl-C): registered once by the Python
/// face ([`set_interrupt_hook`]), which asks the interpreter for a pending
/// signal; the core itself knows nothing of Python.
static INTERRUPT_HOOK: OnceLock<fn() -> bool> = OnceLock::new();

/// Register the hook long runs poll ([`Poll`]); the first one stays.
pub fn set_interrupt_hook(hook: fn() -> bool) {
    let _ = INTERRUPT_HOOK.set(hook);
}

/// A long loop's interruption point: [`Poll::check`] per event is one
/// counter decrement; every [`Poll::EVERY`] events it reads the wall clock,
/// and at most every [`Poll::PERIOD`] it calls the hook (which takes the
/// interpreter's lock). A run shorter than `PERIOD` never calls it.
pub struct Poll {
    countdown: u32,
    next: Instant,
}

impl Default for Poll {
    fn default() -> Self {
        Poll {
            countdown: Self::EVERY,
            next: Instant::now() + Self::PERIOD,
        }
    }
}

impl Poll {
    const EVERY: u32 = 256;
    const PERIOD: Duration = Duration::from_millis(100);

    /// `Err(Interrupted)` once the hook says the user asked to stop.
    #[inline]
    pub fn check(&mut self) -> Result<(), CoreError> {
        self.countdown -= 1;
        if self.countdown == 0 {
            return self.ask();
        }
        Ok(())
    }

    #[cold]
    fn ask(&mut self) -> Result<(), CoreError> {
        self.countdown = Self::EVERY;
        let now = Instant::now();
        if now < self.next {
            return Ok(());
        }
        self.next = now + Self::PERIOD;
        match INTERRUPT_HOOK.get() {
            Some(hook) if hook() => Err(CoreError::Interrupted),
            _ => Ok(()),
        }
    }
}

/// How a message above the eager threshold starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rendezvous {
    /// Its data leaves once both its send and its receive are posted.
    #[default]
    Direct,
    /// A control round trip first (request to send, clear to send).
    Handshake,
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
    /// Bytes every message puts on the wire beyond its payload (the MPI
    /// envelope); control messages carry this much.
    pub envelope: u64,
    /// Direct rendezvous or a control round trip first.
    pub rendezvous: Rendezvous,
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
    /// Send and receive op of each message (traces only).
    pub msg_send: Vec<u64>,
    pub msg_recv: Vec<u64>,
    pub link_bytes: Vec<f64>,
    pub app_messages: u64,
    pub bg_messages: u64,
    pub events: u64,
    pub os_stolen: Ps,
}

/// A time that has not come (yet).
pub const NEVER: Ps = Ps::MAX;

/// Application messages are numbered from 0 in send order; background
/// messages from here, so that the two never collide whatever the
/// program's length (a streamed program's is unknown until its end) and
/// every application message sorts before every background message among
/// arrivals of one instant.
pub const BG_BASE: u32 = 1 << 31;

/// Control messages of the rendezvous handshake are numbered
/// `CTRL_BASE + message` (one in flight per message at a time), so with
/// [`Rendezvous::Handshake`] application messages stay below `CTRL_BASE`.
pub const CTRL_BASE: u32 = 1 << 30;

/// An op id: `u32` for a whole program (smaller CPU queues and events),
/// `u64` for a streamed one (ids run on over the whole stream).
pub trait OpId: Copy + Ord + std::fmt::Debug {
    fn ix(self) -> usize;
}

impl OpId for u32 {
    #[inline]
    fn ix(self) -> usize {
        self as usize
    }
}

impl OpId for u64 {
    #[inline]
    fn ix(self) -> usize {
        self as usize
    }
}

/// The protocol state of one message (application messages only).
#[derive(Clone, Copy, Debug)]
pub struct MsgState<O> {
    /// Its send op, and its receive op (the streamed store's `u64::MAX`
    /// until matched).
    pub send: O,
    pub recv: O,
    pub send_post: Ps,
    pub recv_post: Ps,
    pub arrived: Ps,
    pub injected: bool,
    /// Completed ops of the message (the streamed window retires it at 2).
    pub closed: u8,
    /// Rendezvous handshake: 0 none yet, [`RTS_SENT`], [`RTS_HERE`],
    /// [`CTS_SENT`].
    pub handshake: u8,
}

/// The request to send is on its way to the receiver.
pub const RTS_SENT: u8 = 1;
/// The request to send has arrived (the answer waits for the receive).
pub const RTS_HERE: u8 = 2;
/// The clear to send is on its way back to the sender.
pub const CTS_SENT: u8 = 3;

impl<O> MsgState<O> {
    pub fn new(send: O, recv: O) -> Self {
        MsgState {
            send,
            recv,
            send_post: NEVER,
            recv_post: NEVER,
            arrived: NEVER,
            injected: false,
            closed: 0,
            handshake: 0,
        }
    }
}

/// Where the ops live and when they are released: the one thing that
/// differs between a whole program and a streamed window.
pub trait OpStore {
    type Op: OpId;
    fn rank(&self, op: Self::Op) -> u32;
    fn kind(&self, op: Self::Op) -> u8;
    fn peer(&self, op: Self::Op) -> u32;
    fn nbytes(&self, op: Self::Op) -> u64;
    /// The message of a send or receive; `NONE` for a receive whose send
    /// is not known yet (streamed) and for local ops.
    fn msg_of(&self, op: Self::Op) -> u32;
    fn msg(&self, id: u32) -> &MsgState<Self::Op>;
    fn msg_mut(&mut self, id: u32) -> &mut MsgState<Self::Op>;
    /// A receive whose send is not known yet was posted at `t`.
    fn post_unmatched(&mut self, _op: Self::Op, _t: Ps) {}
    /// `op` completed at `t`: release (through [`Engine::release`], at `t`)
    /// every op whose last dependency this was and whose round gate is
    /// open, in order.
    fn complete(&mut self, t: Ps, op: Self::Op, eng: &mut Engine<Self::Op>);
    /// Before the loop: release what is ready at time 0 (through
    /// [`Engine::release`]) and tell the fabric of the rounds it has.
    fn start(&mut self, eng: &mut Engine<Self::Op>) -> Result<(), CoreError>;
    /// Before each step: load more of the program where the store wants
    /// to; `true` when it did (the loop looks again).
    fn pull_wanted(&mut self, _eng: &mut Engine<Self::Op>) -> Result<bool, CoreError> {
        Ok(false)
    }
    /// Nothing is in flight or running: load the next round; `false` when
    /// there is none.
    fn pull_idle(&mut self, _eng: &mut Engine<Self::Op>) -> Result<bool, CoreError> {
        Ok(false)
    }
    /// Whether the program ended, `done` ops having completed.
    fn finished(&self, done: u64) -> bool;
    /// Ops known so far (all of them once the program ended).
    fn n_ops(&self) -> u64;
    /// Application messages known so far.
    fn n_messages(&self) -> u64;
    /// Why the run cannot be guaranteed to be the whole program's (the
    /// streamed window, [`super::stream`]); the loop stops.
    fn late(&self) -> Option<&str> {
        None
    }
}

/// Released CPU work: `(release time, class, op, phase)`, class 0 for
/// communication (sends, receives), 1 for computation (reductions, copies);
/// phase 1 is completing a receive.
type Work<O> = (Ps, u8, O, u8);

pub struct Cpu<O> {
    pub busy: bool,
    /// On the list of ranks whose CPU chooses at the end of the instant.
    listed: bool,
    /// The first of the released work when set (most of the time the only
    /// one: kept out of the heap, whose buffer is one more cache miss).
    first: Option<Work<O>>,
    queue: BinaryHeap<Reverse<Work<O>>>,
    /// When this CPU last started work.
    pub last_choice: Ps,
}

impl<O: OpId> Cpu<O> {
    fn new() -> Self {
        Cpu {
            busy: false,
            listed: false,
            first: None,
            queue: BinaryHeap::new(),
            last_choice: 0,
        }
    }

    fn push(&mut self, w: Work<O>) {
        match self.first {
            None if self.queue.is_empty() => self.first = Some(w),
            Some(f) if w < f => {
                self.queue.push(Reverse(f));
                self.first = Some(w);
            }
            _ => self.queue.push(Reverse(w)),
        }
    }

    fn pop(&mut self) -> Option<Work<O>> {
        self.first
            .take()
            .or_else(|| self.queue.pop().map(|Reverse(w)| w))
    }
}

/// Communication (class 0) goes before computation (class 1) among work
/// released at the same instant.
fn class(kind: u8, phase: u8) -> u8 {
    match (kind, phase) {
        (SEND | RECV, _) | (_, 1) => 0,
        _ => 1,
    }
}

/// Set `v[i] = t`, growing `v` (a trace of a streamed program grows as it
/// is loaded).
fn put(v: &mut Vec<Ps>, i: usize, t: Ps) {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] = t;
}

/// What a run is given besides its program: ranks' endpoints, costs, the
/// network, OS noise, background traffic, tracing.
pub struct Setup<'a> {
    pub n_ranks: u32,
    pub order: &'a [u32],
    pub costs: &'a Costs,
    pub fabric: &'a mut dyn Fabric,
    pub routes: &'a mut dyn Routes,
    pub os: &'a mut OsNoise,
    pub background: Option<&'a Background>,
    pub trace: bool,
}

/// The machine side of the loop: CPUs, the event queue, the network; what
/// a store may touch when it loads ops.
pub struct Engine<'a, O> {
    pub order: &'a [u32],
    pub costs: &'a Costs,
    pub fabric: &'a mut dyn Fabric,
    routes: &'a mut dyn Routes,
    os: &'a mut OsNoise,
    pub cpu: Vec<Cpu<O>>,
    events: TimeQueue<(O, u8)>,
    /// CPU work that ended at the current time, in the order it ended.
    now: VecDeque<(Ps, O, u8)>,
    /// The current instant.
    pub clock: Ps,
    /// Whether any CPU has chosen work after time 0's releases.
    pub started: bool,
    /// Ranks whose CPU may start work once the current instant is handled.
    choosing: Vec<u32>,
    in_flight: Vec<u32>,
    throttled: Vec<VecDeque<u32>>,
    links: Vec<u32>,
    weights: Vec<f64>,
    out: Outcome,
    trace: bool,
}

impl<O: OpId> Engine<'_, O> {
    /// `op` (of rank `rank`, kind `kind`) has CPU work released at `t`
    /// (`phase` 1: completing a receive).
    pub fn release(&mut self, t: Ps, op: O, phase: u8, rank: u32, kind: u8) {
        let r = rank as usize;
        self.cpu[r].push((t, class(kind, phase), op, phase));
        self.list_cpu(r);
    }

    /// Rank `r`'s CPU chooses its next work once the current instant is
    /// handled ([`Core::choose`]).
    fn list_cpu(&mut self, r: usize) {
        if !self.cpu[r].busy && !self.cpu[r].listed {
            self.cpu[r].listed = true;
            self.choosing.push(r as u32);
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
}

/// One simulation: an op store and the engine that runs it.
pub struct Core<'a, S: OpStore> {
    pub store: S,
    pub eng: Engine<'a, S::Op>,
    done: u64,
    bg: Option<&'a Background>,
    /// Source endpoint of each background message (index: id − BG_BASE).
    bg_src: Vec<u32>,
    rng: u64,
}

impl<'a, S: OpStore> Core<'a, S> {
    pub fn new(store: S, s: Setup<'a>) -> Result<Self, CoreError> {
        if s.order.len() != s.n_ranks as usize {
            return Err(CoreError::InvalidArgument(format!(
                "simulate: order has {} entries, expected one per rank ({})",
                s.order.len(),
                s.n_ranks
            )));
        }
        let p = s.n_ranks as usize;
        let windowed = if s.costs.window > 0 { p } else { 0 };
        Ok(Core {
            store,
            eng: Engine {
                order: s.order,
                costs: s.costs,
                fabric: s.fabric,
                routes: s.routes,
                os: s.os,
                cpu: (0..p).map(|_| Cpu::new()).collect(),
                events: TimeQueue::default(),
                now: VecDeque::new(),
                clock: 0,
                started: false,
                choosing: Vec::new(),
                in_flight: vec![0; windowed],
                throttled: vec![VecDeque::new(); windowed],
                links: Vec::with_capacity(64),
                weights: Vec::with_capacity(64),
                out: Outcome {
                    rank_done: vec![0; p],
                    ..Default::default()
                },
                trace: s.trace,
            },
            done: 0,
            bg: s.background,
            bg_src: Vec::new(),
            rng: s.background.map_or(0, |b| mix64(b.seed)),
        })
    }

    fn cpu_work(&self, op: S::Op, phase: u8) -> Ps {
        let c = self.eng.costs;
        if phase == 1 {
            return c.o_recv;
        }
        let bytes = self.store.nbytes(op) as f64;
        match self.store.kind(op) {
            SEND => c.o_send + ceil_ps(bytes * c.o_per_byte),
            REDUCE => ceil_ps(bytes * c.gamma),
            COPY => ceil_ps(bytes * c.copy),
            _ => 0,
        }
    }

    /// `op`'s CPU work (`phase` 1: completing a receive) is released at `t`.
    fn push_cpu(&mut self, t: Ps, op: S::Op, phase: u8) {
        let (r, k) = (self.store.rank(op), self.store.kind(op));
        self.eng.release(t, op, phase, r, k);
    }

    /// Every listed idle CPU starts its first released work, at the current
    /// instant; called when no event of this instant is left.
    fn choose(&mut self) {
        let mut listed = std::mem::take(&mut self.eng.choosing);
        for &r in &listed {
            let r = r as usize;
            self.eng.cpu[r].listed = false;
            if self.eng.cpu[r].busy {
                continue;
            }
            if let Some((ready, _, op, phase)) = self.eng.cpu[r].pop() {
                self.eng.cpu[r].last_choice = self.eng.clock;
                self.run_cpu(r, self.eng.clock.max(ready), op, phase);
            }
        }
        listed.clear();
        self.eng.choosing = listed;
    }

    /// The CPU of rank `r` starts `op`'s work at `start`. Work that takes no
    /// time (posting a receive, free overheads) ends at once, through the
    /// `now` queue rather than the heap: most ops of a schedule are such.
    fn run_cpu(&mut self, r: usize, start: Ps, op: S::Op, phase: u8) {
        let work = self.cpu_work(op, phase);
        let e = &mut self.eng;
        let end = e.os.run(r, start, work);
        if e.trace && phase == 0 {
            put(&mut e.out.op_start, op.ix(), start);
        }
        e.cpu[r].busy = true;
        if end == start {
            e.now.push_back((end, op, phase));
        } else {
            e.events.push(end, (op, phase));
        }
    }

    fn complete(&mut self, t: Ps, op: S::Op) {
        let r = self.store.rank(op) as usize;
        let out = &mut self.eng.out;
        if self.eng.trace {
            put(&mut out.op_end, op.ix(), t);
        }
        out.rank_done[r] = out.rank_done[r].max(t);
        self.done += 1;
        self.store.complete(t, op, &mut self.eng);
    }

    fn inject_app(&mut self, t: Ps, msg: u32) -> Result<(), CoreError> {
        let m = self.store.msg_mut(msg);
        m.injected = true;
        let send = m.send;
        if self.eng.costs.window > 0 {
            let r = self.store.rank(send) as usize;
            if self.eng.in_flight[r] >= self.eng.costs.window {
                self.eng.throttled[r].push_back(msg);
                return Ok(());
            }
            self.eng.in_flight[r] += 1;
        }
        self.put_on_wire(t, msg)
    }

    fn put_on_wire(&mut self, t: Ps, msg: u32) -> Result<(), CoreError> {
        self.check_handshake_id(msg)?;
        let (s, rv) = (self.store.msg(msg).send, self.store.msg(msg).recv);
        if self.eng.trace {
            let out = &mut self.eng.out;
            put(&mut out.msg_inject, msg as usize, t);
            put(&mut out.msg_send, msg as usize, s.ix() as Ps);
            put(&mut out.msg_recv, msg as usize, rv.ix() as Ps);
        }
        self.eng.out.app_messages += 1;
        let (src, dst) = (
            self.eng.order[self.store.rank(s) as usize],
            self.eng.order[self.store.peer(s) as usize],
        );
        let bytes = self.store.nbytes(s) + self.eng.costs.envelope;
        self.eng.inject(t, msg, src, dst, bytes)
    }

    /// With the handshake, control ids sit above the application's.
    fn check_handshake_id(&self, msg: u32) -> Result<(), CoreError> {
        if self.eng.costs.rendezvous == Rendezvous::Handshake && msg >= CTRL_BASE {
            return Err(CoreError::InvalidArgument(format!(
                "simulate: message {msg} with the rendezvous handshake, expected at most 2^30 \
                 messages (control messages are numbered above them)"
            )));
        }
        Ok(())
    }

    /// A control message of `msg`'s handshake: the request to send (from
    /// its sender) or the clear to send (back from its receiver).
    fn send_control(&mut self, t: Ps, msg: u32, to_receiver: bool) -> Result<(), CoreError> {
        self.check_handshake_id(msg)?;
        let s = self.store.msg(msg).send;
        let (a, b) = (
            self.eng.order[self.store.rank(s) as usize],
            self.eng.order[self.store.peer(s) as usize],
        );
        let (src, dst) = if to_receiver { (a, b) } else { (b, a) };
        let m = self.store.msg_mut(msg);
        m.handshake = if to_receiver { RTS_SENT } else { CTS_SENT };
        let envelope = self.eng.costs.envelope;
        self.eng.inject(t, CTRL_BASE + msg, src, dst, envelope)
    }

    /// A control message arrived: the receiver answers a request once its
    /// receive is posted; the sender's data leaves on the answer.
    fn on_control(&mut self, t: Ps, msg: u32) -> Result<(), CoreError> {
        let m = self.store.msg_mut(msg);
        if m.handshake == RTS_SENT {
            m.handshake = RTS_HERE;
            if m.recv_post != NEVER {
                self.send_control(t, msg, false)?;
            }
            Ok(())
        } else {
            self.inject_app(t, msg)
        }
    }

    fn bg_send(&mut self, t: Ps, src: u32, dst: u32) -> Result<(), CoreError> {
        let bg = self.bg.expect("background configured");
        if self.bg_src.len() >= BG_BASE as usize {
            return Err(CoreError::InvalidArgument(
                "simulate: over 2^31 background messages; shorten the run or the background traffic"
                    .into(),
            ));
        }
        let id = BG_BASE + self.bg_src.len() as u32;
        self.bg_src.push(src);
        self.eng.out.bg_messages += 1;
        self.eng.inject(t, id, src, dst, bg.bytes)
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

    fn on_cpu_done(&mut self, t: Ps, op: S::Op, phase: u8) -> Result<(), CoreError> {
        let r = self.store.rank(op) as usize;
        self.eng.cpu[r].busy = false;
        let msg = self.store.msg_of(op);
        let costs = self.eng.costs;
        let eager = self.store.nbytes(op) <= costs.eager_threshold;
        match (self.store.kind(op), phase) {
            (SEND, 0) => {
                let m = self.store.msg_mut(msg);
                m.send_post = t;
                let posted = m.recv_post != NEVER;
                if eager {
                    if costs.small == Small::Eager || posted {
                        self.inject_app(t, msg)?;
                    }
                    self.complete(t, op);
                } else if costs.rendezvous == Rendezvous::Handshake {
                    self.send_control(t, msg, true)?;
                } else if posted {
                    self.inject_app(t, msg)?;
                }
            }
            (RECV, 0) if msg == NONE => self.store.post_unmatched(op, t),
            (RECV, 0) => {
                let m = self.store.msg_mut(msg);
                m.recv_post = t;
                let waits = !eager || costs.small == Small::Detached;
                let handshake = !eager && costs.rendezvous == Rendezvous::Handshake;
                let (inject, answer, arrived) = (
                    waits && !handshake && m.send_post != NEVER && !m.injected,
                    handshake && m.handshake == RTS_HERE,
                    m.arrived != NEVER,
                );
                if inject {
                    self.inject_app(t, msg)?;
                }
                if answer {
                    self.send_control(t, msg, false)?;
                }
                if arrived {
                    self.push_cpu(t, op, 1);
                }
            }
            _ => self.complete(t, op),
        }
        self.eng.list_cpu(r);
        Ok(())
    }

    fn on_arrival(&mut self, t: Ps, id: u32) -> Result<(), CoreError> {
        let handshake = self.eng.costs.rendezvous == Rendezvous::Handshake;
        if handshake && (CTRL_BASE..BG_BASE).contains(&id) {
            return self.on_control(t, id - CTRL_BASE);
        }
        if id >= BG_BASE {
            if !self.store.finished(self.done) {
                let src = self.bg_src[(id - BG_BASE) as usize];
                let dst = self.random_peer(src);
                self.bg_send(t, src, dst)?;
            }
            return Ok(());
        }
        let m = self.store.msg_mut(id);
        m.arrived = t;
        let (s, rv, posted) = (m.send, m.recv, m.recv_post != NEVER);
        if self.eng.costs.window > 0 {
            let r = self.store.rank(s) as usize;
            if let Some(next) = self.eng.throttled[r].pop_front() {
                self.put_on_wire(t, next)?;
            } else {
                self.eng.in_flight[r] -= 1;
            }
        }
        if self.eng.trace {
            put(&mut self.eng.out.msg_arrive, id as usize, t);
        }
        if self.store.nbytes(s) > self.eng.costs.eager_threshold {
            self.complete(t, s);
        }
        if posted {
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

    /// Run the program to its end (or until the store stops it).
    pub fn run(&mut self) -> Result<(), CoreError> {
        self.store.start(&mut self.eng)?;
        if self.store.late().is_none() {
            self.start_background()?;
        }
        let mut arrived = Vec::new();
        let mut poll = Poll::default();
        loop {
            if self.store.late().is_some() || self.store.finished(self.done) {
                return Ok(());
            }
            poll.check()?;
            if self.eng.clock > CLOCK_LIMIT {
                return Err(CoreError::InvalidArgument(format!(
                    "simulate: simulated time passed {} s (2^62 ps), expected a run inside the \
                     engine's 64-bit picosecond clock",
                    CLOCK_LIMIT / 1_000_000_000_000
                )));
            }
            if self.store.pull_wanted(&mut self.eng)? {
                continue;
            }
            if let Some((t, op, phase)) = self.eng.now.pop_front() {
                self.on_cpu_done(t, op, phase)?;
                continue;
            }
            let t_ev = self.eng.events.next();
            let t_fab = self.eng.fabric.next_arrival();
            let t_next = match (t_ev, t_fab) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if !self.eng.choosing.is_empty() && t_next.is_none_or(|t| t > self.eng.clock) {
                // the instant is handled: every release of it is known
                self.eng.started = true;
                self.choose();
                continue;
            }
            if t_next.is_none() && self.store.pull_idle(&mut self.eng)? {
                // the frontier needs the next round
                continue;
            }
            self.eng.out.events += 1;
            // Arrivals go first at equal times: a receive completes before
            // the CPU work that finishes at the same instant looks at it.
            let fabric_first = match (t_ev, t_fab) {
                (Some(te), Some(tf)) => tf <= te,
                (None, Some(_)) => true,
                _ => false,
            };
            if fabric_first {
                arrived.clear();
                self.eng
                    .fabric
                    .advance(t_fab.expect("fabric has a next arrival"), &mut arrived);
                for &(t, id) in &arrived {
                    self.eng.clock = t;
                    self.on_arrival(t, id)?;
                }
            } else if let Some((t, (op, phase))) = self.eng.events.pop() {
                self.eng.clock = t;
                self.on_cpu_done(t, op, phase)?;
            } else {
                let n = self.store.n_ops();
                return Err(CoreError::InvalidArgument(format!(
                    "simulate: {} of {} ops can never start (a receive waits for a send that \
                     waits for it: rendezvous deadlock)",
                    n - self.done,
                    n
                )));
            }
        }
    }

    /// The run's outcome (after [`Core::run`]).
    pub fn outcome(&mut self) -> Outcome {
        let mut out = std::mem::take(&mut self.eng.out);
        out.time = out.rank_done.iter().copied().max().unwrap_or(0);
        out.link_bytes = self.eng.fabric.link_bytes().to_vec();
        out.os_stolen = self.eng.os.stolen;
        if self.eng.trace {
            let (n, m) = (
                self.store.n_ops() as usize,
                self.store.n_messages() as usize,
            );
            out.op_start.resize(n, 0);
            out.op_end.resize(n, 0);
            out.msg_inject.resize(m, 0);
            out.msg_arrive.resize(m, 0);
            out.msg_send.resize(m, 0);
            out.msg_recv.resize(m, 0);
        }
        out
    }
}
