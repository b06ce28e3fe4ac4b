//! Open-loop synthetic traffic over any [`Fabric`], as interconnect
//! simulators offer it (BookSim: Dally & Towles, *Principles and Practices
//! of Interconnection Networks*, 2004, ch. 3 and 23; Jiang et al., ISPASS
//! 2013): `topocoll simulate traffic PATTERN --load L` (issue 17).
//!
//! # Time: slots
//! A *slot* is `T` ps, one packet's serialisation time on one link: the
//! wire size (payload + header) at the lowest bandwidth of the links that
//! leave an endpoint ([`injection_slot`]; on the uniform networks of the
//! tests that is every link). Slot `s` is the instant `s·T`.
//!
//! # Sources (Bernoulli injection)
//! At every slot `s`, every endpoint `e` (`0..n_endpoints`) independently
//! creates one single-packet message of `message_bytes` with probability
//! `load`: the *offered load* in packets per endpoint per slot, i.e. as a
//! fraction of one link's bandwidth (BookSim's packets/cycle/node). The
//! draw, and the destination, are a hash of `(seed, s, e)` ([`mix64`]): a
//! run is a pure function of its arguments. The message enters the fabric
//! at `s·T`; the fabric keeps it at the source until its first link takes it
//! (the source queue is unbounded and FIFO: open loop, nothing is dropped).
//! An endpoint the pattern maps to itself (the diagonal of `Transpose`)
//! creates nothing.
//!
//! # Patterns ([`Pattern`], Dally & Towles 2004 §3.2)
//! - `Uniform`: a destination uniform over the other `N − 1` endpoints.
//! - `Transpose`: `N = 2^(2m)`; the low and high `m` bits of `e` swap (the
//!   √N × √N matrix transpose).
//! - `BitComplement`: `N = 2^b`; `d = ¬e` on `b` bits.
//! - `Tornado`: on a k-ary n-cube (`dims`, dimension 0 fastest in the node
//!   number), every coordinate moves `x → (x + ⌈k/2⌉ − 1) mod k`.
//! - `HotSpot`: with probability `hot_fraction` the packet goes to
//!   `hot_node` (from any other endpoint), else uniform as above.
//!
//! # Measurement (warm-up, window, drain)
//! Slots `[0, W)` warm the network up; packets created in `[W, W + M)` are
//! *measured*. Generation goes on after the window (the measured packets
//! see a loaded network) until every measured packet arrived, or until
//! `drain_slots` slots after the window, whichever is first.
//! - accepted throughput: packets of any age that *arrived* in
//!   `[W·T, (W+M)·T)`, per endpoint per slot;
//! - latency: creation (`s·T`) to arrival of the last byte, source queueing
//!   included, over the measured packets that arrived (mean, and the 99th
//!   percentile by nearest rank);
//! - saturated: the source queues grew without bound, i.e. the window
//!   created `C` packets and accepted `A` with `C − A > max(5 % · C, 3√C)`
//!   (the backlog grew by more than chance allows), or the drain did not
//!   finish (then [`TrafficOutcome::drain_error`] says so in one line and
//!   the latencies cover only the measured packets that did arrive).
//!
//! A fabric that stops while packets wait (no next event: a deadlock) ends
//! the run with an error; the caller may name the cycle (the packet
//! fabric's `stalled`).

use super::core::Poll;
use super::fabric::{ceil_ps, Fabric, Links, Message, Ps, PS_PER_S};
use super::run::Routes;
use crate::error::CoreError;
use crate::routing::graph::mix64;

/// Most packets one run may create (ids, and 4 B of creation slot each).
pub const MAX_PACKETS: u64 = 1 << 25;
/// A backlog growth above this fraction of the window's packets (and above
/// three standard deviations of their count) is saturation.
pub const SATURATION_DEFICIT: f64 = 0.05;

/// Destination pattern of the synthetic sources (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Uniform,
    Transpose,
    BitComplement,
    Tornado,
    HotSpot,
}

/// One synthetic-traffic run (module doc for the semantics).
#[derive(Clone, Debug)]
pub struct TrafficConfig {
    pub pattern: Pattern,
    /// Offered load, packets per endpoint per slot, in (0, 1].
    pub load: f64,
    pub n_endpoints: u32,
    /// Payload of every message (one packet: at most the packet size).
    pub message_bytes: u64,
    /// The slot `T`, ps (> 0): [`injection_slot`].
    pub slot: Ps,
    /// `HotSpot`: fraction of packets to `hot_node`, in [0, 1].
    pub hot_fraction: f64,
    pub hot_node: u32,
    /// `Tornado`: the torus radices, dimension 0 fastest; product `n_endpoints`.
    pub dims: Vec<u32>,
    pub warmup_slots: u64,
    /// ≥ 1.
    pub measure_slots: u64,
    pub drain_slots: u64,
    pub seed: u64,
    /// Mean latency (ps) of the measured packets above which the run counts
    /// as saturated (BookSim's `latency_thres`); 0: no such test.
    pub latency_threshold: Ps,
}

/// What a run measured (times in ps, rates in packets per endpoint per slot).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrafficOutcome {
    pub slot: Ps,
    /// The load asked for.
    pub offered: f64,
    /// Packets created in the window per endpoint per slot (the realised
    /// offered load; below `offered` where the pattern silences endpoints).
    pub created: f64,
    pub accepted: f64,
    /// Packets created in the window.
    pub measured: u64,
    /// Of those, arrived.
    pub delivered: u64,
    pub mean_latency: f64,
    pub p99_latency: Ps,
    pub saturated: bool,
    /// Which tests said saturated: `backlog`, `latency`, `drain`, joined by
    /// `+` (empty: none).
    pub saturated_by: String,
    /// Packets created before the window's end and not arrived by it.
    pub backlog: u64,
    /// Slots run after the window.
    pub drain_slots: u64,
    /// One line when the drain bound was hit; empty otherwise.
    pub drain_error: String,
    pub packets_created: u64,
}

fn bad<T>(m: String) -> Result<T, CoreError> {
    Err(CoreError::InvalidArgument(format!(
        "synthetic traffic: {m}"
    )))
}

/// The slot: serialisation of `wire_bytes` at the lowest bandwidth among the
/// links leaving an endpoint (`link_src[l] < n_endpoints`).
pub fn injection_slot(
    links: &Links,
    link_src: &[u32],
    n_endpoints: u32,
    wire_bytes: u64,
) -> Result<Ps, CoreError> {
    let bw = link_src
        .iter()
        .zip(&links.bandwidth)
        .filter(|(&s, _)| s < n_endpoints)
        .map(|(_, &b)| b)
        .fold(f64::INFINITY, f64::min);
    if !(bw.is_finite() && bw > 0.0) {
        return bad(format!(
            "no link with a finite positive bandwidth leaves an endpoint (lowest {bw} B/s)"
        ));
    }
    let t = ceil_ps(wire_bytes as f64 * PS_PER_S / bw);
    if t == 0 {
        return bad(format!(
            "a {wire_bytes} B packet at {bw} B/s takes 0 ps, expected a slot of at least 1 ps"
        ));
    }
    Ok(t)
}

/// The destinations of one pattern, validated.
struct Destinations {
    pattern: Pattern,
    n: u32,
    /// Fixed patterns: `fixed[e]` (`e` itself: silent).
    fixed: Vec<u32>,
    hot_fraction: f64,
    hot_node: u32,
}

/// `r` scaled to `[0, m)` (multiply-shift: no modulo bias worth the name).
#[inline]
fn below(r: u64, m: u64) -> u64 {
    ((r as u128 * m as u128) >> 64) as u64
}

/// `r` as a uniform in `[0, 1)`.
#[inline]
fn unit(r: u64) -> f64 {
    (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl Destinations {
    fn new(cfg: &TrafficConfig) -> Result<Self, CoreError> {
        let n = cfg.n_endpoints;
        let mut fixed = Vec::new();
        let log2 = n.trailing_zeros();
        match cfg.pattern {
            Pattern::Uniform | Pattern::HotSpot => {}
            Pattern::Transpose => {
                if !n.is_power_of_two() || !log2.is_multiple_of(2) {
                    return bad(format!(
                        "transpose on {n} endpoints, expected an even power of two (4, 16, 64, …: a square matrix of endpoints)"
                    ));
                }
                let m = log2 / 2;
                let lo = (1u32 << m) - 1;
                fixed = (0..n)
                    .map(|e| ((e >> m) & lo) | ((e << m) & (lo << m)))
                    .collect();
            }
            Pattern::BitComplement => {
                if !n.is_power_of_two() {
                    return bad(format!(
                        "bit-complement on {n} endpoints, expected a power of two"
                    ));
                }
                fixed = (0..n).map(|e| !e & (n - 1)).collect();
            }
            Pattern::Tornado => {
                let dims = &cfg.dims;
                let product = dims.iter().try_fold(1u64, |p, &k| p.checked_mul(k as u64));
                if dims.is_empty() || dims.contains(&0) || product != Some(n as u64) {
                    return bad(format!(
                        "tornado with torus dims {dims:?} on {n} endpoints, expected the radices of a k-ary n-cube whose product is {n}"
                    ));
                }
                if dims.iter().all(|&k| k.div_ceil(2) <= 1) {
                    return bad(format!(
                        "tornado on torus dims {dims:?} moves no packet (⌈k/2⌉ − 1 = 0 in every dimension), expected a radix of at least 3"
                    ));
                }
                fixed = (0..n)
                    .map(|e| {
                        let (mut v, mut stride, mut d) = (e, 1u32, 0u32);
                        for &k in dims {
                            let x = v % k;
                            v /= k;
                            d += ((x + k.div_ceil(2) - 1) % k) * stride;
                            stride = stride.wrapping_mul(k);
                        }
                        d
                    })
                    .collect();
            }
        }
        if matches!(cfg.pattern, Pattern::Uniform | Pattern::HotSpot) && n < 2 {
            return bad(format!(
                "{:?} traffic on {n} endpoint(s), expected at least 2",
                cfg.pattern
            ));
        }
        if cfg.pattern == Pattern::HotSpot {
            if cfg.hot_node >= n {
                return bad(format!(
                    "hot node {}, expected an endpoint 0..{n}",
                    cfg.hot_node
                ));
            }
            if !(0.0..=1.0).contains(&cfg.hot_fraction) {
                return bad(format!("hot fraction {}, expected 0..1", cfg.hot_fraction));
            }
        }
        Ok(Destinations {
            pattern: cfg.pattern,
            n,
            fixed,
            hot_fraction: cfg.hot_fraction,
            hot_node: cfg.hot_node,
        })
    }

    /// Destination of endpoint `e` given two random words; `None`: silent.
    #[inline]
    fn pick(&self, e: u32, r1: u64, r2: u64) -> Option<u32> {
        let uniform = |r: u64| {
            let d = below(r, self.n as u64 - 1) as u32;
            d + (d >= e) as u32
        };
        let d = match self.pattern {
            Pattern::Uniform => uniform(r1),
            Pattern::HotSpot => {
                if e != self.hot_node && unit(r2) < self.hot_fraction {
                    self.hot_node
                } else {
                    uniform(r1)
                }
            }
            _ => self.fixed[e as usize],
        };
        (d != e).then_some(d)
    }
}

impl TrafficConfig {
    fn validate(&self) -> Result<(), CoreError> {
        if !(self.load > 0.0 && self.load <= 1.0) {
            return bad(format!(
                "load {}, expected an offered load in (0, 1] packets per endpoint per slot",
                self.load
            ));
        }
        if self.slot == 0 {
            return bad("slot of 0 ps, expected at least 1 ps".into());
        }
        if self.measure_slots == 0 {
            return bad("measure_slots=0, expected a window of at least 1 slot".into());
        }
        let slots = self
            .warmup_slots
            .checked_add(self.measure_slots)
            .and_then(|s| s.checked_add(self.drain_slots))
            .filter(|&s| s <= u32::MAX as u64);
        let most = slots.and_then(|s| s.checked_mul(self.n_endpoints as u64));
        if most.is_none_or(|p| (p as f64 * self.load).ceil() as u64 > MAX_PACKETS) {
            return bad(format!(
                "{} endpoints × ({} + {} + {} slots) at load {} may create more than {MAX_PACKETS} packets, expected shorter windows",
                self.n_endpoints, self.warmup_slots, self.measure_slots, self.drain_slots, self.load
            ));
        }
        Ok(())
    }
}

/// Run synthetic traffic on `fabric` (fresh, its clock at 0), routes from
/// `routes`.
///
/// # Errors
/// [`CoreError::InvalidArgument`] for a bad configuration (one line naming
/// the value), a routing error, more than [`MAX_PACKETS`] packets, or a
/// fabric that stops with packets in flight (a deadlock).
pub fn run_traffic(
    fabric: &mut dyn Fabric,
    routes: &mut dyn Routes,
    cfg: &TrafficConfig,
) -> Result<TrafficOutcome, CoreError> {
    run_traffic_ties(fabric, routes, None, cfg)
}

/// [`run_traffic`] where each packet takes its route from `routes` or, on a
/// fair coin of `(seed, packet id)`, from `alt` (the same routing with the
/// other tie rule: `--tie random`, a tie broken per packet).
///
/// # Errors
/// As [`run_traffic`].
pub fn run_traffic_ties(
    fabric: &mut dyn Fabric,
    routes: &mut dyn Routes,
    mut alt: Option<&mut dyn Routes>,
    cfg: &TrafficConfig,
) -> Result<TrafficOutcome, CoreError> {
    cfg.validate()?;
    let tie_key = mix64(cfg.seed ^ 0x7469_6573_0000_0001);
    let dest = Destinations::new(cfg)?;
    let n = cfg.n_endpoints;
    let t_slot = cfg.slot;
    let (w, m) = (cfg.warmup_slots, cfg.measure_slots);
    let (lo, hi) = (w * t_slot, (w + m) * t_slot);
    let key = mix64(cfg.seed ^ 0x7261_6666_6963_0001);
    // creation slot of every packet, by message id
    let mut birth: Vec<u32> = Vec::new();
    let (mut arrived, mut links, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    let mut latencies: Vec<Ps> = Vec::new();
    let (mut in_flight, mut accepted, mut measured, mut created_before_hi, mut arrived_before_hi) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut slot = 0u64;
    let mut poll = Poll::default();
    let drained = loop {
        poll.check()?;
        let now = slot * t_slot;
        fabric.advance(now, &mut arrived);
        for &(t, id) in &arrived {
            in_flight -= 1;
            if t < hi {
                arrived_before_hi += 1;
                accepted += (t >= lo) as u64;
            }
            let b = birth[id as usize] as u64;
            if (w..w + m).contains(&b) {
                latencies.push(t - b * t_slot);
            }
        }
        arrived.clear();
        if slot >= w + m {
            if latencies.len() as u64 == measured {
                break true;
            }
            if slot >= w + m + cfg.drain_slots {
                break false;
            }
        }
        if in_flight > 0 && fabric.next_arrival().is_none() {
            return bad(format!(
                "the network stopped at t={now} ps with {in_flight} packets in flight (deadlock)"
            ));
        }
        for e in 0..n {
            let r0 = mix64(key ^ (slot * n as u64 + e as u64));
            if unit(r0) >= cfg.load {
                continue;
            }
            let r1 = mix64(r0);
            let Some(d) = dest.pick(e, r1, mix64(r1)) else {
                continue;
            };
            let id = birth.len() as u64;
            if id >= MAX_PACKETS {
                return bad(format!(
                    "more than {MAX_PACKETS} packets created, expected shorter windows"
                ));
            }
            birth.push(slot as u32);
            links.clear();
            weights.clear();
            match alt.as_deref_mut() {
                Some(a) if mix64(tie_key ^ id) & 1 == 1 => {
                    a.route(e, d, &mut links, &mut weights)?
                }
                _ => routes.route(e, d, &mut links, &mut weights)?,
            }
            fabric.inject(
                now,
                &Message {
                    id: id as u32,
                    src: e,
                    dst: d,
                    bytes: cfg.message_bytes,
                    links: &links,
                    weights: &weights,
                },
            );
            in_flight += 1;
            if slot < w + m {
                created_before_hi += 1;
                measured += (slot >= w) as u64;
            }
        }
        slot += 1;
    };
    let per = (n as u64 * m) as f64;
    let deficit = measured as f64 - accepted as f64;
    let grew = deficit > (SATURATION_DEFICIT * measured as f64).max(3.0 * (measured as f64).sqrt());
    let delivered = latencies.len() as u64;
    let mean_latency = if delivered == 0 {
        0.0
    } else {
        latencies.iter().map(|&l| l as u128).sum::<u128>() as f64 / delivered as f64
    };
    latencies.sort_unstable();
    let p99_latency = if delivered == 0 {
        0
    } else {
        latencies[((delivered as f64 * 0.99).ceil() as usize).max(1) - 1]
    };
    let slow = cfg.latency_threshold > 0 && mean_latency > cfg.latency_threshold as f64;
    let saturated_by = [(grew, "backlog"), (slow, "latency"), (!drained, "drain")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, what)| *what)
        .collect::<Vec<_>>()
        .join("+");
    let drain_error = if drained {
        String::new()
    } else {
        format!(
            "synthetic traffic: {} of {measured} measured packets still in flight {} slots after the window; offered load {} saturates the network (latencies cover the delivered ones only)",
            measured - delivered,
            cfg.drain_slots,
            cfg.load
        )
    };
    Ok(TrafficOutcome {
        slot: t_slot,
        offered: cfg.load,
        created: measured as f64 / per,
        accepted: accepted as f64 / per,
        measured,
        delivered,
        mean_latency,
        p99_latency,
        saturated: !drained || grew || slow,
        saturated_by,
        backlog: created_before_hi - arrived_before_hi,
        drain_slots: slot - (w + m),
        drain_error,
        packets_created: birth.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::packet::{PacketConfig, PacketFabric};

    fn config(pattern: Pattern, n: u32, load: f64) -> TrafficConfig {
        TrafficConfig {
            pattern,
            load,
            n_endpoints: n,
            message_bytes: 1000,
            slot: 1_000_000,
            hot_fraction: 0.0,
            hot_node: 0,
            dims: vec![],
            warmup_slots: 100,
            measure_slots: 1000,
            drain_slots: 1000,
            seed: 1,
            latency_threshold: 0,
        }
    }

    fn packet_config() -> PacketConfig {
        PacketConfig {
            packet_bytes: 1000,
            header_bytes: 0,
            ..crate::engine::packet::tests::config()
        }
    }

    /// A star: endpoint e reaches switch `n` on link e and is reached on
    /// link n + e (the event loop's test crossbar); 1 GB/s (1000 B: one
    /// slot, 1 µs), 1 ns of latency.
    use crate::engine::run::tests::Crossbar as Star;

    fn star(n: u32) -> PacketFabric {
        let links = Links {
            bandwidth: vec![1e9; 2 * n as usize],
            latency: vec![1000; 2 * n as usize],
        };
        let dst = (0..n).map(|_| n).chain(0..n).collect();
        PacketFabric::new(links, dst, n as usize, packet_config()).unwrap()
    }

    fn dests(pattern: Pattern, n: u32, dims: &[u32]) -> Vec<Option<u32>> {
        let cfg = TrafficConfig {
            dims: dims.to_vec(),
            ..config(pattern, n, 1.0)
        };
        let d = Destinations::new(&cfg).unwrap();
        (0..n).map(|e| d.pick(e, 0, 0)).collect()
    }

    #[test]
    fn fixed_patterns_by_hand() {
        // Transpose, N = 16 (4 × 4): e = 4y + x → 4x + y; 1 → 4, 6 → 9,
        // diagonal (0, 5, 10, 15) silent.
        let t = dests(Pattern::Transpose, 16, &[]);
        assert_eq!(
            (t[1], t[6], t[4], t[14]),
            (Some(4), Some(9), Some(1), Some(11))
        );
        assert_eq!((t[0], t[5], t[10], t[15]), (None, None, None, None));
        // Bit-complement, N = 8: 3 = 011 → 100 = 4, 0 → 7.
        let b = dests(Pattern::BitComplement, 8, &[]);
        assert_eq!((b[3], b[0], b[7]), (Some(4), Some(7), Some(0)));
        // Tornado on 8 × 8 (shift ⌈8/2⌉ − 1 = 3): (1, 2) = 17 → (4, 5) = 44;
        // (6, 7) = 62 → (1, 2) = 17. On a ring of 5 (shift 2): 4 → 1.
        let k = dests(Pattern::Tornado, 64, &[8, 8]);
        assert_eq!((k[17], k[62]), (Some(44), Some(17)));
        assert_eq!(dests(Pattern::Tornado, 5, &[5])[4], Some(1));
        // A 2 × 5 torus: dimension 0 (k = 2) stays, dimension 1 shifts 2.
        assert_eq!(dests(Pattern::Tornado, 10, &[2, 5])[1], Some(5));
    }

    #[test]
    fn uniform_never_picks_the_source_and_covers_the_others() {
        let cfg = config(Pattern::Uniform, 5, 1.0);
        let d = Destinations::new(&cfg).unwrap();
        let mut count = [[0u32; 5]; 5];
        for i in 0..50_000u64 {
            let e = (i % 5) as u32;
            let r = mix64(i);
            count[e as usize][d.pick(e, r, mix64(r)).unwrap() as usize] += 1;
        }
        for (e, row) in count.iter().enumerate() {
            assert_eq!(row[e], 0);
            // 10 000 draws over 4 destinations: 2 500 ± 43 (σ)
            assert!(
                row.iter()
                    .enumerate()
                    .all(|(d, &c)| d == e || (2300..2700).contains(&c)),
                "{row:?}"
            );
        }
        // Hot spot, h = 0.5 to node 2: from e ≠ 2, P(2) = 0.5 + 0.5/4 = 0.625.
        let cfg = TrafficConfig {
            hot_fraction: 0.5,
            hot_node: 2,
            ..config(Pattern::HotSpot, 5, 1.0)
        };
        let d = Destinations::new(&cfg).unwrap();
        let hits = (0..40_000u64)
            .filter(|&i| {
                let r = mix64(i);
                d.pick(0, r, mix64(r)) == Some(2)
            })
            .count();
        assert!((24_500..25_500).contains(&hits), "{hits}");
    }

    #[test]
    fn bad_configurations_are_refused_in_one_line() {
        let cases = [
            (
                config(Pattern::Transpose, 8, 0.5),
                "transpose on 8 endpoints",
            ),
            (
                config(Pattern::Transpose, 12, 0.5),
                "transpose on 12 endpoints",
            ),
            (
                config(Pattern::BitComplement, 12, 0.5),
                "bit-complement on 12 endpoints",
            ),
            (
                config(Pattern::Tornado, 64, 0.5),
                "tornado with torus dims []",
            ),
            (
                TrafficConfig {
                    dims: vec![2, 2],
                    ..config(Pattern::Tornado, 4, 0.5)
                },
                "moves no packet",
            ),
            (config(Pattern::Uniform, 4, 0.0), "load 0, expected"),
            (config(Pattern::Uniform, 4, 1.5), "load 1.5, expected"),
            (
                TrafficConfig {
                    hot_node: 4,
                    ..config(Pattern::HotSpot, 4, 0.5)
                },
                "hot node 4",
            ),
            (
                TrafficConfig {
                    measure_slots: 1 << 30,
                    ..config(Pattern::Uniform, 4, 0.5)
                },
                "may create more than",
            ),
        ];
        for (cfg, want) in cases {
            let mut f = star(cfg.n_endpoints);
            let err = run_traffic(&mut f, &mut Star(cfg.n_endpoints), &cfg).unwrap_err();
            let line = err.to_string();
            assert!(line.contains(want) && !line.contains('\n'), "{line}");
        }
    }

    #[test]
    fn two_endpoints_at_full_load_accept_one_packet_per_slot_at_the_lone_latency() {
        // Uniform on 2 endpoints: each sends every slot to the other over its
        // own up-link and the other's down-link; each link carries exactly
        // one 1 µs packet per 1 µs slot, so nothing ever waits: accepted = 1
        // exactly, every latency = 2 × 1 ns + one serialisation = 1 002 000 ps.
        let cfg = config(Pattern::Uniform, 2, 1.0);
        let out = run_traffic(&mut star(2), &mut Star(2), &cfg).unwrap();
        assert_eq!(
            (out.accepted, out.created, out.measured, out.delivered),
            (1.0, 1.0, 2000, 2000)
        );
        assert_eq!(
            (out.mean_latency, out.p99_latency),
            (1_002_000.0, 1_002_000)
        );
        assert!(!out.saturated && out.drain_error.is_empty());
        // in flight at the window's end: the two packets created at the slot before
        assert_eq!(out.backlog, 2);
    }

    #[test]
    fn half_load_without_contention_keeps_the_lone_latency() {
        // Same star, load 0.5: packets never meet (one source per link, at
        // most one per slot), so every latency is still 1 002 000 ps and
        // accepted ≈ offered: 2000 Bernoulli(0.5) draws, σ ≈ 0.011 per slot.
        let cfg = config(Pattern::Uniform, 2, 0.5);
        let out = run_traffic(&mut star(2), &mut Star(2), &cfg).unwrap();
        assert_eq!(
            (out.mean_latency, out.p99_latency),
            (1_002_000.0, 1_002_000)
        );
        assert!((out.accepted - 0.5).abs() < 0.04, "{}", out.accepted);
        assert!((out.accepted - out.created).abs() <= 2.0 / 2000.0);
        assert!(!out.saturated);
    }

    #[test]
    fn a_hot_spot_saturates_and_the_drain_is_bounded() {
        // Star of 3, every packet of endpoints 1 and 2 to endpoint 0, which
        // sends uniformly to 1 or 2: the down-link to 0 delivers 1 packet per
        // slot of the 2 offered, the down-links to 1 and 2 together 1 of 1:
        // accepted = 2/3 per endpoint per slot, the sources of 1 and 2 grow
        // by 1/2 a slot each, and their measured packets cannot drain in
        // 100 slots.
        let cfg = TrafficConfig {
            hot_fraction: 1.0,
            drain_slots: 100,
            ..config(Pattern::HotSpot, 3, 1.0)
        };
        let out = run_traffic(&mut star(3), &mut Star(3), &cfg).unwrap();
        assert!((out.accepted - 2.0 / 3.0).abs() < 0.005, "{}", out.accepted);
        assert!(out.saturated);
        assert_eq!(out.drain_slots, 100);
        assert!(
            out.drain_error.contains("saturates the network"),
            "{}",
            out.drain_error
        );
        assert!(!out.drain_error.contains('\n'));
        // backlog ≈ (2 − 1) packets per slot over the 1100 slots
        assert!((1000..1200).contains(&out.backlog), "{}", out.backlog);
    }

    #[test]
    fn a_latency_threshold_says_saturated_and_which_test_fired() {
        // The two-endpoint run above: every latency is exactly 1 002 000 ps,
        // no backlog growth, drained. A threshold just below the mean fires
        // alone; one equal to it does not (saturated means mean > threshold,
        // BookSim's `latency_thres` test).
        let base = config(Pattern::Uniform, 2, 1.0);
        let below = TrafficConfig {
            latency_threshold: 1_001_999,
            ..base.clone()
        };
        let out = run_traffic(&mut star(2), &mut Star(2), &below).unwrap();
        assert!(out.saturated);
        assert_eq!(out.saturated_by, "latency");
        let equal = TrafficConfig {
            latency_threshold: 1_002_000,
            ..base
        };
        let out = run_traffic(&mut star(2), &mut Star(2), &equal).unwrap();
        assert!(!out.saturated);
        assert_eq!(out.saturated_by, "");
        // The hot spot grows its backlog and cannot drain: both named.
        let hot = TrafficConfig {
            hot_fraction: 1.0,
            drain_slots: 100,
            ..config(Pattern::HotSpot, 3, 1.0)
        };
        let out = run_traffic(&mut star(3), &mut Star(3), &hot).unwrap();
        assert_eq!(out.saturated_by, "backlog+drain");
    }

    /// Routes of the star, counting its calls.
    struct Counting(u32, u64);

    impl Routes for Counting {
        fn route(
            &mut self,
            s: u32,
            d: u32,
            l: &mut Vec<u32>,
            w: &mut Vec<f64>,
        ) -> Result<(), CoreError> {
            self.1 += 1;
            Star(self.0).route(s, d, l, w)
        }
    }

    #[test]
    fn random_ties_take_either_routing_by_a_seeded_coin_per_packet() {
        // 8 endpoints at load 0.5 for 1100 + drain slots: each packet asks
        // one of the two routings, a fair coin per packet id: the second
        // gets a binomial share (σ = √(n/4)); the same seed, the same split.
        let cfg = config(Pattern::Uniform, 8, 0.5);
        let split = |seed: u64| {
            let cfg = TrafficConfig {
                seed,
                ..cfg.clone()
            };
            let (mut a, mut b) = (Counting(8, 0), Counting(8, 0));
            let out = run_traffic_ties(&mut star(8), &mut a, Some(&mut b), &cfg).unwrap();
            assert_eq!(a.1 + b.1, out.packets_created);
            (a.1, b.1)
        };
        let (a, b) = split(3);
        let n = (a + b) as f64;
        assert!(
            (b as f64 - n / 2.0).abs() < 4.0 * (n / 4.0).sqrt(),
            "{a} {b}"
        );
        assert_eq!(split(3), (a, b));
        assert_ne!(split(4), (a, b));
    }

    #[test]
    fn identical_seeds_give_identical_runs() {
        let cfg = config(Pattern::Uniform, 8, 0.7);
        let a = run_traffic(&mut star(8), &mut Star(8), &cfg).unwrap();
        let b = run_traffic(&mut star(8), &mut Star(8), &cfg).unwrap();
        assert_eq!(a, b);
        let c = run_traffic(
            &mut star(8),
            &mut Star(8),
            &TrafficConfig { seed: 2, ..cfg },
        )
        .unwrap();
        assert_ne!(a, c);
    }

    /// A fabric that takes packets and never moves them.
    struct Stuck(Vec<f64>);

    impl Fabric for Stuck {
        fn inject(&mut self, _: Ps, _: &Message) {}
        fn next_arrival(&mut self) -> Option<Ps> {
            None
        }
        fn advance(&mut self, _: Ps, _: &mut Vec<(Ps, u32)>) {}
        fn link_bytes(&self) -> &[f64] {
            &self.0
        }
    }

    #[test]
    fn a_fabric_that_stops_is_an_error_not_a_hang() {
        let cfg = config(Pattern::Uniform, 4, 0.5);
        let err = run_traffic(&mut Stuck(vec![]), &mut Star(4), &cfg).unwrap_err();
        assert!(
            err.to_string().contains("packets in flight (deadlock)"),
            "{err}"
        );
    }

    #[test]
    fn the_slot_is_one_packet_at_the_slowest_injection_link() {
        // links 0, 1 leave endpoints (2 and 1 GB/s), link 2 leaves switch 2
        // (0.5 GB/s, not an injection link): 1000 B at 1 GB/s = 1 µs.
        let links = Links {
            bandwidth: vec![2e9, 1e9, 0.5e9],
            latency: vec![0; 3],
        };
        assert_eq!(
            injection_slot(&links, &[0, 1, 2], 2, 1000).unwrap(),
            1_000_000
        );
    }
}
