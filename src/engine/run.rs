//! The whole-program op store: the op program compiled once, in memory,
//! run by the one event loop of [`super::core`] (its module note has the
//! semantics) as many times as a sweep wants (noise series, the tuner).
//!
//! The store releases an op when its last dependency completed and its
//! round gate is open ([`Sync::Rounds`]: its rank's previous round done;
//! [`Sync::Barrier`]: every rank's), from the program's exact CSR
//! dependencies and the matching's successor lists.

pub use super::core::{Background, Costs, Outcome, Routes, Small, Sync};
use super::core::{Core, Engine, MsgState, OpStore, Setup, BG_BASE};
use super::fabric::{Fabric, RoundMessage};
use super::program::{Matching, Program, NONE};
use crate::error::CoreError;

use super::fabric::Ps;

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

/// The whole program as an [`OpStore`].
pub struct WholeProgram<'a> {
    prog: &'a Program,
    m: &'a Matching,
    deps_left: Vec<u32>,
    gates: Option<Gates>,
    msgs: Vec<MsgState<u32>>,
}

impl<'a> WholeProgram<'a> {
    pub fn new(prog: &'a Program, m: &'a Matching, sync: Sync) -> Result<Self, CoreError> {
        if m.send.len() >= BG_BASE as usize {
            return Err(CoreError::InvalidArgument(
                "simulate: over 2^31 messages; shorten the run".into(),
            ));
        }
        let n = prog.n_ops();
        Ok(WholeProgram {
            prog,
            m,
            deps_left: (0..n).map(|i| prog.deps(i).len() as u32).collect(),
            gates: Gates::new(prog, sync),
            msgs: m
                .send
                .iter()
                .zip(&m.recv)
                .map(|(&s, &r)| MsgState::new(s, r))
                .collect(),
        })
    }

    fn gate_open(&self, op: usize) -> bool {
        match &self.gates {
            None => true,
            Some(g) => g.open[g.seg_of[op] as usize],
        }
    }

    /// Tell a fabric that fixes a round's messages together (the congestion
    /// model) of every round, in order, before any message moves.
    fn load_rounds(&self, fabric: &mut dyn Fabric, order: &[u32]) -> Result<(), CoreError> {
        let (prog, m) = (self.prog, self.m);
        let mut msgs = Vec::new();
        let mut id = 0usize;
        for k in 0..prog.n_rounds() {
            let end = prog.round_ptr[k + 1] as u32;
            msgs.clear();
            while id < m.send.len() && m.send[id] < end {
                let s = m.send[id] as usize;
                msgs.push(RoundMessage {
                    id: id as u32,
                    src: order[prog.rank[s] as usize],
                    dst: order[prog.peer[s] as usize],
                    bytes: prog.nbytes[s],
                });
                id += 1;
            }
            fabric.round_loaded(k, &msgs)?;
        }
        Ok(())
    }
}

impl OpStore for WholeProgram<'_> {
    type Op = u32;
    #[inline]
    fn rank(&self, op: u32) -> u32 {
        self.prog.rank[op as usize]
    }
    #[inline]
    fn kind(&self, op: u32) -> u8 {
        self.prog.kind[op as usize]
    }
    #[inline]
    fn peer(&self, op: u32) -> u32 {
        self.prog.peer[op as usize]
    }
    #[inline]
    fn nbytes(&self, op: u32) -> u64 {
        self.prog.nbytes[op as usize]
    }
    #[inline]
    fn msg_of(&self, op: u32) -> u32 {
        self.m.msg_of[op as usize]
    }
    #[inline]
    fn msg(&self, id: u32) -> &MsgState<u32> {
        &self.msgs[id as usize]
    }
    #[inline]
    fn msg_mut(&mut self, id: u32) -> &mut MsgState<u32> {
        &mut self.msgs[id as usize]
    }

    fn complete(&mut self, t: Ps, op: u32, eng: &mut Engine<u32>) {
        let i = op as usize;
        let prog = self.prog;
        for k in self.m.succ_ptr[i] as usize..self.m.succ_ptr[i + 1] as usize {
            let s = self.m.succ_idx[k] as usize;
            self.deps_left[s] -= 1;
            if self.deps_left[s] == 0 && self.gate_open(s) {
                eng.release(t, s as u32, 0, prog.rank[s], prog.kind[s]);
            }
        }
        let Some(g) = &mut self.gates else { return };
        let seg = g.seg_of[i] as usize;
        g.left[seg] -= 1;
        if g.left[seg] == 0 && g.next[seg] != NONE {
            let nx = g.next[seg] as usize;
            g.open[nx] = true;
            for s in g.seg_ptr[nx] as usize..g.seg_ptr[nx + 1] as usize {
                if self.deps_left[s] == 0 {
                    eng.release(t, s as u32, 0, prog.rank[s], prog.kind[s]);
                }
            }
        }
    }

    fn start(&mut self, eng: &mut Engine<u32>) -> Result<(), CoreError> {
        if eng.fabric.wants_rounds() {
            self.load_rounds(&mut *eng.fabric, eng.order)?;
        }
        for i in 0..self.prog.n_ops() {
            if self.deps_left[i] == 0 && self.gate_open(i) {
                eng.release(0, i as u32, 0, self.prog.rank[i], self.prog.kind[i]);
            }
        }
        Ok(())
    }

    fn finished(&self, done: u64) -> bool {
        done as usize == self.prog.n_ops()
    }

    fn n_ops(&self) -> u64 {
        self.prog.n_ops() as u64
    }

    fn n_messages(&self) -> u64 {
        self.msgs.len() as u64
    }
}

/// Simulate `prog` (matched by `m`) on `setup` (ranks on endpoints
/// `setup.order`).
pub fn simulate(
    prog: &Program,
    m: &Matching,
    sync: Sync,
    setup: Setup,
) -> Result<Outcome, CoreError> {
    if setup.n_ranks != prog.n_ranks {
        return Err(CoreError::InvalidArgument(format!(
            "simulate: a setup for {} ranks, expected one per rank of the program ({})",
            setup.n_ranks, prog.n_ranks
        )));
    }
    let mut core = Core::new(WholeProgram::new(prog, m, sync)?, setup)?;
    core.run()?;
    Ok(core.outcome())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::fabric::Links;
    use crate::engine::loggops::{LogGopsNic, Reservation};
    use crate::engine::noise::{Detours, OsNoise};
    use crate::engine::program::tests::ring_round;
    use crate::engine::program::{RECV, REDUCE, SEND};

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
            1,
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
            envelope: 0,
            rendezvous: Default::default(),
        }
    }

    fn run(prog: &Program, sync: Sync, c: &Costs) -> Outcome {
        let m = prog.match_messages().unwrap();
        let order: Vec<u32> = (0..prog.n_ranks).collect();
        let mut f = loggops(prog.n_ranks);
        let mut os = OsNoise::new(Detours::Quiet, prog.n_ranks as usize);
        let setup = Setup {
            n_ranks: prog.n_ranks,
            order: &order,
            costs: c,
            fabric: &mut f,
            routes: &mut Crossbar(prog.n_ranks),
            os: &mut os,
            background: None,
            trace: true,
        };
        simulate(prog, &m, sync, setup).unwrap()
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
            let setup = Setup {
                n_ranks: 2,
                order: &[0, 1],
                costs: &c,
                fabric: &mut f,
                routes: &mut Crossbar(4),
                os: &mut os,
                background: bg,
                trace: false,
            };
            simulate(&prog, &m, Sync::Deps, setup).unwrap()
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
