//! The op program as the engine reads it: the columns of the IR's op program
//! (docs/ir.md) that timing needs, with message matching and successor lists
//! derived once.
//!
//! Op ids are dense and ordered round-major, then rank, then posting order;
//! every dependency points to a smaller id of the same rank (the IR's
//! invariant 1). Sends match receives per channel `(src, dst, tag)` in id
//! order (invariant 2, MPI's non-overtaking rule).

use crate::error::CoreError;

pub const SEND: u8 = 0;
pub const RECV: u8 = 1;
pub const REDUCE: u8 = 2;
pub const COPY: u8 = 3;

/// No message (a local op) / no peer.
pub const NONE: u32 = u32::MAX;

/// Columns of the op program (one entry per op unless said otherwise).
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub n_ranks: u32,
    pub rank: Vec<u32>,
    pub kind: Vec<u8>,
    /// Destination of a send, source of a receive; [`NONE`] for local ops.
    pub peer: Vec<u32>,
    pub tag: Vec<i64>,
    /// Bytes moved (send/recv) or combined (reduce/copy).
    pub nbytes: Vec<u64>,
    /// Direct dependencies of op `i`: `dep_idx[dep_ptr[i]..dep_ptr[i+1]]`.
    pub dep_ptr: Vec<u64>,
    pub dep_idx: Vec<u32>,
    /// Round boundaries: round `k` holds ops `round_ptr[k]..round_ptr[k+1]`.
    pub round_ptr: Vec<u64>,
}

/// What a program implies, derived once and shared by every run: message
/// `m` is sent by op `send[m]` and received by op `recv[m]`; `msg_of[op]` is
/// the op's message ([`NONE`] if local); the successors of op `i` are
/// `succ_idx[succ_ptr[i]..succ_ptr[i+1]]`.
#[derive(Clone, Debug, Default)]
pub struct Matching {
    pub send: Vec<u32>,
    pub recv: Vec<u32>,
    pub msg_of: Vec<u32>,
    pub succ_ptr: Vec<u64>,
    pub succ_idx: Vec<u32>,
}

impl Program {
    pub fn n_ops(&self) -> usize {
        self.kind.len()
    }

    pub fn n_rounds(&self) -> usize {
        self.round_ptr.len().saturating_sub(1)
    }

    pub fn deps(&self, op: usize) -> &[u32] {
        &self.dep_idx[self.dep_ptr[op] as usize..self.dep_ptr[op + 1] as usize]
    }

    /// Check shapes, kinds, peers and that every dependency points backwards
    /// to an op of the same rank.
    pub fn validate(&self) -> Result<(), CoreError> {
        let n = self.n_ops();
        let bad = |what: String| Err(CoreError::InvalidArgument(format!("program: {what}")));
        for (name, len) in [
            ("rank", self.rank.len()),
            ("peer", self.peer.len()),
            ("tag", self.tag.len()),
            ("nbytes", self.nbytes.len()),
        ] {
            if len != n {
                return bad(format!(
                    "{name} has {len} entries, expected {n} (one per op)"
                ));
            }
        }
        if self.dep_ptr.len() != n + 1
            || self.dep_ptr[0] != 0
            || self.dep_ptr[n] as usize != self.dep_idx.len()
            || self.dep_ptr.windows(2).any(|w| w[0] > w[1])
        {
            return bad(format!(
                "dep_ptr must be a CSR pointer of {} entries ending at len(dep_idx) = {}",
                n + 1,
                self.dep_idx.len()
            ));
        }
        if self.round_ptr.first() != Some(&0)
            || *self.round_ptr.last().unwrap() as usize != n
            || self.round_ptr.windows(2).any(|w| w[0] > w[1])
        {
            return bad(format!("round_ptr must run from 0 to {n}, non-decreasing"));
        }
        for i in 0..n {
            let r = self.rank[i];
            if r >= self.n_ranks {
                return bad(format!("op {i}: rank {r} out of range 0..{}", self.n_ranks));
            }
            match self.kind[i] {
                SEND | RECV => {
                    if self.peer[i] >= self.n_ranks {
                        return bad(format!(
                            "op {i}: peer {} out of range 0..{}",
                            self.peer[i], self.n_ranks
                        ));
                    }
                }
                REDUCE | COPY => {}
                k => {
                    return bad(format!(
                        "op {i}: kind {k}, expected 0..3 (send, recv, reduce, copy)"
                    ))
                }
            }
            for &d in self.deps(i) {
                if d as usize >= i || self.rank[d as usize] != r {
                    return bad(format!(
                        "op {i} depends on op {d}, expected an earlier op of rank {r}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Match sends to receives per channel in id order: sort the sends by
    /// `(src, dst, tag, id)` and the receives by `(peer, rank, tag, id)`; the
    /// k-th of each channel pair up. Messages are numbered in send-id order.
    pub fn match_messages(&self) -> Result<Matching, CoreError> {
        let n = self.n_ops();
        let key = |i: usize, src: u32, dst: u32| (src, dst, self.tag[i], i as u32);
        let mut sends: Vec<(u32, u32, i64, u32)> = Vec::new();
        let mut recvs: Vec<(u32, u32, i64, u32)> = Vec::new();
        for i in 0..n {
            match self.kind[i] {
                SEND => sends.push(key(i, self.rank[i], self.peer[i])),
                RECV => recvs.push(key(i, self.peer[i], self.rank[i])),
                _ => {}
            }
        }
        sends.sort_unstable();
        recvs.sort_unstable();
        let channel = |k: &(u32, u32, i64, u32)| (k.0, k.1, k.2);
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(sends.len());
        let (mut a, mut b) = (0, 0);
        while a < sends.len() || b < recvs.len() {
            let (ca, cb) = (sends.get(a).map(channel), recvs.get(b).map(channel));
            if ca.is_some() && ca == cb {
                let (s, r) = (sends[a].3, recvs[b].3);
                if self.nbytes[s as usize] != self.nbytes[r as usize] {
                    return Err(CoreError::InvalidArgument(format!(
                        "program: send op {s} ({} B) matches receive op {r} ({} B), expected equal sizes",
                        self.nbytes[s as usize], self.nbytes[r as usize]
                    )));
                }
                pairs.push((s, r));
                a += 1;
                b += 1;
                continue;
            }
            // one side of a channel has ops the other lacks: count both
            let c = match (ca, cb) {
                (Some(x), Some(y)) => x.min(y),
                (Some(x), None) => x,
                (None, y) => y.expect("one side is left"),
            };
            let ns = sends[a..].iter().take_while(|k| channel(k) == c).count();
            let nr = recvs[b..].iter().take_while(|k| channel(k) == c).count();
            return Err(CoreError::InvalidArgument(format!(
                "program: channel {}→{} tag {} has {ns} sends but {nr} receives, expected equal numbers",
                c.0, c.1, c.2
            )));
        }
        pairs.sort_unstable();
        let (succ_ptr, succ_idx) = self.successors();
        let mut m = Matching {
            msg_of: vec![NONE; n],
            send: Vec::with_capacity(pairs.len()),
            recv: Vec::with_capacity(pairs.len()),
            succ_ptr,
            succ_idx,
        };
        for (id, &(s, r)) in pairs.iter().enumerate() {
            m.send.push(s);
            m.recv.push(r);
            m.msg_of[s as usize] = id as u32;
            m.msg_of[r as usize] = id as u32;
        }
        Ok(m)
    }

    /// Successors of each op as a CSR (`ptr`, `idx`), the inverse of the
    /// dependency lists.
    pub fn successors(&self) -> (Vec<u64>, Vec<u32>) {
        let n = self.n_ops();
        let mut ptr = vec![0u64; n + 1];
        for &d in &self.dep_idx {
            ptr[d as usize + 1] += 1;
        }
        for i in 0..n {
            ptr[i + 1] += ptr[i];
        }
        let mut fill = ptr.clone();
        let mut idx = vec![0u32; self.dep_idx.len()];
        for i in 0..n {
            for &d in self.deps(i) {
                idx[fill[d as usize] as usize] = i as u32;
                fill[d as usize] += 1;
            }
        }
        (ptr, idx)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Ring of `p` ranks, one round: rank r sends `bytes` to r+1, receives from r-1.
    pub fn ring_round(p: u32, bytes: u64) -> Program {
        let mut prog = Program {
            n_ranks: p,
            ..Default::default()
        };
        for r in 0..p {
            prog.rank.extend([r, r]);
            prog.kind.extend([SEND, RECV]);
            prog.peer.extend([(r + 1) % p, (r + p - 1) % p]);
            prog.tag.extend([0, 0]);
            prog.nbytes.extend([bytes, bytes]);
        }
        prog.dep_ptr = vec![0; 2 * p as usize + 1];
        prog.round_ptr = vec![0, 2 * p as u64];
        prog
    }

    #[test]
    fn matching_pairs_sends_with_receives_in_channel_order() {
        let prog = ring_round(4, 8);
        prog.validate().unwrap();
        let m = prog.match_messages().unwrap();
        assert_eq!(m.send, vec![0, 2, 4, 6]);
        assert_eq!(m.recv, vec![3, 5, 7, 1]);
        assert_eq!(m.msg_of[1], 3);
    }

    #[test]
    fn unmatched_and_forward_dependencies_are_refused() {
        let mut prog = ring_round(3, 8);
        prog.kind[1] = REDUCE;
        let e = prog.match_messages().unwrap_err().to_string();
        assert!(e.contains("1 sends but 0 receives"), "{e}");
        let mut prog = ring_round(2, 8);
        prog.dep_ptr = vec![0, 1, 1, 1, 1];
        prog.dep_idx = vec![1];
        let e = prog.validate().unwrap_err().to_string();
        assert!(e.contains("op 0 depends on op 1"), "{e}");
    }
}
