//! The typed edge of a run's configuration: `topocoll.sim.engine`'s
//! dataclasses cross as themselves, read attribute by attribute
//! (`FromPyObject`), and become the core's [`RunConfig`] here, once.
//!
//! - `EngineConfig(model, options, noise, os_noise, trace)` with its
//!   `EngineOptions` and `PacketOptions` (SI units: s, s per byte, B/s),
//!   a `Platform` (α, reduction bandwidth), and for the packet model a
//!   `PacketWiring` (`topocoll.sim.wiring`): the network facts the model
//!   needs, whose routing scheme is one of four classes, so that a VC
//!   scheme without its routing (or the reverse) cannot be built;
//! - names of exclusive choices (`"rounds"`, `"cm02"`, `"age"`, ...) become
//!   Rust enums here, and an unknown one is a one-line `ValueError`;
//! - every unit conversion (s → ps, B/s → ps per byte) is here and only
//!   here. Defaults and bounds live in the dataclasses (Python validates
//!   each value when it is built, with the user's words); this side takes
//!   every field as given and checks only what would break the engine.

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::engine::adaptive::{AdaptiveTorus, Channels, EscapeTie};
use crate::engine::config::{ModelConfig, RunConfig};
use crate::engine::core::{Background, Costs, Rendezvous, Small, Sync};
use crate::engine::fabric::{Ps, PS_PER_S};
use crate::engine::flow::Sharing;
use crate::engine::loggops::LogGopsNic;
use crate::engine::noise::Detours;
use crate::engine::packet::{
    AllocKind, Allocator, BglNic, FlitConfig, IbArbiter, IbHca, Nic, PacketConfig, Placement,
    Queues, Switching,
};
use crate::engine::ugal::UgalDragonfly;

/// Longest single time a run takes, s: 10^6 s (about 11.6 days) is 10^18
/// ps, an eighteenth of the 64-bit ps clock, so sums of a few such times
/// cannot wrap it (`topocoll.sim.engine.MAX_TIME_S`, checked there first).
const MAX_TIME_S: f64 = 1e6;

/// Seconds to ps as Python's `int(round(s * 1e12))` (ties to even), 0 for
/// s ≤ 0; `what` seconds that are not finite or exceed [`MAX_TIME_S`] are
/// a one-line error (a cast would saturate at 2^64 − 1 ps and the clock's
/// sums would wrap: 3·10^7 s once simulated as 7 µs).
fn ps(seconds: f64, what: &str) -> PyResult<Ps> {
    if seconds.is_nan() || seconds > MAX_TIME_S {
        return Err(PyValueError::new_err(format!(
            "{what}={seconds} s, expected a finite time in 0..{MAX_TIME_S:e} s (the engine counts \
             picoseconds in 64 bits)"
        )));
    }
    Ok(if seconds > 0.0 {
        (seconds * PS_PER_S).round_ties_even() as Ps
    } else {
        0
    })
}

/// One of `names` (the Python spelling of each variant), else a one-line
/// error naming the value and what was expected.
fn named<T: Copy>(ob: &Bound<'_, PyAny>, what: &str, names: &[(&str, T)]) -> PyResult<T> {
    let s: String = ob.extract()?;
    names
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            PyValueError::new_err(format!("{what}={s:?}, expected one of {}", all.join(", ")))
        })
}

/// The event-driven models (`topocoll.sim.engine.EVENT_MODELS`).
#[derive(Clone, Copy)]
enum Model {
    LogGops,
    Flow,
    Congestion,
    Packet,
}

macro_rules! from_name {
    ($t:ty, $what:literal, [$(($n:literal, $v:expr)),+ $(,)?]) => {
        impl<'py> FromPyObject<'py> for $t {
            fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
                named(ob, $what, &[$(($n, $v)),+])
            }
        }
    };
}

from_name!(
    Model,
    "model",
    [
        ("loggops", Model::LogGops),
        ("flow", Model::Flow),
        ("congestion", Model::Congestion),
        ("packet", Model::Packet)
    ]
);
from_name!(
    Sync,
    "sync",
    [
        ("deps", Sync::Deps),
        ("rounds", Sync::Rounds),
        ("barrier", Sync::Barrier)
    ]
);
from_name!(
    Small,
    "small_sends",
    [("eager", Small::Eager), ("detached", Small::Detached)]
);
from_name!(
    Rendezvous,
    "rendezvous",
    [
        ("direct", Rendezvous::Direct),
        ("handshake", Rendezvous::Handshake)
    ]
);
from_name!(
    Sharing,
    "sharing",
    [("maxmin", Sharing::MaxMin), ("cm02", Sharing::Cm02)]
);
from_name!(
    Allocator,
    "allocator",
    [
        ("round-robin", Allocator::RoundRobin),
        ("age", Allocator::Age)
    ]
);
from_name!(
    Queues,
    "queues",
    [
        ("input", Queues::InputQueued),
        ("voq", Queues::VirtualOutput)
    ]
);
from_name!(
    NicKind,
    "nic",
    [
        ("simple", NicKind::Simple),
        ("ib", NicKind::Ib),
        ("bgl", NicKind::Bgl)
    ]
);
from_name!(
    IbArbiter,
    "ib_arbiter",
    [
        ("random", IbArbiter::Random),
        ("round-robin", IbArbiter::RoundRobin)
    ]
);
from_name!(
    Placement,
    "bgl_placement",
    [("direction", Placement::Direction), ("any", Placement::Any)]
);

/// `PacketOptions.nic`: the endpoint model's name (`Nic` carries its
/// parameters).
#[derive(Clone, Copy)]
enum NicKind {
    Simple,
    Ib,
    Bgl,
}
from_name!(
    Switching,
    "switching",
    [
        ("wormhole", Switching::Wormhole),
        ("cut-through", Switching::CutThrough)
    ]
);
from_name!(
    AllocKind,
    "flit allocator",
    [
        ("islip", AllocKind::Islip),
        ("input-first", AllocKind::InputFirst),
        ("output-first", AllocKind::OutputFirst)
    ]
);

/// `topocoll.sim.engine.EngineOptions`.
#[derive(FromPyObject)]
struct Options {
    sync: Sync,
    o_recv: f64,
    o_per_byte: f64,
    g: f64,
    #[pyo3(attribute("G"))]
    big_g: f64,
    #[pyo3(attribute("L"))]
    l: f64,
    eager: u64,
    small_sends: Small,
    envelope_bytes: u64,
    rendezvous: Rendezvous,
    ports: usize,
    nic_bandwidth: f64,
    sharing: Sharing,
    copy_bandwidth: f64,
    window: u32,
    packet: Packet,
}

/// `topocoll.sim.packet.PacketOptions`.
#[derive(FromPyObject)]
struct Packet {
    packet_bytes: u64,
    header_bytes: u64,
    vcs: u8,
    buffer_packets: u32,
    router_delay: f64,
    allocator: Allocator,
    queues: Queues,
    injection_packets: u32,
    injection_fifos: u32,
    eject_handling: f64,
    nic: NicKind,
    ib_qps: u32,
    ib_arbiter: IbArbiter,
    ib_seed: u64,
    bgl_fifos: u32,
    bgl_fifo_packets: u32,
    bgl_burst: u32,
    bgl_placement: Placement,
    bgl_cpu_links: f64,
    flit_bytes: u64,
    buffer_flits: u32,
    switching: Switching,
    pipeline: (u32, u32, u32, u32),
    vc_allocator: AllocKind,
    sw_allocator: AllocKind,
    alloc_iters: u8,
    speculative: bool,
    wait_tail_credit: bool,
    credit_delay: u32,
    terminal_cycles: u32,
}

/// `topocoll.sim.model.Platform` (what the engine reads of it).
#[derive(FromPyObject)]
pub(crate) struct Platform {
    alpha: f64,
    reduce_bandwidth: f64,
}

/// `topocoll.sim.engine.NetworkNoise` (its endpoints are drawn per run and
/// cross beside it).
#[derive(FromPyObject)]
struct Noise {
    bytes: u64,
    seed: u64,
}

/// `topocoll.sim.engine.OsNoise`: one of three kinds, each with its own
/// parameters (no field changes meaning with the kind).
struct OsNoiseArg(Detours);

impl<'py> FromPyObject<'py> for OsNoiseArg {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        let kind: String = ob.getattr("kind")?.extract()?;
        let seed: u64 = ob.getattr("seed")?.extract()?;
        let get = |name: &str| -> PyResult<Ps> {
            ps(ob.getattr(name)?.extract()?, &format!("OsNoise: {name}"))
        };
        let times = |name: &str| -> PyResult<Vec<Ps>> {
            let what = format!("OsNoise: {name}");
            let seconds: Vec<f64> = ob.getattr(name)?.extract()?;
            seconds.into_iter().map(|s| ps(s, &what)).collect()
        };
        Ok(OsNoiseArg(match kind.as_str() {
            "periodic" => Detours::Periodic {
                period: get("period")?.max(1),
                length: get("length")?,
                seed,
            },
            "random" => Detours::Random {
                mean_gap: get("period")?.max(1),
                length: get("length")?,
                seed,
            },
            "trace" => {
                let start = times("start")?;
                let length = times("lengths")?;
                if start.len() != length.len() {
                    return Err(PyValueError::new_err(format!(
                        "OsNoise: {} starts but {} lengths, expected one length per start",
                        start.len(),
                        length.len()
                    )));
                }
                let span = start
                    .iter()
                    .zip(&length)
                    .map(|(s, l)| s + l)
                    .max()
                    .unwrap_or(0);
                Detours::Trace {
                    start,
                    length,
                    span,
                    seed,
                }
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "OsNoise: kind={other:?}, expected one of periodic, random, trace"
                )))
            }
        }))
    }
}

/// `topocoll.sim.engine.EngineConfig`.
#[derive(FromPyObject)]
pub(crate) struct Config {
    model: Model,
    options: Options,
    noise: Option<Noise>,
    os_noise: Option<OsNoiseArg>,
    trace: bool,
}

/// How packets are routed and which VC class a hop takes: one of the
/// classes of `topocoll.sim.wiring` (or None: static routes, one class).
enum Scheme {
    Plain,
    /// Dimension order on a torus: each link's dimension, and datelines.
    DimensionOrder {
        link_dim: Vec<u8>,
        dateline: Vec<bool>,
    },
    /// A dragonfly's static routes, VCs by hop class.
    HopClasses {
        hop_kind: Vec<u8>,
        classes: u8,
    },
    /// UGAL-L on a dragonfly: hop classes plus its geometry.
    Ugal {
        hop_kind: Vec<u8>,
        classes: u8,
        geometry: (u64, u64, u64, u64),
        seed: u64,
        link_src: Vec<u32>,
    },
    /// Minimal adaptive routing on a torus (VC 0 the escape channel), or
    /// its escape channel alone; the escape route's k/2 tie.
    AdaptiveTorus {
        k: Vec<u32>,
        wrap: Vec<bool>,
        link_src: Vec<u32>,
        channels: Channels,
        tie: EscapeTie,
    },
}

fn array<T: numpy::Element + Copy>(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<T>> {
    let a: PyReadonlyArray1<T> = ob.getattr(name)?.extract()?;
    Ok(a.as_slice()?.to_vec())
}

impl<'py> FromPyObject<'py> for Scheme {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        if ob.is_none() {
            return Ok(Scheme::Plain);
        }
        let class: String = ob.get_type().getattr("__name__")?.extract()?;
        Ok(match class.as_str() {
            "DimensionOrder" => Scheme::DimensionOrder {
                link_dim: array(ob, "link_dim")?,
                dateline: array(ob, "dateline")?,
            },
            "HopClasses" => Scheme::HopClasses {
                hop_kind: array(ob, "hop_kind")?,
                classes: ob.getattr("classes")?.extract()?,
            },
            "Ugal" => Scheme::Ugal {
                hop_kind: array(ob, "hop_kind")?,
                classes: ob.getattr("classes")?.extract()?,
                geometry: ob.getattr("geometry")?.extract()?,
                seed: ob.getattr("seed")?.extract()?,
                link_src: array(ob, "link_src")?,
            },
            "AdaptiveTorus" => {
                let channels: String = ob.getattr("channels")?.extract()?;
                let tie_seed: Option<u64> = ob.getattr("tie_seed")?.extract()?;
                Scheme::AdaptiveTorus {
                    k: ob.getattr("k")?.extract()?,
                    wrap: ob.getattr("wrap")?.extract()?,
                    link_src: array(ob, "link_src")?,
                    channels: match channels.as_str() {
                        "adaptive" => Channels::Adaptive,
                        "escape-only" => Channels::EscapeOnly,
                        other => {
                            return Err(PyValueError::new_err(format!(
                                "AdaptiveTorus: channels={other:?}, expected 'adaptive' or 'escape-only'"
                            )))
                        }
                    },
                    tie: tie_seed.map_or(EscapeTie::Positive, |seed| EscapeTie::Random { seed }),
                }
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "PacketWiring: scheme {other}, expected None, DimensionOrder, HopClasses, Ugal or AdaptiveTorus"
                )))
            }
        })
    }
}

/// `topocoll.sim.wiring.PacketWiring`: each link's destination node, the
/// routing scheme, and the torus geometry of BG/L's endpoint: `(k, wrap,
/// link_src)`.
pub(crate) struct Wiring {
    link_dst: Vec<u32>,
    scheme: Scheme,
    nic_torus: Option<(Vec<u32>, Vec<bool>, Vec<u32>)>,
}

impl<'py> FromPyObject<'py> for Wiring {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        let t = ob.getattr("nic_torus")?;
        let nic_torus = if t.is_none() {
            None
        } else {
            Some((
                t.getattr("k")?.extract()?,
                t.getattr("wrap")?.extract()?,
                array(&t, "link_src")?,
            ))
        };
        Ok(Wiring {
            link_dst: array(ob, "link_dst")?,
            scheme: ob.getattr("scheme")?.extract()?,
            nic_torus,
        })
    }
}

impl Packet {
    /// The endpoint model; BG/L's reads each link's direction from the
    /// wiring's torus geometry.
    fn nic(&self, wiring: &Wiring) -> PyResult<Nic> {
        match self.nic {
            NicKind::Simple => Ok(Nic::Simple),
            NicKind::Ib => Ok(Nic::Ib(IbHca {
                qps: self.ib_qps,
                arbiter: self.ib_arbiter,
                seed: self.ib_seed,
            })),
            NicKind::Bgl => {
                let (k, wrap, src) = wiring.nic_torus.as_ref().ok_or_else(|| {
                    PyValueError::new_err(
                        "PacketWiring: nic='bgl' without its nic_torus geometry, expected a torus",
                    )
                })?;
                let geo = AdaptiveTorus::new(k, wrap, src, &wiring.link_dst)?;
                Ok(Nic::Bgl(BglNic {
                    fifos: self.bgl_fifos,
                    fifo_packets: self.bgl_fifo_packets,
                    burst: self.bgl_burst,
                    placement: self.bgl_placement,
                    cpu_links: self.bgl_cpu_links,
                    link_dir: (0..src.len() as u32).map(|l| geo.dir(l)).collect(),
                }))
            }
        }
    }

    fn config(&self, wiring: Wiring) -> PyResult<(PacketConfig, Vec<u32>)> {
        let nic = self.nic(&wiring)?;
        let link_dst = wiring.link_dst;
        let mut cfg = PacketConfig {
            packet_bytes: self.packet_bytes,
            header_bytes: self.header_bytes,
            vcs: self.vcs,
            buffer_packets: self.buffer_packets,
            router_delay: ps(self.router_delay, "PacketOptions: router_delay")?,
            allocator: self.allocator,
            queues: self.queues,
            injection_packets: self.injection_packets,
            link_dim: vec![],
            dateline: vec![],
            eject_handling: ps(self.eject_handling, "PacketOptions: eject_handling")?,
            hop_kind: vec![],
            hop_classes: 0,
            ugal: None,
            injection_fifos: self.injection_fifos,
            flit: (self.flit_bytes > 0).then(|| FlitConfig {
                flit_bytes: self.flit_bytes,
                // 0: the packet buffers' depth, in flits
                buffer_flits: if self.buffer_flits > 0 {
                    self.buffer_flits
                } else {
                    let per = (self.packet_bytes + self.header_bytes).div_ceil(self.flit_bytes);
                    (self.buffer_packets as u64 * per).min(u32::MAX as u64) as u32
                },
                switching: self.switching,
                routing_delay: self.pipeline.0,
                va_delay: self.pipeline.1,
                sa_delay: self.pipeline.2,
                st_delay: self.pipeline.3,
                vc_allocator: self.vc_allocator,
                sw_allocator: self.sw_allocator,
                alloc_iters: self.alloc_iters,
                speculative: self.speculative,
                wait_tail_credit: self.wait_tail_credit,
                credit_delay: self.credit_delay,
                terminal_cycles: self.terminal_cycles,
            }),
            adaptive: None,
            nic,
        };
        match wiring.scheme {
            Scheme::Plain => {}
            Scheme::DimensionOrder { link_dim, dateline } => {
                cfg.link_dim = link_dim;
                cfg.dateline = dateline;
            }
            Scheme::HopClasses { hop_kind, classes } => {
                cfg.hop_kind = hop_kind;
                cfg.hop_classes = classes;
            }
            Scheme::Ugal {
                hop_kind,
                classes,
                geometry: (a, p, h, g),
                seed,
                link_src,
            } => {
                cfg.ugal = Some(UgalDragonfly::new(a, p, h, g, &link_src, &link_dst, seed)?);
                cfg.hop_kind = hop_kind;
                cfg.hop_classes = classes;
            }
            Scheme::AdaptiveTorus {
                k,
                wrap,
                link_src,
                channels,
                tie,
            } => {
                cfg.adaptive =
                    Some(AdaptiveTorus::new(&k, &wrap, &link_src, &link_dst)?.with(channels, tie));
            }
        }
        Ok((cfg, link_dst))
    }
}

/// The core's [`RunConfig`] of `config` on `platform`; `wiring` for the
/// packet model, `background` the noise's endpoints of this run.
pub(crate) fn run_config(
    config: Config,
    platform: Platform,
    wiring: Option<Wiring>,
    background: Option<Vec<u32>>,
) -> PyResult<RunConfig> {
    let o = &config.options;
    if o.ports == 0 {
        return Err(PyValueError::new_err(
            "EngineOptions: ports=0, expected >= 1",
        ));
    }
    if platform.reduce_bandwidth.is_nan() || platform.reduce_bandwidth <= 0.0 {
        return Err(PyValueError::new_err(format!(
            "Platform: reduce_bandwidth={}, expected > 0 B/s",
            platform.reduce_bandwidth
        )));
    }
    if matches!(config.model, Model::Congestion) && o.rendezvous == Rendezvous::Handshake {
        return Err(PyValueError::new_err(
            "EngineOptions: rendezvous=\"handshake\" with the congestion model, expected it with loggops, flow or packet (the congestion model prices each round's messages only)",
        ));
    }
    let model = match config.model {
        Model::LogGops => ModelConfig::LogGops(LogGopsNic {
            g: ps(o.g, "EngineOptions: g")?,
            big_g: o.big_g * PS_PER_S,
            l: ps(o.l, "EngineOptions: L")?,
            ports: o.ports,
        }),
        Model::Flow => ModelConfig::Flow {
            sharing: o.sharing,
            nic_bandwidth: o.nic_bandwidth,
            tolerance: 0,
            wire_latency: ps(o.l, "EngineOptions: L")?,
        },
        Model::Congestion => ModelConfig::Congestion,
        Model::Packet => {
            let wiring = wiring.ok_or_else(|| {
                PyValueError::new_err("EngineConfig: the packet model needs its PacketWiring")
            })?;
            let (cfg, link_dst) = o.packet.config(wiring)?;
            ModelConfig::Packet { cfg, link_dst }
        }
    };
    let costs = Costs {
        o_send: ps(platform.alpha, "Platform: alpha")?,
        o_recv: ps(o.o_recv, "EngineOptions: o_recv")?,
        o_per_byte: o.o_per_byte * PS_PER_S,
        gamma: PS_PER_S / platform.reduce_bandwidth,
        copy: if o.copy_bandwidth > 0.0 {
            PS_PER_S / o.copy_bandwidth
        } else {
            0.0
        },
        eager_threshold: o.eager,
        small: o.small_sends,
        window: o.window,
        envelope: o.envelope_bytes,
        rendezvous: o.rendezvous,
    };
    let per_byte = [
        ("o_per_byte", costs.o_per_byte),
        ("gamma", costs.gamma),
        ("copy", costs.copy),
    ];
    if let Some((name, v)) = per_byte.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
        return Err(PyValueError::new_err(format!(
            "EngineConfig: {name}={v} ps/B, expected a finite value >= 0"
        )));
    }
    let background = match (background, &config.noise) {
        (Some(eps), Some(n)) if !eps.is_empty() => Some(Background {
            endpoints: eps,
            bytes: n.bytes,
            seed: n.seed,
        }),
        _ => None,
    };
    Ok(RunConfig {
        model,
        costs,
        sync: o.sync,
        detours: config.os_noise.map_or(Detours::Quiet, |d| d.0),
        background,
        trace: config.trace,
    })
}
