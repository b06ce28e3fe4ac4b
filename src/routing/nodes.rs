//! Nodes with several ranks: routes through a node's shared memory or over
//! the fabric, composed with the fabric's own routes (issue 19 §1).
//!
//! The expanded network (built by `topocoll.topology.nodes`) has `R = H·ppn`
//! rank slots as its endpoints (slot `s` on host `s / ppn`), then the
//! fabric's `N` nodes (fabric endpoint `h` is host `h`'s hub: its links into
//! the fabric are the host's NIC, shared by its ranks), then one memory node
//! per host. Links sorted by source (as [`super::graph::Graph`] wants):
//!
//! ```text
//! s                                       slot s → hub              (rank's copy path)
//! R + i + (1+ppn)·min(src_i, H)           fabric link i
//! R + ptr[h+1] + (1+ppn)·h                hub h → memory h          (node memory, shared)
//! R + ptr[h+1] + (1+ppn)·h + 1 + j        hub h → slot h·ppn + j
//! R + L + (1+ppn)·H + h                   memory h → hub h
//! ```
//!
//! (`ptr` the fabric's CSR row pointer, `L` its link count.) A route between
//! two slots of one host is `up, hub→memory, memory→hub, down` (a copy
//! through shared memory at the rank's copy bandwidth); between hosts it is
//! the fabric's route `h_s → h_d` renumbered, nothing else: the NIC reads
//! and writes the ranks' buffers itself (RDMA), so a single rank's stream
//! is limited by the host's NIC link, not by a core's copy bandwidth, and
//! the host's ranks share that link. Every id is arithmetic: no table per
//! pair.

use super::{Router, UdCache};
use crate::error::CoreError;

#[derive(Clone)]
pub struct NodeRoutes {
    /// The fabric with its own graph and engine (endpoints = hosts).
    pub fabric: Router,
    pub ppn: u32,
}

impl NodeRoutes {
    pub fn new(fabric: Router, ppn: u32) -> Result<Self, CoreError> {
        if ppn == 0 {
            return Err(CoreError::InvalidArgument(
                "nodes: ppn=0, expected >= 1".into(),
            ));
        }
        let h = fabric.graph.n_endpoints as u64;
        let links = fabric.graph.n_links() as u64 + h * (2 * ppn as u64 + 2);
        if links >= u32::MAX as u64 {
            return Err(CoreError::InvalidArgument(format!(
                "nodes: {links} links with ppn={ppn}, expected fewer than 2^32"
            )));
        }
        Ok(NodeRoutes { fabric, ppn })
    }

    fn slots(&self) -> u32 {
        self.fabric.graph.n_endpoints as u32 * self.ppn
    }

    /// First link of host `h` after its fabric links (hub → memory).
    fn host_base(&self, h: u32) -> u32 {
        self.slots() + self.fabric.graph.indptr[h as usize + 1] + (1 + self.ppn) * h
    }

    /// Links (and weights) of the route between rank slots `s` and `d`.
    pub fn route_into(
        &self,
        s: u32,
        d: u32,
        links: &mut Vec<u32>,
        weights: &mut Vec<f64>,
        cache: &mut UdCache,
    ) -> Result<(), CoreError> {
        if s == d {
            return Ok(());
        }
        let (hs, hd) = (s / self.ppn, d / self.ppn);
        if hs == hd {
            let hosts = self.fabric.graph.n_endpoints as u32;
            let mem_back =
                self.slots() + self.fabric.graph.n_links() as u32 + (1 + self.ppn) * hosts + hs;
            let down = self.host_base(hd) + 1 + d % self.ppn;
            links.extend([s, self.host_base(hs), mem_back, down]);
            weights.extend([1.0; 4]);
            return Ok(());
        }
        let first = links.len();
        self.fabric.route_one(hs, hd, links, weights, cache)?;
        let (r, extra, hosts) = (
            self.slots(),
            1 + self.ppn,
            self.fabric.graph.n_endpoints as u32,
        );
        let src = &self.fabric.graph.src;
        for l in &mut links[first..] {
            *l = r + *l + extra * src[*l as usize].min(hosts);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::fattree::{FatTreeRule, Xgft};
    use crate::routing::graph::Graph;
    use crate::routing::Engine;

    /// Two hosts on one switch (a 2-ary 1-tree: e0, e1, s), 3 slots each.
    /// Expanded links by source: slots 0..6 up (ids 0-5); hub e0: its fabric
    /// link (6), →mem (7), →slots 0,1,2 (8-10); hub e1: fabric (11), →mem
    /// (12), →slots 3,4,5 (13-15); switch s: its two fabric links (16, 17);
    /// mem0 → hub (18), mem1 → hub (19).
    #[test]
    fn routes_through_memory_or_the_fabric() {
        let tree = Xgft::new(&[2], &[1], &[1]).unwrap();
        let (src, dst) = tree.links();
        let g = Graph::new(tree.n_nodes() as usize, 2, src, dst).unwrap();
        let fabric = Router {
            graph: g,
            engine: Engine::FatTree {
                tree,
                rule: FatTreeRule::DModK,
            },
        };
        let n = NodeRoutes::new(fabric, 3).unwrap();
        let (mut links, mut w) = (Vec::new(), Vec::new());
        let mut c = UdCache::default();
        n.route_into(1, 2, &mut links, &mut w, &mut c).unwrap();
        assert_eq!(links, vec![1, 7, 18, 10]);
        links.clear();
        w.clear();
        n.route_into(2, 4, &mut links, &mut w, &mut c).unwrap();
        // e0 → s is fabric link 0 (source e0), s → e1 is fabric link 3 (the
        // switch's second link): 6 and 6 + 3 + 4·1 = 17 after renumbering;
        // the ranks' copy links (2 up, 14 down) are not crossed: the NIC
        // reads and writes the buffers
        assert_eq!(links, vec![6, 17]);
        assert_eq!(w.len(), links.len());
        links.clear();
        n.route_into(5, 5, &mut links, &mut w, &mut c).unwrap();
        assert!(links.is_empty());
    }
}
