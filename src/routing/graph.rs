//! A network as flat arrays: directed links sorted by source node, with
//! compressed (CSR) out-adjacency. Nodes `0..n_endpoints` are endpoints
//! (adapters, torus nodes), the rest are switches. A full-duplex cable is two
//! directed links, one per direction, which never conflict.

use crate::error::CoreError;

/// Directed multigraph in CSR form.
#[derive(Clone, Debug)]
pub struct Graph {
    pub n_nodes: usize,
    pub n_endpoints: usize,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    /// `indptr[v]..indptr[v+1]` are the ids of the links leaving `v`.
    pub indptr: Vec<u32>,
    /// Per node, `(neighbour, link)` sorted by neighbour then link id.
    by_nbr: Vec<(u32, u32)>,
}

impl Graph {
    /// Build from a link table already sorted by source node.
    pub fn new(
        n_nodes: usize,
        n_endpoints: usize,
        src: Vec<u32>,
        dst: Vec<u32>,
    ) -> Result<Self, CoreError> {
        if src.len() != dst.len() {
            return Err(CoreError::Topology(format!(
                "graph: src has {} links, dst has {}",
                src.len(),
                dst.len()
            )));
        }
        if n_endpoints > n_nodes {
            return Err(CoreError::Topology(format!(
                "graph: n_endpoints={} exceeds n_nodes={}",
                n_endpoints, n_nodes
            )));
        }
        if src.len() >= u32::MAX as usize {
            return Err(CoreError::Topology(
                "graph: too many links for 32-bit link ids".into(),
            ));
        }
        let mut indptr = vec![0u32; n_nodes + 1];
        for (i, (&s, &d)) in src.iter().zip(dst.iter()).enumerate() {
            if s as usize >= n_nodes || d as usize >= n_nodes {
                return Err(CoreError::Topology(format!(
                    "graph: link {} ({} -> {}) names a node >= n_nodes={}",
                    i, s, d, n_nodes
                )));
            }
            if i > 0 && src[i - 1] > s {
                return Err(CoreError::Topology(format!(
                    "graph: links not sorted by source at link {}",
                    i
                )));
            }
            indptr[s as usize + 1] += 1;
        }
        for v in 0..n_nodes {
            indptr[v + 1] += indptr[v];
        }
        let mut by_nbr: Vec<(u32, u32)> = (0..src.len() as u32)
            .map(|l| (dst[l as usize], l))
            .collect();
        for v in 0..n_nodes {
            by_nbr[indptr[v] as usize..indptr[v + 1] as usize].sort_unstable();
        }
        Ok(Graph {
            n_nodes,
            n_endpoints,
            src,
            dst,
            indptr,
            by_nbr,
        })
    }

    #[inline]
    pub fn n_links(&self) -> usize {
        self.src.len()
    }

    #[inline]
    pub fn out_range(&self, v: u32) -> std::ops::Range<usize> {
        self.indptr[v as usize] as usize..self.indptr[v as usize + 1] as usize
    }

    #[inline]
    pub fn is_endpoint(&self, v: u32) -> bool {
        (v as usize) < self.n_endpoints
    }

    /// The links from `u` to `v` (parallel links give more than one).
    pub fn links_between(&self, u: u32, v: u32) -> &[(u32, u32)] {
        let r = self.out_range(u);
        let s = &self.by_nbr[r];
        let lo = s.partition_point(|&(n, _)| n < v);
        let hi = s.partition_point(|&(n, _)| n <= v);
        &s[lo..hi]
    }

    /// The first link from `u` to `v`.
    pub fn link_between(&self, u: u32, v: u32) -> Option<u32> {
        self.links_between(u, v).first().map(|&(_, l)| l)
    }

    /// Hop distances from every node to `targets` (multi-source BFS over
    /// reversed links, which equal forward links on a full-duplex network),
    /// never passing through an endpoint that is not a target.
    pub fn bfs_to(&self, targets: &[u32], dist: &mut [u16]) {
        dist.iter_mut().for_each(|d| *d = u16::MAX);
        let mut queue: Vec<u32> = Vec::with_capacity(self.n_nodes);
        for &t in targets {
            dist[t as usize] = 0;
            queue.push(t);
        }
        let mut head = 0;
        while head < queue.len() {
            let x = queue[head];
            head += 1;
            if self.is_endpoint(x) && dist[x as usize] > 0 {
                continue; // endpoints do not forward
            }
            let dx = dist[x as usize];
            for l in self.out_range(x) {
                let y = self.dst[l];
                if dist[y as usize] == u16::MAX {
                    dist[y as usize] = dx + 1;
                    queue.push(y);
                }
            }
        }
    }
}

/// Deterministic 64-bit mixer (SplitMix64 finaliser) for seeded hashing.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline]
pub fn hash3(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    mix64(mix64(mix64(seed ^ 0x5851_F42D_4C95_7F2D) ^ a) ^ b.rotate_left(21) ^ c.rotate_left(42))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_and_lookup() {
        // 0 - 2 - 1, node 2 a switch
        let g = Graph::new(3, 2, vec![0, 1, 2, 2], vec![2, 2, 0, 1]).unwrap();
        assert_eq!(g.indptr, vec![0, 1, 2, 4]);
        assert_eq!(g.link_between(2, 1), Some(3));
        assert_eq!(g.link_between(0, 1), None);
        let mut d = vec![0u16; 3];
        g.bfs_to(&[1], &mut d);
        assert_eq!(d, vec![2, 0, 1]);
    }

    #[test]
    fn rejects_unsorted() {
        assert!(Graph::new(3, 2, vec![2, 0], vec![0, 2]).is_err());
    }
}
