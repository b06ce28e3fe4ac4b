//! LogGOPS network with link contention: the [`Fabric`] of `--model loggops`.
//!
//! LogGOPSim (Hoefler, Schneider & Lumsdaine, "LogGOPSim — Simulating
//! Large-Scale Applications in the LogGOPS Model", HPDC 2010) charges a
//! message `o` of sender CPU (the event loop, [`super::run`]), a NIC gap `g`
//! per message and `G` per byte, and a wire latency `L`. Here every endpoint
//! NIC has `k` injection lanes (k-port model): a message takes the lane that
//! frees first, for `max(g, bytes·G)`. It then crosses its static route
//! cut-through: the head waits at each link until that link is free
//! (first-come, first-served reservation), occupies it for
//! `bytes·weight / bandwidth`, and moves on after the link's latency; the
//! last byte arrives one serialisation time at the route's slowest link after
//! the head reaches the destination, plus the extra latency `L`.
//!
//! On a network with nodes (`ppn` ranks per host, `routing::nodes`) the
//! lanes are the host's NIC, shared by its ranks: `g` is then the NIC's gap
//! between any two messages leaving it (its message rate `1/g`), `G` its
//! time per byte; a message between two ranks of one host never reaches the
//! NIC and pays neither them nor `L`, only its route through the node's
//! memory (and the CPU overheads of the loop).
//!
//! Reservations make a message's arrival known when it is injected, so the
//! model costs O(route length) per message: this is what lets it simulate
//! millions of messages per second. The price: a later message never slows
//! an earlier one down (no fair sharing; `--model flow` has it).

use super::fabric::{ceil_ps, Due, Fabric, Links, Message, Ps, PS_PER_S};

/// LogGOPS network parameters (the CPU parameters `o`, `O` live in the loop).
#[derive(Clone, Debug)]
pub struct LogGopsNic {
    /// Gap between two messages on one NIC lane, ps.
    pub g: Ps,
    /// Gap per byte on the NIC, ps per byte (0: the links alone limit).
    pub big_g: f64,
    /// Extra latency per message on top of the route's link latencies, ps.
    pub l: Ps,
    /// NIC lanes per endpoint (k-port model), ≥ 1.
    pub ports: usize,
}

pub struct Reservation {
    links: Links,
    nic: LogGopsNic,
    lane_free: Vec<Ps>,
    /// Ranks per host (1: every endpoint its own NIC, no intra-node path).
    ppn: u32,
    link_free: Vec<Ps>,
    link_bytes: Vec<f64>,
    /// ps per byte on each link.
    per_byte: Vec<f64>,
    due: Due,
}

impl Reservation {
    /// `ppn` ranks per host share one NIC (1: one NIC per endpoint).
    pub fn new(links: Links, n_endpoints: usize, nic: LogGopsNic, ppn: u32) -> Self {
        let ports = nic.ports.max(1);
        let ppn = ppn.max(1);
        let nics = n_endpoints.div_ceil(ppn as usize);
        let per_byte = links.bandwidth.iter().map(|&b| PS_PER_S / b).collect();
        let n = links.len();
        Reservation {
            links,
            lane_free: vec![0; nics * ports],
            ppn,
            nic: LogGopsNic { ports, ..nic },
            link_free: vec![0; n],
            link_bytes: vec![0.0; n],
            per_byte,
            due: Due::default(),
        }
    }
}

impl Fabric for Reservation {
    fn inject(&mut self, now: Ps, msg: &Message) {
        let k = self.nic.ports;
        let (hs, hd) = (msg.src / self.ppn, msg.dst / self.ppn);
        // within a host (several ranks per host): shared memory, no NIC
        let by_nic = self.ppn == 1 || hs != hd;
        let (start, nic_time, extra) = if by_nic {
            let lanes = &mut self.lane_free[hs as usize * k..(hs as usize + 1) * k];
            let lane = (0..k).min_by_key(|&i| lanes[i]).unwrap_or(0);
            let start = now.max(lanes[lane]);
            let nic_time = ceil_ps(msg.bytes as f64 * self.nic.big_g).max(self.nic.g);
            lanes[lane] = start + nic_time;
            (start, nic_time, self.nic.l)
        } else {
            (now, 0, 0)
        };
        let mut head = start;
        let mut slowest = 0;
        for (&l, &w) in msg.links.iter().zip(msg.weights) {
            let l = l as usize;
            let busy = ceil_ps(msg.bytes as f64 * w * self.per_byte[l]);
            head = head.max(self.link_free[l]);
            self.link_free[l] = head + busy;
            self.link_bytes[l] += msg.bytes as f64 * w;
            head += self.links.latency[l];
            slowest = slowest.max(busy);
        }
        let tail = slowest;
        // The NIC never lets the last byte leave before `start + nic_time`.
        let arrival = (head + tail).max(start + nic_time) + extra;
        self.due.push(arrival, msg.id);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_hop(bw: f64, lat: Ps) -> Reservation {
        // endpoints 0, 1; links 0: ep0→sw, 1: sw→ep1, 2: ep1→sw, 3: sw→ep0
        let links = Links {
            bandwidth: vec![bw; 4],
            latency: vec![lat; 4],
        };
        let nic = LogGopsNic {
            g: 0,
            big_g: 0.0,
            l: 0,
            ports: 1,
        };
        Reservation::new(links, 2, nic, 1)
    }

    fn send(f: &mut Reservation, now: Ps, id: u32, bytes: u64, links: &[u32]) {
        let w = vec![1.0; links.len()];
        f.inject(
            now,
            &Message {
                id,
                src: 0,
                dst: 1,
                bytes,
                links,
                weights: &w,
            },
        );
    }

    #[test]
    fn one_message_costs_latency_plus_serialisation() {
        let mut f = two_hop(1e9, 1_000_000);
        send(&mut f, 0, 0, 1000, &[0, 1]);
        // 1000 B at 1 GB/s = 1 µs, two links of 1 µs latency
        assert_eq!(f.next_arrival(), Some(3_000_000));
    }

    #[test]
    fn messages_sharing_a_link_queue_first_come_first_served() {
        let mut f = two_hop(1e9, 0);
        send(&mut f, 0, 0, 1000, &[0, 1]);
        send(&mut f, 0, 1, 1000, &[0, 1]);
        let mut out = vec![];
        f.advance(10_000_000, &mut out);
        assert_eq!(out, vec![(1_000_000, 0), (2_000_000, 1)]);
        assert_eq!(f.link_bytes()[0], 2000.0);
    }

    #[test]
    fn k_port_nic_lanes_send_in_parallel_but_links_still_serialise() {
        let links = Links {
            bandwidth: vec![1e9; 4],
            latency: vec![0; 4],
        };
        let nic = LogGopsNic {
            g: 0,
            big_g: 1000.0, // 1 GB/s per lane
            l: 0,
            ports: 2,
        };
        let mut f = Reservation::new(links, 2, nic, 1);
        // disjoint links: both lanes busy at once, both arrive at 1 µs
        send(&mut f, 0, 0, 1000, &[]);
        send(&mut f, 0, 1, 1000, &[]);
        send(&mut f, 0, 2, 1000, &[]);
        let mut out = vec![];
        f.advance(u64::MAX, &mut out);
        assert_eq!(out, vec![(1_000_000, 0), (1_000_000, 1), (2_000_000, 2)]);
    }
}
