//! UGAL-L on dragonflies for the packet model: each message gets two routes,
//! minimal and Valiant, and each of its packets picks one at its source
//! router by local queue occupancy (Kim, Dally, Scott & Abts, "Technology-
//! driven, highly-scalable dragonfly topology", ISCA 2008, §4.2: UGAL-L
//! sends a packet minimally when `q_min · H_min ≤ q_nm · H_nm`, `q` the
//! occupancy of the source router's output queue the route takes first and
//! `H` its hop count). This module holds the geometry and the routes;
//! [`packet`](super::packet) measures the queues and decides.
//!
//! # Deadlock freedom: VC classes by hop
//! Dragonfly routes turn from local to global links and back, so channel
//! dependencies between groups form cycles. The packet model gives every
//! link of a route a VC *class*: the number of earlier router-to-router
//! links after which the class moves up, i.e. after every global link and
//! between two consecutive local links ([`hop_classes`]). A class never
//! decreases along a route, and within one class the only dependency is
//! local → global (a global link, or a local link after a local one, starts
//! the next class), so the extended channel dependency graph is acyclic
//! (Günther, "Prevention of deadlocks in packet-switched data transport
//! systems", IEEE Trans. Commun. 29(4), 1981: buffer classes by hop). Minimal
//! routes (local, global, local) need 2 classes, UGAL's Valiant through a
//! group (≤ local, global, local, global, local) 3, the static Valiant
//! through a random *router* (local, global, local, local, global, local) 4.

use crate::error::CoreError;
use crate::routing::dragonfly::Dragonfly;
use crate::routing::graph::Graph;

/// `link_kind` of an endpoint's link (injection or ejection).
pub const ENDPOINT: u8 = 0;
/// A link between two routers of one group.
pub const LOCAL: u8 = 1;
/// A cable between two groups.
pub const GLOBAL: u8 = 2;

/// A dragonfly with its link graph and the seed of its Valiant draws.
#[derive(Clone, Debug)]
pub struct UgalDragonfly {
    df: Dragonfly,
    graph: Graph,
    seed: u64,
}

impl UgalDragonfly {
    /// The dragonfly `(a, p, h, g)` (routing/dragonfly.rs numbering) over
    /// links `src[l] → dst[l]`; Valiant draws from `seed`.
    ///
    /// # Errors
    /// A dragonfly the parameters do not describe, or links that are not its.
    pub fn new(
        a: u64,
        p: u64,
        h: u64,
        g: u64,
        src: &[u32],
        dst: &[u32],
        seed: u64,
    ) -> Result<Self, CoreError> {
        let df = Dragonfly::new(a, p, h, g)?;
        let graph = Graph::new(
            df.n_nodes() as usize,
            df.n_endpoints() as usize,
            src.to_vec(),
            dst.to_vec(),
        )?;
        Ok(UgalDragonfly { df, graph, seed })
    }

    /// Append the minimal route `s → d` to `out`.
    pub fn minimal(&self, s: u32, d: u32, out: &mut Vec<u32>) -> Result<(), CoreError> {
        self.df
            .route_into(&self.graph, None, s as u64, d as u64, out)
    }

    /// Append the Valiant route of message `key` from `s` to `d` (through a
    /// random intermediate group) to `out`.
    pub fn valiant(&self, key: u64, s: u32, d: u32, out: &mut Vec<u32>) -> Result<(), CoreError> {
        self.df
            .valiant_group_into(&self.graph, self.seed, key, s as u64, d as u64, out)
    }

    /// Per link: [`ENDPOINT`], [`LOCAL`] or [`GLOBAL`].
    pub fn link_kinds(&self) -> Vec<u8> {
        link_kinds(&self.df, &self.graph)
    }

    /// Number of links.
    pub fn n_links(&self) -> usize {
        self.graph.n_links()
    }
}

/// Per link of a dragonfly's graph: [`ENDPOINT`], [`LOCAL`] or [`GLOBAL`].
pub fn link_kinds(df: &Dragonfly, graph: &Graph) -> Vec<u8> {
    let n = df.n_endpoints() as u32;
    let group = |v: u32| (v - n) as u64 / df.a;
    graph
        .src
        .iter()
        .zip(&graph.dst)
        .map(|(&u, &v)| {
            if u < n || v < n {
                ENDPOINT
            } else if group(u) == group(v) {
                LOCAL
            } else {
                GLOBAL
            }
        })
        .collect()
}

/// VC class of each link of `route` (see the module doc): the class moves
/// up after a global link and between two local links.
pub fn hop_classes(route: &[u32], kind: &[u8], out: &mut Vec<u8>) {
    let mut class = 0u8;
    let mut prev = ENDPOINT;
    for &l in route {
        let k = kind[l as usize];
        if k != ENDPOINT && (prev == GLOBAL || (prev == LOCAL && k == LOCAL)) {
            class += 1;
        }
        out.push(class);
        if k != ENDPOINT {
            prev = k;
        }
    }
}

/// Router-to-router links of a route (UGAL's `H`).
pub fn router_hops(route: &[u32], kind: &[u8]) -> usize {
    route
        .iter()
        .filter(|&&l| kind[l as usize] != ENDPOINT)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn df(a: u64, p: u64, h: u64, g: u64) -> UgalDragonfly {
        let d = Dragonfly::new(a, p, h, g).unwrap();
        let (src, dst) = d.links();
        UgalDragonfly::new(a, p, h, g, &src, &dst, 7).unwrap()
    }

    #[test]
    fn routes_join_their_endpoints_and_classes_stay_within_the_bound() {
        let u = df(4, 2, 2, 9);
        let kind = u.link_kinds();
        let n = u.df.n_endpoints() as u32;
        let (src, dst) = u.df.links();
        let mut most = [0u8; 2];
        for s in 0..n {
            for d in 0..n {
                if s == d {
                    continue;
                }
                for (which, bound, longest) in [(0usize, 2u8, 3usize), (1, 3, 5)] {
                    let mut r = vec![];
                    if which == 0 {
                        u.minimal(s, d, &mut r).unwrap();
                    } else {
                        u.valiant(u64::from(s ^ d), s, d, &mut r).unwrap();
                    }
                    assert_eq!(src[r[0] as usize], s);
                    assert_eq!(dst[*r.last().unwrap() as usize], d);
                    for w in r.windows(2) {
                        assert_eq!(dst[w[0] as usize], src[w[1] as usize]);
                    }
                    assert!(router_hops(&r, &kind) <= longest, "{s}->{d}: {r:?}");
                    let mut c = vec![];
                    hop_classes(&r, &kind, &mut c);
                    assert!(c.windows(2).all(|w| w[0] <= w[1]));
                    let top = *c.iter().max().unwrap();
                    assert!(top < bound, "{s}->{d} {which}: classes {c:?}");
                    most[which] = most[which].max(top);
                }
            }
        }
        // The bounds are reached: minimal uses both classes, Valiant all three.
        assert_eq!(most, [1, 2]);
    }

    #[test]
    fn kinds_follow_the_groups() {
        let u = df(2, 1, 1, 3);
        let kind = u.link_kinds();
        let count = |k| kind.iter().filter(|&&x| x == k).count();
        // 6 endpoints: 12 endpoint links; 3 groups of 2 routers: 6 local; 3 cables: 6 global
        assert_eq!((count(ENDPOINT), count(LOCAL), count(GLOBAL)), (12, 6, 6));
    }
}
