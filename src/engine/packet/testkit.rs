//! Test networks, configurations and the event-loop driver shared by the
//! packet network's tests.

use super::*;
pub(super) use crate::engine::fabric::{ceil_ps, Links};
pub(super) use crate::routing::fattree::{FatTreeRule, Xgft};
pub(super) use crate::routing::graph::{hash3, mix64};
pub(super) use crate::routing::torus::{Tie, Torus};

/// A network under construction: links `src -> dst` with bandwidth and
/// latency; nodes `0..n_endpoints` are endpoints.
#[derive(Default)]
pub(super) struct Net {
    pub(super) bw: Vec<f64>,
    pub(super) lat: Vec<Ps>,
    pub(super) dst: Vec<u32>,
    pub(super) n_endpoints: usize,
}

impl Net {
    pub(super) fn new(n_endpoints: usize) -> Self {
        Net {
            n_endpoints,
            ..Default::default()
        }
    }
    pub(super) fn link(&mut self, dst: u32, bw: f64, lat: Ps) -> u32 {
        self.bw.push(bw);
        self.lat.push(lat);
        self.dst.push(dst);
        (self.bw.len() - 1) as u32
    }
    pub(super) fn fabric(&self, cfg: PacketConfig) -> PacketFabric {
        PacketFabric::new(
            Links {
                bandwidth: self.bw.clone(),
                latency: self.lat.clone(),
            },
            self.dst.clone(),
            self.n_endpoints,
            cfg,
        )
        .unwrap()
    }
}

/// One VC of 4 packets, 2048 + 64 B packets, no delays: the tests' base.
pub(crate) fn config() -> PacketConfig {
    PacketConfig {
        packet_bytes: 2048,
        header_bytes: 64,
        vcs: 1,
        buffer_packets: 4,
        router_delay: 0,
        allocator: Allocator::RoundRobin,
        queues: Queues::InputQueued,
        injection_packets: 0,
        link_dim: vec![],
        dateline: vec![],
        eject_handling: 0,
        adaptive: None,
        hop_kind: vec![],
        hop_classes: 0,
        ugal: None,
        injection_fifos: 0,
        nic: Nic::Simple,
        flit: None,
    }
}

#[derive(Clone, Debug)]
pub(super) struct Send {
    pub(super) t: Ps,
    pub(super) id: u32,
    pub(super) src: u32,
    pub(super) dst: u32,
    pub(super) bytes: u64,
    pub(super) route: Vec<u32>,
}

pub(super) fn send(t: Ps, id: u32, dst: u32, bytes: u64, route: &[u32]) -> Send {
    Send {
        t,
        id,
        src: 0,
        dst,
        bytes,
        route: route.to_vec(),
    }
}

/// The event loop's contract in miniature: injections (sorted by time)
/// interleaved with `next_arrival`/`advance` until nothing is left.
pub(super) fn drive(f: &mut PacketFabric, sends: &[Send]) -> Vec<(Ps, u32)> {
    let mut out = Vec::new();
    let mut i = 0;
    for _step in 0..100_000_000u64 {
        let tn = f.next_arrival();
        match (sends.get(i), tn) {
            (Some(s), Some(t)) if s.t <= t => {}
            (Some(_), None) => {}
            (_, Some(t)) => {
                f.advance(t, &mut out);
                continue;
            }
            (None, None) => return out,
        }
        let s = &sends[i];
        let w = vec![1.0; s.route.len()];
        f.inject(
            s.t,
            &Message {
                id: s.id,
                src: s.src,
                dst: s.dst,
                bytes: s.bytes,
                links: &s.route,
                weights: &w,
            },
        );
        i += 1;
    }
    panic!("drive: no end after 1e8 steps");
}

/// Invariant 2: no buffer ever held more packets than its depth; and once
/// everything arrived, every credit is back, every buffer empty, every
/// link and input port idle (no credit lost or made up on the way).
pub(super) fn assert_within_depth(f: &PacketFabric) {
    let d = f.config().buffer_packets;
    for (b, &m) in f.max_occupancy().iter().enumerate() {
        assert!(m <= d, "buffer {b} held {m} packets, depth {d}");
    }
    let inj = match &f.config().nic {
        Nic::Bgl(b) => b.fifo_packets,
        _ => f.config().injection_packets.max(1),
    };
    for (l, &m) in f.max_injection_occupancy().iter().enumerate() {
        assert!(
            m <= inj,
            "injection FIFO of link {l} held {m} packets, depth {inj}"
        );
    }
    if f.packets_in_flight() == 0 && f.events.is_empty() {
        let nb = f.n_links * f.vcs;
        for (q, b) in f.buffers.iter().enumerate() {
            assert_eq!(b.occ, 0, "buffer {q} not empty");
            if q < nb {
                assert_eq!(b.credits, d, "buffer {q}: credits not all back");
            }
        }
        assert!(f.links.iter().all(|l| !l.busy && l.req.is_empty()));
        assert!(f.port_busy.is_empty());
    }
}

/// Endpoints 0, 1; leaf switches 2, 3; spine 4. Links 0: 0→2, 1: 2→4,
/// 2: 4→3, 3: 3→1, with `bws[i]` and latencies 100, 200, 300, 400 ns.
pub(super) fn two_level(bws: [f64; 4]) -> Net {
    let mut n = Net::new(2);
    for (i, dst) in [2u32, 4, 3, 1].into_iter().enumerate() {
        n.link(dst, bws[i], 100_000 * (i as Ps + 1));
    }
    n
}

/// Endpoints 0..4, ring switches 4..8: link i = endpoint i → switch 4+i
/// (0..4), link 4+i = switch 4+i → switch 4+(i+1)%4 (4..8), link 8+i =
/// switch 4+i → endpoint i. Endpoint i sends to i+2: up, two ring hops,
/// down.
pub(super) fn ring_traffic(cfg: PacketConfig) -> (PacketFabric, Vec<(Ps, u32)>, usize) {
    let mut net = Net::new(4);
    for i in 0..4 {
        net.link(4 + i, 1e9, 10_000);
    }
    for i in 0..4 {
        net.link(4 + (i + 1) % 4, 1e9, 10_000);
    }
    for i in 0..4 {
        net.link(i, 1e9, 10_000);
    }
    let mut sends = vec![];
    for k in 0..3u32 {
        for i in 0..4u32 {
            let d = (i + 2) % 4;
            sends.push(Send {
                t: k as Ps * 100,
                id: k * 4 + i,
                src: i,
                dst: d,
                bytes: 3 * 1000,
                route: vec![i, 4 + i, 4 + (i + 1) % 4, 8 + d],
            });
        }
    }
    let mut f = net.fabric(PacketConfig {
        packet_bytes: 1000,
        header_bytes: 0,
        buffer_packets: 1,
        ..cfg
    });
    let out = drive(&mut f, &sends);
    (f, out, sends.len())
}

/// A k-ary n-cube (torus.rs numbering) with per-link dimension and a
/// dateline on each wrap-around link (either direction).
pub(super) fn torus_net(k: &[u64]) -> (Torus, Net, Vec<u8>, Vec<bool>) {
    let t = Torus::new(k, &vec![true; k.len()]).unwrap();
    let (src, dst) = t.links();
    let n = t.n_nodes() as usize;
    let mut net = Net::new(n);
    let mut dims = vec![];
    let mut date = vec![];
    let coord = |v: u64, d: usize| (v / k[..d].iter().product::<u64>()) % k[d];
    for (&s, &d) in src.iter().zip(&dst) {
        net.link(d, 1e9, 20_000);
        let dim = (0..k.len())
            .find(|&i| coord(s as u64, i) != coord(d as u64, i))
            .unwrap();
        dims.push(dim as u8);
        date.push(coord(s as u64, dim).abs_diff(coord(d as u64, dim)) > 1);
    }
    (t, net, dims, date)
}

pub(super) fn uniform_torus_sends(
    t: &Torus,
    n: u32,
    per_node: u32,
    bytes: u64,
    seed: u64,
) -> Vec<Send> {
    let mut sends = vec![];
    for k in 0..per_node {
        for s in 0..n {
            let mut d = (hash3(seed, s as u64, k as u64, 1) % n as u64) as u32;
            if d == s {
                d = (d + 1) % n;
            }
            let mut route = vec![];
            let order: Vec<usize> = (0..t.k.len()).collect();
            t.dor_into(&order, Tie::Positive, s as u64, d as u64, &mut route);
            sends.push(Send {
                t: (k as Ps) * 50_000,
                id: k * n + s,
                src: s,
                dst: d,
                bytes,
                route,
            });
        }
    }
    sends
}

/// The adaptive geometry of `torus_net`'s torus.
pub(super) fn adaptive_cfg(t: &Torus, vcs: u8, depth: u32) -> PacketConfig {
    let (src, dst) = t.links();
    let k: Vec<u32> = t.k.iter().map(|&x| x as u32).collect();
    PacketConfig {
        packet_bytes: 256,
        header_bytes: 32,
        vcs,
        buffer_packets: depth,
        router_delay: 10_000,
        adaptive: Some(AdaptiveTorus::new(&k, &t.wrap, &src, &dst).unwrap()),
        ..config()
    }
}

/// Minimal hops between two torus nodes, from their coordinates.
pub(super) fn torus_distance(k: &[u64], a: u64, b: u64) -> u64 {
    let mut s = 1;
    let mut h = 0;
    for &kd in k {
        let diff = (a / s % kd).abs_diff(b / s % kd);
        h += diff.min(kd - diff);
        s *= kd;
    }
    h
}

/// A dragonfly(a, p, h, g) as a test network (1 GB/s, 20 ns links), its
/// UGAL geometry and hop kinds, and minimal routes.
pub(super) fn dragonfly_net(a: u64, p: u64, h: u64, g: u64) -> (Net, UgalDragonfly, Vec<u8>) {
    let df = crate::routing::dragonfly::Dragonfly::new(a, p, h, g).unwrap();
    let (src, dst) = df.links();
    let mut net = Net::new(df.n_endpoints() as usize);
    for &d in &dst {
        net.link(d, 1e9, 20_000);
    }
    let u = UgalDragonfly::new(a, p, h, g, &src, &dst, 5).unwrap();
    let kind = u.link_kinds();
    (net, u, kind)
}

pub(super) fn dragonfly_cfg(kind: &[u8], classes: u8, ugal: Option<UgalDragonfly>) -> PacketConfig {
    PacketConfig {
        packet_bytes: 256,
        header_bytes: 32,
        vcs: classes,
        buffer_packets: 2,
        router_delay: 10_000,
        hop_kind: kind.to_vec(),
        hop_classes: classes,
        ugal,
        ..config()
    }
}

/// Every endpoint of group `i` sends to the endpoint in the same place
/// of group `i + 1`: the minimal routes of a whole group share one
/// global cable (Kim et al. 2008's adversarial pattern).
pub(super) fn group_shift_sends(u: &UgalDragonfly, a: u64, p: u64, g: u64, per: u32) -> Vec<Send> {
    let n = (a * p * g) as u32;
    let mut sends = vec![];
    for k in 0..per {
        for s in 0..n {
            let d = (s + (a * p) as u32) % n;
            let mut route = vec![];
            u.minimal(s, d, &mut route).unwrap();
            sends.push(Send {
                t: 0,
                id: k * n + s,
                src: s,
                dst: d,
                bytes: 4 * 256,
                route,
            });
        }
    }
    sends
}

pub(super) fn fat_tree_sends(x: &Xgft, per_node: u32, seed: u64) -> Vec<Send> {
    let n = x.n_endpoints() as u32;
    let mut sends = vec![];
    for k in 0..per_node {
        for s in 0..n {
            let d = (hash3(seed, s as u64, k as u64, 2) % n as u64) as u32;
            let mut route = vec![];
            x.route_into(FatTreeRule::DModK, s as u64, d as u64, &mut route);
            let bytes = 1 + hash3(seed, s as u64, k as u64, 3) % 5000;
            sends.push(Send {
                t: (k as Ps) * 1_000_000 + hash3(seed, s as u64, k as u64, 4) % 1_000_000,
                id: k * n + s,
                src: s,
                dst: d,
                bytes,
                route,
            });
        }
    }
    sends.sort_by_key(|s| (s.t, s.id));
    sends
}

pub(super) fn fat_tree_net(x: &Xgft) -> Net {
    let (_, dst) = x.links();
    let mut net = Net::new(x.n_endpoints() as usize);
    for (i, &d) in dst.iter().enumerate() {
        net.link(
            d,
            if i % 3 == 0 { 2e9 } else { 1e9 },
            50_000 + (i as Ps % 7) * 1000,
        );
    }
    net
}
