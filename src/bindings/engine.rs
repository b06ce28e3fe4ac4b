//! Python face of `crate::engine`: an op program crosses once as NumPy
//! columns ([`PyEngineProgram`]), then `engine_run` simulates it on a routed
//! network with one model, the interpreter released while Rust works.
//! `topocoll.sim.engine` validates every argument first.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::config::{run_config, Config, Platform, Wiring};
use super::routing::PyRouter;
use crate::engine::config::{run_streamed, run_whole, ModelConfig, Ran, RunConfig};
use crate::engine::fabric::{Links, Ps};
use crate::engine::lockstep::{lockstep, RoundShape};
use crate::engine::noise::Detours;
use crate::engine::packet::PacketConfig;
use crate::engine::program::{Matching, Program};
use crate::engine::stream::{Chunk, ChunkSource};
use crate::engine::RouterRoutes;
use crate::error::CoreError;

/// An op program, validated and matched once, run by `engine_run` any
/// number of times.
#[pyclass(name = "EngineProgram", module = "topocoll._core", frozen)]
pub struct PyEngineProgram {
    prog: Program,
    matching: Matching,
}

#[pymethods]
impl PyEngineProgram {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        n_ranks: u32,
        rank: PyReadonlyArray1<u32>,
        kind: PyReadonlyArray1<u8>,
        peer: PyReadonlyArray1<u32>,
        tag: PyReadonlyArray1<i64>,
        nbytes: PyReadonlyArray1<u64>,
        dep_ptr: PyReadonlyArray1<u64>,
        dep_idx: PyReadonlyArray1<u32>,
        round_ptr: PyReadonlyArray1<u64>,
    ) -> PyResult<Self> {
        let prog = Program {
            n_ranks,
            rank: rank.as_slice()?.to_vec(),
            kind: kind.as_slice()?.to_vec(),
            peer: peer.as_slice()?.to_vec(),
            tag: tag.as_slice()?.to_vec(),
            nbytes: nbytes.as_slice()?.to_vec(),
            dep_ptr: dep_ptr.as_slice()?.to_vec(),
            dep_idx: dep_idx.as_slice()?.to_vec(),
            round_ptr: round_ptr.as_slice()?.to_vec(),
        };
        let matching = py.allow_threads(|| -> Result<Matching, CoreError> {
            prog.validate()?;
            prog.match_messages()
        })?;
        Ok(PyEngineProgram { prog, matching })
    }

    #[getter]
    fn n_ops(&self) -> usize {
        self.prog.n_ops()
    }

    /// Bytes of all sends.
    #[getter]
    fn bytes_sent(&self) -> u64 {
        self.matching
            .send
            .iter()
            .map(|&s| self.prog.nbytes[s as usize])
            .sum()
    }

    /// Bytes of all ops (sends, receives, reductions, copies): the upper
    /// bound of a run's simulated time counts each op's CPU bytes.
    #[getter]
    fn bytes_all(&self) -> u128 {
        self.prog.nbytes.iter().map(|&b| b as u128).sum()
    }

    #[getter]
    fn n_messages(&self) -> usize {
        self.matching.send.len()
    }

    /// `(send op, receive op)` of every message, in message-id order.
    #[allow(clippy::type_complexity)]
    fn messages<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, numpy::PyArray1<u32>>,
        Bound<'py, numpy::PyArray1<u32>>,
    ) {
        (
            self.matching.send.clone().into_pyarray(py),
            self.matching.recv.clone().into_pyarray(py),
        )
    }
}

/// One engine run's whole input besides the program and the network: the
/// model with its parameters, CPU and protocol costs, synchronisation, OS
/// noise, background traffic and tracing, read from Python's dataclasses
/// by [`super::config`], which does every unit conversion.
#[pyclass(name = "EngineConfig", module = "topocoll._core", frozen)]
pub struct PyEngineConfig {
    run: RunConfig,
}

impl PyEngineConfig {
    /// The packet model's parameters and each link's destination node, or
    /// None for another model (the synthetic-traffic driver takes them).
    pub(crate) fn packet(&self) -> Option<(&PacketConfig, &[u32])> {
        match &self.run.model {
            ModelConfig::Packet { cfg, link_dst } => Some((cfg, link_dst)),
            _ => None,
        }
    }
}

#[pymethods]
impl PyEngineConfig {
    /// `config`: a `topocoll.sim.engine.EngineConfig`; `platform`: a
    /// `topocoll.sim.model.Platform`; `wiring`: the packet model's
    /// `topocoll.sim.wiring.PacketWiring`; `background`: the network noise's
    /// endpoints of this run ([`super::config`] reads them all).
    #[new]
    #[pyo3(signature = (config, platform, *, wiring=None, background=None))]
    fn new(
        config: Config,
        platform: Platform,
        wiring: Option<Wiring>,
        background: Option<PyReadonlyArray1<u32>>,
    ) -> PyResult<Self> {
        let bg = background
            .map(|a| a.as_slice().map(|s| s.to_vec()))
            .transpose()?;
        Ok(PyEngineConfig {
            run: run_config(config, platform, wiring, bg)?,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "EngineConfig(model={:?}, sync={:?}, costs={:?}, detours={}, background={}, trace={})",
            self.run.model,
            self.run.sync,
            self.run.costs,
            match &self.run.detours {
                Detours::Quiet => "quiet",
                Detours::Periodic { .. } => "periodic",
                Detours::Random { .. } => "random",
                Detours::Trace { .. } => "trace",
            },
            self.run
                .background
                .as_ref()
                .map_or(0, |b| b.endpoints.len()),
            self.run.trace
        )
    }
}

/// What an engine run measured: times in ps, per-op and per-message times
/// (empty unless the run traced), bytes per link, counters, and the
/// congestion model's per-message congestion (None for other models).
#[pyclass(name = "EngineOutcome", module = "topocoll._core", frozen, get_all)]
pub struct PyEngineOutcome {
    time_ps: Ps,
    rank_done_ps: Py<PyArray1<u64>>,
    op_start_ps: Py<PyArray1<u64>>,
    op_end_ps: Py<PyArray1<u64>>,
    msg_inject_ps: Py<PyArray1<u64>>,
    msg_arrive_ps: Py<PyArray1<u64>>,
    /// Send and receive op of each message (empty unless the run traced).
    msg_send: Py<PyArray1<u64>>,
    msg_recv: Py<PyArray1<u64>>,
    link_bytes: Py<PyArray1<f64>>,
    app_messages: u64,
    bg_messages: u64,
    events: u64,
    os_stolen_ps: Ps,
    congestion: Option<Py<PyArray1<f32>>>,
    /// The congestion model's largest congestion (None for other models).
    max_congestion: Option<f32>,
    /// Packet model: link traversals of all packets (0 for other models).
    packet_hops: u64,
    /// Packet model: the most packets any one (link, VC) buffer held.
    max_buffer_packets: u32,
    /// Packet model: per (link, VC) buffer (index `link·vcs + vc`), the most
    /// packets it held and its time-averaged occupancy (None for other models).
    buffer_max: Option<Py<PyArray1<u32>>>,
    buffer_mean: Option<Py<PyArray1<f64>>>,
}

/// The network arguments of a run, checked against `router`'s network: link
/// bandwidths (B/s) and latencies (ps), and `order[r]`, the endpoint of rank r.
fn network_inputs(
    what: &str,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    order: PyReadonlyArray1<u32>,
) -> PyResult<(Links, Vec<u32>)> {
    let links = Links {
        bandwidth: bandwidth.as_slice()?.to_vec(),
        latency: latency_ps.as_slice()?.to_vec(),
    };
    let g = &router.inner.graph;
    if links.len() != g.n_links() {
        return Err(CoreError::InvalidArgument(format!(
            "{what}: {} link bandwidths for {} links",
            links.len(),
            g.n_links()
        ))
        .into());
    }
    let order = order.as_slice()?.to_vec();
    let n_ep = g.n_endpoints;
    if let Some(&bad) = order.iter().find(|&&e| e as usize >= n_ep) {
        return Err(CoreError::InvalidArgument(format!(
            "{what}: order names endpoint {bad}, expected 0..{n_ep}"
        ))
        .into());
    }
    Ok((links, order))
}

impl PyEngineOutcome {
    fn new(py: Python<'_>, ran: Ran) -> Self {
        let Ran {
            out,
            max_congestion,
            congestion,
            packet,
        } = ran;
        PyEngineOutcome {
            time_ps: out.time,
            rank_done_ps: out.rank_done.into_pyarray(py).unbind(),
            op_start_ps: out.op_start.into_pyarray(py).unbind(),
            op_end_ps: out.op_end.into_pyarray(py).unbind(),
            msg_inject_ps: out.msg_inject.into_pyarray(py).unbind(),
            msg_arrive_ps: out.msg_arrive.into_pyarray(py).unbind(),
            msg_send: out.msg_send.into_pyarray(py).unbind(),
            msg_recv: out.msg_recv.into_pyarray(py).unbind(),
            link_bytes: out.link_bytes.into_pyarray(py).unbind(),
            app_messages: out.app_messages,
            bg_messages: out.bg_messages,
            events: out.events,
            os_stolen_ps: out.os_stolen,
            congestion: congestion.map(|c| c.into_pyarray(py).unbind()),
            max_congestion,
            packet_hops: packet.hops,
            max_buffer_packets: packet.max_buffer,
            buffer_max: packet
                .buffers
                .as_ref()
                .map(|(m, _)| m.clone().into_pyarray(py).unbind()),
            buffer_mean: packet.buffers.map(|(_, a)| a.into_pyarray(py).unbind()),
        }
    }
}

/// Simulate `program` on `router`'s network as `config` says; link
/// bandwidths in B/s, latencies in ps, `order[r]` the endpoint of rank r.
#[pyfunction]
fn engine_run(
    py: Python<'_>,
    program: &PyEngineProgram,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    order: PyReadonlyArray1<u32>,
    config: &PyEngineConfig,
) -> PyResult<PyEngineOutcome> {
    let (links, order) = network_inputs("engine_run", router, bandwidth, latency_ps, order)?;
    let (r, prog, m, cfg) = (&router.inner, &program.prog, &program.matching, &config.run);
    let ran = py.allow_threads(|| run_whole(prog, m, r, &links, &order, cfg))?;
    Ok(PyEngineOutcome::new(py, ran))
}

/// The rounds of a Python iterator of tuples `(rank u32, kind u8, peer u32,
/// tag i64, nbytes u64, dep_ptr u64, dep_idx u64)`, taken with the GIL one
/// at a time; an exception raised by the iterator is kept and re-raised.
/// One round's columns as `engine_run_streamed`'s iterator yields them.
type ChunkColumns<'py> = (
    PyReadonlyArray1<'py, u32>,
    PyReadonlyArray1<'py, u8>,
    PyReadonlyArray1<'py, u32>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
    PyReadonlyArray1<'py, u64>,
);

struct PyChunks {
    iter: Py<PyAny>,
    error: Option<PyErr>,
}

impl ChunkSource for PyChunks {
    fn next_chunk(&mut self) -> Result<Option<Chunk>, CoreError> {
        Python::with_gil(|py| {
            let got = (|| -> PyResult<Option<Chunk>> {
                let Some(item) = self.iter.bind(py).try_iter()?.next() else {
                    return Ok(None);
                };
                let item = item?;
                let (rank, kind, peer, tag, nbytes, dep_ptr, dep_idx): ChunkColumns =
                    item.extract()?;
                Ok(Some(Chunk {
                    rank: rank.as_slice()?.to_vec(),
                    kind: kind.as_slice()?.to_vec(),
                    peer: peer.as_slice()?.to_vec(),
                    tag: tag.as_slice()?.to_vec(),
                    nbytes: nbytes.as_slice()?.to_vec(),
                    dep_ptr: dep_ptr.as_slice()?.to_vec(),
                    dep_idx: dep_idx.as_slice()?.to_vec(),
                }))
            })();
            got.map_err(|e| {
                let line = e.to_string();
                self.error = Some(e);
                CoreError::InvalidArgument(line)
            })
        })
    }
}

/// Simulate the program that `chunks` streams round by round
/// (`crate::engine::stream`) as `config` says; the same network arguments as
/// `engine_run`. Returns `(outcome, None, stats)`, or `(None, why, stats)`
/// where streaming cannot guarantee the whole-program result (the caller
/// then runs the whole program); `stats` = `(chunks, ops, peak ops held,
/// peak messages held)`.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn engine_run_streamed(
    py: Python<'_>,
    chunks: Py<PyAny>,
    n_ranks: u32,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    order: PyReadonlyArray1<u32>,
    config: &PyEngineConfig,
) -> PyResult<(
    Option<PyEngineOutcome>,
    Option<String>,
    (u64, u64, u64, u64),
)> {
    let (links, order) =
        network_inputs("engine_run_streamed", router, bandwidth, latency_ps, order)?;
    let (r, cfg) = (&router.inner, &config.run);
    let mut source = PyChunks {
        iter: chunks,
        error: None,
    };
    let ran = py.allow_threads(|| run_streamed(n_ranks, &mut source, r, &links, &order, cfg));
    if let Some(e) = source.error.take() {
        return Err(e);
    }
    Ok(match ran? {
        Ok((ran, s)) => (
            Some(PyEngineOutcome::new(py, ran)),
            None,
            (s.chunks, s.ops, s.peak_ops, s.peak_messages),
        ),
        Err(why) => (None, Some(why), (0, 0, 0, 0)),
    })
}

/// The congestion model of a circulant schedule in lockstep
/// (`crate::engine::lockstep`): one entry per round in each array.
#[pyfunction]
#[pyo3(signature = (router, bandwidth, latency_ps, order, xor, message, send_off, nbytes, send_at,
    recv_at, local_end, post, *, eager=u64::MAX, barrier=false, bg_endpoints=None, bg_seed=0))]
#[allow(clippy::too_many_arguments)]
fn engine_lockstep<'py>(
    py: Python<'py>,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    order: PyReadonlyArray1<u32>,
    xor: bool,
    message: PyReadonlyArray1<bool>,
    send_off: PyReadonlyArray1<u32>,
    nbytes: PyReadonlyArray1<u64>,
    send_at: PyReadonlyArray1<u64>,
    recv_at: PyReadonlyArray1<u64>,
    local_end: PyReadonlyArray1<u64>,
    post: PyReadonlyArray1<u64>,
    eager: u64,
    barrier: bool,
    bg_endpoints: Option<PyReadonlyArray1<u32>>,
    bg_seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let links = Links {
        bandwidth: bandwidth.as_slice()?.to_vec(),
        latency: latency_ps.as_slice()?.to_vec(),
    };
    let r = &router.inner;
    let cols = [
        send_off.as_slice()?.len(),
        nbytes.as_slice()?.len(),
        send_at.as_slice()?.len(),
        recv_at.as_slice()?.len(),
        local_end.as_slice()?.len(),
        post.as_slice()?.len(),
    ];
    let n = message.as_slice()?.len();
    if cols.iter().any(|&c| c != n) || links.len() != r.graph.n_links() {
        return Err(CoreError::InvalidArgument(format!(
            "engine_lockstep: round columns of lengths {cols:?} and {n}, links {} of {}",
            links.len(),
            r.graph.n_links()
        ))
        .into());
    }
    let rounds: Vec<RoundShape> = (0..n)
        .map(|k| RoundShape {
            message: message.as_slice().unwrap()[k],
            send_off: send_off.as_slice().unwrap()[k],
            bytes: nbytes.as_slice().unwrap()[k],
            send_at: send_at.as_slice().unwrap()[k],
            recv_at: recv_at.as_slice().unwrap()[k],
            local_end: local_end.as_slice().unwrap()[k],
            post: post.as_slice().unwrap()[k],
        })
        .collect();
    let order = order.as_slice()?.to_vec();
    let p = order.len() as u32;
    let bg: Vec<u32> = bg_endpoints
        .map(|a| a.as_slice().map(|s| s.to_vec()))
        .transpose()?
        .unwrap_or_default();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = py.allow_threads(|| {
        let routes = RouterRoutes::new(r);
        let bgs = (!bg.is_empty()).then_some((bg.as_slice(), bg_seed));
        lockstep(
            p, xor, &rounds, &order, &links, &routes, eager, barrier, bgs, threads,
        )
    })?;
    let d = PyDict::new(py);
    d.set_item("time_ps", out.time)?;
    d.set_item("rank_done_ps", out.rank_done.into_pyarray(py))?;
    d.set_item("link_bytes", out.link_flows.into_pyarray(py))?;
    d.set_item("max_congestion", out.max_congestion)?;
    d.set_item("app_messages", out.messages)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngineProgram>()?;
    m.add_class::<PyEngineConfig>()?;
    m.add_class::<PyEngineOutcome>()?;
    m.add_function(wrap_pyfunction!(engine_run, m)?)?;
    m.add_function(wrap_pyfunction!(engine_lockstep, m)?)?;
    m.add_function(wrap_pyfunction!(engine_run_streamed, m)?)?;
    Ok(())
}
