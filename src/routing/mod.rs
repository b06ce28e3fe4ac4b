//! Static routing over modelled networks (pure Rust, no pyo3).
//!
//! Every router answers a batch of (source, destination) endpoint pairs with
//! the links of each route in CSR form (`indptr`, `links`, and per-link
//! `weights`, 1.0 except for the flow-level adaptive split), and can add the
//! load of a batch straight into a per-link counter without materialising it.

pub mod bfs;
pub mod dragonfly;
pub mod fattree;
pub mod graph;
pub mod nodes;
pub mod tables;
pub mod torus;

use crate::error::CoreError;
use dragonfly::Dragonfly;
use fattree::{FatTreeRule, Xgft};
use graph::Graph;
use nodes::NodeRoutes;
use tables::{Table, UpDown};
use torus::{Tie, Torus};

/// A routing engine bound to its network.
#[derive(Clone)]
pub enum Engine {
    FatTree {
        tree: Xgft,
        rule: FatTreeRule,
    },
    TorusDor {
        torus: Torus,
        order: Vec<usize>,
        tie: Tie,
    },
    TorusAdaptive {
        torus: Torus,
        tie: Tie,
    },
    Dragonfly {
        df: Dragonfly,
        valiant: Option<u64>,
    },
    Table(Table),
    UpDown(UpDown),
    /// Several rank slots per fabric endpoint ([`nodes`]).
    Nodes(Box<NodeRoutes>),
}

#[derive(Clone)]
pub struct Router {
    pub graph: Graph,
    pub engine: Engine,
}

/// Routes of a batch: pair `i` owns `links[indptr[i]..indptr[i+1]]`.
#[derive(Default, Debug)]
pub struct Paths {
    pub indptr: Vec<u64>,
    pub links: Vec<u32>,
    pub weights: Vec<f64>,
}

impl Router {
    pub fn multipath(&self) -> bool {
        match &self.engine {
            Engine::TorusAdaptive { .. } => true,
            Engine::Nodes(n) => n.fabric.multipath(),
            _ => false,
        }
    }

    fn check(&self, s: u32, d: u32) -> Result<(), CoreError> {
        let n = self.graph.n_endpoints as u32;
        if s >= n || d >= n {
            return Err(CoreError::InvalidArgument(format!(
                "route: endpoint pair ({}, {}) out of range 0..{}",
                s, d, n
            )));
        }
        Ok(())
    }

    /// Route one pair, appending links and weights (`cache` speeds up
    /// up*/down* routing of consecutive pairs with the same destination).
    pub fn route_one(
        &self,
        s: u32,
        d: u32,
        links: &mut Vec<u32>,
        weights: &mut Vec<f64>,
        cache: &mut UdCache,
    ) -> Result<(), CoreError> {
        self.one(s, d, links, weights, cache)
    }

    /// Route one pair, appending links and weights.
    fn one(
        &self,
        s: u32,
        d: u32,
        links: &mut Vec<u32>,
        weights: &mut Vec<f64>,
        cache: &mut UdCache,
    ) -> Result<(), CoreError> {
        self.check(s, d)?;
        let before = links.len();
        match &self.engine {
            Engine::Nodes(n) => return n.route_into(s, d, links, weights, cache),
            Engine::FatTree { tree, rule } => tree.route_into(*rule, s as u64, d as u64, links),
            Engine::TorusDor { torus, order, tie } => {
                torus.dor_into(order, *tie, s as u64, d as u64, links)
            }
            Engine::TorusAdaptive { torus, tie } => {
                torus.adaptive_into(*tie, s as u64, d as u64, links, weights);
                return Ok(());
            }
            Engine::Dragonfly { df, valiant } => {
                df.route_into(&self.graph, *valiant, s as u64, d as u64, links)?
            }
            Engine::Table(t) => t.route_into(&self.graph, s, d, links)?,
            Engine::UpDown(ud) => {
                if cache.dest != Some(d) {
                    let (dn, upd) = ud.distances(&self.graph, d);
                    *cache = UdCache {
                        dest: Some(d),
                        dn,
                        upd,
                    };
                }
                ud.route_with(&self.graph, &cache.dn, &cache.upd, s, d, links)?
            }
        }
        weights.resize(links.len(), 1.0);
        debug_assert!(links.len() >= before);
        Ok(())
    }

    fn order_by_dest(&self, dst: &[u32]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..dst.len()).collect();
        if matches!(self.engine, Engine::UpDown(_)) {
            idx.sort_by_key(|&i| dst[i]);
        }
        idx
    }

    pub fn route(&self, src: &[u32], dst: &[u32]) -> Result<Paths, CoreError> {
        if src.len() != dst.len() {
            return Err(CoreError::InvalidArgument(format!(
                "route: {} sources but {} destinations",
                src.len(),
                dst.len()
            )));
        }
        let mut cache = UdCache::default();
        if matches!(self.engine, Engine::UpDown(_)) {
            // compute per destination, then scatter back to input order
            let idx = self.order_by_dest(dst);
            let mut per: Vec<(Vec<u32>, Vec<f64>)> = vec![(vec![], vec![]); src.len()];
            for &i in &idx {
                let (mut l, mut w) = (vec![], vec![]);
                self.one(src[i], dst[i], &mut l, &mut w, &mut cache)?;
                per[i] = (l, w);
            }
            let mut p = Paths {
                indptr: vec![0],
                ..Default::default()
            };
            for (l, w) in per {
                p.links.extend(l);
                p.weights.extend(w);
                p.indptr.push(p.links.len() as u64);
            }
            return Ok(p);
        }
        let mut p = Paths {
            indptr: Vec::with_capacity(src.len() + 1),
            ..Default::default()
        };
        p.indptr.push(0);
        for (&s, &d) in src.iter().zip(dst) {
            self.one(s, d, &mut p.links, &mut p.weights, &mut cache)?;
            p.indptr.push(p.links.len() as u64);
        }
        Ok(p)
    }

    /// Add the (weighted) number of routes crossing each link to `load`.
    pub fn add_loads(&self, src: &[u32], dst: &[u32], load: &mut [f64]) -> Result<(), CoreError> {
        if src.len() != dst.len() {
            return Err(CoreError::InvalidArgument(format!(
                "loads: {} sources but {} destinations",
                src.len(),
                dst.len()
            )));
        }
        let mut cache = UdCache::default();
        let (mut l, mut w) = (Vec::with_capacity(64), Vec::with_capacity(64));
        for i in self.order_by_dest(dst) {
            l.clear();
            w.clear();
            self.one(src[i], dst[i], &mut l, &mut w, &mut cache)?;
            for (&x, &y) in l.iter().zip(&w) {
                load[x as usize] += y;
            }
        }
        Ok(())
    }

    /// Effective bisection bandwidth samples (Hoefler, Schneider & Lumsdaine,
    /// "Multistage switches are not crossbars", Cluster 2008): `src`/`dst`
    /// hold `n_patterns` consecutive patterns of `per_pattern` flows each.
    /// Each flow gets `min over its links of bw / load` divided by the smaller
    /// of its first and last link bandwidth; returns each pattern's mean.
    pub fn ebb(
        &self,
        src: &[u32],
        dst: &[u32],
        per_pattern: usize,
        bw: &[f64],
    ) -> Result<Vec<f64>, CoreError> {
        if per_pattern == 0 || !src.len().is_multiple_of(per_pattern) || src.len() != dst.len() {
            return Err(CoreError::InvalidArgument(format!(
                "ebb: {} flows is not a multiple of {} per pattern",
                src.len(),
                per_pattern
            )));
        }
        if bw.len() != self.graph.n_links() {
            return Err(CoreError::InvalidArgument(format!(
                "ebb: {} bandwidths for {} links",
                bw.len(),
                self.graph.n_links()
            )));
        }
        let mut load = vec![0f64; self.graph.n_links()];
        let mut out = vec![];
        for k in 0..src.len() / per_pattern {
            let (s, d) = (
                &src[k * per_pattern..(k + 1) * per_pattern],
                &dst[k * per_pattern..(k + 1) * per_pattern],
            );
            let p = self.route(s, d)?;
            for (&x, &y) in p.links.iter().zip(&p.weights) {
                load[x as usize] += y;
            }
            let mut total = 0.0;
            for i in 0..per_pattern {
                let r = p.indptr[i] as usize..p.indptr[i + 1] as usize;
                if r.is_empty() {
                    total += 1.0;
                    continue;
                }
                let full = bw[p.links[r.start] as usize].min(bw[p.links[r.end - 1] as usize]);
                let got = p.links[r.clone()]
                    .iter()
                    .map(|&x| bw[x as usize] / load[x as usize])
                    .fold(f64::INFINITY, f64::min);
                total += (got / full).min(1.0);
            }
            out.push(total / per_pattern as f64);
            for &x in &p.links {
                load[x as usize] = 0.0;
            }
        }
        Ok(out)
    }
}

/// Distances to the last destination routed by up*/down*.
#[derive(Default, Clone)]
pub struct UdCache {
    dest: Option<u32>,
    dn: Vec<u32>,
    upd: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossbar_ebb_is_one_and_fat_tree_is_below() {
        // crossbar: 8 endpoints on one switch (node 8)
        let mut pairs = vec![];
        for e in 0..8u32 {
            pairs.push((e, 8));
            pairs.push((8, e));
        }
        pairs.sort();
        let (s, d): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
        let g = Graph::new(9, 8, s, d).unwrap();
        let t = tables::minhop_tables(&g, None).unwrap();
        let r = Router {
            graph: g,
            engine: Engine::Table(t),
        };
        let bw = vec![1.0; 16];
        let src = vec![0, 1, 2, 3, 4, 5, 6, 7];
        let dst = vec![4, 5, 6, 7, 0, 1, 2, 3];
        assert_eq!(r.ebb(&src, &dst, 8, &bw).unwrap(), vec![1.0]);

        // 4-ary 2-tree, d-mod-k: pattern where leaf 0 sends to 4 nodes with equal d mod 4
        let x = Xgft::new(&[4, 4], &[1, 4], &[1, 1]).unwrap();
        let (s, d) = x.links();
        let g = Graph::new(x.n_nodes() as usize, 16, s, d).unwrap();
        let n_links = g.n_links();
        let r = Router {
            graph: g,
            engine: Engine::FatTree {
                tree: x,
                rule: FatTreeRule::DModK,
            },
        };
        let src = vec![0, 1, 2, 3];
        let dst = vec![4, 8, 12, 5];
        let e = r.ebb(&src, &dst, 4, &vec![1.0; n_links]).unwrap();
        // 0,1,2 -> d = 0 mod 4 share the up link to spine 0: each gets 1/3; 3 -> 5 alone
        assert!((e[0] - (3.0 * (1.0 / 3.0) + 1.0) / 4.0).abs() < 1e-12);
    }
}
