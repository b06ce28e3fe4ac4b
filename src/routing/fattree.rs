//! Extended / parallel-port generalised fat trees, XGFT(h; m; w) and
//! PGFT(h; m; w; p) (Öhring et al. 1995; Zahavi 2010), with arithmetic
//! up/down routing: d-mod-k and seeded random (ECMP-like) selection.
//!
//! Node layout: level 0 are the endpoints, level `h` the top switches. A
//! level-`l` node has digits `b_1..b_l` (radices `w_1..w_l`) and
//! `a_{l+1}..a_h` (radices `m_{l+1}..m_h`); its index within the level is
//! the mixed-radix number with `b_1` least significant. Each node's links are
//! numbered up ports first (`u = j * w_{l+1} + b_{l+1}`, `j` the parallel
//! link), then down ports (`a * p_l + j`).

use crate::error::CoreError;

/// Up-port selection rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FatTreeRule {
    /// Zahavi's d-mod-k: `u_l = floor(d / prod_{k<=l} w_k p_k) mod (w_{l+1} p_{l+1})`.
    DModK,
    /// Per (source, destination, level) seeded hash: ECMP-like static spreading.
    Random(u64),
}

#[derive(Clone, Debug)]
pub struct Xgft {
    pub h: usize,
    pub m: Vec<u64>,
    pub w: Vec<u64>,
    pub p: Vec<u64>,
    /// nodes per level, 0..=h
    pub count: Vec<u64>,
    /// first node id of each level
    pub node_offset: Vec<u64>,
    /// first link id of each level
    pub link_offset: Vec<u64>,
    /// W_l = prod_{i<=l} w_i
    pub wprod: Vec<u64>,
}

impl Xgft {
    pub fn new(m: &[u64], w: &[u64], p: &[u64]) -> Result<Self, CoreError> {
        let h = m.len();
        if h == 0 || w.len() != h || p.len() != h {
            return Err(CoreError::Topology(format!(
                "xgft: m, w, p must have equal non-zero length, got {}, {}, {}",
                m.len(),
                w.len(),
                p.len()
            )));
        }
        if m.iter().chain(w).chain(p).any(|&x| x == 0) {
            return Err(CoreError::Topology(
                "xgft: every m_i, w_i, p_i must be >= 1".into(),
            ));
        }
        let mut count = vec![0u64; h + 1];
        let mut wprod = vec![1u64; h + 1];
        for l in 1..=h {
            wprod[l] = wprod[l - 1] * w[l - 1];
        }
        for l in 0..=h {
            let mhigh: u64 = m[l..].iter().product();
            count[l] = wprod[l] * mhigh;
        }
        let mut node_offset = vec![0u64; h + 2];
        let mut link_offset = vec![0u64; h + 2];
        let x = Xgft {
            h,
            m: m.to_vec(),
            w: w.to_vec(),
            p: p.to_vec(),
            count,
            node_offset: vec![],
            link_offset: vec![],
            wprod,
        };
        for l in 0..=h {
            node_offset[l + 1] = node_offset[l] + x.count[l];
            link_offset[l + 1] = link_offset[l] + x.count[l] * (x.up(l) + x.down(l));
        }
        if node_offset[h + 1] >= u32::MAX as u64 || link_offset[h + 1] >= u32::MAX as u64 {
            return Err(CoreError::Topology("xgft: too large for 32-bit ids".into()));
        }
        Ok(Xgft {
            node_offset,
            link_offset,
            ..x
        })
    }

    /// number of up ports of a level-l node
    #[inline]
    pub fn up(&self, l: usize) -> u64 {
        if l == self.h {
            0
        } else {
            self.w[l] * self.p[l]
        }
    }
    #[inline]
    pub fn down(&self, l: usize) -> u64 {
        if l == 0 {
            0
        } else {
            self.m[l - 1] * self.p[l - 1]
        }
    }
    #[inline]
    fn deg(&self, l: usize) -> u64 {
        self.up(l) + self.down(l)
    }
    pub fn n_nodes(&self) -> u64 {
        self.node_offset[self.h + 1]
    }
    pub fn n_links(&self) -> u64 {
        self.link_offset[self.h + 1]
    }
    pub fn n_endpoints(&self) -> u64 {
        self.count[0]
    }

    /// parent (index within level l+1) of level-l node `x` through parent digit `b`
    #[inline]
    fn parent(&self, l: usize, x: u64, b: u64) -> u64 {
        let wl = self.wprod[l];
        let low = x % wl;
        let rest = x / wl; // a_{l+1} + m_{l+1} * A_high
        let ahigh = rest / self.m[l];
        low + wl * (b + self.w[l] * ahigh)
    }
    /// child (index within level l-1) of level-l node `y` through child digit `a`
    #[inline]
    fn child(&self, l: usize, y: u64, a: u64) -> u64 {
        let wl1 = self.wprod[l - 1];
        let low = y % wl1;
        let rest = y / wl1; // b_l + w_l * A_high
        let ahigh = rest / self.w[l - 1];
        low + wl1 * (a + self.m[l - 1] * ahigh)
    }
    #[cfg(test)]
    #[inline]
    fn up_link(&self, l: usize, x: u64, u: u64) -> u32 {
        (self.link_offset[l] + x * self.deg(l) + u) as u32
    }
    #[cfg(test)]
    #[inline]
    fn down_link(&self, l: usize, y: u64, a: u64, j: u64) -> u32 {
        (self.link_offset[l] + y * self.deg(l) + self.up(l) + a * self.p[l - 1] + j) as u32
    }

    /// Link table `(src, dst, level_of_src)` sorted by source node and port.
    pub fn links(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.n_links() as usize;
        let mut src = Vec::with_capacity(n);
        let mut dst = Vec::with_capacity(n);
        for l in 0..=self.h {
            for x in 0..self.count[l] {
                let me = (self.node_offset[l] + x) as u32;
                for u in 0..self.up(l) {
                    let b = u % self.w[l];
                    src.push(me);
                    dst.push((self.node_offset[l + 1] + self.parent(l, x, b)) as u32);
                }
                if l > 0 {
                    for a in 0..self.m[l - 1] {
                        let c = (self.node_offset[l - 1] + self.child(l, x, a)) as u32;
                        for _ in 0..self.p[l - 1] {
                            src.push(me);
                            dst.push(c);
                        }
                    }
                }
            }
        }
        (src, dst)
    }

    /// Up port a level-l node takes towards destination `d` under d-mod-k.
    #[cfg(test)]
    #[inline]
    fn dmodk_port(&self, l: usize, d: u64) -> u64 {
        let mut div = 1u64;
        for k in 0..l {
            div *= self.w[k] * self.p[k];
        }
        (d / div) % self.up(l)
    }

    /// Append the links of the route `s -> d` (endpoint indices) to `out`.
    ///
    /// Walks the node digits instead of recomputing them per hop (the
    /// congestion model's lockstep path routes 430 M pairs for a shift
    /// all-to-all over 20,736 endpoints): `s`'s `a` digits are peeled off one
    /// level at a time on the way up while the chosen parent digits `b` are
    /// kept, and the way down puts `d`'s `a` digits back while dropping them;
    /// every value fits 32 bits (checked in [`Xgft::new`]), so the few
    /// divisions left are 32-bit. Equal to the per-hop formulas
    /// (`route_into_per_hop`, tests).
    pub fn route_into(&self, rule: FatTreeRule, s: u64, d: u64, out: &mut Vec<u32>) {
        if s == d {
            return;
        }
        let h = self.h;
        // d's digits and the LCA level (highest level whose digit differs)
        let mut ddig = [0u32; 16];
        let (mut ss, mut dd) = (s as u32, d as u32);
        let mut lca = 0;
        for i in 0..h {
            if ss == dd {
                break;
            }
            let m = self.m[i] as u32;
            ddig[i] = dd % m;
            if ss % m != ddig[i] {
                lca = i + 1;
            }
            ss /= m;
            dd /= m;
        }
        // up: a level-l node is low + W_l · (a_{l+1} + m_{l+1} · rest)
        let mut ups = [0u32; 16];
        let mut q = d as u32; // d-mod-k: u_l = (d / prod_{k<l} w_k p_k) mod (w_l p_l)
        let mut low = 0u64; // b digits chosen so far
        let mut rest = s; // a digits above the current level (with the current one)
        let mut x = s;
        for (l, up_l) in ups.iter_mut().enumerate().take(lca) {
            let up = (self.w[l] * self.p[l]) as u32;
            let u = match rule {
                FatTreeRule::DModK => q % up,
                FatTreeRule::Random(seed) => {
                    (super::graph::hash3(seed, s, d, l as u64) % up as u64) as u32
                }
            };
            q /= up;
            *up_l = u;
            out.push((self.link_offset[l] + x * self.deg(l) + u as u64) as u32);
            let b = (u % self.w[l] as u32) as u64;
            rest = (rest as u32 / self.m[l] as u32) as u64;
            low += self.wprod[l] * b;
            x = low + self.wprod[l + 1] * rest;
        }
        // down: put d's a digits back, drop the b digits
        let mut y = x;
        let mut above = rest; // a digits above level l (shared by s and d)
        for l in (1..=lca).rev() {
            let a = ddig[l - 1] as u64;
            let j = (ups[l - 1] / self.w[l - 1] as u32) as u64;
            out.push(
                (self.link_offset[l] + y * self.deg(l) + self.up(l) + a * self.p[l - 1] + j) as u32,
            );
            let b = (ups[l - 1] % self.w[l - 1] as u32) as u64;
            low -= self.wprod[l - 1] * b;
            above = a + self.m[l - 1] * above;
            y = low + self.wprod[l - 1] * above;
        }
        debug_assert_eq!(y, d);
    }

    /// The route by the per-hop formulas (the reference of [`Xgft::route_into`]).
    #[cfg(test)]
    pub fn route_into_per_hop(&self, rule: FatTreeRule, s: u64, d: u64, out: &mut Vec<u32>) {
        if s == d {
            return;
        }
        // LCA level: highest digit where s and d differ
        let mut lca = 0;
        let (mut ss, mut dd) = (s, d);
        for i in 1..=self.h {
            if ss % self.m[i - 1] != dd % self.m[i - 1] {
                lca = i;
            }
            ss /= self.m[i - 1];
            dd /= self.m[i - 1];
        }
        let mut x = s;
        let mut ups = [0u64; 16];
        for (l, up) in ups.iter_mut().enumerate().take(lca) {
            let u = match rule {
                FatTreeRule::DModK => self.dmodk_port(l, d),
                FatTreeRule::Random(seed) => super::graph::hash3(seed, s, d, l as u64) % self.up(l),
            };
            *up = u;
            out.push(self.up_link(l, x, u));
            x = self.parent(l, x, u % self.w[l]);
        }
        // down: child digits of d, parallel link as d's own up choice (d-mod-k)
        let mut y = x;
        for l in (1..=lca).rev() {
            let mut div = 1u64;
            for k in 0..l - 1 {
                div *= self.m[k];
            }
            let a = (d / div) % self.m[l - 1];
            let j = match rule {
                FatTreeRule::DModK => self.dmodk_port(l - 1, d) / self.w[l - 1],
                FatTreeRule::Random(_) => ups[l - 1] / self.w[l - 1],
            };
            out.push(self.down_link(l, y, a, j));
            y = self.child(l, y, a);
        }
        debug_assert_eq!(y, d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::graph::Graph;

    fn counts(m: &[u64], w: &[u64], p: &[u64]) -> (u64, u64) {
        let x = Xgft::new(m, w, p).unwrap();
        (x.n_endpoints(), x.n_nodes() - x.n_endpoints())
    }

    #[test]
    fn network_noise_table1_counts() {
        // Hoefler et al., Table 1; hosts per leaf m_1 = 12, w_1 = 1.
        assert_eq!(counts(&[12, 12], &[1, 6], &[1, 2]), (144, 18));
        assert_eq!(counts(&[12, 24], &[1, 12], &[1, 1]), (288, 36));
        assert_eq!(counts(&[12, 12, 8], &[1, 12, 4], &[1, 1, 3]), (1152, 240));
        assert_eq!(counts(&[12, 12, 16], &[1, 12, 8], &[1, 1, 1]), (2304, 480));
        assert_eq!(counts(&[12, 12, 24], &[1, 12, 12], &[1, 1, 1]), (3456, 720));
        assert_eq!(
            counts(&[12, 12, 12, 6], &[1, 12, 12, 3], &[1, 1, 1, 4]),
            (10368, 3024)
        );
        assert_eq!(
            counts(&[12, 12, 12, 12], &[1, 12, 12, 6], &[1, 1, 1, 2]),
            (20736, 6048)
        );
    }

    #[test]
    fn routes_are_connected_and_shift_is_contention_free() {
        let x = Xgft::new(&[4, 4, 4], &[1, 4, 4], &[1, 1, 1]).unwrap();
        let (src, dst) = x.links();
        let n = x.n_endpoints();
        let g = Graph::new(x.n_nodes() as usize, n as usize, src.clone(), dst.clone()).unwrap();
        for (i, (&a, &b)) in src.iter().zip(&dst).enumerate() {
            assert!(g.link_between(b, a).is_some(), "link {} has no reverse", i);
        }
        for shift in 1..n {
            let mut load = vec![0u32; g.n_links()];
            for s in 0..n {
                let d = (s + shift) % n;
                let mut path = vec![];
                x.route_into(FatTreeRule::DModK, s, d, &mut path);
                let mut at = s as u32;
                for &l in &path {
                    assert_eq!(src[l as usize], at);
                    at = dst[l as usize];
                    load[l as usize] += 1;
                }
                assert_eq!(at as u64, d);
            }
            assert_eq!(*load.iter().max().unwrap(), 1, "shift {}", shift);
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// The digit walk equals the per-hop formulas on every pair of small
    /// trees (XGFT and PGFT, both rules) and on sampled pairs of the
    /// 20,736-endpoint tree.
    #[test]
    fn digit_walk_equals_per_hop_formulas() {
        let trees: [(&[u64], &[u64], &[u64]); 5] = [
            (&[4, 4, 4], &[1, 4, 4], &[1, 1, 1]),
            (&[3, 5], &[2, 3], &[1, 2]),
            (&[12, 12], &[1, 6], &[1, 2]),
            (&[2, 3, 4, 2], &[3, 2, 1, 2], &[2, 1, 3, 1]),
            (&[12, 12, 12, 12], &[1, 12, 12, 6], &[1, 1, 1, 2]),
        ];
        for (m, w, p) in trees {
            let x = Xgft::new(m, w, p).unwrap();
            let n = x.n_endpoints();
            let step = if n > 1000 { 7919 } else { 1 };
            for rule in [FatTreeRule::DModK, FatTreeRule::Random(5)] {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for s in (0..n).step_by(step.min(n as usize) as usize) {
                    for d in (0..n).step_by(if n > 1000 { 13 } else { 1 }) {
                        a.clear();
                        b.clear();
                        x.route_into(rule, s, d, &mut a);
                        x.route_into_per_hop(rule, s, d, &mut b);
                        assert_eq!(a, b, "{m:?} {w:?} {p:?} {rule:?}: {s} -> {d}");
                    }
                }
            }
        }
    }

    /// Routes per second on the network-noise paper's largest tree (20,736
    /// endpoints, d-mod-k), shift pairs: `cargo test --release -- --ignored
    /// --nocapture route_speed`.
    #[test]
    #[ignore]
    fn route_speed() {
        let x = Xgft::new(&[12, 12, 12, 12], &[1, 12, 12, 6], &[1, 1, 1, 2]).unwrap();
        let n = x.n_endpoints();
        let mut out = Vec::with_capacity(16);
        let mut sum = 0u64;
        let t = std::time::Instant::now();
        let rounds = 200u64;
        for k in 1..=rounds {
            for s in 0..n {
                out.clear();
                x.route_into(FatTreeRule::DModK, s, (s + k * 97) % n, &mut out);
                sum += out.iter().map(|&l| l as u64).sum::<u64>();
            }
        }
        let dt = t.elapsed().as_secs_f64();
        println!(
            "{:.1} ns per route (checksum {sum})",
            dt * 1e9 / (rounds * n) as f64
        );
    }
}
