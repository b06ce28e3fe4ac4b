//! Blue Gene/L's torus endpoint (`Nic::Bgl`, `--nic bgl`): the injection
//! FIFOs a node's core fills packet by packet, interleaving the messages it
//! sends, and the reception FIFOs the core drains.
//!
//! What the hardware and its software do (sources in
//! `python/topocoll/sim/packet.py` and docs/simulator.md, "Endpoints"):
//! - every node has [`BglNic::fifos`] normal-priority injection FIFOs (BG/L:
//!   2 groups × 3, `TS0_I0..I2`, `TS1_I0..I2`, plus one high-priority FIFO
//!   per group that the all-to-all does not use) of [`BglNic::fifo_packets`]
//!   packets each (32 chunks of 32 B, 1 KiB: 4 full 256 B packets). A FIFO's
//!   head packet requests its next link as any injected packet does: in
//!   dimension order its route's first link; adaptively any productive link
//!   on a dynamic VC or the escape link (the header's hint bits allow every
//!   productive direction);
//! - BG/L has no DMA (all-to-all paper §2): a core copies every packet into
//!   a FIFO, at [`BglNic::cpu_links`] links' bandwidth (§2: "the processor
//!   can only keep about four links busy" when the data is not in L1). The
//!   core visits the FIFOs in turn, one packet per visit, writing into a
//!   FIFO with a free slot for which it has a packet; a packet occupies its
//!   slot from the start of the copy and may leave once copied;
//! - which packets it writes (the randomized all-to-all of §3: packets "in
//!   a random permutation" of destinations, "1 or 2 full-sized packets per
//!   destination" before moving on): the messages a node has to send wait
//!   in lists, in the order they were posted, and the core takes
//!   [`BglNic::burst`] packets of the list's first message, then moves that
//!   message to the end of the list. So the packets of all posted messages
//!   interleave, each message's in order;
//! - [`Placement::Direction`]: one list per FIFO; a message goes to the list
//!   of FIFO `dir mod fifos`, `dir = 2d + s` the direction of its
//!   dimension-order first link (BlueMatter's packet all-to-all on BG/L
//!   keeps one packet list per link and injects each list into its own
//!   FIFO); with 6 FIFOs on a 3D torus one FIFO per direction, so a packet
//!   never waits in a FIFO behind one bound for another direction.
//!   [`Placement::Any`]: one list per node, each packet into the next FIFO
//!   (in turn) with a free slot (BG/L's packet SPI `Send` call: the first
//!   injection FIFO with room);
//! - reception: the last link's VC buffer into the destination is its
//!   reception FIFO (BG/L: 1 KiB per link, the VC buffers' depth); the core
//!   drains one packet at a time at [`BglNic::cpu_links`] links' bandwidth,
//!   the packet holding its slot until drained (as `eject_handling`).
//!
//! Cost: one event per packet copied into a FIFO (none when
//! `cpu_links == 0`: copies take no time), one per packet drained; no
//! allocation per packet.

use super::*;
use crate::engine::fabric::ceil_ps;

/// Which injection FIFO a packet enters (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// The FIFO of its dimension-order first direction (`dir mod fifos`).
    #[default]
    Direction,
    /// The next FIFO in turn with a free slot.
    Any,
}

/// Blue Gene/L's endpoint (module doc).
#[derive(Clone, Debug)]
pub struct BglNic {
    /// Normal-priority injection FIFOs per node, ≥ 1.
    pub fifos: u32,
    /// Depth of each injection FIFO, packets, ≥ 1.
    pub fifo_packets: u32,
    /// Packets of one message the core writes before moving to the next
    /// (0: the whole message, no interleaving).
    pub burst: u32,
    pub placement: Placement,
    /// The core's copy rate into the injection FIFOs and out of the
    /// reception FIFOs, in links' bandwidth (0: copies take no time).
    pub cpu_links: f64,
    /// Per link its direction `2d + s` at the node it leaves (tori; what
    /// [`Placement::Direction`] reads); empty otherwise.
    pub link_dir: Vec<u8>,
}

/// The endpoint's state: per node the core, per list the message being
/// visited.
#[derive(Clone, Debug)]
pub(super) struct BglState {
    pub(super) nic: BglNic,
    /// `1 / cpu_links` (0: copies take no time).
    per_link: f64,
    /// Per node: the core is copying a packet, or a `Pump` is pending.
    busy: Vec<bool>,
    /// Per node: the FIFO the core looks at first next time.
    next: Vec<u32>,
    /// Per list: packets taken from its first message in this visit.
    taken: Vec<u32>,
}

impl BglState {
    pub(super) fn new(nic: BglNic, n_endpoints: usize) -> Self {
        let fifos = nic.fifos as usize;
        BglState {
            per_link: if nic.cpu_links > 0.0 {
                1.0 / nic.cpu_links
            } else {
                0.0
            },
            busy: vec![false; n_endpoints],
            next: vec![0; n_endpoints],
            taken: vec![0; n_endpoints * fifos],
            nic,
        }
    }

    /// The core's time to copy `wire` bytes at links of `ps_per_byte`.
    #[inline]
    pub(super) fn copy_time(&self, wire: u32, ps_per_byte: f64) -> Ps {
        if self.per_link == 0.0 {
            0
        } else {
            ceil_ps(wire as f64 * ps_per_byte * self.per_link)
        }
    }
}

impl PacketFabric {
    /// The list (pending-message queue) a message from `src` whose
    /// dimension-order first link is `first` waits in.
    pub(super) fn bgl_list(&self, src: u32, first: u32) -> usize {
        let b = self.bgl.as_ref().expect("bgl");
        let f = b.nic.fifos as usize;
        let k = match b.nic.placement {
            Placement::Direction => b.nic.link_dir[first as usize] as usize % f,
            Placement::Any => 0,
        };
        src as usize * f + k
    }

    /// Message `m` was posted at `now` into list `list`: the core picks it
    /// up at `now`, once every message of this instant is listed (so a
    /// message posted first does not fill the FIFOs alone).
    pub(super) fn bgl_post(&mut self, now: Ps, list: usize) {
        let b = self.bgl.as_mut().expect("bgl");
        let node = list / b.nic.fifos as usize;
        if !b.busy[node] {
            b.busy[node] = true;
            self.events.push(now, Event::Pump(node as u32));
        }
    }

    /// An injection FIFO of `node` freed a slot at `t`: an idle core fills it.
    pub(super) fn bgl_slot_freed(&mut self, node: usize, t: Ps) {
        if !self.bgl.as_ref().expect("bgl").busy[node] {
            self.bgl_pump(node, t);
        }
    }

    /// Packet `p` is copied into its FIFO at `t`: it may request its link;
    /// the core goes on.
    pub(super) fn bgl_copied(&mut self, p: u32, t: Ps) {
        let node = (self.packets[p as usize].port as usize - self.n_links) / self.fifos;
        self.enqueue(p);
        self.bgl_pump(node, t);
    }

    /// The core of `node` at `t`: copy packets into FIFOs until it is busy
    /// copying one or has nothing it can write.
    pub(super) fn bgl_pump(&mut self, node: usize, t: Ps) {
        loop {
            let Some((fifo, list)) = self.bgl_pick(node) else {
                self.bgl.as_mut().expect("bgl").busy[node] = false;
                return;
            };
            let p = self.bgl_take(list, fifo, t);
            let pk = &self.packets[p as usize];
            let b = self.bgl.as_ref().expect("bgl");
            let cost = b.copy_time(pk.wire, self.ps_per_byte[pk.next_link as usize]);
            if cost == 0 {
                self.enqueue(p);
                continue;
            }
            self.packets[p as usize].tail_at = t + cost;
            self.bgl.as_mut().expect("bgl").busy[node] = true;
            self.events.push(t + cost, Event::Injected(p));
            return;
        }
    }

    /// The next FIFO of `node` (in turn from the core's pointer) with a free
    /// slot and a packet for it: `(FIFO id, list)`.
    fn bgl_pick(&mut self, node: usize) -> Option<(usize, usize)> {
        let b = self.bgl.as_mut().expect("bgl");
        let f = b.nic.fifos as usize;
        let depth = b.nic.fifo_packets;
        let base = node * f;
        let start = b.next[node] as usize;
        let any = b.nic.placement == Placement::Any;
        if any && self.pend_head[base] == NONE {
            return None;
        }
        for i in 0..f {
            let k = (start + i) % f;
            let list = if any { base } else { base + k };
            let q = self.n_links * self.vcs + base + k;
            if self.buffers[q].occ < depth && self.pend_head[list] != NONE {
                b.next[node] = ((k + 1) % f) as u32;
                return Some((base + k, list));
            }
        }
        None
    }

    /// Take the next packet of `list` into injection FIFO `fifo` at `t` (its
    /// slot taken now); the list's first message moves to the end after
    /// `burst` packets (never with `burst` 0), and leaves it after its last.
    fn bgl_take(&mut self, list: usize, fifo: usize, t: Ps) -> u32 {
        let m = self.pend_head[list] as usize;
        let burst = self.bgl.as_ref().expect("bgl").nic.burst;
        let msg = &mut self.msgs[m];
        let k = msg.created;
        msg.created += 1;
        let (done, next) = (msg.created == msg.n_packets, msg.next);
        let taken = &mut self.bgl.as_mut().expect("bgl").taken[list];
        *taken += 1;
        if done || *taken == burst {
            *taken = 0;
            if done || next != NONE {
                self.pend_head[list] = next;
                if next == NONE {
                    self.pend_tail[list] = NONE;
                }
                self.msgs[m].next = NONE;
                if !done {
                    let tail = self.pend_tail[list] as usize;
                    self.msgs[tail].next = m as u32;
                    self.pend_tail[list] = m as u32;
                }
            }
        }
        let q = self.n_links * self.vcs + fifo;
        self.new_packet(m, k, q, fifo, t)
    }

    /// The core's time to drain packet `p`, arrived on link `l`, from its
    /// reception FIFO.
    pub(super) fn bgl_drain_time(&self, p: usize, l: usize) -> Ps {
        let b = self.bgl.as_ref().expect("bgl");
        b.copy_time(self.packets[p].wire, self.ps_per_byte[l])
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// A 4×4 torus (links in `Torus::links` order, 1 GB/s, 20 ns), its
    /// directions, and a BG/L endpoint: 6 FIFOs of 4 packets, burst 1,
    /// copies free unless `cpu_links > 0`.
    fn bgl_cfg(t: &Torus, placement: Placement, cpu_links: f64) -> (Vec<u8>, Nic) {
        let (src, dst) = t.links();
        let k: Vec<u32> = t.k.iter().map(|&x| x as u32).collect();
        let geo = AdaptiveTorus::new(&k, &t.wrap, &src, &dst).unwrap();
        let dir: Vec<u8> = (0..src.len() as u32).map(|l| geo.dir(l)).collect();
        let nic = Nic::Bgl(BglNic {
            fifos: 6,
            fifo_packets: 4,
            burst: 1,
            placement,
            cpu_links,
            link_dir: dir.clone(),
        });
        (dir, nic)
    }

    fn route(t: &Torus, s: u64, d: u64) -> Vec<u32> {
        let mut r = vec![];
        let order: Vec<usize> = (0..t.k.len()).collect();
        t.dor_into(&order, Tie::Positive, s, d, &mut r);
        r
    }

    #[test]
    fn a_packet_enters_the_fifo_of_its_first_direction() {
        // 4×4 torus, node 5 = (1, 1). To 6 = (2, 1): first hop x+ (dir 0);
        // to 4 = (0, 1): x− (dir 1); to 9 = (1, 2): y+ (dir 2); to 1 =
        // (1, 0): y− (dir 3); to 10 = (2, 2): x+ first (dimension order).
        // FIFO ids are node·6 + dir: 30, 31, 32, 33, 30.
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let (dir, nic) = bgl_cfg(&t, Placement::Direction, 0.0);
        let f = net.fabric(PacketConfig {
            packet_bytes: 256,
            header_bytes: 0,
            vcs: 2,
            link_dim: dims,
            dateline: date,
            nic,
            ..config()
        });
        for (d, fifo) in [(6u64, 30usize), (4, 31), (9, 32), (1, 33), (10, 30)] {
            let r = route(&t, 5, d);
            assert_eq!(
                f.bgl_list(5, r[0]),
                fifo,
                "to {d} (first link {}, dir {})",
                r[0],
                dir[r[0] as usize]
            );
        }
    }

    /// Node 5 of the 4×4 torus sends `n` packets of 256 B to each of
    /// `dests` at once (burst 1); the last arrival.
    fn fan_out(placement: Placement, cpu_links: f64, dests: &[u64], n: u64) -> Ps {
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let (_, nic) = bgl_cfg(&t, placement, cpu_links);
        let sends: Vec<Send> = dests
            .iter()
            .enumerate()
            .map(|(i, &d)| Send {
                t: 0,
                id: i as u32,
                src: 5,
                dst: d as u32,
                bytes: n * 256,
                route: route(&t, 5, d),
            })
            .collect();
        let mut f = net.fabric(PacketConfig {
            packet_bytes: 256,
            header_bytes: 0,
            vcs: 2,
            link_dim: dims,
            dateline: date,
            nic,
            ..config()
        });
        let out = drive(&mut f, &sends);
        assert_eq!(out.len(), sends.len());
        assert_within_depth(&f);
        out.iter().map(|a| a.0).max().unwrap()
    }

    #[test]
    fn two_fifos_feed_two_links_at_once() {
        // Node 5 sends 8 packets to its x+ neighbour 6 and 8 to its y+
        // neighbour 9. 256 B at 1 GB/s: T = 256 ns a packet; 20 ns links.
        // One FIFO per direction: both streams leave at once, each as fast
        // as a neighbour message alone: 8T + 20 ns, not the 16T + 20 ns of
        // one FIFO for both (`ports::one_injection_fifo_feeds_one_link_at_a_time`).
        // With `Any` the core deals the interleaved packets (x+, y+, x+, ...)
        // to FIFOs 0, 1, 2, ... in turn: FIFOs 0, 2, 4 hold the x+ packets,
        // 1, 3, 5 the y+ ones, and again both links are busy throughout.
        let one = 8 * 256_000 + 20_000;
        assert_eq!(fan_out(Placement::Direction, 0.0, &[6, 9], 8), one);
        assert_eq!(fan_out(Placement::Direction, 0.0, &[6], 8), one);
        assert_eq!(fan_out(Placement::Any, 0.0, &[6, 9], 8), one);
    }

    #[test]
    fn the_core_copies_at_its_rate() {
        // One neighbour message of 8 packets, core at 0.5 links: a packet
        // takes 2T = 512 ns to copy, so the link waits for the core: the
        // last packet is copied at 16T, sent in T, drained in 2T after its
        // tail arrives (the drain keeps pace: one packet per 2T): 19T + 20
        // ns. At 4 links (T/4 = 64 ns a copy): copies stay ahead of the
        // link after the first: T/4 + 8T + 20 ns, then the last drain T/4.
        let t = 256_000;
        assert_eq!(fan_out(Placement::Direction, 0.5, &[6], 8), 19 * t + 20_000);
        assert_eq!(
            fan_out(Placement::Direction, 4.0, &[6], 8),
            t / 4 + 8 * t + 20_000 + t / 4
        );
    }

    #[test]
    fn reception_drains_at_the_cores_rate() {
        // Nodes 4 and 6 each send 8 packets to their neighbour 5, cores at
        // one link's rate: each source copies a packet in T and its link
        // carries one per T, so two packets reach node 5 per T from 2T + 20
        // ns on, but its core drains one per T: the drain never idles after
        // the first arrival and the 16th packet is drained at 2T + 20 ns +
        // 16T (back-pressure only delays arrivals that would wait anyway).
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let (_, nic) = bgl_cfg(&t, Placement::Direction, 1.0);
        let sends: Vec<Send> = [4u32, 6]
            .iter()
            .enumerate()
            .map(|(i, &s)| Send {
                t: 0,
                id: i as u32,
                src: s,
                dst: 5,
                bytes: 8 * 256,
                route: route(&t, s as u64, 5),
            })
            .collect();
        let mut f = net.fabric(PacketConfig {
            packet_bytes: 256,
            header_bytes: 0,
            vcs: 2,
            link_dim: dims,
            dateline: date,
            nic,
            ..config()
        });
        let out = drive(&mut f, &sends);
        let tt = 256_000;
        assert_eq!(out.iter().map(|a| a.0).max(), Some(18 * tt + 20_000));
        assert_within_depth(&f);
    }

    #[test]
    fn messages_interleave_packet_by_packet() {
        // Node 5 sends 4 packets each to 6 (x+, 1 hop) and 7 (x+ twice:
        // (3, 1), 2 hops... dimension order takes x+ on the k/2 tie), both
        // via FIFO x+ and link x+. Burst 1: the link carries 6, 7, 6, 7,
        // ...: the message to 6 ends with the 7th packet on the link, at
        // 7T + 20 ns; to 7 with the 8th, then one more hop: 8T + 40 ns.
        // Simple endpoint: the messages go one after the other: to 6 at 4T +
        // 20 ns, to 7 at 8T + 40 ns.
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let sends: Vec<Send> = [6u64, 7]
            .iter()
            .enumerate()
            .map(|(i, &d)| Send {
                t: 0,
                id: i as u32,
                src: 5,
                dst: d as u32,
                bytes: 4 * 256,
                route: route(&t, 5, d),
            })
            .collect();
        let run = |nic: Nic| {
            let mut f = net.fabric(PacketConfig {
                packet_bytes: 256,
                header_bytes: 0,
                vcs: 2,
                link_dim: dims.clone(),
                dateline: date.clone(),
                nic,
                ..config()
            });
            let out = drive(&mut f, &sends);
            assert_within_depth(&f);
            out
        };
        let tt = 256_000;
        let (_, bgl) = bgl_cfg(&t, Placement::Direction, 0.0);
        assert_eq!(run(bgl), vec![(7 * tt + 20_000, 0), (8 * tt + 40_000, 1)]);
        assert_eq!(
            run(Nic::Simple),
            vec![(4 * tt + 20_000, 0), (8 * tt + 40_000, 1)]
        );
    }

    #[test]
    fn adaptive_packets_leave_a_fifo_by_any_productive_link() {
        // Adaptive 4×4 torus: node 5 sends 8 packets to 10 = (2, 2) (x+ and
        // y+ productive) through FIFO x+ (its escape direction). The head
        // of the one FIFO takes one link at a time, so the message cannot
        // beat one link's rate: 8 packets of 288 B at 1 GB/s leave
        // back to back: the last arrives at 8·288 ns + 2 hops (20 ns
        // links, 10 ns router). All hops minimal: 16 packet-hops.
        let (t, net, _, _) = torus_net(&[4, 4]);
        let (_, nic) = bgl_cfg(&t, Placement::Direction, 0.0);
        let sends = vec![Send {
            t: 0,
            id: 0,
            src: 5,
            dst: 10,
            bytes: 8 * 256,
            route: route(&t, 5, 10),
        }];
        let mut f = net.fabric(PacketConfig {
            nic,
            ..adaptive_cfg(&t, 2, 4)
        });
        let out = drive(&mut f, &sends);
        assert_eq!(out, vec![(8 * 288_000 + 2 * 20_000 + 10_000, 0)]);
        assert_eq!(f.packet_hops(), 16);
        assert_within_depth(&f);
    }
}
