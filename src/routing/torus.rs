//! Tori and meshes in any dimension (per-dimension wrap-around), with
//! dimension-order routing and the flow-level minimal-adaptive split
//! (Kumar & Heidelberger, BG/L all-to-all paper, §2).
//!
//! Node `v` has coordinates with dimension 0 least significant. Its links are
//! numbered per dimension: `+` then `-` (a missing mesh link is skipped).
//! A ring of size 2 has one cable (its `+` and `-` neighbours coincide).

use crate::error::CoreError;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tie {
    /// on a tie (k even, offset k/2) go in the + direction
    Positive,
    /// go in the - direction
    Negative,
    /// + if the source coordinate is even, - otherwise (balances the two)
    SourceParity,
    /// SimGrid's `TorusZone::get_local_route`: + except from coordinate k/2
    /// to coordinate 0, which goes - (on a ring of 8, 4 -> 0 goes 4, 3, 2, 1, 0)
    SimGrid,
}

#[derive(Clone, Debug)]
pub struct Torus {
    pub k: Vec<u64>,
    pub wrap: Vec<bool>,
    stride: Vec<u64>,
    /// port_link[v * 2D + 2*dim + (0 for +, 1 for -)] = link id or u32::MAX
    port_link: Vec<u32>,
    n: u64,
}

impl Torus {
    pub fn new(k: &[u64], wrap: &[bool]) -> Result<Self, CoreError> {
        if k.is_empty() || k.len() != wrap.len() {
            return Err(CoreError::Topology(
                "torus: need one wrap flag per dimension".into(),
            ));
        }
        if k.contains(&0) {
            return Err(CoreError::Topology(
                "torus: every dimension must be >= 1".into(),
            ));
        }
        let mut stride = vec![1u64; k.len()];
        for i in 1..k.len() {
            stride[i] = stride[i - 1] * k[i - 1];
        }
        let n: u64 = k.iter().product();
        if n >= u32::MAX as u64 / 8 {
            return Err(CoreError::Topology("torus: too large".into()));
        }
        let mut t = Torus {
            k: k.to_vec(),
            wrap: wrap.to_vec(),
            stride,
            port_link: vec![],
            n,
        };
        let nd = k.len();
        let mut port_link = vec![u32::MAX; n as usize * 2 * nd];
        let mut next = 0u32;
        for v in 0..n {
            for dim in 0..nd {
                for dir in 0..2 {
                    if t.neighbour(v, dim, dir == 0).is_some() {
                        port_link[v as usize * 2 * nd + 2 * dim + dir] = next;
                        next += 1;
                    }
                }
            }
        }
        t.port_link = port_link;
        Ok(t)
    }

    pub fn n_nodes(&self) -> u64 {
        self.n
    }

    #[inline]
    fn coord(&self, v: u64, dim: usize) -> u64 {
        (v / self.stride[dim]) % self.k[dim]
    }

    /// neighbour of v in dimension dim, + (plus=true) or - direction
    pub fn neighbour(&self, v: u64, dim: usize, plus: bool) -> Option<u64> {
        let k = self.k[dim];
        let c = self.coord(v, dim);
        if k == 1 {
            return None;
        }
        let nc = if plus {
            if c + 1 < k {
                c + 1
            } else if self.wrap[dim] && k > 2 {
                0
            } else {
                return None;
            }
        } else if c > 0 {
            c - 1
        } else if self.wrap[dim] && k > 2 {
            k - 1
        } else {
            return None;
        };
        if k == 2 && !plus && c == 1 {
            // size-2 ring: one cable, reached as the - link from coordinate 1
            return Some(v - self.stride[dim]);
        }
        Some(v - c * self.stride[dim] + nc * self.stride[dim])
    }

    pub fn links(&self) -> (Vec<u32>, Vec<u32>) {
        let mut src = vec![];
        let mut dst = vec![];
        for v in 0..self.n {
            for dim in 0..self.k.len() {
                for plus in [true, false] {
                    if let Some(u) = self.neighbour(v, dim, plus) {
                        src.push(v as u32);
                        dst.push(u as u32);
                    }
                }
            }
        }
        (src, dst)
    }

    /// signed minimal offset in one dimension, ties by rule
    fn offset(&self, dim: usize, cs: u64, cd: u64, tie: Tie) -> i64 {
        let k = self.k[dim] as i64;
        let diff = cd as i64 - cs as i64;
        if !self.wrap[dim] || k <= 2 {
            return diff;
        }
        let fwd = diff.rem_euclid(k);
        let bwd = k - fwd;
        if fwd == 0 {
            0
        } else if fwd < bwd {
            fwd
        } else if bwd < fwd {
            -bwd
        } else {
            match tie {
                Tie::Positive => fwd,
                Tie::Negative => -bwd,
                Tie::SourceParity => {
                    if cs.is_multiple_of(2) {
                        fwd
                    } else {
                        -bwd
                    }
                }
                // SimGrid goes + when the target is ahead within k/2 without
                // wrapping (cd <= cs + k/2) or, from cs > k/2, with it
                // (cd <= cs - k/2): of the ties only cs = k/2, cd = 0 fails both
                Tie::SimGrid => {
                    if cd == 0 && cs as i64 == k / 2 {
                        -bwd
                    } else {
                        fwd
                    }
                }
            }
        }
    }

    fn walk(&self, v: &mut u64, dim: usize, off: i64, out: &mut Vec<u32>) {
        let nd = self.k.len();
        let plus = off > 0;
        for _ in 0..off.unsigned_abs() {
            let l = self.port_link[*v as usize * 2 * nd + 2 * dim + if plus { 0 } else { 1 }];
            out.push(l);
            *v = self.neighbour(*v, dim, plus).unwrap();
        }
    }

    /// Dimension-order route: dimensions in `order`, each by its minimal offset.
    pub fn dor_into(&self, order: &[usize], tie: Tie, s: u64, d: u64, out: &mut Vec<u32>) {
        let mut v = s;
        for &dim in order {
            let off = self.offset(dim, self.coord(s, dim), self.coord(d, dim), tie);
            self.walk(&mut v, dim, off, out);
        }
    }

    /// Minimal adaptive as an even split over the dimension orders of the
    /// dimensions that need to move: links with their fraction of the flow.
    pub fn adaptive_into(
        &self,
        tie: Tie,
        s: u64,
        d: u64,
        links: &mut Vec<u32>,
        weights: &mut Vec<f64>,
    ) {
        let dims: Vec<usize> = (0..self.k.len())
            .filter(|&i| self.offset(i, self.coord(s, i), self.coord(d, i), tie) != 0)
            .collect();
        let mut perms: Vec<Vec<usize>> = vec![];
        permutations(&dims, &mut vec![], &mut vec![false; dims.len()], &mut perms);
        let share = 1.0 / perms.len() as f64;
        let mut acc: Vec<(u32, f64)> = vec![];
        let mut path = vec![];
        for p in &perms {
            path.clear();
            self.dor_into(p, tie, s, d, &mut path);
            for &l in &path {
                acc.push((l, share));
            }
        }
        acc.sort_by_key(|x| x.0);
        let mut i = 0;
        while i < acc.len() {
            let mut j = i;
            let mut w = 0.0;
            while j < acc.len() && acc[j].0 == acc[i].0 {
                w += acc[j].1;
                j += 1;
            }
            links.push(acc[i].0);
            weights.push(w);
            i = j;
        }
    }
}

fn permutations(
    items: &[usize],
    cur: &mut Vec<usize>,
    used: &mut Vec<bool>,
    out: &mut Vec<Vec<usize>>,
) {
    if cur.len() == items.len() {
        out.push(cur.clone());
        return;
    }
    for i in 0..items.len() {
        if !used[i] {
            used[i] = true;
            cur.push(items[i]);
            permutations(items, cur, used, out);
            cur.pop();
            used[i] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_counts() {
        let t = Torus::new(&[4, 4, 4], &[true; 3]).unwrap();
        assert_eq!(t.links().0.len(), 2 * 3 * 64);
        let m = Torus::new(&[4, 4, 4], &[false; 3]).unwrap();
        assert_eq!(m.links().0.len(), 2 * 3 * 3 * 16);
    }

    #[test]
    fn dor_is_minimal_and_ordered() {
        let t = Torus::new(&[5, 4, 3], &[true, true, false]).unwrap();
        let (src, dst) = t.links();
        for s in 0..60 {
            for d in 0..60 {
                let mut p = vec![];
                t.dor_into(&[0, 1, 2], Tie::Positive, s, d, &mut p);
                let mut at = s as u32;
                for &l in &p {
                    assert_eq!(src[l as usize], at);
                    at = dst[l as usize];
                }
                assert_eq!(at as u64, d);
                let mut hops = 0;
                for dim in 0..3 {
                    let (a, b) = (t.coord(s, dim) as i64, t.coord(d, dim) as i64);
                    let k = t.k[dim] as i64;
                    hops += if t.wrap[dim] {
                        (a - b).rem_euclid(k).min((b - a).rem_euclid(k))
                    } else {
                        (a - b).abs()
                    };
                }
                assert_eq!(p.len() as i64, hops);
            }
        }
    }

    #[test]
    fn simgrid_tie_matches_torus_zone_condition() {
        // SimGrid's TorusZone::get_local_route goes + iff
        // (t > m && t <= m + k/2) || (m > k/2 && (m + k/2) % k >= t)
        for k in 3..=12u64 {
            let t = Torus::new(&[k], &[true]).unwrap();
            for m in 0..k {
                for d in 0..k {
                    let off = t.offset(0, m, d, Tie::SimGrid);
                    if m == d {
                        assert_eq!(off, 0);
                        continue;
                    }
                    let h = k / 2;
                    let plus = (d > m && d <= m + h) || (m > h && (m + h) % k >= d);
                    let hops = if plus {
                        (d + k - m) % k
                    } else {
                        (m + k - d) % k
                    };
                    assert_eq!(
                        off,
                        if plus { hops as i64 } else { -(hops as i64) },
                        "k={k} {m}->{d}"
                    );
                }
            }
        }
        let ring = Torus::new(&[8], &[true]).unwrap();
        assert_eq!(ring.offset(0, 4, 0, Tie::SimGrid), -4);
        assert_eq!(ring.offset(0, 0, 4, Tie::SimGrid), 4);
        assert_eq!(ring.offset(0, 5, 1, Tie::SimGrid), 4);
        assert_eq!(ring.offset(0, 4, 0, Tie::Positive), 4);
    }
}
