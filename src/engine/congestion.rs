//! The congestion model of the network-noise paper (Hoefler, Schneider &
//! Lumsdaine, "The Effect of Network Noise on Large-Scale Collective
//! Communications", PPL 2009, §3; the ORCS simulator).
//!
//! Per round, the application's messages and one random permutation among the
//! background endpoints are routed together and every link counts the flows
//! crossing it. Each application message is then annotated with the largest
//! count along its route, and costs its route latency plus
//! `bytes · congestion / bandwidth` of its slowest link. The event loop
//! ([`super::run`]) then takes the longest path through the dependencies,
//! CPU overheads included; running it again without background traffic gives
//! the unperturbed time the paper compares against (its slowdown).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::fabric::{ceil_ps, Fabric, Links, Message, Ps, PS_PER_S};
use super::program::{Matching, Program};
use super::run::Routes;
use crate::error::CoreError;
use crate::routing::graph::mix64;

/// Per-message congestion and duration.
#[derive(Clone, Debug, Default)]
pub struct Annotation {
    /// Largest number of flows (weighted) on a link of the message's route,
    /// in its round.
    pub congestion: Vec<f32>,
    /// Time on the wire: route latency + bytes · congestion / bandwidth.
    pub duration: Vec<Ps>,
    /// Flows per link summed over rounds (application and background).
    pub link_flows: Vec<f64>,
}

/// Annotate every message of `prog` (see the module note). `background`:
/// endpoints that send one random permutation per round, and the seed.
pub fn annotate<R: Routes>(
    prog: &Program,
    m: &Matching,
    order: &[u32],
    links: &Links,
    routes: &mut R,
    background: Option<(&[u32], u64)>,
) -> Result<Annotation, CoreError> {
    let n_msg = m.send.len();
    let mut out = Annotation {
        congestion: vec![0.0; n_msg],
        duration: vec![0; n_msg],
        link_flows: vec![0.0; links.len()],
    };
    let mut count = vec![0.0f64; links.len()];
    let mut touched: Vec<u32> = Vec::new();
    let (mut lk, mut wt) = (Vec::new(), Vec::new());
    // route arena of the current round's application messages
    let (mut arena, mut warena, mut ptr) = (Vec::<u32>::new(), Vec::<f64>::new(), vec![0usize]);
    let mut rng = background.map_or(0, |(_, s)| mix64(s));
    let mut eps: Vec<u32> = background.map_or(vec![], |(e, _)| e.to_vec());
    let mut msg = 0usize;
    for k in 0..prog.n_rounds() {
        let end_op = prog.round_ptr[k + 1] as u32;
        let first = msg;
        arena.clear();
        warena.clear();
        ptr.truncate(1);
        while msg < n_msg && m.send[msg] < end_op {
            let s = m.send[msg] as usize;
            let (a, b) = (order[prog.rank[s] as usize], order[prog.peer[s] as usize]);
            if a != b {
                routes.route(a, b, &mut arena, &mut warena)?;
            }
            ptr.push(arena.len());
            msg += 1;
        }
        for (&l, &w) in arena.iter().zip(&warena) {
            if count[l as usize] == 0.0 {
                touched.push(l);
            }
            count[l as usize] += w;
        }
        if eps.len() >= 2 && msg > first {
            for i in (1..eps.len()).rev() {
                rng = mix64(rng.wrapping_add(i as u64));
                eps.swap(i, (rng % (i as u64 + 1)) as usize);
            }
            for i in 0..eps.len() {
                lk.clear();
                wt.clear();
                routes.route(eps[i], eps[(i + 1) % eps.len()], &mut lk, &mut wt)?;
                for (&l, &w) in lk.iter().zip(&wt) {
                    if count[l as usize] == 0.0 {
                        touched.push(l);
                    }
                    count[l as usize] += w;
                }
            }
        }
        for (j, id) in (first..msg).enumerate() {
            let path = ptr[j]..ptr[j + 1];
            let (mut c, mut lat, mut slow) = (0.0f64, 0 as Ps, 0.0f64);
            for x in path {
                let l = arena[x] as usize;
                c = c.max(count[l]);
                lat += links.latency[l];
                slow = slow.max(warena[x] * PS_PER_S / links.bandwidth[l]);
            }
            let bytes = prog.nbytes[m.send[id] as usize] as f64;
            out.congestion[id] = c as f32;
            out.duration[id] = lat + ceil_ps(bytes * c * slow);
        }
        for &l in &touched {
            out.link_flows[l as usize] += count[l as usize];
            count[l as usize] = 0.0;
        }
        touched.clear();
    }
    Ok(out)
}

/// The fabric of the congestion model: a message takes the duration fixed
/// by [`annotate`], whatever else is in flight.
pub struct Fixed {
    duration: Vec<Ps>,
    due: BinaryHeap<Reverse<(Ps, u32)>>,
    link_bytes: Vec<f64>,
}

impl Fixed {
    pub fn new(duration: Vec<Ps>, n_links: usize) -> Self {
        Fixed {
            duration,
            due: BinaryHeap::new(),
            link_bytes: vec![0.0; n_links],
        }
    }
}

impl Fabric for Fixed {
    fn inject(&mut self, now: Ps, msg: &Message) {
        for (&l, &w) in msg.links.iter().zip(msg.weights) {
            self.link_bytes[l as usize] += msg.bytes as f64 * w;
        }
        let d = self.duration.get(msg.id as usize).copied().unwrap_or(0);
        self.due.push(Reverse((now + d, msg.id)));
    }

    fn next_arrival(&mut self) -> Option<Ps> {
        self.due.peek().map(|Reverse((t, _))| *t)
    }

    fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        while let Some(&Reverse((t, id))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            arrived.push((t, id));
        }
    }

    fn link_bytes(&self) -> &[f64] {
        &self.link_bytes
    }
}
