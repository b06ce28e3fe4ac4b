//! Buffers and credits: the input buffers `(link, vc)` and injection FIFOs,
//! their occupancy statistics, and the credits their senders hold.

use super::*;

/// Per buffer (input buffer `(link, vc)` or injection FIFO): 32 B, half a
/// cache line, so a buffer never straddles two.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
pub(super) struct Buffer {
    /// Credits its link's sender holds (input buffers only).
    pub(super) credits: u32,
    pub(super) occ: u32,
    pub(super) max_occ: u32,
    /// FIFO of its packets (`InputQueued`, and injection FIFOs).
    pub(super) head: u32,
    pub(super) tail: u32,
    /// Σ departure times − Σ arrival times of its packets, ps (wrapping):
    /// the occupancy integral ∫₀ᵘ occ dt at any `u` from the last change on
    /// is `area + occ · u`, packet·ps (exact in integers, where summing
    /// `occ · Δt` in floating point would round beyond 2⁵³).
    pub(super) area: u64,
    /// Its input port: its link, or `n_links + f` for injection FIFO `f`.
    pub(super) port: u32,
}

impl PacketFabric {
    /// Largest number of packets each input buffer held (flit routers:
    /// flits), indexed
    /// `link · vcs + vc`. A packet is counted from the moment it is granted
    /// the link into the buffer (its credit spent) until its tail leaves the
    /// buffer or is consumed: an upper bound of what the buffer physically
    /// holds, which starts when the head arrives.
    pub fn max_occupancy(&self) -> Vec<u32> {
        if let Some(f) = &self.flit {
            return f.max_occupancy();
        }
        self.buffers[..self.n_links * self.vcs]
            .iter()
            .map(|b| b.max_occ)
            .collect()
    }

    /// Largest number of packets each link's injection FIFO held (0 for
    /// links that never carried a first hop).
    pub fn max_injection_occupancy(&self) -> Vec<u32> {
        self.buffers[self.n_links * self.vcs..]
            .iter()
            .map(|b| b.max_occ)
            .collect()
    }

    /// Time-averaged occupancy of each input buffer over `[0, until]`, packets,
    /// indexed `link · vcs + vc` (`until` at least the last event applied).
    pub fn mean_occupancy(&self, until: Ps) -> Vec<f64> {
        self.buffers[..self.n_links * self.vcs]
            .iter()
            .map(|b| {
                let area = b.area.wrapping_add((b.occ as u64).wrapping_mul(until));
                if until == 0 {
                    0.0
                } else {
                    area as f64 / until as f64
                }
            })
            .collect()
    }

    /// Does buffer `q` serve its packets in one FIFO (head-of-line)?
    #[inline]
    pub(super) fn is_fifo(&self, q: usize) -> bool {
        self.cfg.queues == Queues::InputQueued || q >= self.n_links * self.vcs
    }

    #[inline(always)]
    pub(super) fn occ_change(&mut self, q: usize, t: Ps, up: bool) {
        let b = &mut self.buffers[q];
        if up {
            b.area = b.area.wrapping_sub(t);
            b.occ += 1;
            b.max_occ = b.max_occ.max(b.occ);
        } else {
            b.area = b.area.wrapping_add(t);
            b.occ -= 1;
        }
    }

    /// Return a credit of input buffer `q` (of link `l`) to its sender,
    /// `latency` after `t`.
    #[inline(always)]
    pub(super) fn return_credit(&mut self, q: usize, l: u32, t: Ps) {
        let lat = self.links[l as usize].latency;
        if lat == 0 {
            self.buffers[q].credits += 1;
            self.mark_dirty(l);
        } else {
            self.events.push(t + lat, Event::Credit(q as u32));
        }
    }

    /// A credit of input buffer `queue` is back at its link's sender.
    #[inline]
    pub(super) fn credit_back(&mut self, queue: u32) {
        self.buffers[queue as usize].credits += 1;
        self.mark_dirty(self.buffers[queue as usize].port);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn a_long_link_with_shallow_buffers_sends_depth_packets_per_round_trip() {
        // Endpoint 0 → switch 2 (link 0, latency Λ = 3 µs) → endpoint 1
        // (link 1, latency 0); 1000 B packets at 1 GB/s: T = 1 µs; router
        // delay r = 0.5 µs. A slot of the switch's buffer is taken when a
        // packet starts on link 0 (s) and freed when its tail leaves onto
        // link 1 (s + Λ + r + T); the credit is back at the sender Λ later:
        // one slot serves one packet per T + 2Λ + r = 7.5 µs. With depth D,
        // packet k starts at ⌊k/D⌋·7.5 µs + (k mod D)·T (when D·T ≤ 7.5 µs)
        // and arrives Λ + r + T = 4.5 µs after it starts.
        let mut net = Net::new(2);
        net.link(2, 1e9, 3_000_000);
        net.link(1, 1e9, 0);
        let run = |depth: u32, packets: u64| {
            let mut f = net.fabric(PacketConfig {
                packet_bytes: 1000,
                header_bytes: 0,
                buffer_packets: depth,
                router_delay: 500_000,
                ..config()
            });
            let out = drive(&mut f, &[send(0, 0, 1, packets * 1000, &[0, 1])]);
            assert_within_depth(&f);
            out[0].0
        };
        // D = 1, 5 packets: the last starts at 4 · 7.5 µs.
        assert_eq!(run(1, 5), 30_000_000 + 4_500_000);
        // D = 2, 5 packets: the last (k = 4) starts at 2 · 7.5 µs.
        assert_eq!(run(2, 5), 15_000_000 + 4_500_000);
        // D = 8 ≥ 7.5 µs / T: full rate, 20 packets: the last starts at 19 T.
        assert_eq!(run(8, 20), 19_000_000 + 4_500_000);
    }
}
