//! The congestion model for circulant schedules in lockstep, without an op
//! program: the path that reaches the papers' sizes (a shift all-to-all over
//! 20,736 endpoints is 430 M messages; its op program would not fit).
//!
//! A circulant schedule (DIY2's partners: rank `r` runs rank 0's ops moved by
//! `r + x mod P` or `r XOR x`) with at most one send and one receive per
//! round is described by one [`RoundShape`] per round, measured on rank 0's
//! ops by `topocoll.sim.lockstep`. Under `sync=rounds` every rank starts round
//! `k + 1` when its round `k` is done, so the whole state is one time per rank:
//!
//! ```text
//! S_r = T_r + send_at      R_r = T_r + recv_at      E_r = T_r + local_end
//! A_r = inject(src) + dur(src)        inject(s) = S_s (eager) or max(S_s, R_dst(s)) (rendezvous)
//! T_r' = max(E_r, max(A_r, E_r) + post, S_r (eager) or inject(r) + dur(r) (rendezvous))
//! ```
//!
//! with `dur` the congestion model's duration of the round's messages
//! ([`super::congestion::RoundCounter`], the same code and noise stream the
//! event loop's congestion model uses); `sync=barrier` takes the maximum over
//! ranks after every round. Tested equal to the event loop on small P.

use super::congestion::RoundCounter;
use super::fabric::{Links, Ps};
use super::run::Routes;
use crate::error::CoreError;

/// One round of rank 0's ops, offsets from the round's start (ps).
#[derive(Clone, Copy, Debug)]
pub struct RoundShape {
    /// Whether the round moves a message (one send and one receive per rank).
    pub message: bool,
    /// Send offset: rank `r` sends to `r ⊕ send_off`.
    pub send_off: u32,
    pub bytes: u64,
    /// When the send is posted (its CPU overhead done), the receive posted,
    /// and the CPU done with the work that does not wait for the message.
    pub send_at: Ps,
    pub recv_at: Ps,
    pub local_end: Ps,
    /// CPU work after the message arrived (receive overhead, reductions).
    pub post: Ps,
}

#[derive(Clone, Debug, Default)]
pub struct LockstepOut {
    pub time: Ps,
    pub rank_done: Vec<Ps>,
    pub link_flows: Vec<f64>,
    pub max_congestion: f32,
    pub messages: u64,
}

fn act(xor: bool, p: u32, r: u32, x: u32) -> u32 {
    if xor {
        r ^ x
    } else {
        ((r as u64 + x as u64) % p as u64) as u32
    }
}

fn act_inv(xor: bool, p: u32, r: u32, x: u32) -> u32 {
    if xor {
        r ^ x
    } else {
        ((r as u64 + p as u64 - x as u64 % p as u64) % p as u64) as u32
    }
}

/// Durations of one round's messages (message `r` from rank `r`) and their
/// largest congestion.
type RoundDurations = Result<(Vec<Ps>, f32), CoreError>;

/// Run the rounds; `order[rank]` = endpoint, `eager` = largest eager message.
/// Rounds are routed and counted on `threads` threads (each with its own
/// counter; round `k`'s background depends on `k` only), the recurrence runs
/// on the calling thread in round order.
#[allow(clippy::too_many_arguments)]
pub fn lockstep<R: Routes + Clone + Send>(
    p: u32,
    xor: bool,
    rounds: &[RoundShape],
    order: &[u32],
    links: &Links,
    routes: &R,
    eager: u64,
    barrier: bool,
    background: Option<(&[u32], u64)>,
    threads: usize,
) -> Result<LockstepOut, CoreError> {
    if order.len() != p as usize {
        return Err(CoreError::InvalidArgument(format!(
            "lockstep: order has {} entries, expected p = {p}",
            order.len()
        )));
    }
    let n = p as usize;
    let workers = threads.max(1);
    let mut out = LockstepOut::default();
    let mut t = vec![0 as Ps; n];
    let mut next = vec![0 as Ps; n];
    let flows = std::thread::scope(|scope| -> Result<Vec<f64>, CoreError> {
        let mut rx = Vec::new();
        let mut handles = Vec::new();
        for w in 0..workers {
            let (tx, r) = std::sync::mpsc::sync_channel::<RoundDurations>(2);
            rx.push(r);
            let mut routes = routes.clone();
            handles.push(scope.spawn(move || -> Vec<f64> {
                let mut rc = RoundCounter::new(links, background);
                for (k, sh) in rounds.iter().enumerate().skip(w).step_by(workers) {
                    if !sh.message {
                        continue;
                    }
                    let pairs = (0..p).map(|r| {
                        (
                            order[r as usize],
                            order[act(xor, p, r, sh.send_off) as usize],
                        )
                    });
                    let res = rc.route_round(k, &mut routes, pairs).map(|()| {
                        let mut maxc = 0.0f32;
                        let dur = (0..n)
                            .map(|r| {
                                let (c, d) = rc.message(r, sh.bytes);
                                maxc = maxc.max(c);
                                d
                            })
                            .collect();
                        rc.finish_round();
                        (dur, maxc)
                    });
                    let failed = res.is_err();
                    if tx.send(res).is_err() || failed {
                        break;
                    }
                }
                rc.link_flows
            }));
        }
        for (k, sh) in rounds.iter().enumerate() {
            if barrier {
                // every rank starts the round when the last finished the previous one
                let m = t.iter().copied().max().unwrap_or(0);
                t.fill(m);
            }
            if !sh.message {
                for x in t.iter_mut() {
                    *x += sh.local_end;
                }
                continue;
            }
            let (dur, maxc) = rx[k % workers].recv().expect("a worker per round")?;
            out.max_congestion = out.max_congestion.max(maxc);
            out.messages += p as u64;
            let rdv = sh.bytes > eager;
            let inject = |s: usize, t: &[Ps]| {
                let posted = t[s] + sh.send_at;
                if rdv {
                    let dst = act(xor, p, s as u32, sh.send_off) as usize;
                    posted.max(t[dst] + sh.recv_at)
                } else {
                    posted
                }
            };
            for r in 0..n {
                let src = act_inv(xor, p, r as u32, sh.send_off) as usize;
                let arrival = inject(src, &t) + dur[src];
                let end = t[r] + sh.local_end;
                let sent = if rdv {
                    inject(r, &t) + dur[r]
                } else {
                    t[r] + sh.send_at
                };
                next[r] = end.max(arrival.max(end) + sh.post).max(sent);
            }
            std::mem::swap(&mut t, &mut next);
        }
        drop(rx);
        let mut flows = vec![0.0; links.len()];
        for h in handles {
            for (f, x) in flows.iter_mut().zip(h.join().expect("worker")) {
                *f += x;
            }
        }
        Ok(flows)
    })?;
    out.time = t.iter().copied().max().unwrap_or(0);
    out.rank_done = t;
    out.link_flows = flows;
    Ok(out)
}
