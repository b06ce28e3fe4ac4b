//! One run's configuration and the one place that builds each model's
//! network: [`ModelConfig`] (the model and its parameters), [`RunConfig`]
//! (everything a run takes besides its program and network), [`AnyFabric`]
//! (the fabric a model names, built once for either op store) and
//! [`run_whole`] / [`run_streamed`], the two ways into the one loop of
//! [`super::core`].

use super::congestion::RoundFixed;
use super::core::{Background, Costs, Outcome, Setup, Sync};
use super::fabric::{Fabric, Links, Message, Ps, RoundMessage};
use super::flow::{FlowConfig, FlowFabric, Sharing};
use super::loggops::{LogGopsNic, Reservation};
use super::noise::{Detours, OsNoise};
use super::packet::{PacketConfig, PacketFabric};
use super::program::{Matching, Program};
use super::run::simulate;
use super::stream::{simulate_streamed, ChunkSource, StreamStats, Streamed};
use super::RouterRoutes;
use crate::error::CoreError;
use crate::routing::Router;

/// The network model of a run and its parameters (one per run: its
/// variants' sizes do not matter).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum ModelConfig {
    LogGops(LogGopsNic),
    Flow {
        sharing: Sharing,
        nic_bandwidth: f64,
        tolerance: Ps,
        /// LogGOPS `L` of a message between hosts ([`FlowConfig::wire_latency`]).
        wire_latency: Ps,
    },
    Congestion,
    Packet {
        cfg: PacketConfig,
        /// Per link, the node it enters.
        link_dst: Vec<u32>,
    },
}

/// One run's whole input besides the program and the network; every time
/// in ps, every per-byte cost in ps per byte.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub model: ModelConfig,
    pub costs: Costs,
    pub sync: Sync,
    pub detours: Detours,
    pub background: Option<Background>,
    pub trace: bool,
}

/// What the packet model measured beside the run's outcome.
#[derive(Default, Debug)]
pub struct PacketStats {
    pub hops: u64,
    pub max_buffer: u32,
    /// Per (link, VC) buffer: the most packets it held, its mean occupancy.
    pub buffers: Option<(Vec<u32>, Vec<f64>)>,
}

/// A run's result: the loop's outcome, the congestion model's largest and
/// per-message congestion (a streamed run keeps the latter only traced),
/// the packet model's statistics.
#[derive(Debug)]
pub struct Ran {
    pub out: Outcome,
    pub max_congestion: Option<f32>,
    pub congestion: Option<Vec<f32>>,
    pub packet: PacketStats,
}

/// The fabric a [`ModelConfig`] names (one enum so that the loop is
/// monomorphised once, not once per model and store).
#[allow(clippy::large_enum_variant)]
pub enum AnyFabric<'a> {
    LogGops(Reservation),
    Flow(FlowFabric),
    Congestion(RoundFixed<'a, RouterRoutes<'a>>),
    Packet(Box<PacketFabric>),
}

impl<'a> AnyFabric<'a> {
    /// Build `model`'s network on `links` of `router`'s graph.
    /// `per_message`: the congestion model keeps every message's congestion.
    pub fn build(
        model: &ModelConfig,
        links: &'a Links,
        router: &'a Router,
        background: Option<&Background>,
        per_message: bool,
    ) -> Result<Self, CoreError> {
        let n_ep = router.graph.n_endpoints;
        // ranks per host: the NIC is the host's (routing::nodes)
        let ppn = match &router.engine {
            crate::routing::Engine::Nodes(n) => n.ppn,
            _ => 1,
        };
        Ok(match model {
            ModelConfig::LogGops(nic) => {
                AnyFabric::LogGops(Reservation::new(links.clone(), n_ep, nic.clone(), ppn))
            }
            ModelConfig::Flow {
                sharing,
                nic_bandwidth,
                tolerance,
                wire_latency,
            } => AnyFabric::Flow(FlowFabric::new(
                links.clone(),
                FlowConfig {
                    sharing: *sharing,
                    nic_bandwidth: *nic_bandwidth,
                    n_endpoints: n_ep,
                    tolerance: *tolerance,
                    ppn,
                    wire_latency: *wire_latency,
                },
            )),
            ModelConfig::Congestion => AnyFabric::Congestion(RoundFixed::new(
                links,
                RouterRoutes::new(router),
                background.map(|b| (b.endpoints.as_slice(), b.seed)),
                per_message,
            )),
            ModelConfig::Packet { cfg, link_dst } => AnyFabric::Packet(Box::new(
                PacketFabric::new(links.clone(), link_dst.clone(), n_ep, cfg.clone())?,
            )),
        })
    }

    /// The congestion model's background is its own (one permutation per
    /// round, [`super::congestion`]); the event models' goes through the loop.
    fn loop_background<'b>(&self, bg: Option<&'b Background>) -> Option<&'b Background> {
        match self {
            AnyFabric::Congestion(_) => None,
            _ => bg,
        }
    }

    /// The error that explains a packet run's failure first: a network
    /// that stopped while packets wait names its cycle of buffers, and a
    /// route with more hop phases than VC classes says so.
    fn checked<T>(&self, ran: Result<T, CoreError>) -> Result<T, CoreError> {
        if let AnyFabric::Packet(f) = self {
            if let Some(cycle) = f.stalled() {
                return Err(CoreError::InvalidArgument(cycle));
            }
            if let Some(line) = f.class_overflow() {
                return Err(CoreError::InvalidArgument(line.to_string()));
            }
        }
        ran
    }

    /// The model's results beside the loop's outcome `out`.
    fn finish(self, mut out: Outcome) -> Ran {
        let (mut congestion, mut max_congestion) = (None, None);
        let mut packet = PacketStats::default();
        match self {
            AnyFabric::Congestion(f) => {
                out.link_bytes = f.link_flows().to_vec();
                max_congestion = Some(f.max_congestion);
                congestion = f.congestion;
            }
            AnyFabric::Packet(f) => {
                let most = f.max_occupancy();
                packet = PacketStats {
                    hops: f.packet_hops(),
                    max_buffer: most.iter().copied().max().unwrap_or(0),
                    buffers: Some((most, f.mean_occupancy(out.time))),
                };
            }
            _ => {}
        }
        Ran {
            out,
            max_congestion,
            congestion,
            packet,
        }
    }
}

impl Fabric for AnyFabric<'_> {
    fn inject(&mut self, now: Ps, msg: &Message) {
        match self {
            AnyFabric::LogGops(f) => f.inject(now, msg),
            AnyFabric::Flow(f) => f.inject(now, msg),
            AnyFabric::Congestion(f) => f.inject(now, msg),
            AnyFabric::Packet(f) => f.inject(now, msg),
        }
    }
    fn next_arrival(&mut self) -> Option<Ps> {
        match self {
            AnyFabric::LogGops(f) => f.next_arrival(),
            AnyFabric::Flow(f) => f.next_arrival(),
            AnyFabric::Congestion(f) => f.next_arrival(),
            AnyFabric::Packet(f) => f.next_arrival(),
        }
    }
    fn advance(&mut self, now: Ps, arrived: &mut Vec<(Ps, u32)>) {
        match self {
            AnyFabric::LogGops(f) => f.advance(now, arrived),
            AnyFabric::Flow(f) => f.advance(now, arrived),
            AnyFabric::Congestion(f) => f.advance(now, arrived),
            AnyFabric::Packet(f) => f.advance(now, arrived),
        }
    }
    fn link_bytes(&self) -> &[f64] {
        match self {
            AnyFabric::LogGops(f) => f.link_bytes(),
            AnyFabric::Flow(f) => f.link_bytes(),
            AnyFabric::Congestion(f) => f.link_bytes(),
            AnyFabric::Packet(f) => f.link_bytes(),
        }
    }
    fn wants_rounds(&self) -> bool {
        matches!(self, AnyFabric::Congestion(_))
    }
    fn round_loaded(&mut self, k: usize, msgs: &[RoundMessage]) -> Result<(), CoreError> {
        match self {
            AnyFabric::Congestion(f) => f.round_loaded(k, msgs),
            _ => Ok(()),
        }
    }
}

/// Build `cfg`'s fabric on `links` of `router`'s network, the routes, OS
/// noise and background of a run of `n_ranks` ranks on endpoints `order`,
/// and run `go` on them (either store's entry point); the fabric's own
/// explanation of a failure goes first.
fn run_on<'a, T>(
    n_ranks: u32,
    router: &'a Router,
    links: &'a Links,
    order: &[u32],
    cfg: &RunConfig,
    per_message: bool,
    go: impl FnOnce(Setup) -> Result<T, CoreError>,
) -> Result<(T, AnyFabric<'a>), CoreError> {
    let bg = cfg.background.as_ref();
    let mut f = AnyFabric::build(&cfg.model, links, router, bg, per_message)?;
    let mut routes = RouterRoutes::new(router);
    let mut os = OsNoise::new(cfg.detours.clone(), n_ranks as usize);
    let background = f.loop_background(bg);
    let ran = go(Setup {
        n_ranks,
        order,
        costs: &cfg.costs,
        fabric: &mut f,
        routes: &mut routes,
        os: &mut os,
        background,
        trace: cfg.trace,
    });
    let ran = f.checked(ran)?;
    Ok((ran, f))
}

/// Simulate the whole program `prog` (matched by `m`) on `router`'s
/// network with `links`, rank r on endpoint `order[r]`.
pub fn run_whole(
    prog: &Program,
    m: &Matching,
    router: &Router,
    links: &Links,
    order: &[u32],
    cfg: &RunConfig,
) -> Result<Ran, CoreError> {
    let go = |s: Setup<'_>| simulate(prog, m, cfg.sync, s);
    let (out, f) = run_on(prog.n_ranks, router, links, order, cfg, true, go)?;
    Ok(f.finish(out))
}

/// Simulate the program `source` streams round by round (the same
/// arguments as [`run_whole`]): `Ok(Err(why))` where streaming cannot
/// guarantee the whole program's result.
pub fn run_streamed(
    n_ranks: u32,
    source: &mut dyn ChunkSource,
    router: &Router,
    links: &Links,
    order: &[u32],
    cfg: &RunConfig,
) -> Result<Result<(Ran, StreamStats), String>, CoreError> {
    let go = |s: Setup<'_>| simulate_streamed(source, cfg.sync, s);
    Ok(
        match run_on(n_ranks, router, links, order, cfg, cfg.trace, go)? {
            (Streamed::Done(out, stats), f) => Ok((f.finish(out), stats)),
            (Streamed::Late(why), _) => Err(why),
        },
    )
}
