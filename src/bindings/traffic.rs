//! Python face of `crate::engine::traffic`: synthetic traffic through the
//! packet model on a routed network, the interpreter released while Rust
//! works. `topocoll.sim.traffic` validates every argument first.
//!
//! The packet parameters come in the run's typed `EngineConfig` (the packet
//! model), built by `topocoll.sim.engine.EngineConfig.core`, as every run's.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use super::engine::PyEngineConfig;
use super::routing::PyRouter;
use crate::engine::fabric::{Links, Ps};
use crate::engine::packet::PacketFabric;
use crate::engine::traffic::{injection_slot, run_traffic_ties, Pattern, TrafficConfig};
use crate::engine::RouterRoutes;
use crate::error::CoreError;

/// Destination pattern of synthetic traffic ([`Pattern`]).
#[pyclass(name = "Pattern", module = "topocoll._core", eq, eq_int, frozen)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyPattern {
    Uniform,
    Transpose,
    BitComplement,
    Tornado,
    HotSpot,
}

/// What one synthetic-traffic run measured: rates in packets per endpoint
/// per slot, times in ps (`crate::engine::traffic::TrafficOutcome`).
#[pyclass(name = "TrafficResult", module = "topocoll._core", frozen, get_all)]
pub struct PyTrafficResult {
    slot_ps: Ps,
    offered: f64,
    created: f64,
    accepted: f64,
    measured: u64,
    delivered: u64,
    mean_latency_ps: f64,
    p99_latency_ps: Ps,
    saturated: bool,
    /// Which tests fired: `backlog`, `latency`, `drain` joined by `+`.
    saturated_by: String,
    backlog: u64,
    drain_slots: u64,
    /// One line when the drain bound was hit, else "".
    drain_error: String,
    packets_created: u64,
    packet_hops: u64,
    max_buffer_packets: u32,
    /// The flit routers' cycle, ps (0: packet-granular model).
    cycle_ps: Ps,
    /// The latency threshold in force, ps (0: none).
    latency_threshold_ps: Ps,
}

/// Synthetic traffic of `pattern` at `load` through the packet model on
/// `router`'s network (bandwidths B/s, latencies ps); `config` is the run's
/// typed `EngineConfig` of the packet model (its packets, VCs, buffers,
/// routers, link destinations and datelines). `latency_thres`: a mean
/// latency above this many cycles (flit routers) or slots says saturated
/// (0: no such test); `alt_router`: the same routing with the other tie,
/// taken by a seeded coin per packet (`--tie random`).
#[pyfunction]
#[pyo3(signature = (router, bandwidth, latency_ps, config, pattern, load, *, hot_fraction=0.0,
    hot_node=0, dims=None, warmup_slots=1000, measure_slots=10000, drain_slots=11000, seed=0,
    latency_thres=0.0, alt_router=None))]
#[allow(clippy::too_many_arguments)]
fn traffic_run(
    py: Python<'_>,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    config: &PyEngineConfig,
    pattern: PyPattern,
    load: f64,
    hot_fraction: f64,
    hot_node: u32,
    dims: Option<Vec<u32>>,
    warmup_slots: u64,
    measure_slots: u64,
    drain_slots: u64,
    seed: u64,
    latency_thres: f64,
    alt_router: Option<&PyRouter>,
) -> PyResult<PyTrafficResult> {
    let links = Links {
        bandwidth: bandwidth.as_slice()?.to_vec(),
        latency: latency_ps.as_slice()?.to_vec(),
    };
    let r = &router.inner;
    if links.len() != r.graph.n_links() || links.latency.len() != links.len() {
        return Err(CoreError::InvalidArgument(format!(
            "traffic_run: {} bandwidths and {} latencies for {} links",
            links.len(),
            links.latency.len(),
            r.graph.n_links()
        ))
        .into());
    }
    let Some((cfg, link_dst)) = config.packet() else {
        return Err(CoreError::InvalidArgument(
            "traffic_run: an EngineConfig of another model, expected Model.Packet".into(),
        )
        .into());
    };
    let (cfg, link_dst) = (cfg.clone(), link_dst.to_vec());
    let (packet_bytes, header_bytes) = (cfg.packet_bytes, cfg.header_bytes);
    let n_ep = r.graph.n_endpoints;
    let pattern = match pattern {
        PyPattern::Uniform => Pattern::Uniform,
        PyPattern::Transpose => Pattern::Transpose,
        PyPattern::BitComplement => Pattern::BitComplement,
        PyPattern::Tornado => Pattern::Tornado,
        PyPattern::HotSpot => Pattern::HotSpot,
    };
    let dims = dims.unwrap_or_default();
    let run = move || -> Result<PyTrafficResult, CoreError> {
        let slot = injection_slot(
            &links,
            &r.graph.src,
            n_ep as u32,
            packet_bytes.saturating_add(header_bytes),
        )?;
        let traffic = TrafficConfig {
            pattern,
            load,
            n_endpoints: n_ep as u32,
            message_bytes: packet_bytes,
            slot,
            hot_fraction,
            hot_node,
            dims,
            warmup_slots,
            measure_slots,
            drain_slots,
            seed,
            latency_threshold: 0,
        };
        let mut f = PacketFabric::new(links, link_dst, n_ep, cfg)?;
        // cycles of the flit routers, else slots
        let unit = f.cycle_ps().unwrap_or(slot);
        let mut traffic = traffic;
        traffic.latency_threshold = (latency_thres.max(0.0) * unit as f64).round() as Ps;
        let mut routes = RouterRoutes::new(r);
        let mut alt = alt_router.map(|a| RouterRoutes::new(&a.inner));
        let alt_dyn = alt
            .as_mut()
            .map(|a| a as &mut dyn crate::engine::run::Routes);
        let out = match run_traffic_ties(&mut f, &mut routes, alt_dyn, &traffic) {
            // a network that stops while packets wait: name its cycle of buffers
            Err(e) => return Err(f.stalled().map_or(e, CoreError::InvalidArgument)),
            Ok(out) => out,
        };
        if let Some(line) = f.class_overflow() {
            return Err(CoreError::InvalidArgument(line.to_string()));
        }
        Ok(PyTrafficResult {
            slot_ps: out.slot,
            offered: out.offered,
            created: out.created,
            accepted: out.accepted,
            measured: out.measured,
            delivered: out.delivered,
            mean_latency_ps: out.mean_latency,
            p99_latency_ps: out.p99_latency,
            saturated: out.saturated,
            saturated_by: out.saturated_by,
            backlog: out.backlog,
            drain_slots: out.drain_slots,
            drain_error: out.drain_error,
            packets_created: out.packets_created,
            packet_hops: f.packet_hops(),
            max_buffer_packets: f.max_occupancy().iter().copied().max().unwrap_or(0),
            cycle_ps: f.cycle_ps().unwrap_or(0),
            latency_threshold_ps: traffic.latency_threshold,
        })
    };
    Ok(py.allow_threads(run)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPattern>()?;
    m.add_class::<PyTrafficResult>()?;
    m.add_function(wrap_pyfunction!(traffic_run, m)?)?;
    Ok(())
}
