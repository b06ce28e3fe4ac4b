//! Python face of `crate::engine::traffic`: synthetic traffic through the
//! packet model on a routed network, the interpreter released while Rust
//! works. `topocoll.sim.traffic` validates every argument first.
//!
//! The packet parameters come as keywords mirroring `EngineConfig`'s packet
//! fields (its Rust side keeps them private to `bindings/engine.rs`);
//! `topocoll.sim.traffic` fills them from the same `EngineConfig._packet`.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use super::engine::{PyAllocator, PyQueues};
use super::routing::PyRouter;
use crate::engine::fabric::{Links, Ps};
use crate::engine::packet::{Allocator, PacketConfig, PacketFabric, Queues};
use crate::engine::traffic::{injection_slot, run_traffic, Pattern, TrafficConfig};
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
    backlog: u64,
    drain_slots: u64,
    /// One line when the drain bound was hit, else "".
    drain_error: String,
    packets_created: u64,
    packet_hops: u64,
    max_buffer_packets: u32,
}

/// Synthetic traffic of `pattern` at `load` through the packet model on
/// `router`'s network (bandwidths B/s, latencies ps, `link_dst` the node
/// each link enters).
#[pyfunction]
#[pyo3(signature = (router, bandwidth, latency_ps, pattern, load, *, link_dst, packet_bytes=2048,
    header_bytes=26, vcs=2, buffer_packets=8, router_delay=0, allocator=PyAllocator::RoundRobin,
    queues=PyQueues::InputQueued, injection_packets=0, link_dim=None, dateline=None, hot_fraction=0.0,
    hot_node=0, dims=None, warmup_slots=1000, measure_slots=10000, drain_slots=11000, seed=0))]
#[allow(clippy::too_many_arguments)]
fn traffic_run(
    py: Python<'_>,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    pattern: PyPattern,
    load: f64,
    link_dst: PyReadonlyArray1<u32>,
    packet_bytes: u64,
    header_bytes: u64,
    vcs: u8,
    buffer_packets: u32,
    router_delay: Ps,
    allocator: PyAllocator,
    queues: PyQueues,
    injection_packets: u32,
    link_dim: Option<PyReadonlyArray1<u8>>,
    dateline: Option<PyReadonlyArray1<bool>>,
    hot_fraction: f64,
    hot_node: u32,
    dims: Option<Vec<u32>>,
    warmup_slots: u64,
    measure_slots: u64,
    drain_slots: u64,
    seed: u64,
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
    let vec_of = |a: Option<PyReadonlyArray1<u8>>| -> PyResult<Vec<u8>> {
        Ok(a.map(|a| a.as_slice().map(|s| s.to_vec()))
            .transpose()?
            .unwrap_or_default())
    };
    let cfg = PacketConfig {
        packet_bytes,
        header_bytes,
        vcs,
        buffer_packets,
        router_delay,
        allocator: match allocator {
            PyAllocator::RoundRobin => Allocator::RoundRobin,
            PyAllocator::Age => Allocator::Age,
        },
        queues: match queues {
            PyQueues::InputQueued => Queues::InputQueued,
            PyQueues::VirtualOutput => Queues::VirtualOutput,
        },
        injection_packets,
        link_dim: vec_of(link_dim)?,
        dateline: dateline
            .map(|a| a.as_slice().map(|s| s.to_vec()))
            .transpose()?
            .unwrap_or_default(),
        eject_handling: 0,
    };
    let link_dst = link_dst.as_slice()?.to_vec();
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
        };
        let mut f = PacketFabric::new(links, link_dst, n_ep, cfg)?;
        let mut routes = RouterRoutes::new(r);
        let out = match run_traffic(&mut f, &mut routes, &traffic) {
            // a network that stops while packets wait: name its cycle of buffers
            Err(e) => return Err(f.stalled().map_or(e, CoreError::InvalidArgument)),
            Ok(out) => out,
        };
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
            backlog: out.backlog,
            drain_slots: out.drain_slots,
            drain_error: out.drain_error,
            packets_created: out.packets_created,
            packet_hops: f.packet_hops(),
            max_buffer_packets: f.max_occupancy().iter().copied().max().unwrap_or(0),
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
