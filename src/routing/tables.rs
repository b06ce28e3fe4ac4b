//! Destination-based forwarding tables (InfiniBand LFTs) on a generic graph:
//! following a table, building min-hop tables with port balancing (OpenSM's
//! `minhop` engine), and up*/down* source routes (Schroeder et al., Autonet).

use super::graph::{hash3, Graph};
use crate::error::CoreError;

/// One out-link per (switch, destination endpoint); `u32::MAX` = no entry.
/// Row `v - n_endpoints` belongs to switch `v`.
#[derive(Clone, Debug)]
pub struct Table {
    pub n_endpoints: usize,
    pub entries: Vec<u32>,
}

impl Table {
    #[inline]
    pub fn get(&self, switch: u32, d: u32) -> u32 {
        self.entries[(switch as usize - self.n_endpoints) * self.n_endpoints + d as usize]
    }

    /// Follow the tables from endpoint `s` to endpoint `d`.
    pub fn route_into(
        &self,
        g: &Graph,
        s: u32,
        d: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), CoreError> {
        if s == d {
            return Ok(());
        }
        let r = g.out_range(s);
        if r.is_empty() {
            return Err(CoreError::NoRoute(format!("endpoint {} has no link", s)));
        }
        // an adapter with several ports injects on the one facing d's table, else its first
        let mut l = r.start as u32;
        out.push(l);
        let mut v = g.dst[l as usize];
        let mut hops = 1;
        while v != d {
            if g.is_endpoint(v) {
                return Err(CoreError::NoRoute(format!(
                    "route {} -> {} enters endpoint {}",
                    s, d, v
                )));
            }
            l = self.get(v, d);
            if l == u32::MAX {
                return Err(CoreError::NoRoute(format!(
                    "no route from endpoint {} to endpoint {}: switch {} has no entry",
                    s, d, v
                )));
            }
            out.push(l);
            v = g.dst[l as usize];
            hops += 1;
            if hops > g.n_nodes {
                return Err(CoreError::NoRoute(format!("route {} -> {} loops", s, d)));
            }
        }
        Ok(())
    }
}

/// Group endpoints by their attachment: endpoints with exactly one neighbour
/// share that neighbour's BFS; others get their own.
fn attachment_groups(g: &Graph) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut group_of = vec![u32::MAX; g.n_endpoints];
    let mut targets: Vec<Vec<u32>> = vec![];
    let mut switch_group = std::collections::HashMap::new();
    for e in 0..g.n_endpoints as u32 {
        let r = g.out_range(e);
        let nbrs: Vec<u32> = r.clone().map(|l| g.dst[l]).collect();
        let single =
            !nbrs.is_empty() && nbrs.iter().all(|&x| x == nbrs[0]) && !g.is_endpoint(nbrs[0]);
        if single {
            let id = *switch_group.entry(nbrs[0]).or_insert_with(|| {
                targets.push(vec![nbrs[0]]);
                targets.len() as u32 - 1
            });
            group_of[e as usize] = id;
        } else {
            targets.push(vec![e]);
            group_of[e as usize] = targets.len() as u32 - 1;
        }
    }
    (group_of, targets)
}

/// Min-hop tables with port balancing: at each switch, destinations are
/// taken in `order` (index order by default; OpenSM's fat-tree engine uses
/// its routing order, leaf switch by leaf switch) and each gets, among its minimal out-links, the one
/// with the fewest routes so far (lowest link id on ties), as OpenSM's minhop.
pub fn minhop_tables(g: &Graph, order: Option<&[u32]>) -> Result<Table, CoreError> {
    let n = g.n_endpoints;
    let default: Vec<u32> = (0..n as u32).collect();
    let order = order.unwrap_or(&default);
    if order.len() != n || {
        let mut seen = vec![false; n];
        order
            .iter()
            .any(|&d| (d as usize) >= n || std::mem::replace(&mut seen[d as usize], true))
    } {
        return Err(CoreError::InvalidArgument(format!(
            "minhop: order is not a permutation of the {} endpoints",
            n
        )));
    }
    let n_sw = g.n_nodes - n;
    let (group_of, targets) = attachment_groups(g);
    let ng = targets.len();
    // dist[group][node], distance to the group's target (switch or endpoint)
    let mut dist = vec![0u16; ng * g.n_nodes];
    for (gi, t) in targets.iter().enumerate() {
        g.bfs_to(t, &mut dist[gi * g.n_nodes..(gi + 1) * g.n_nodes]);
    }
    let mut entries = vec![u32::MAX; n_sw * n];
    let mut usage = vec![0u32; g.n_links()];
    let mut cand: Vec<u32> = Vec::with_capacity(64);
    for sw in 0..n_sw {
        let v = (n + sw) as u32;
        let row = &mut entries[sw * n..(sw + 1) * n];
        for &d in order {
            let gi = group_of[d as usize] as usize;
            let dd = &dist[gi * g.n_nodes..(gi + 1) * g.n_nodes];
            let single = targets[gi][0] != d;
            cand.clear();
            // distance of x to d
            let to_d = |x: u32| -> u32 {
                if x == d {
                    0
                } else if g.is_endpoint(x) || dd[x as usize] == u16::MAX {
                    u32::MAX
                } else if single {
                    dd[x as usize] as u32 + 1
                } else {
                    dd[x as usize] as u32
                }
            };
            let dv = to_d(v);
            if dv == u32::MAX {
                continue;
            }
            for l in g.out_range(v) {
                let y = g.dst[l];
                let dy = to_d(y);
                if dy != u32::MAX && dy + 1 == dv {
                    cand.push(l as u32);
                }
            }
            if let Some(&best) = cand.iter().min_by_key(|&&l| (usage[l as usize], l)) {
                usage[best as usize] += 1;
                row[d as usize] = best;
            }
        }
    }
    Ok(Table {
        n_endpoints: n,
        entries,
    })
}

/// Up*/down* routing: node ranks are BFS distances from `roots`; a move
/// `u -> v` is *up* when `(rank[v], v) < (rank[u], u)`. A legal route is
/// zero or more up moves then zero or more down moves; the shortest legal
/// route is taken, ties broken by a hash of (s, d).
#[derive(Clone, Debug)]
pub struct UpDown {
    pub rank: Vec<u16>,
}

impl UpDown {
    pub fn new(g: &Graph, roots: &[u32]) -> Result<Self, CoreError> {
        let mut rank = vec![0u16; g.n_nodes];
        // BFS from roots through switches
        rank.iter_mut().for_each(|r| *r = u16::MAX);
        let mut q: Vec<u32> = roots.to_vec();
        for &r in roots {
            rank[r as usize] = 0;
        }
        let mut head = 0;
        while head < q.len() {
            let x = q[head];
            head += 1;
            for l in g.out_range(x) {
                let y = g.dst[l];
                if rank[y as usize] == u16::MAX {
                    rank[y as usize] = rank[x as usize] + 1;
                    if !g.is_endpoint(y) {
                        q.push(y);
                    }
                }
            }
        }
        if let Some(v) = rank.iter().position(|&r| r == u16::MAX) {
            return Err(CoreError::Topology(format!(
                "updown: node {} is not connected to the roots",
                v
            )));
        }
        Ok(UpDown { rank })
    }

    #[inline]
    fn is_up(&self, u: u32, v: u32) -> bool {
        (self.rank[v as usize], v) < (self.rank[u as usize], u)
    }

    /// Distances to d: (down-only, up-then-down) for every node.
    pub fn distances(&self, g: &Graph, d: u32) -> (Vec<u32>, Vec<u32>) {
        let inf = u32::MAX;
        let mut dn = vec![inf; g.n_nodes];
        dn[d as usize] = 0;
        let mut q = vec![d];
        let mut head = 0;
        // predecessors x of y with x -> y a down move  (y -> x is up)
        while head < q.len() {
            let y = q[head];
            head += 1;
            for l in g.out_range(y) {
                let x = g.dst[l];
                if g.is_endpoint(x) {
                    continue;
                }
                if self.is_up(y, x) && dn[x as usize] == inf {
                    dn[x as usize] = dn[y as usize] + 1;
                    q.push(x);
                }
            }
        }
        // upd[v] = min(dn[v], 1 + min_{v -> u up} upd[u]); bucket-queue Dijkstra
        let mut upd = dn.clone();
        let maxd = g.n_nodes as u32 + 2;
        let mut buckets: Vec<Vec<u32>> = vec![vec![]; (maxd + 1) as usize];
        for v in 0..g.n_nodes as u32 {
            if upd[v as usize] != inf {
                buckets[upd[v as usize] as usize].push(v);
            }
        }
        for b in 0..maxd as usize {
            let mut i = 0;
            while i < buckets[b].len() {
                let u = buckets[b][i];
                i += 1;
                if upd[u as usize] != b as u32 || (g.is_endpoint(u) && u != d) {
                    continue;
                }
                // x -> u is an up move: x lower (rank bigger) than u
                for l in g.out_range(u) {
                    let x = g.dst[l];
                    if self.is_up(x, u) && upd[x as usize] > b as u32 + 1 {
                        upd[x as usize] = b as u32 + 1;
                        buckets[b + 1].push(x);
                    }
                }
            }
        }
        (dn, upd)
    }

    pub fn route_with(
        &self,
        g: &Graph,
        dn: &[u32],
        upd: &[u32],
        s: u32,
        d: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), CoreError> {
        if s == d {
            return Ok(());
        }
        if upd[s as usize] == u32::MAX {
            return Err(CoreError::NoRoute(format!(
                "updown: no legal route from endpoint {} to endpoint {}",
                s, d
            )));
        }
        let mut v = s;
        let mut going_down = false;
        let mut cand: Vec<(u32, bool)> = vec![];
        let mut step = 0u64;
        while v != d {
            let cur = if going_down {
                dn[v as usize]
            } else {
                upd[v as usize]
            };
            cand.clear();
            for l in g.out_range(v) {
                let y = g.dst[l];
                if g.is_endpoint(y) && y != d {
                    continue;
                }
                if self.is_up(v, y) {
                    if !going_down && upd[y as usize] != u32::MAX && upd[y as usize] + 1 == cur {
                        cand.push((l as u32, false));
                    }
                } else if dn[y as usize] != u32::MAX && dn[y as usize] + 1 == cur {
                    cand.push((l as u32, true));
                }
            }
            if cand.is_empty() {
                return Err(CoreError::NoRoute(format!(
                    "updown: stuck at node {} routing {} -> {}",
                    v, s, d
                )));
            }
            let (l, down) =
                cand[(hash3(0xD0D0, s as u64, d as u64, step) % cand.len() as u64) as usize];
            out.push(l);
            going_down |= down;
            v = g.dst[l as usize];
            step += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::fattree::Xgft;

    fn tree() -> Graph {
        let x = Xgft::new(&[4, 4], &[1, 4], &[1, 1]).unwrap();
        let (s, d) = x.links();
        Graph::new(x.n_nodes() as usize, 16, s, d).unwrap()
    }

    #[test]
    fn minhop_routes_are_minimal() {
        let g = tree();
        let t = minhop_tables(&g, None).unwrap();
        for s in 0..16u32 {
            for d in 0..16u32 {
                let mut p = vec![];
                t.route_into(&g, s, d, &mut p).unwrap();
                let expect = if s == d {
                    0
                } else if s / 4 == d / 4 {
                    2
                } else {
                    4
                };
                assert_eq!(p.len(), expect, "{} -> {}", s, d);
            }
        }
    }

    #[test]
    fn updown_on_a_ring_of_switches_avoids_the_forbidden_turn() {
        // 4 switches in a ring (4..8), one endpoint each (0..4)
        let mut pairs = vec![];
        for i in 0..4u32 {
            pairs.push((i, 4 + i));
            pairs.push((4 + i, i));
            let j = 4 + (i + 1) % 4;
            pairs.push((4 + i, j));
            pairs.push((j, 4 + i));
        }
        pairs.sort();
        let (s, d): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
        let g = Graph::new(8, 4, s, d).unwrap();
        let ud = UpDown::new(&g, &[4]).unwrap();
        for dd in 0..4u32 {
            let (dn, upd) = ud.distances(&g, dd);
            for ss in 0..4u32 {
                let mut p = vec![];
                ud.route_with(&g, &dn, &upd, ss, dd, &mut p).unwrap();
                let mut seen_down = false;
                for &l in &p {
                    let up = ud.is_up(g.src[l as usize], g.dst[l as usize]);
                    assert!(!(up && seen_down), "down then up in {} -> {}", ss, dd);
                    seen_down |= !up;
                }
            }
        }
    }
}
