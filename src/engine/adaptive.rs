//! Minimal adaptive routing on tori and meshes for the packet model: the
//! geometry (which outputs of a router bring a packet closer, and the escape
//! route), kept apart from the fabric's buffers and events.
//!
//! Blue Gene/L's torus router (all-to-all paper, Kumar & Heidelberger, §3.1;
//! Adiga et al., "Blue Gene/L torus interconnection network", IBM J. Res.
//! Dev. 49(2/3), 2005) routes minimally and adaptively: a packet may take any
//! *productive* direction (one that shortens its remaining distance in some
//! dimension) on one of the dynamic virtual channels, chosen by the most free
//! downstream space ("join the shortest queue"), and it can always fall back
//! to an *escape* channel that routes in dimension order with bubble flow
//! control. [`packet`](super::packet) implements the buffers and arbitration;
//! this module answers, for a packet at router `at` bound for `dst`:
//! - [`AdaptiveTorus::productive`]: every productive output link, in
//!   dimension order, + before − (a ring whose offset is exactly `k/2` is
//!   productive both ways);
//! - [`AdaptiveTorus::escape`]: the dimension-order output (lowest dimension
//!   first, the + direction on a `k/2` tie), the escape VC's route;
//! - [`AdaptiveTorus::bubble`]: whether a link belongs to a ring (a wrapped
//!   dimension of size > 2) and so needs bubble flow control on the escape
//!   channel when a packet enters it.
//!
//! [`Channels::EscapeOnly`] is the escape subnetwork alone: dimension order
//! on one VC with bubble flow control, Blue Gene/L's *deterministic* routing
//! (all-to-all paper §2: "For deterministic routing the packets have to be
//! routed on the bubble normal VC"; no dateline, so one VC suffices).
//! [`EscapeTie`] says which way the escape route goes on a `k/2` tie: always
//! `+`, or per packet by a seeded draw (BG/L's software sets the direction
//! hint bits of each packet; a fixed `+` loads the `+` links of an even ring
//! `k/2 + …` packets more than the `−` links under all-to-all traffic).
//!
//! # Why it cannot deadlock (docs/simulator.md, "Adaptive routing")
//! Duato ("A necessary and sufficient condition for deadlock-free adaptive
//! routing in wormhole networks", IEEE TPDS 6(10), 1995; for virtual
//! cut-through, "... in cut-through and store-and-forward networks", TPDS
//! 7(8), 1996): adaptive routing is deadlock free if a connected, acyclic
//! (in its extended channel dependencies) escape subnetwork exists that
//! every waiting packet can always request. Here the escape subnetwork is VC
//! 0 of every link under dimension-order routing. Across dimensions its
//! dependencies are acyclic (a packet only moves to higher dimensions); on a
//! mesh line they are acyclic too; within a ring, bubble flow control
//! (Puente et al., "Adaptive bubble router: a design to improve performance
//! in torus networks", ICPP 1999; Carrión et al., HiPC 1997) lets a packet
//! *enter* the ring's escape channel (from injection, another dimension, or
//! a dynamic VC) only when the next escape buffer has room for two packets,
//! so a free packet slot always remains in every ring and some packet in it
//! can always advance. With virtual cut-through a blocked packet sits whole
//! in one buffer, so Duato's condition for cut-through networks applies, and
//! a packet on the escape channel may return to the dynamic channels at the
//! next router.

use crate::error::CoreError;
use crate::routing::graph::hash3;

/// A link absent from the table (a mesh edge).
pub const NO_LINK: u32 = u32::MAX;

/// Most dimensions an adaptive torus may have (a direction fits a `u8`).
pub const MAX_DIMS: usize = 16;

/// Which channels a packet on an [`AdaptiveTorus`] may take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Channels {
    /// Any productive link on a dynamic VC (1..vcs), or the escape VC 0.
    #[default]
    Adaptive,
    /// The escape VC 0 alone: dimension order with bubble flow control
    /// (BG/L's deterministic routing, module doc).
    EscapeOnly,
}

/// The escape route's direction on a ring whose offset is exactly `k/2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EscapeTie {
    /// Always the `+` direction.
    #[default]
    Positive,
    /// Per packet, `+` or `−` by a draw from `(seed, packet)`; a packet
    /// draws the same way at every router, and after one hop along the tied
    /// dimension it is no longer a tie, so its escape route stays minimal
    /// and in dimension order. (BG/L's endpoint places a message in the
    /// injection FIFO of its `+`-tie first direction, `packet::bgl`; a packet
    /// that draws `−` leaves that FIFO by the `−` link.)
    Random { seed: u64 },
}

/// Geometry of a torus or mesh for adaptive routing: per node and direction
/// its output link, per link its direction.
#[derive(Clone, Debug)]
pub struct AdaptiveTorus {
    pub channels: Channels,
    pub tie: EscapeTie,
    k: Vec<u32>,
    wrap: Vec<bool>,
    stride: Vec<u32>,
    /// `out[node · 2D + 2d + s]`: the link leaving `node` along dimension
    /// `d`, `s = 0` in the + direction, `1` in the −; [`NO_LINK`] if none.
    out: Vec<u32>,
    /// Per link: `2d + s`.
    dir: Vec<u8>,
    src: Vec<u32>,
}

impl AdaptiveTorus {
    /// The geometry of a `k[0] × k[1] × …` torus (`wrap[d]`: dimension `d`
    /// is a ring, else a line) whose nodes are numbered with dimension 0
    /// fastest, from its links `src[l] → dst[l]`.
    ///
    /// # Errors
    /// One line naming the bad value: no or too many dimensions, a size of 0,
    /// a node id outside the torus, a link that is not one step along one
    /// dimension, or a node missing a link a minimal route needs.
    pub fn new(k: &[u32], wrap: &[bool], src: &[u32], dst: &[u32]) -> Result<Self, CoreError> {
        let bad = |m: String| Err(CoreError::InvalidArgument(format!("adaptive routing: {m}")));
        if k.is_empty() || k.len() > MAX_DIMS || k.len() != wrap.len() {
            return bad(format!(
                "{} dimension sizes and {} wrap flags, expected 1..{MAX_DIMS} of each",
                k.len(),
                wrap.len()
            ));
        }
        if let Some(d) = k.iter().position(|&x| x == 0) {
            return bad(format!("dimension {d} has size 0, expected >= 1"));
        }
        let n: u64 = k.iter().map(|&x| x as u64).product();
        if n >= NO_LINK as u64 {
            return bad(format!("{n} nodes, expected fewer than 2^32"));
        }
        if src.len() != dst.len() {
            return bad(format!(
                "{} link sources for {} destinations",
                src.len(),
                dst.len()
            ));
        }
        let dims = k.len();
        let mut stride = vec![1u32; dims];
        for d in 1..dims {
            stride[d] = stride[d - 1] * k[d - 1];
        }
        let mut t = AdaptiveTorus {
            channels: Channels::Adaptive,
            tie: EscapeTie::Positive,
            k: k.to_vec(),
            wrap: wrap.to_vec(),
            stride,
            out: vec![NO_LINK; n as usize * 2 * dims],
            dir: vec![0; src.len()],
            src: src.to_vec(),
        };
        for (l, (&a, &b)) in src.iter().zip(dst).enumerate() {
            if a as u64 >= n || b as u64 >= n {
                return bad(format!(
                    "link {l} joins nodes {a} and {b}, expected nodes below {n}"
                ));
            }
            let moved: Vec<usize> = (0..dims)
                .filter(|&d| t.coord(a, d) != t.coord(b, d))
                .collect();
            let step = |d: usize| {
                let (ca, cb, kd) = (t.coord(a, d), t.coord(b, d), k[d]);
                if cb == (ca + 1) % kd && (wrap[d] || cb == ca + 1) {
                    Some(0u8)
                } else if ca == (cb + 1) % kd && (wrap[d] || ca == cb + 1) {
                    Some(1u8)
                } else {
                    None
                }
            };
            let Some((d, s)) = (match moved[..] {
                [d] => step(d).map(|s| (d, s)),
                _ => None,
            }) else {
                return bad(format!(
                    "link {l} joins nodes {a} and {b}, expected one step along one dimension"
                ));
            };
            t.dir[l] = (2 * d) as u8 + s;
            let slot = a as usize * 2 * dims + 2 * d + s as usize;
            if t.out[slot] == NO_LINK {
                t.out[slot] = l as u32;
            }
            // A ring of 2: the one neighbour is both + and −.
            if wrap[d] && k[d] == 2 {
                let other = a as usize * 2 * dims + 2 * d + (1 - s as usize);
                if t.out[other] == NO_LINK {
                    t.out[other] = l as u32;
                }
            }
        }
        for v in 0..n as u32 {
            for d in 0..dims {
                let c = t.coord(v, d);
                for s in 0..2 {
                    let needed = k[d] > 1 && (wrap[d] || if s == 0 { c + 1 < k[d] } else { c > 0 });
                    if needed && t.out[v as usize * 2 * dims + 2 * d + s] == NO_LINK {
                        return bad(format!(
                            "node {v} has no link in the {} direction of dimension {d}, expected one",
                            if s == 0 { '+' } else { '-' }
                        ));
                    }
                }
            }
        }
        Ok(t)
    }

    #[inline]
    fn coord(&self, v: u32, d: usize) -> u32 {
        v / self.stride[d] % self.k[d]
    }

    /// `(s, tie)`: the minimal direction along `d` from `c` to `t` (`c ≠ t`),
    /// and whether both directions are minimal.
    #[inline]
    fn way(&self, d: usize, c: u32, t: u32) -> (usize, bool) {
        if self.wrap[d] {
            let fwd = (t + self.k[d] - c) % self.k[d];
            let back = self.k[d] - fwd;
            (usize::from(fwd > back), fwd == back)
        } else {
            (usize::from(t < c), false)
        }
    }

    /// Push every productive output link of `at` toward `dst` onto `links`
    /// (none when `at == dst`).
    pub fn productive(&self, at: u32, dst: u32, links: &mut Vec<u32>) {
        let base = at as usize * 2 * self.k.len();
        for d in 0..self.k.len() {
            let (c, t) = (self.coord(at, d), self.coord(dst, d));
            if c == t {
                continue;
            }
            let (s, tie) = self.way(d, c, t);
            let first = self.out[base + 2 * d + s];
            links.push(first);
            let second = self.out[base + 2 * d + 1 - s];
            if tie && second != first {
                links.push(second);
            }
        }
    }

    /// The same geometry routing on `channels` with `tie`.
    pub fn with(mut self, channels: Channels, tie: EscapeTie) -> Self {
        self.channels = channels;
        self.tie = tie;
        self
    }

    /// The dimension-order output of `at` toward `dst` (`at ≠ dst`), `+` on
    /// a `k/2` tie.
    pub fn escape(&self, at: u32, dst: u32) -> u32 {
        self.escape_of(at, dst, None)
    }

    /// The escape output of packet `packet` (its sequence number) at `at`
    /// toward `dst` under [`Self::tie`].
    #[inline]
    pub fn escape_for(&self, at: u32, dst: u32, packet: u64) -> u32 {
        match self.tie {
            EscapeTie::Positive => self.escape_of(at, dst, None),
            EscapeTie::Random { seed } => {
                self.escape_of(at, dst, Some(hash3(seed, packet, 0x71E, 0) & 1))
            }
        }
    }

    /// Dimension order; on a tie `+` (`None`) or the direction `s` given.
    fn escape_of(&self, at: u32, dst: u32, tie: Option<u64>) -> u32 {
        let base = at as usize * 2 * self.k.len();
        for d in 0..self.k.len() {
            let (c, t) = (self.coord(at, d), self.coord(dst, d));
            if c != t {
                let (s, is_tie) = self.way(d, c, t);
                let s = match tie {
                    Some(bit) if is_tie => bit as usize,
                    _ => s,
                };
                return self.out[base + 2 * d + s];
            }
        }
        NO_LINK
    }

    /// Link `l`'s direction, `2d + s`.
    #[inline]
    pub fn dir(&self, l: u32) -> u8 {
        self.dir[l as usize]
    }

    /// The node link `l` leaves.
    #[inline]
    pub fn src(&self, l: u32) -> u32 {
        self.src[l as usize]
    }

    /// Does link `l` belong to a ring (wrapped, size > 2), whose escape
    /// channel a packet may enter only with room for two packets?
    #[inline]
    pub fn bubble(&self, l: u32) -> bool {
        let d = (self.dir[l as usize] / 2) as usize;
        self.wrap[d] && self.k[d] > 2
    }

    /// Is there any ring (so the escape buffers need ≥ 2 packets)?
    pub fn has_rings(&self) -> bool {
        self.k.iter().zip(&self.wrap).any(|(&k, &w)| w && k > 2)
    }

    /// Number of links the geometry was built from.
    pub fn n_links(&self) -> usize {
        self.dir.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::torus::{Tie, Torus};

    fn geometry(k: &[u64], wrap: &[bool]) -> (Torus, AdaptiveTorus) {
        let t = Torus::new(k, wrap).unwrap();
        let (src, dst) = t.links();
        let k32: Vec<u32> = k.iter().map(|&x| x as u32).collect();
        let a = AdaptiveTorus::new(&k32, wrap, &src, &dst).unwrap();
        (t, a)
    }

    /// Minimal hops from a to b, by coordinates (the reference).
    fn distance(k: &[u64], wrap: &[bool], a: u64, b: u64) -> u64 {
        let mut s = 1;
        let mut h = 0;
        for d in 0..k.len() {
            let (ca, cb) = (a / s % k[d], b / s % k[d]);
            let diff = ca.abs_diff(cb);
            h += if wrap[d] { diff.min(k[d] - diff) } else { diff };
            s *= k[d];
        }
        h
    }

    #[test]
    fn every_productive_link_shortens_the_distance_and_escape_is_dimension_order() {
        for (k, wrap) in [
            (vec![4u64, 4], vec![true, true]),
            (vec![5, 3, 2], vec![true, false, true]),
            (vec![6, 4], vec![false, true]),
        ] {
            let (t, a) = geometry(&k, &wrap);
            let (_, dst_of) = t.links();
            let n = t.n_nodes() as u32;
            let mut links = vec![];
            let order: Vec<usize> = (0..k.len()).collect();
            for s in 0..n {
                for d in 0..n {
                    links.clear();
                    a.productive(s, d, &mut links);
                    let here = distance(&k, &wrap, s as u64, d as u64);
                    // One productive direction per differing dimension, two on a k/2 tie.
                    assert!(links.len() as u64 >= (here > 0) as u64);
                    for &l in &links {
                        let next = dst_of[l as usize] as u64;
                        assert_eq!(
                            distance(&k, &wrap, next, d as u64) + 1,
                            here,
                            "{k:?} {s}->{d} via {l}"
                        );
                    }
                    if s != d {
                        let mut dor = vec![];
                        t.dor_into(&order, Tie::Positive, s as u64, d as u64, &mut dor);
                        assert_eq!(a.escape(s, d), dor[0], "{k:?} {s}->{d}");
                        assert!(links.contains(&a.escape(s, d)));
                    }
                }
            }
        }
    }

    #[test]
    fn a_tie_at_half_the_ring_is_productive_both_ways() {
        let (_, a) = geometry(&[4], &[true]);
        let mut links = vec![];
        a.productive(0, 2, &mut links);
        assert_eq!(links.len(), 2);
        assert_ne!(a.dir(links[0]), a.dir(links[1]));
        assert!(a.bubble(links[0]) && a.has_rings());
        let (_, m) = geometry(&[4, 2], &[false, true]);
        assert!(!m.has_rings());
    }

    #[test]
    fn a_link_that_is_not_one_step_is_refused_in_one_line() {
        let e = AdaptiveTorus::new(&[4], &[true], &[0], &[2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("link 0 joins nodes 0 and 2"), "{e}");
        let e = AdaptiveTorus::new(&[4], &[true], &[0], &[1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 0 has no link in the - direction"), "{e}");
        let e = AdaptiveTorus::new(&[], &[], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 1..16"), "{e}");
    }
}
