//! Dragonfly (Kim, Dally, Scott & Abts, ISCA 2008): `g` groups of `a` routers,
//! `p` endpoints per router, `h` global links per router; routers of a group
//! fully connected by local links. Global cables are dealt round-robin over
//! group pairs, so with `g = a*h + 1` every pair of groups has exactly one.
//!
//! Node ids: endpoint `((group * a) + router) * p + i`, then routers
//! `N + group * a + router`. Per node the links are ordered: endpoint links,
//! local links, global links (by construction order).

use super::graph::{hash3, Graph};
use crate::error::CoreError;

#[derive(Clone, Debug)]
pub struct Dragonfly {
    pub a: u64,
    pub p: u64,
    pub h: u64,
    pub g: u64,
    /// global cables (router_u, router_v), router ids global (group*a + r)
    pub global: Vec<(u64, u64)>,
    /// per ordered group pair (gs * g + gd): indices into `global`, oriented
    pair_links: Vec<Vec<(u64, u64)>>,
}

impl Dragonfly {
    pub fn new(a: u64, p: u64, h: u64, g: u64) -> Result<Self, CoreError> {
        if a == 0 || p == 0 || h == 0 || g == 0 {
            return Err(CoreError::Topology(
                "dragonfly: a, p, h, g must be >= 1".into(),
            ));
        }
        if g > a * h + 1 {
            return Err(CoreError::Topology(format!(
                "dragonfly: g={} exceeds a*h+1={} (not every group pair could be linked)",
                g,
                a * h + 1
            )));
        }
        if g > 4096 {
            return Err(CoreError::Topology(format!(
                "dragonfly: g={} groups is more than 4096",
                g
            )));
        }
        let mut used = vec![0u64; g as usize]; // global ports used per group
        let mut global = vec![];
        let ports = a * h;
        loop {
            let mut added = false;
            for x in 0..g {
                for y in x + 1..g {
                    if used[x as usize] < ports && used[y as usize] < ports {
                        let rx = x * a + used[x as usize] / h;
                        let ry = y * a + used[y as usize] / h;
                        used[x as usize] += 1;
                        used[y as usize] += 1;
                        global.push((rx, ry));
                        added = true;
                    }
                }
            }
            if !added || g == 1 {
                break;
            }
        }
        let mut pair_links = vec![vec![]; (g * g) as usize];
        for &(u, v) in &global {
            let (gu, gv) = (u / a, v / a);
            pair_links[(gu * g + gv) as usize].push((u, v));
            pair_links[(gv * g + gu) as usize].push((v, u));
        }
        Ok(Dragonfly {
            a,
            p,
            h,
            g,
            global,
            pair_links,
        })
    }

    pub fn n_endpoints(&self) -> u64 {
        self.g * self.a * self.p
    }
    pub fn n_nodes(&self) -> u64 {
        self.n_endpoints() + self.g * self.a
    }

    pub fn links(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.n_endpoints();
        let mut pairs: Vec<(u32, u32)> = vec![];
        for e in 0..n {
            let r = n + e / self.p;
            pairs.push((e as u32, r as u32));
            pairs.push((r as u32, e as u32));
        }
        for grp in 0..self.g {
            for i in 0..self.a {
                for j in 0..self.a {
                    if i != j {
                        pairs.push(((n + grp * self.a + i) as u32, (n + grp * self.a + j) as u32));
                    }
                }
            }
        }
        for &(u, v) in &self.global {
            pairs.push(((n + u) as u32, (n + v) as u32));
            pairs.push(((n + v) as u32, (n + u) as u32));
        }
        pairs.sort_by_key(|x| x.0); // stable: keeps the per-node port order
        pairs.into_iter().unzip()
    }

    fn global_hop(&self, from_group: u64, to_group: u64, key: u64) -> (u64, u64) {
        let c = &self.pair_links[(from_group * self.g + to_group) as usize];
        c[(key % c.len() as u64) as usize]
    }

    /// router-level path from router rs to router rd (global router ids), minimal
    fn minimal_routers(&self, rs: u64, rd: u64, key: u64, out: &mut Vec<u64>) {
        let (gs, gd) = (rs / self.a, rd / self.a);
        if rs == rd {
            return;
        }
        if gs == gd {
            out.push(rd);
            return;
        }
        let (ru, rv) = self.global_hop(gs, gd, key);
        if ru != rs {
            out.push(ru);
        }
        out.push(rv);
        if rv != rd {
            out.push(rd);
        }
    }

    /// Valiant through a random intermediate *group* (Kim et al. 2008, §4.1:
    /// local, global, local, global, local at most): the packet goes minimally
    /// to the router where a global cable from its group lands in group
    /// `gi` (drawn from `hash(seed, key)`, neither the source's nor the
    /// destination's), then minimally on; at most one local hop between two
    /// global ones, which keeps "VC = global hops so far" deadlock free. A
    /// pair in one group, or fewer than 3 groups: the minimal route.
    pub fn valiant_group_into(
        &self,
        graph: &Graph,
        seed: u64,
        key: u64,
        s: u64,
        d: u64,
        out: &mut Vec<u32>,
    ) -> Result<(), CoreError> {
        if s == d {
            return Ok(());
        }
        let (rs, rd) = (s / self.p, d / self.p);
        let (gs, gd) = (rs / self.a, rd / self.a);
        if gs == gd || self.g < 3 {
            return self.route_into(graph, None, s, d, out);
        }
        let mut gi = hash3(seed, key, s, 3) % (self.g - 2);
        for skip in [gs.min(gd), gs.max(gd)] {
            if gi >= skip {
                gi += 1;
            }
        }
        let cable = hash3(0x0D1A, s, d, key);
        let (ru, rv) = self.global_hop(gs, gi, cable);
        let mut routers = vec![rs];
        if ru != rs {
            routers.push(ru);
        }
        routers.push(rv);
        self.minimal_routers(rv, rd, cable, &mut routers);
        self.links_of(graph, s, d, routers, out)
    }

    fn links_of(
        &self,
        graph: &Graph,
        s: u64,
        d: u64,
        routers: Vec<u64>,
        out: &mut Vec<u32>,
    ) -> Result<(), CoreError> {
        let n = self.n_endpoints();
        let mut prev = s as u32;
        for r in routers
            .into_iter()
            .map(|r| (r + n) as u32)
            .chain(std::iter::once(d as u32))
        {
            let l = graph.link_between(prev, r).ok_or_else(|| {
                CoreError::NoRoute(format!("dragonfly: no link {} -> {}", prev, r))
            })?;
            out.push(l);
            prev = r;
        }
        Ok(())
    }

    /// Node sequence of the route s -> d, converted to links through `graph`.
    pub fn route_into(
        &self,
        graph: &Graph,
        valiant: Option<u64>,
        s: u64,
        d: u64,
        out: &mut Vec<u32>,
    ) -> Result<(), CoreError> {
        if s == d {
            return Ok(());
        }
        let (rs, rd) = (s / self.p, d / self.p);
        let (gs, gd) = (rs / self.a, rd / self.a);
        let key = hash3(0x0D1A, s, d, 0);
        let mut routers = vec![rs];
        match valiant {
            Some(seed) if gs != gd && self.g >= 3 => {
                let mut gi = hash3(seed, s, d, 1) % (self.g - 2);
                for skip in [gs.min(gd), gs.max(gd)] {
                    if gi >= skip {
                        gi += 1;
                    }
                }
                let ri = gi * self.a + hash3(seed, s, d, 2) % self.a;
                self.minimal_routers(rs, ri, key, &mut routers);
                let last = *routers.last().unwrap();
                self.minimal_routers(last, rd, key, &mut routers);
            }
            _ => self.minimal_routers(rs, rd, key, &mut routers),
        }
        self.links_of(graph, s, d, routers, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_dragonfly_has_one_cable_per_group_pair() {
        let df = Dragonfly::new(4, 2, 2, 9).unwrap();
        assert_eq!(df.global.len(), 9 * 8 / 2);
        let (s, d) = df.links();
        let g = Graph::new(df.n_nodes() as usize, df.n_endpoints() as usize, s, d).unwrap();
        let n = df.n_endpoints();
        for valiant in [None, Some(7)] {
            for s in 0..n {
                for d in 0..n {
                    let mut p = vec![];
                    df.route_into(&g, valiant, s, d, &mut p).unwrap();
                    if valiant.is_none() {
                        assert!(p.len() <= 5);
                    }
                }
            }
        }
    }
}
