//! Endpoint diameter of a network by breadth-first search over its switches
//! (plain Rust, no pyo3).
//!
//! The distance from endpoint `e` to endpoint `f != e` is the number of links
//! of a shortest directed path that passes through switches only (endpoints
//! never forward): 1 if a link `e -> f` exists, else
//! `2 + min { d(s, t) : link e -> s, link t -> f }` with `d` the hop distance
//! in the switch-only graph. Two endpoints on one switch are 2 apart.
//!
//! An endpoint may be attached to several switches (a multi-homed adapter, or
//! one adapter with ports on two switches): the minimum runs over all of
//! them. Endpoints are grouped by their set of first-hop switches (and,
//! separately, by their set of last-hop switches); one multi-source BFS per
//! distinct first-hop set, over the switch graph only, gives the distance
//! between every pair of groups. A fat tree has one group per leaf switch, so
//! the work is (leaf switches) x (switch links), not (endpoints) x (links).
//! The BFS runs on all cores (`std::thread::scope`).

use std::collections::{HashMap, HashSet};

use crate::error::CoreError;

/// Result of [`endpoint_diameter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diameter {
    /// Largest endpoint-to-endpoint distance in hops (0 with < 2 endpoints).
    Hops(u32),
    /// `to` cannot be reached from `from` (endpoint ids).
    Unreachable { from: u32, to: u32 },
}

/// Endpoints grouped by a set of switches.
struct Groups {
    /// switch ids (0-based among switches) of each group, sorted
    sets: Vec<Vec<u32>>,
    /// members (endpoint ids) of each group
    members: Vec<Vec<u32>>,
    /// group of each endpoint
    of: Vec<u32>,
}

fn group(per_endpoint: Vec<Vec<u32>>) -> Groups {
    let mut index: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut sets = vec![];
    let mut members: Vec<Vec<u32>> = vec![];
    let mut of = Vec::with_capacity(per_endpoint.len());
    for (e, mut set) in per_endpoint.into_iter().enumerate() {
        set.sort_unstable();
        set.dedup();
        let next = sets.len() as u32;
        let gid = *index.entry(set.clone()).or_insert(next);
        if gid == next {
            sets.push(set);
            members.push(vec![]);
        }
        members[gid as usize].push(e as u32);
        of.push(gid);
    }
    Groups { sets, members, of }
}

/// Distance in hops from every first-hop group to every last-hop group
/// through switches only (`u32::MAX`: unreachable), row-major
/// `[source group][destination group]`.
fn group_distances(
    n_switches: usize,
    adj_ptr: &[u32],
    adj: &[u32],
    from: &Groups,
    to: &Groups,
) -> Vec<u32> {
    let n_to = to.sets.len();
    let mut out = vec![u32::MAX; from.sets.len() * n_to];
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 64);
    let rows_per = from.sets.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (chunk_no, chunk) in out.chunks_mut(rows_per * n_to.max(1)).enumerate() {
            scope.spawn(move || {
                let mut dist = vec![u32::MAX; n_switches];
                let mut frontier: Vec<u32> = vec![];
                let mut next: Vec<u32> = vec![];
                for (i, row) in chunk.chunks_mut(n_to.max(1)).enumerate() {
                    let a = chunk_no * rows_per + i;
                    dist.fill(u32::MAX);
                    frontier.clear();
                    for &s in &from.sets[a] {
                        dist[s as usize] = 0;
                        frontier.push(s);
                    }
                    let mut level = 0u32;
                    while !frontier.is_empty() {
                        level += 1;
                        next.clear();
                        for &v in &frontier {
                            for &u in
                                &adj[adj_ptr[v as usize] as usize..adj_ptr[v as usize + 1] as usize]
                            {
                                if dist[u as usize] == u32::MAX {
                                    dist[u as usize] = level;
                                    next.push(u);
                                }
                            }
                        }
                        std::mem::swap(&mut frontier, &mut next);
                    }
                    for (b, cell) in row.iter_mut().enumerate() {
                        *cell = to.sets[b]
                            .iter()
                            .map(|&t| dist[t as usize])
                            .min()
                            .unwrap_or(u32::MAX);
                    }
                }
            });
        }
    });
    out
}

/// Largest endpoint-to-endpoint hop distance of a network given as a link
/// table (`src[i] -> dst[i]`); nodes `0..n_endpoints` are endpoints, the rest
/// switches. See the module documentation for the distance.
pub fn endpoint_diameter(
    n_nodes: usize,
    n_endpoints: usize,
    src: &[u32],
    dst: &[u32],
) -> Result<Diameter, CoreError> {
    if src.len() != dst.len() {
        return Err(CoreError::InvalidArgument(format!(
            "diameter: src has {} links, dst has {}",
            src.len(),
            dst.len()
        )));
    }
    if n_endpoints > n_nodes || n_nodes > u32::MAX as usize {
        return Err(CoreError::InvalidArgument(format!(
            "diameter: n_endpoints={} and n_nodes={}, expected n_endpoints <= n_nodes < 2**32",
            n_endpoints, n_nodes
        )));
    }
    if let Some(i) =
        (0..src.len()).find(|&i| src[i] as usize >= n_nodes || dst[i] as usize >= n_nodes)
    {
        return Err(CoreError::InvalidArgument(format!(
            "diameter: link {} ({} -> {}) names a node >= n_nodes={}",
            i, src[i], dst[i], n_nodes
        )));
    }
    if n_endpoints < 2 {
        return Ok(Diameter::Hops(0));
    }
    let n = n_endpoints as u32;
    let n_switches = n_nodes - n_endpoints;
    let mut first_hop = vec![vec![]; n_endpoints];
    let mut last_hop = vec![vec![]; n_endpoints];
    let mut direct: HashSet<(u32, u32)> = HashSet::new();
    let mut degree = vec![0u32; n_switches + 1];
    for (&s, &d) in src.iter().zip(dst) {
        match (s < n, d < n) {
            (true, true) => {
                if s != d {
                    direct.insert((s, d));
                }
            }
            (true, false) => first_hop[s as usize].push(d - n),
            (false, true) => last_hop[d as usize].push(s - n),
            (false, false) => degree[(s - n) as usize + 1] += 1,
        }
    }
    for v in 0..n_switches {
        degree[v + 1] += degree[v];
    }
    let adj_ptr = degree;
    let mut fill = adj_ptr.clone();
    let mut adj = vec![0u32; adj_ptr[n_switches] as usize];
    for (&s, &d) in src.iter().zip(dst) {
        if s >= n && d >= n {
            let v = (s - n) as usize;
            adj[fill[v] as usize] = d - n;
            fill[v] += 1;
        }
    }
    let from = group(first_hop);
    let to = group(last_hop);
    let dist = group_distances(n_switches, &adj_ptr, &adj, &from, &to);
    let n_to = to.sets.len();
    // ordered pairs (e, f), e != f, per (source group, destination group), and
    // how many of them have a direct link
    let mut same = HashMap::<(u32, u32), u64>::new();
    for e in 0..n_endpoints {
        *same.entry((from.of[e], to.of[e])).or_default() += 1;
    }
    let mut linked = HashMap::<(u32, u32), u64>::new();
    for &(e, f) in &direct {
        *linked
            .entry((from.of[e as usize], to.of[f as usize]))
            .or_default() += 1;
    }
    let mut best = 0u32;
    for a in 0..from.sets.len() {
        for b in 0..n_to {
            let key = (a as u32, b as u32);
            let pairs = from.members[a].len() as u64 * to.members[b].len() as u64
                - same.get(&key).copied().unwrap_or(0);
            let n_linked = linked.get(&key).copied().unwrap_or(0);
            if n_linked > 0 {
                best = best.max(1);
            }
            if pairs == n_linked {
                continue; // no pair, or every pair has its own link
            }
            let d = dist[a * n_to + b];
            if d == u32::MAX {
                for &e in &from.members[a] {
                    for &f in &to.members[b] {
                        if e != f && !direct.contains(&(e, f)) {
                            return Ok(Diameter::Unreachable { from: e, to: f });
                        }
                    }
                }
            }
            best = best.max(d.saturating_add(2));
        }
    }
    Ok(Diameter::Hops(best))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both directions of every cable, sorted by source.
    fn cables(pairs: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
        let mut links: Vec<(u32, u32)> =
            pairs.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
        links.sort_unstable();
        links.into_iter().unzip()
    }

    /// Reference: BFS from every endpoint over the whole graph, never
    /// forwarding through an endpoint; the diameter and every pair without
    /// a path.
    fn oracle(n_nodes: usize, n: usize, src: &[u32], dst: &[u32]) -> (u32, Vec<(u32, u32)>) {
        let mut best = 0;
        let mut unreachable = vec![];
        for s in 0..n {
            let mut dist = vec![u32::MAX; n_nodes];
            dist[s] = 0;
            let mut frontier = vec![s as u32];
            while !frontier.is_empty() {
                let mut next = vec![];
                for &v in &frontier {
                    if (v as usize) < n && v as usize != s {
                        continue;
                    }
                    for i in 0..src.len() {
                        if src[i] == v && dist[dst[i] as usize] == u32::MAX {
                            dist[dst[i] as usize] = dist[v as usize] + 1;
                            next.push(dst[i]);
                        }
                    }
                }
                frontier = next;
            }
            for (f, &d) in dist.iter().enumerate().take(n) {
                if d == u32::MAX {
                    unreachable.push((s as u32, f as u32));
                } else {
                    best = best.max(d);
                }
            }
        }
        (best, unreachable)
    }

    fn check(n_nodes: usize, n: usize, pairs: &[(u32, u32)]) -> Diameter {
        let (s, d) = cables(pairs);
        let got = endpoint_diameter(n_nodes, n, &s, &d).unwrap();
        let (hops, unreachable) = oracle(n_nodes, n, &s, &d);
        match got {
            Diameter::Hops(h) => assert!(unreachable.is_empty() && h == hops, "{:?}", pairs),
            Diameter::Unreachable { from, to } => {
                assert!(unreachable.contains(&(from, to)), "{:?}", pairs)
            }
        }
        got
    }

    #[test]
    fn one_switch_is_two_hops() {
        assert_eq!(check(4, 3, &[(0, 3), (1, 3), (2, 3)]), Diameter::Hops(2));
        assert_eq!(check(2, 1, &[(0, 1)]), Diameter::Hops(0));
    }

    #[test]
    fn line_of_switches() {
        // endpoint 0 on switch 2, endpoint 1 on switch 4, switches 2 - 3 - 4
        assert_eq!(
            check(5, 2, &[(0, 2), (2, 3), (3, 4), (1, 4)]),
            Diameter::Hops(4)
        );
    }

    #[test]
    fn multi_homed_endpoint_takes_its_nearest_switch() {
        // switches 3-4-5-6 in a line; endpoint 0 on 3 and 6, 1 on 4, 2 on 6
        let pairs = [(0, 3), (0, 6), (1, 4), (2, 6), (3, 4), (4, 5), (5, 6)];
        assert_eq!(check(7, 3, &pairs), Diameter::Hops(4));
    }

    #[test]
    fn direct_adapter_cable_is_one_hop_and_no_transit_through_endpoints() {
        assert_eq!(check(2, 2, &[(0, 1)]), Diameter::Hops(1));
        // 0 - 1 - 2 by adapters only: 0 cannot reach 2 through endpoint 1
        assert_eq!(
            check(3, 3, &[(0, 1), (1, 2)]),
            Diameter::Unreachable { from: 0, to: 2 }
        );
        // two islands joined only by an adapter: unreachable
        let pairs = [(0, 4), (1, 4), (1, 5), (2, 5), (3, 5)];
        assert!(matches!(check(6, 4, &pairs), Diameter::Unreachable { .. }));
    }

    #[test]
    fn small_random_graphs_match_the_oracle() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut rnd = |m: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as u32
        };
        for _ in 0..300 {
            let n = 1 + rnd(6);
            let sw = rnd(6);
            let nodes = n + sw;
            let mut pairs = vec![];
            for _ in 0..rnd(3 * nodes) + 1 {
                let (a, b) = (rnd(nodes), rnd(nodes));
                if a != b {
                    pairs.push((a, b));
                }
            }
            check(nodes as usize, n as usize, &pairs);
        }
    }

    #[test]
    fn rejects_bad_tables() {
        assert!(endpoint_diameter(3, 4, &[], &[]).is_err());
        assert!(endpoint_diameter(3, 1, &[0], &[]).is_err());
        assert!(endpoint_diameter(3, 1, &[0], &[3]).is_err());
    }
}
