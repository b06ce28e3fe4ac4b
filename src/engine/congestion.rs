//! The congestion model of the network-noise paper (Hoefler, Schneider &
//! Lumsdaine, "The Effect of Network Noise on Large-Scale Collective
//! Communications", PPL 2009, §3; the ORCS simulator).
//!
//! Per round, the application's messages and one random permutation among the
//! background endpoints are routed together and every link counts the flows
//! crossing it. Each application message is then annotated with the largest
//! count along its route, and costs its route latency plus
//! `bytes · congestion / bandwidth` of its slowest link ([`RoundFixed`], told
//! of each round by the op store before any of its messages moves). The
//! event loop ([`super::core`]) then takes the longest path through the dependencies,
//! CPU overheads included; running it again without background traffic gives
//! the unperturbed time the paper compares against (its slowdown).

use std::collections::VecDeque;

use super::core::Routes;
use super::fabric::{ceil_ps, Due, Fabric, Links, Message, Ps, PS_PER_S};
use crate::error::CoreError;
use crate::routing::graph::mix64;

/// One round of the congestion model: route the round's application
/// messages, add one background permutation, count flows per link, and give
/// each message its congestion and duration. Reused round after round; round
/// `k`'s background permutation is drawn from `seed` and `k` alone, so the
/// event loop's [`RoundFixed`] and the lockstep recurrence of
/// [`super::lockstep`] (which routes rounds on several threads) see the
/// same noise.
pub struct RoundCounter<'a> {
    links: &'a Links,
    count: Vec<f64>,
    touched: Vec<u32>,
    arena: Vec<u32>,
    warena: Vec<f64>,
    ptr: Vec<usize>,
    lk: Vec<u32>,
    wt: Vec<f64>,
    seed: u64,
    base: Vec<u32>,
    eps: Vec<u32>,
    /// Flows per link summed over rounds (application and background).
    pub link_flows: Vec<f64>,
}

impl<'a> RoundCounter<'a> {
    pub fn new(links: &'a Links, background: Option<(&[u32], u64)>) -> Self {
        RoundCounter {
            links,
            count: vec![0.0; links.len()],
            touched: Vec::new(),
            arena: Vec::new(),
            warena: Vec::new(),
            ptr: vec![0],
            lk: Vec::new(),
            wt: Vec::new(),
            seed: background.map_or(0, |(_, s)| s),
            base: background.map_or(vec![], |(e, _)| e.to_vec()),
            eps: Vec::new(),
            link_flows: vec![0.0; links.len()],
        }
    }

    /// Route the messages `(src, dst)` endpoint pairs of round `k` (a
    /// message to its own endpoint has an empty route).
    pub fn route_round<R: Routes>(
        &mut self,
        k: usize,
        routes: &mut R,
        pairs: impl Iterator<Item = (u32, u32)>,
    ) -> Result<(), CoreError> {
        self.arena.clear();
        self.warena.clear();
        self.ptr.truncate(1);
        for (a, b) in pairs {
            if a != b {
                routes.route(a, b, &mut self.arena, &mut self.warena)?;
            }
            self.ptr.push(self.arena.len());
        }
        for (&l, &w) in self.arena.iter().zip(&self.warena) {
            if self.count[l as usize] == 0.0 {
                self.touched.push(l);
            }
            self.count[l as usize] += w;
        }
        if self.base.len() >= 2 && self.ptr.len() > 1 {
            self.eps.clear();
            self.eps.extend_from_slice(&self.base);
            let eps = &mut self.eps;
            let mut rng = mix64(self.seed ^ mix64(k as u64 + 1));
            for i in (1..eps.len()).rev() {
                rng = mix64(rng.wrapping_add(i as u64));
                eps.swap(i, (rng % (i as u64 + 1)) as usize);
            }
            for i in 0..eps.len() {
                self.lk.clear();
                self.wt.clear();
                routes.route(eps[i], eps[(i + 1) % eps.len()], &mut self.lk, &mut self.wt)?;
                for (&l, &w) in self.lk.iter().zip(&self.wt) {
                    if self.count[l as usize] == 0.0 {
                        self.touched.push(l);
                    }
                    self.count[l as usize] += w;
                }
            }
        }
        Ok(())
    }

    /// Congestion and duration of message `j` of the round routed last.
    pub fn message(&self, j: usize, bytes: u64) -> (f32, Ps) {
        let (mut c, mut lat, mut slow) = (0.0f64, 0 as Ps, 0.0f64);
        for x in self.ptr[j]..self.ptr[j + 1] {
            let l = self.arena[x] as usize;
            c = c.max(self.count[l]);
            lat += self.links.latency[l];
            slow = slow.max(self.warena[x] * PS_PER_S / self.links.bandwidth[l]);
        }
        (c as f32, lat + ceil_ps(bytes as f64 * c * slow))
    }

    /// Close the round: add its counts to `link_flows` and clear them.
    pub fn finish_round(&mut self) {
        for &l in &self.touched {
            self.link_flows[l as usize] += self.count[l as usize];
            self.count[l as usize] = 0.0;
        }
        self.touched.clear();
    }
}

/// The fabric of the congestion model: each round is routed and annotated
/// when the op store loads it (all rounds at the start for the whole
/// program, round by round for the streamed window; the same numbers
/// either way), and a message takes its fixed duration when injected,
/// whatever else is in flight. Memory: the durations of the messages
/// loaded and not yet injected (ids are dense and loaded in order).
pub struct RoundFixed<'a, R: Routes> {
    rc: RoundCounter<'a>,
    routes: R,
    /// Durations of messages `lo..`, [`TAKEN`] once injected.
    duration: VecDeque<Ps>,
    lo: u32,
    due: Due,
    link_bytes: Vec<f64>,
    /// The largest congestion of any message so far.
    pub max_congestion: f32,
    /// Per message (by id) its congestion, when asked for at construction.
    pub congestion: Option<Vec<f32>>,
}

const TAKEN: Ps = Ps::MAX;

impl<'a, R: Routes> RoundFixed<'a, R> {
    /// `per_message`: keep every message's congestion (else only the largest).
    pub fn new(
        links: &'a Links,
        routes: R,
        background: Option<(&[u32], u64)>,
        per_message: bool,
    ) -> Self {
        RoundFixed {
            rc: RoundCounter::new(links, background),
            routes,
            duration: VecDeque::new(),
            lo: 0,
            due: Due::default(),
            link_bytes: vec![0.0; links.len()],
            max_congestion: 0.0,
            congestion: per_message.then(Vec::new),
        }
    }

    /// Flows per link summed over the rounds (the congestion model's link
    /// loads).
    pub fn link_flows(&self) -> &[f64] {
        &self.rc.link_flows
    }
}

impl<R: Routes> Fabric for RoundFixed<'_, R> {
    fn inject(&mut self, now: Ps, msg: &Message) {
        for (&l, &w) in msg.links.iter().zip(msg.weights) {
            self.link_bytes[l as usize] += msg.bytes as f64 * w;
        }
        let k = msg.id.wrapping_sub(self.lo) as usize;
        let d = match self.duration.get_mut(k) {
            Some(d) if *d != TAKEN => std::mem::replace(d, TAKEN),
            _ => 0,
        };
        while self.duration.front() == Some(&TAKEN) {
            self.duration.pop_front();
            self.lo += 1;
        }
        self.due.push(now + d, msg.id);
    }

    fn next_arrival(&mut self) -> Option<Ps> {
        self.due.next()
    }

    fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        self.due.drain_until(now, arrived);
    }

    fn link_bytes(&self) -> &[f64] {
        &self.link_bytes
    }

    fn wants_rounds(&self) -> bool {
        true
    }

    fn round_loaded(
        &mut self,
        k: usize,
        msgs: &[super::fabric::RoundMessage],
    ) -> Result<(), crate::error::CoreError> {
        self.rc
            .route_round(k, &mut self.routes, msgs.iter().map(|m| (m.src, m.dst)))?;
        for (j, m) in msgs.iter().enumerate() {
            let (c, d) = self.rc.message(j, m.bytes);
            self.max_congestion = self.max_congestion.max(c);
            debug_assert_eq!(m.id as usize, self.lo as usize + self.duration.len());
            self.duration.push_back(d);
            if let Some(v) = &mut self.congestion {
                v.push(c);
            }
        }
        self.rc.finish_round();
        Ok(())
    }
}
