//! Virtual-channel schemes: spreading over VCs, dateline classes on tori
//! (Dally & Seitz 1987), hop classes on dragonflies ([`ugal::hop_classes`]).

use super::*;
#[cfg(doc)]
use crate::engine::ugal;
use crate::engine::ugal::{ENDPOINT, GLOBAL, LOCAL};

impl PacketFabric {
    /// Set `p`'s VC for link `l` (and its torus class state).
    #[inline(always)]
    pub(super) fn choose_vc(&mut self, p: usize, l: usize) {
        if self.by_hop {
            return self.choose_hop_vc(p, l);
        }
        let pk = &mut self.packets[p];
        if !self.torus {
            pk.vc = pk.spread;
            return;
        }
        let link = &self.links[l];
        let d = link.dim;
        let mut class = if d == NOT_TORUS || d != pk.dim {
            0
        } else {
            pk.class
        };
        if link.dateline {
            class = (class + 1).min(self.n_classes - 1);
        }
        pk.dim = d;
        pk.class = class;
        pk.vc = class + self.n_classes * pk.spread;
    }

    /// Dragonflies: the VC class moves up after a global link and between
    /// two local links ([`ugal::hop_classes`]); `dim` keeps the last router
    /// link's kind.
    pub(super) fn choose_hop_vc(&mut self, p: usize, l: usize) {
        let kind = self.cfg.hop_kind[l];
        let pk = &mut self.packets[p];
        let prev = if pk.dim == NOT_TORUS {
            ENDPOINT
        } else {
            pk.dim
        };
        let mut class = pk.class;
        if kind != ENDPOINT && (prev == GLOBAL || (prev == LOCAL && kind == LOCAL)) {
            class += 1;
        }
        if kind != ENDPOINT {
            pk.dim = kind;
        }
        if class >= self.n_classes {
            if self.overflow.is_none() {
                self.overflow = Some(format!(
                    "packet model: a route needs VC class {} on link {l}, but vcs={} gives {} classes by hop; \
                     expected --vcs at least {}",
                    class,
                    self.cfg.vcs,
                    self.n_classes,
                    class + 1
                ));
            }
            class = self.n_classes - 1;
        }
        pk.class = class;
        pk.vc = class + self.n_classes * pk.spread;
    }

    /// One line when a route needed more VC classes than the dragonfly's
    /// configuration gives (the run's VCs then were not deadlock free by
    /// construction, so its result must not be used).
    pub fn class_overflow(&self) -> Option<&str> {
        self.overflow.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::*;

    #[test]
    fn a_dateline_with_two_vcs_breaks_the_cycle() {
        // Ring links are dimension 0, link 7 (switch 7 → switch 4) is the
        // dateline: packets that cross it use VC 1 from there on, so the
        // VC-1 buffers never close the ring (Dally & Seitz 1987).
        let mut link_dim = vec![NOT_TORUS; 12];
        link_dim[4..8].fill(0);
        let mut dateline = vec![false; 12];
        dateline[7] = true;
        let (f, out, n) = ring_traffic(PacketConfig {
            vcs: 2,
            link_dim,
            dateline,
            ..config()
        });
        assert_eq!(out.len(), n);
        assert_eq!(f.stalled(), None);
        assert_eq!(f.packets_in_flight(), 0);
        assert_within_depth(&f);
        // VC 1 of the dateline link and of link 4 (after it) carried traffic,
        // VC 1 of links 5 and 6 (before it) none.
        let m = f.max_occupancy();
        assert!(m[7 * 2 + 1] > 0 && m[4 * 2 + 1] > 0);
        assert_eq!((m[5 * 2 + 1], m[6 * 2 + 1], m[7 * 2]), (0, 0, 0));
    }

    #[test]
    fn dimension_order_with_datelines_completes_uniform_traffic_on_a_torus() {
        // 4×4 torus, 2 VCs, depth 2, every node sends 40 messages of 3
        // packets to random nodes: no deadlock, every message arrives, and
        // every link carried exactly the bytes of the packets routed over it.
        let (t, net, dims, date) = torus_net(&[4, 4]);
        let sends = uniform_torus_sends(&t, 16, 40, 3 * 256, 3);
        for queues in [Queues::InputQueued, Queues::VirtualOutput] {
            let mut f = net.fabric(PacketConfig {
                packet_bytes: 256,
                header_bytes: 32,
                vcs: 2,
                buffer_packets: 2,
                router_delay: 10_000,
                queues,
                link_dim: dims.clone(),
                dateline: date.clone(),
                ..config()
            });
            let out = drive(&mut f, &sends);
            assert_eq!(out.len(), sends.len(), "{queues:?}: {:?}", f.stalled());
            let mut expect = vec![0.0; net.bw.len()];
            for s in &sends {
                for &l in &s.route {
                    expect[l as usize] += (3 * (256 + 32)) as f64;
                }
            }
            assert_eq!(f.link_bytes(), &expect[..]);
            let hops: usize = sends.iter().map(|s| 3 * s.route.len()).sum();
            assert_eq!(f.packet_hops(), hops as u64);
            assert_within_depth(&f);
        }
    }

    #[test]
    fn hop_classes_keep_heavy_dragonfly_traffic_moving() {
        // dragonfly(4, 2, 2, 9), minimal routes, shallow buffers, every
        // endpoint sending to random others at once: with one VC class per
        // hop phase nothing deadlocks and every packet arrives.
        let (net, u, kind) = dragonfly_net(4, 2, 2, 9);
        let n = 72u32;
        let mut sends = vec![];
        for k in 0..20u32 {
            for s in 0..n {
                let d = ((s as u64 + 1 + hash3(9, s as u64, k as u64, 0) % (n as u64 - 1))
                    % n as u64) as u32;
                let mut route = vec![];
                u.minimal(s, d, &mut route).unwrap();
                sends.push(Send {
                    t: 0,
                    id: k * n + s,
                    src: s,
                    dst: d,
                    bytes: 3 * 256,
                    route,
                });
            }
        }
        let mut f = net.fabric(dragonfly_cfg(&kind, 2, None));
        let out = drive(&mut f, &sends);
        assert_eq!(out.len(), sends.len(), "{:?}", f.stalled());
        assert!(f.class_overflow().is_none());
        assert_within_depth(&f);
        // A Valiant route needs a third class: with two it is reported, never silent.
        let mut v = sends.clone();
        for s in &mut v {
            s.route.clear();
            u.valiant(s.id as u64, s.src, s.dst, &mut s.route).unwrap();
        }
        let mut f = net.fabric(dragonfly_cfg(&kind, 2, None));
        drive(&mut f, &v);
        assert!(
            f.class_overflow()
                .unwrap()
                .contains("expected --vcs at least 3"),
            "{:?}",
            f.class_overflow()
        );
    }
}
