//! The streamed op store (issue 18 item 4): the op program read round by
//! round from a [`ChunkSource`] into a window, with memory bounded by the
//! ops and messages in flight instead of the whole program. The loop is
//! [`super::core`]'s, the one the whole program runs on (its module note
//! has the semantics), so results are bit for bit the same: the same
//! events in the same order, the same CPU choices, the same message ids
//! (numbered in send order) for the fabrics.
//!
//! *Window.* Ops live in a window of ids `lo..hi`. A chunk (one round, every
//! rank) is pulled when an op of the last loaded chunk is released (its
//! dependencies done and its round gate open), when nothing else is left to
//! do, and at the start for as long as the last chunk has ops released at
//! time 0. At each pull the completed prefix of the window is retired, and
//! so are messages whose two ops completed and round gates that closed.
//! Dependencies are exact CSR arrays of global op ids: a loaded op counts
//! the dependencies not yet completed and is put on their successor lists
//! (an edge slab with a free list); sends are numbered and matched to
//! receives per channel `(src, dst, tag)` in id order at load, through a
//! map of the channels with unmatched ops.
//!
//! *Exactness.* Pulled late, an op might have been released earlier in the
//! whole-program run, and its CPU might have chosen other work meanwhile.
//! At load the store computes each released op's release time (its
//! dependencies' completion times and its gate's opening) and stops the
//! run ([`Streamed::Late`]) where the whole-program run could have
//! differed: its rank's CPU is idle (after time 0) or chose work at or after
//! that release time, or a dependency already retired leaves the release
//! time unknown. The caller then runs the whole program. Under
//! `Sync::Rounds` and `Sync::Barrier`, with every rank active in every
//! round, the next round's ops are loaded while gated and this never
//! happens. Under `Sync::Deps` a program whose later rounds depend only on
//! early ops (e.g. the shift all-to-all's staging copy) releases all of them
//! at once: everything is in flight, so the window holds everything.
//!
//! Traces and background traffic are the loop's, as for the whole program
//! (a trace's per-op arrays grow as ops are loaded).

use std::collections::{HashMap, VecDeque};

use super::core::{Core, Engine, MsgState, OpStore, Outcome, Setup, Sync, BG_BASE, NEVER};
use super::fabric::{Ps, RoundMessage};
use super::program::{COPY, NONE, RECV, REDUCE, SEND};
use crate::error::CoreError;

/// One round of the op program, every rank (docs/ir.md's columns that timing
/// needs): `dep_ptr` indexes `dep_idx` from 0 within the chunk, and
/// `dep_idx` holds global op ids. Ops are numbered on from the previous
/// chunk's last.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    pub rank: Vec<u32>,
    pub kind: Vec<u8>,
    pub peer: Vec<u32>,
    pub tag: Vec<i64>,
    pub nbytes: Vec<u64>,
    pub dep_ptr: Vec<u64>,
    pub dep_idx: Vec<u64>,
}

impl Chunk {
    fn len(&self) -> usize {
        self.kind.len()
    }
}

/// Where the rounds come from (the Python program's chunks, or a test's).
pub trait ChunkSource {
    /// The next round, or `None` at the end of the program.
    fn next_chunk(&mut self) -> Result<Option<Chunk>, CoreError>;
}

/// What the streamed run held at most.
#[derive(Clone, Debug, Default)]
pub struct StreamStats {
    pub chunks: u64,
    pub ops: u64,
    pub peak_ops: u64,
    pub peak_messages: u64,
}

/// A streamed run's result.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Streamed {
    Done(Outcome, StreamStats),
    /// Streaming could not guarantee the whole-program result (module note):
    /// why, in one line. Run the whole program instead.
    Late(String),
}

const NO: u64 = u64::MAX;

/// One op of the window (its fields together: one cache line per op).
#[derive(Clone, Copy)]
struct Op {
    end: Ps,
    seg: u64,
    /// A receive posted before its send was loaded: when.
    rpost: Ps,
    nbytes: u64,
    rank: u32,
    peer: u32,
    msg: u32,
    deps_left: u32,
    succ: u32,
    kind: u8,
}

/// Per-op state of the window `lo..lo + len`.
#[derive(Default)]
struct Ops {
    lo: u64,
    v: VecDeque<Op>,
}

impl Ops {
    fn len(&self) -> usize {
        self.v.len()
    }
    fn hi(&self) -> u64 {
        self.lo + self.len() as u64
    }
}

/// Per-message state of the window `lo..lo + len` of message ids.
#[derive(Default)]
struct Msgs {
    lo: u64,
    v: VecDeque<MsgState<u64>>,
}

/// Round gates: segments (one rank's ops of one round, or one round) in a
/// window of segment ids.
#[derive(Default)]
struct Segs {
    lo: u64,
    left: VecDeque<u32>,
    next: VecDeque<u64>,
    open: VecDeque<bool>,
    first: VecDeque<u64>,
    end: VecDeque<u64>,
    key: VecDeque<u32>,
    /// When each segment opened (NEVER while closed).
    opened: VecDeque<Ps>,
    /// Per key (rank, or 0 under a barrier): its latest segment, and when
    /// that segment completed (NEVER while it has not).
    last: Vec<u64>,
    closed_at: Vec<Ps>,
}

type Channel = (u32, u32, i64);

#[derive(Default)]
struct Pending {
    sends: VecDeque<u32>,
    recvs: VecDeque<u64>,
}

/// The streamed window as an [`OpStore`].
pub struct Window<'a> {
    n_ranks: u32,
    source: &'a mut dyn ChunkSource,
    sync: Sync,
    ops: Ops,
    msgs: Msgs,
    segs: Segs,
    edges: Vec<(u64, u32)>,
    free_edges: Vec<u32>,
    channels: HashMap<Channel, Pending>,
    retired_end: Vec<Ps>,
    next_msg: u64,
    chunk_no: usize,
    last_first: u64,
    want_pull: bool,
    exhausted: bool,
    late: Option<String>,
    round_msgs: Vec<RoundMessage>,
    stats: StreamStats,
}

impl<'a> Window<'a> {
    pub fn new(n_ranks: u32, source: &'a mut dyn ChunkSource, sync: Sync) -> Self {
        let p = n_ranks as usize;
        let keys = if sync == Sync::Rounds { p } else { 1 };
        Window {
            n_ranks,
            source,
            sync,
            ops: Ops::default(),
            msgs: Msgs::default(),
            segs: Segs {
                last: vec![NO; keys],
                closed_at: vec![NEVER; keys],
                ..Default::default()
            },
            edges: Vec::new(),
            free_edges: Vec::new(),
            channels: HashMap::new(),
            retired_end: vec![0; p],
            next_msg: 0,
            chunk_no: 0,
            last_first: 0,
            want_pull: false,
            exhausted: false,
            late: None,
            round_msgs: Vec::new(),
            stats: StreamStats::default(),
        }
    }

    #[inline]
    fn o(&self, op: u64) -> usize {
        (op - self.ops.lo) as usize
    }

    #[inline]
    fn mi(&self, msg: u32) -> usize {
        (msg as u64 - self.msgs.lo) as usize
    }

    fn seg_open(&self, op: u64) -> bool {
        let s = self.ops.v[self.o(op)].seg;
        s == NO || self.segs.open[(s - self.segs.lo) as usize]
    }

    /// `op` of the window is released (its dependencies done, its gate
    /// open): the next round is wanted once an op of the last one is.
    fn released(&mut self, t: Ps, op: u64, eng: &mut Engine<u64>) {
        let o = &self.ops.v[self.o(op)];
        eng.release(t, op, 0, o.rank, o.kind);
        if op >= self.last_first {
            self.want_pull = true;
        }
    }

    /// Drop the completed prefixes of the op, message and segment windows.
    fn retire(&mut self) {
        let (ops, msgs) = (&mut self.ops, &self.msgs);
        // an op goes once it completed and so did its message (whose events
        // still read the send's rank, peer and size)
        let gone = |ops: &Ops| {
            ops.v.front().is_some_and(|o| {
                o.end != NEVER
                    && (o.msg == NONE
                        || (o.msg as u64) < msgs.lo
                        || msgs.v[(o.msg as u64 - msgs.lo) as usize].closed == 2)
            })
        };
        while gone(ops) {
            let o = ops.v.pop_front().expect("window not empty");
            self.retired_end[o.rank as usize] = self.retired_end[o.rank as usize].max(o.end);
            ops.lo += 1;
        }
        let m = &mut self.msgs;
        while m.v.front().is_some_and(|x| x.closed == 2) {
            m.v.pop_front();
            m.lo += 1;
        }
        let g = &mut self.segs;
        while g.left.front() == Some(&0) {
            g.left.pop_front();
            g.next.pop_front();
            g.open.pop_front();
            g.first.pop_front();
            g.end.pop_front();
            g.key.pop_front();
            g.opened.pop_front();
            g.lo += 1;
        }
    }

    fn stop_late(&mut self, why: String) {
        if self.late.is_none() {
            self.late = Some(why);
        }
    }

    /// Load the next round; `exhausted` at the end of the program.
    fn pull(&mut self, eng: &mut Engine<u64>) -> Result<(), CoreError> {
        self.want_pull = false;
        if self.exhausted {
            return Ok(());
        }
        self.retire();
        let Some(ch) = self.source.next_chunk()? else {
            self.exhausted = true;
            return self.check_unmatched();
        };
        let n = ch.len();
        let bad = |what: String| Err(CoreError::InvalidArgument(format!("program: {what}")));
        if [ch.rank.len(), ch.peer.len(), ch.tag.len(), ch.nbytes.len()] != [n; 4]
            || ch.dep_ptr.len() != n + 1
            || ch.dep_ptr[0] != 0
            || ch.dep_ptr[n] as usize != ch.dep_idx.len()
            || ch.dep_ptr.windows(2).any(|w| w[0] > w[1])
        {
            return bad(format!(
                "round {} has columns of unequal length or a bad dep_ptr ({n} ops)",
                self.chunk_no
            ));
        }
        if n == 0 {
            self.chunk_no += 1;
            return Ok(());
        }
        let first = self.ops.hi();
        self.last_first = first;
        // columns, segments, message numbers
        let mut sends: Vec<(Channel, u32)> = Vec::new();
        let mut recvs: Vec<(Channel, u64)> = Vec::new();
        self.round_msgs.clear();
        for j in 0..n {
            let id = first + j as u64;
            let (r, k, peer) = (ch.rank[j], ch.kind[j], ch.peer[j]);
            if r >= self.n_ranks {
                return bad(format!(
                    "op {id}: rank {r} out of range 0..{}",
                    self.n_ranks
                ));
            }
            let mut msg = NONE;
            match k {
                SEND | RECV => {
                    if peer >= self.n_ranks {
                        return bad(format!(
                            "op {id}: peer {peer} out of range 0..{}",
                            self.n_ranks
                        ));
                    }
                    if k == SEND {
                        if self.next_msg >= BG_BASE as u64 {
                            return Err(CoreError::InvalidArgument(
                                "simulate: over 2^31 messages; shorten the run".into(),
                            ));
                        }
                        msg = self.next_msg as u32;
                        self.next_msg += 1;
                        sends.push(((r, peer, ch.tag[j]), msg));
                        self.msgs.v.push_back(MsgState::new(id, NO));
                        self.round_msgs.push(RoundMessage {
                            id: msg,
                            src: eng.order[r as usize],
                            dst: eng.order[peer as usize],
                            bytes: ch.nbytes[j],
                        });
                    } else {
                        recvs.push(((peer, r, ch.tag[j]), id));
                    }
                }
                REDUCE | COPY => {}
                _ => {
                    return bad(format!(
                        "op {id}: kind {k}, expected 0..3 (send, recv, reduce, copy)"
                    ))
                }
            }
            let seg = match self.sync {
                Sync::Deps => NO,
                Sync::Rounds if j > 0 && ch.rank[j - 1] == r => {
                    self.ops.v.back().expect("j > 0").seg
                }
                Sync::Barrier if j > 0 => self.ops.v.back().expect("j > 0").seg,
                _ => self.new_segment(if self.sync == Sync::Rounds { r } else { 0 }, id),
            };
            if seg != NO {
                let g = (seg - self.segs.lo) as usize;
                self.segs.left[g] += 1;
                self.segs.end[g] = id + 1;
            }
            self.ops.v.push_back(Op {
                end: NEVER,
                seg,
                rpost: NEVER,
                nbytes: ch.nbytes[j],
                rank: r,
                peer,
                msg,
                deps_left: 0,
                succ: NONE,
                kind: k,
            });
        }
        self.match_round(sends, recvs)?;
        eng.fabric.round_loaded(self.chunk_no, &self.round_msgs)?;
        // dependencies; release what is ready
        for j in 0..n {
            let id = first + j as u64;
            let i = self.o(id);
            let r = ch.rank[j];
            let (mut left, mut ready, mut retired) = (0u32, 0 as Ps, false);
            for &d in &ch.dep_idx[ch.dep_ptr[j] as usize..ch.dep_ptr[j + 1] as usize] {
                if d >= id {
                    return bad(format!(
                        "op {id} depends on op {d}, expected an earlier op of rank {r}"
                    ));
                }
                if d < self.ops.lo {
                    retired = true;
                    continue;
                }
                let di = self.o(d);
                if self.ops.v[di].rank != r {
                    return bad(format!(
                        "op {id} depends on op {d}, expected an earlier op of rank {r}"
                    ));
                }
                if self.ops.v[di].end == NEVER {
                    left += 1;
                    let e = match self.free_edges.pop() {
                        Some(e) => {
                            self.edges[e as usize] = (id, self.ops.v[di].succ);
                            e
                        }
                        None => {
                            self.edges.push((id, self.ops.v[di].succ));
                            (self.edges.len() - 1) as u32
                        }
                    };
                    self.ops.v[di].succ = e;
                } else {
                    ready = ready.max(self.ops.v[di].end);
                }
            }
            self.ops.v[i].deps_left = left;
            if left > 0 {
                continue;
            }
            let seg = self.ops.v[i].seg;
            if seg != NO {
                let g = (seg - self.segs.lo) as usize;
                if !self.segs.open[g] {
                    continue;
                }
                ready = ready.max(self.seg_open_time(seg));
            }
            if retired && ready < self.retired_end[r as usize] {
                self.stop_late(format!(
                    "op {id} of rank {r} depends on a retired op whose completion time is gone"
                ));
            }
            let cpu = &eng.cpu[r as usize];
            if eng.started && (!cpu.busy || cpu.last_choice >= ready) {
                self.stop_late(format!(
                    "op {id} of rank {r} released at {ready} ps, loaded at {} ps",
                    eng.clock
                ));
            }
            eng.release(ready, id, 0, r, ch.kind[j]);
            self.want_pull = true;
        }
        self.chunk_no += 1;
        self.stats.chunks += 1;
        self.stats.ops += n as u64;
        self.stats.peak_ops = self.stats.peak_ops.max(self.ops.len() as u64);
        self.stats.peak_messages = self.stats.peak_messages.max(self.msgs.v.len() as u64);
        Ok(())
    }

    /// A new segment of `key` (a rank under `Sync::Rounds`, 0 under a
    /// barrier) starting at op `id`: open at once if the key's previous
    /// segment completed (or it has none), else next in line after it.
    fn new_segment(&mut self, key: u32, id: u64) -> u64 {
        let g = &mut self.segs;
        let seg = g.lo + g.left.len() as u64;
        let k = key as usize;
        let prev = g.last[k];
        let (open, at) = if prev == NO {
            (true, 0)
        } else if g.closed_at[k] != NEVER {
            (true, g.closed_at[k])
        } else {
            g.next[(prev - g.lo) as usize] = seg;
            (false, NEVER)
        };
        g.left.push_back(0);
        g.next.push_back(NO);
        g.open.push_back(open);
        g.opened.push_back(at);
        g.first.push_back(id);
        g.end.push_back(id);
        g.key.push_back(key);
        g.last[k] = seg;
        g.closed_at[k] = NEVER;
        seg
    }

    /// When segment `seg` opened.
    fn seg_open_time(&self, seg: u64) -> Ps {
        self.segs.opened[(seg - self.segs.lo) as usize]
    }

    /// Pair the round's sends and receives per channel in id order, after
    /// the channel's unmatched ops of earlier rounds.
    fn match_round(
        &mut self,
        mut sends: Vec<(Channel, u32)>,
        mut recvs: Vec<(Channel, u64)>,
    ) -> Result<(), CoreError> {
        sends.sort_unstable();
        recvs.sort_unstable();
        let (mut a, mut b) = (0, 0);
        while a < sends.len() || b < recvs.len() {
            let c = match (sends.get(a), recvs.get(b)) {
                (Some(x), Some(y)) => x.0.min(y.0),
                (Some(x), None) => x.0,
                (None, Some(y)) => y.0,
                (None, None) => unreachable!(),
            };
            let a1 = a + sends[a..].iter().take_while(|x| x.0 == c).count();
            let b1 = b + recvs[b..].iter().take_while(|x| x.0 == c).count();
            let mut pend = self.channels.remove(&c).unwrap_or_default();
            pend.sends.extend(sends[a..a1].iter().map(|x| x.1));
            pend.recvs.extend(recvs[b..b1].iter().map(|x| x.1));
            while !pend.sends.is_empty() && !pend.recvs.is_empty() {
                let msg = pend.sends.pop_front().expect("not empty");
                let rv = pend.recvs.pop_front().expect("not empty");
                self.pair(msg, rv)?;
            }
            if !pend.sends.is_empty() || !pend.recvs.is_empty() {
                self.channels.insert(c, pend);
            }
            a = a1;
            b = b1;
        }
        Ok(())
    }

    fn pair(&mut self, msg: u32, rv: u64) -> Result<(), CoreError> {
        let m = self.mi(msg);
        let s = self.msgs.v[m].send;
        let (si, ri) = (self.o(s), self.o(rv));
        if self.ops.v[si].nbytes != self.ops.v[ri].nbytes {
            return Err(CoreError::InvalidArgument(format!(
                "program: send op {s} ({} B) matches receive op {rv} ({} B), expected equal sizes",
                self.ops.v[si].nbytes, self.ops.v[ri].nbytes
            )));
        }
        self.msgs.v[m].recv = rv;
        self.ops.v[ri].msg = msg;
        if self.ops.v[ri].rpost != NEVER {
            self.msgs.v[m].recv_post = self.ops.v[ri].rpost;
        }
        Ok(())
    }

    fn check_unmatched(&self) -> Result<(), CoreError> {
        if let Some((c, p)) = self.channels.iter().min_by_key(|(c, _)| **c) {
            return Err(CoreError::InvalidArgument(format!(
                "program: channel {}→{} tag {} has {} sends but {} receives, expected equal numbers",
                c.0,
                c.1,
                c.2,
                p.sends.len(),
                p.recvs.len()
            )));
        }
        Ok(())
    }
}

impl OpStore for Window<'_> {
    type Op = u64;
    #[inline]
    fn rank(&self, op: u64) -> u32 {
        self.ops.v[self.o(op)].rank
    }
    #[inline]
    fn kind(&self, op: u64) -> u8 {
        self.ops.v[self.o(op)].kind
    }
    #[inline]
    fn peer(&self, op: u64) -> u32 {
        self.ops.v[self.o(op)].peer
    }
    #[inline]
    fn nbytes(&self, op: u64) -> u64 {
        self.ops.v[self.o(op)].nbytes
    }
    #[inline]
    fn msg_of(&self, op: u64) -> u32 {
        self.ops.v[self.o(op)].msg
    }
    #[inline]
    fn msg(&self, id: u32) -> &MsgState<u64> {
        &self.msgs.v[self.mi(id)]
    }
    #[inline]
    fn msg_mut(&mut self, id: u32) -> &mut MsgState<u64> {
        let m = self.mi(id);
        &mut self.msgs.v[m]
    }

    fn post_unmatched(&mut self, op: u64, t: Ps) {
        let i = self.o(op);
        self.ops.v[i].rpost = t;
    }

    fn complete(&mut self, t: Ps, op: u64, eng: &mut Engine<u64>) {
        let i = self.o(op);
        self.ops.v[i].end = t;
        let msg = self.ops.v[i].msg;
        if msg != NONE {
            let m = self.mi(msg);
            self.msgs.v[m].closed += 1;
        }
        let mut e = std::mem::replace(&mut self.ops.v[i].succ, NONE);
        while e != NONE {
            let (s, next) = self.edges[e as usize];
            self.free_edges.push(e);
            e = next;
            let si = self.o(s);
            self.ops.v[si].deps_left -= 1;
            if self.ops.v[si].deps_left == 0 && self.seg_open(s) {
                self.released(t, s, eng);
            }
        }
        let seg = self.ops.v[i].seg;
        if seg == NO {
            return;
        }
        let g = (seg - self.segs.lo) as usize;
        self.segs.left[g] -= 1;
        if self.segs.left[g] > 0 {
            return;
        }
        let key = self.segs.key[g] as usize;
        if self.segs.last[key] == seg {
            self.segs.closed_at[key] = t;
        }
        let nx = self.segs.next[g];
        if nx != NO {
            let n = (nx - self.segs.lo) as usize;
            self.segs.open[n] = true;
            self.segs.opened[n] = t;
            for s in self.segs.first[n]..self.segs.end[n] {
                if self.ops.v[self.o(s)].deps_left == 0 {
                    self.released(t, s, eng);
                }
            }
        }
    }

    fn start(&mut self, eng: &mut Engine<u64>) -> Result<(), CoreError> {
        self.pull(eng)?;
        while self.want_pull && !self.exhausted && self.late.is_none() {
            self.pull(eng)?;
        }
        Ok(())
    }

    fn pull_wanted(&mut self, eng: &mut Engine<u64>) -> Result<bool, CoreError> {
        if !self.want_pull {
            return Ok(false);
        }
        self.pull(eng)?;
        Ok(true)
    }

    fn pull_idle(&mut self, eng: &mut Engine<u64>) -> Result<bool, CoreError> {
        if self.exhausted {
            return Ok(false);
        }
        self.pull(eng)?;
        Ok(true)
    }

    fn finished(&self, done: u64) -> bool {
        self.exhausted && done == self.ops.hi()
    }

    fn n_ops(&self) -> u64 {
        self.ops.hi()
    }

    fn n_messages(&self) -> u64 {
        self.next_msg
    }

    fn late(&self) -> Option<&str> {
        self.late.as_deref()
    }
}

/// Simulate the program `source` streams on `setup` (the module note):
/// the outcome of [`super::run::simulate`] on the whole program, or
/// [`Streamed::Late`].
pub fn simulate_streamed(
    source: &mut dyn ChunkSource,
    sync: Sync,
    setup: Setup,
) -> Result<Streamed, CoreError> {
    let n_ranks = setup.n_ranks;
    let mut core = Core::new(Window::new(n_ranks, source, sync), setup)?;
    core.run()?;
    if let Some(why) = core.store.late.take() {
        return Ok(Streamed::Late(why));
    }
    let out = core.outcome();
    Ok(Streamed::Done(out, std::mem::take(&mut core.store.stats)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::core::{Costs, Small};
    use crate::engine::fabric::Links;
    use crate::engine::loggops::{LogGopsNic, Reservation};
    use crate::engine::noise::Detours;
    use crate::engine::noise::OsNoise;
    use crate::engine::program::Program;
    use crate::engine::run::{simulate, tests::Crossbar};

    /// The rounds of a whole program, one chunk each.
    struct Rounds<'a>(&'a Program, usize);

    impl ChunkSource for Rounds<'_> {
        fn next_chunk(&mut self) -> Result<Option<Chunk>, CoreError> {
            let (p, k) = (self.0, self.1);
            if k + 1 >= p.round_ptr.len() {
                return Ok(None);
            }
            self.1 += 1;
            let (a, b) = (p.round_ptr[k] as usize, p.round_ptr[k + 1] as usize);
            let base = p.dep_ptr[a];
            Ok(Some(Chunk {
                rank: p.rank[a..b].to_vec(),
                kind: p.kind[a..b].to_vec(),
                peer: p.peer[a..b].to_vec(),
                tag: p.tag[a..b].to_vec(),
                nbytes: p.nbytes[a..b].to_vec(),
                dep_ptr: p.dep_ptr[a..=b].iter().map(|&x| x - base).collect(),
                dep_idx: p.dep_idx[base as usize..p.dep_ptr[b] as usize]
                    .iter()
                    .map(|&d| d as u64)
                    .collect(),
            }))
        }
    }

    /// `rounds` rounds on `p` ranks: in round k rank r sends to r + k + 1
    /// (after its previous reduction), receives from r − k − 1 and reduces
    /// it; with `open_channel` every rank also sends 8 B (eager) in round 0
    /// to r + 1, received in the last round (a channel open across chunks).
    fn program(p: u32, rounds: u32, bytes: u64, open_channel: bool) -> Program {
        let mut prog = Program {
            n_ranks: p,
            ..Default::default()
        };
        let mut last_reduce = vec![None::<u32>; p as usize];
        let mut ptr = vec![0u64];
        let mut round_ptr = vec![0u64];
        let mut dep_idx = Vec::new();
        for k in 0..rounds {
            for r in 0..p {
                let mut op = |kind, peer, tag, deps: Vec<u32>, prog: &mut Program| {
                    prog.rank.push(r);
                    prog.kind.push(kind);
                    prog.peer.push(peer);
                    prog.tag.push(tag);
                    prog.nbytes.push(if tag == 99 { 8 } else { bytes });
                    dep_idx.extend(deps);
                    ptr.push(dep_idx.len() as u64);
                    prog.kind.len() as u32 - 1
                };
                if k == 0 && open_channel {
                    op(SEND, (r + 1) % p, 99, vec![], &mut prog);
                }
                let dst = (r + k + 1) % p;
                let src = (r + p - (k + 1) % p) % p;
                op(
                    SEND,
                    dst,
                    k as i64,
                    last_reduce[r as usize].into_iter().collect(),
                    &mut prog,
                );
                let rv = op(RECV, src, k as i64, vec![], &mut prog);
                let mut deps = vec![rv];
                deps.extend(last_reduce[r as usize]);
                last_reduce[r as usize] = Some(op(REDUCE, NONE, -1, deps, &mut prog));
                if k + 1 == rounds && open_channel {
                    op(RECV, (r + p - 1) % p, 99, vec![], &mut prog);
                }
            }
            round_ptr.push(prog.kind.len() as u64);
        }
        prog.dep_ptr = ptr;
        prog.dep_idx = dep_idx;
        prog.round_ptr = round_ptr;
        prog
    }

    fn fabric(n: u32) -> Reservation {
        let links = Links {
            bandwidth: vec![1e9; 2 * n as usize],
            latency: vec![50_000; 2 * n as usize],
        };
        Reservation::new(
            links,
            n as usize,
            LogGopsNic {
                g: 1000,
                big_g: 0.0,
                l: 0,
                ports: 1,
            },
            1,
        )
    }

    #[test]
    fn a_streamed_run_is_the_whole_programs_run() {
        for (bytes, window, sync, open) in [
            (1000, 0, Sync::Rounds, true),
            (1000, 0, Sync::Rounds, false),
            (100_000, 0, Sync::Rounds, false),
            (1000, 1, Sync::Barrier, true),
            (100_000, 0, Sync::Barrier, false),
            (1000, 0, Sync::Deps, true),
            (100_000, 2, Sync::Deps, false),
        ] {
            let prog = program(7, 5, bytes, open);
            prog.validate().unwrap();
            let m = prog.match_messages().unwrap();
            let order: Vec<u32> = (0..7).rev().collect();
            let costs = Costs {
                o_send: 300_000,
                o_recv: 20_000,
                o_per_byte: 0.0,
                gamma: 700.0,
                copy: 0.0,
                eager_threshold: 1 << 16,
                small: Small::Eager,
                window,
                envelope: 0,
                rendezvous: Default::default(),
            };
            let mut os = OsNoise::new(Detours::Quiet, 7);
            let (mut f, mut xbar) = (fabric(7), Crossbar(7));
            let setup = |f, xbar, os| Setup {
                n_ranks: 7,
                order: &order,
                costs: &costs,
                fabric: f,
                routes: xbar,
                os,
                background: None,
                trace: false,
            };
            let whole = simulate(&prog, &m, sync, setup(&mut f, &mut xbar, &mut os)).unwrap();
            let mut os = OsNoise::new(Detours::Quiet, 7);
            let (mut f, mut xbar) = (fabric(7), Crossbar(7));
            let ran = simulate_streamed(
                &mut Rounds(&prog, 0),
                sync,
                setup(&mut f, &mut xbar, &mut os),
            )
            .unwrap();
            let case = format!("{bytes} B, window {window}, {sync:?}, open channel {open}");
            match ran {
                Streamed::Done(out, stats) => {
                    assert_eq!(out.rank_done, whole.rank_done, "{case}");
                    assert_eq!(out.events, whole.events, "{case}");
                    assert_eq!(out.app_messages, whole.app_messages, "{case}");
                    assert_eq!(out.link_bytes, whole.link_bytes, "{case}");
                    assert_eq!(stats.ops as usize, prog.n_ops(), "{case}");
                    assert_eq!(stats.chunks, 5, "{case}");
                    if sync != Sync::Deps && !open {
                        // rounds retire: at most the rounds around the frontier
                        assert!(stats.peak_ops < prog.n_ops() as u64, "{case}: {stats:?}");
                    }
                }
                Streamed::Late(why) => assert_eq!(sync, Sync::Deps, "{case}: {why}"),
            }
        }
    }

    #[test]
    fn an_unmatched_channel_is_named_at_the_end_of_the_stream() {
        let mut prog = program(3, 2, 100, true);
        let last = prog.n_ops() - 1;
        prog.kind[last] = REDUCE; // the cross-round receive of rank 2 is gone
        prog.peer[last] = NONE;
        let costs = Costs {
            o_send: 0,
            o_recv: 0,
            o_per_byte: 0.0,
            gamma: 0.0,
            copy: 0.0,
            eager_threshold: 1 << 16,
            small: Small::Eager,
            window: 0,
            envelope: 0,
            rendezvous: Default::default(),
        };
        let mut os = OsNoise::new(Detours::Quiet, 3);
        let setup = Setup {
            n_ranks: 3,
            order: &[0, 1, 2],
            costs: &costs,
            fabric: &mut fabric(3),
            routes: &mut Crossbar(3),
            os: &mut os,
            background: None,
            trace: false,
        };
        let e = simulate_streamed(&mut Rounds(&prog, 0), Sync::Rounds, setup)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("channel 1→2 tag 99 has 1 sends but 0 receives"),
            "{e}"
        );
    }
}
