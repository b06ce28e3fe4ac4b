//! Python face of `crate::engine`: an op program crosses once as NumPy
//! columns ([`PyEngineProgram`]), then `engine_run` simulates it on a routed
//! network with one model, the interpreter released while Rust works.
//! `topocoll.sim.engine` validates every argument first.

use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::routing::PyRouter;
use crate::engine::congestion::{annotate, Fixed};
use crate::engine::fabric::{Fabric, Links};
use crate::engine::flow::{FlowConfig, FlowFabric, Sharing};
use crate::engine::lockstep::{lockstep, RoundShape};
use crate::engine::loggops::{LogGopsNic, Reservation};
use crate::engine::noise::{Detours, OsNoise};
use crate::engine::program::{Matching, Program};
use crate::engine::run::{simulate, Background, Costs, Outcome, Sync};
use crate::engine::RouterRoutes;
use crate::error::CoreError;

/// Extra per-message columns of a run (`congestion` of the congestion model).
type PerMessage = Vec<(&'static str, Vec<f32>)>;

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

fn sync_named(name: &str) -> Result<Sync, CoreError> {
    match name {
        "deps" => Ok(Sync::Deps),
        "rounds" => Ok(Sync::Rounds),
        "barrier" => Ok(Sync::Barrier),
        _ => Err(CoreError::InvalidArgument(format!(
            "sync={name:?}, expected 'deps', 'rounds' or 'barrier'"
        ))),
    }
}

fn outcome_dict<'py>(
    py: Python<'py>,
    out: Outcome,
    extra: PerMessage,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_ps", out.time)?;
    d.set_item("rank_done_ps", out.rank_done.into_pyarray(py))?;
    d.set_item("op_start_ps", out.op_start.into_pyarray(py))?;
    d.set_item("op_end_ps", out.op_end.into_pyarray(py))?;
    d.set_item("msg_inject_ps", out.msg_inject.into_pyarray(py))?;
    d.set_item("msg_arrive_ps", out.msg_arrive.into_pyarray(py))?;
    d.set_item("link_bytes", out.link_bytes.into_pyarray(py))?;
    d.set_item("app_messages", out.app_messages)?;
    d.set_item("bg_messages", out.bg_messages)?;
    d.set_item("events", out.events)?;
    d.set_item("os_stolen_ps", out.os_stolen)?;
    for (k, v) in extra {
        d.set_item(k, v.into_pyarray(py))?;
    }
    Ok(d)
}

/// Simulate `program` on `router`'s network with `model` (`loggops`,
/// `flow`, `congestion`); times in ps, bandwidths in B/s. Returns a dict of
/// the outcome (`time_ps`, `rank_done_ps`, per-op and per-message times when
/// `trace`, `link_bytes`, counters; `congestion` per message for the
/// congestion model).
#[pyfunction]
#[pyo3(signature = (program, router, bandwidth, latency_ps, order, model, *,
    o_send=0, o_recv=0, o_per_byte=0.0, gamma=0.0, copy=0.0, eager=u64::MAX,
    g=0, big_g=0.0, l=0, ports=1, nic_bandwidth=0.0, sharing="maxmin", tolerance=0,
    sync="deps", window=0, os_kind="quiet", os_a=0, os_b=0, os_seed=0, os_start=None, os_len=None,
    bg_endpoints=None, bg_bytes=0, bg_seed=0, trace=false))]
#[allow(clippy::too_many_arguments)]
fn engine_run<'py>(
    py: Python<'py>,
    program: &PyEngineProgram,
    router: &PyRouter,
    bandwidth: PyReadonlyArray1<f64>,
    latency_ps: PyReadonlyArray1<u64>,
    order: PyReadonlyArray1<u32>,
    model: &str,
    o_send: u64,
    o_recv: u64,
    o_per_byte: f64,
    gamma: f64,
    copy: f64,
    eager: u64,
    g: u64,
    big_g: f64,
    l: u64,
    ports: usize,
    nic_bandwidth: f64,
    sharing: &str,
    tolerance: u64,
    sync: &str,
    window: u32,
    os_kind: &str,
    os_a: u64,
    os_b: u64,
    os_seed: u64,
    os_start: Option<PyReadonlyArray1<u64>>,
    os_len: Option<PyReadonlyArray1<u64>>,
    bg_endpoints: Option<PyReadonlyArray1<u32>>,
    bg_bytes: u64,
    bg_seed: u64,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let links = Links {
        bandwidth: bandwidth.as_slice()?.to_vec(),
        latency: latency_ps.as_slice()?.to_vec(),
    };
    let r = &router.inner;
    if links.len() != r.graph.n_links() {
        return Err(CoreError::InvalidArgument(format!(
            "engine_run: {} link bandwidths for {} links",
            links.len(),
            r.graph.n_links()
        ))
        .into());
    }
    let order = order.as_slice()?.to_vec();
    let n_ep = r.graph.n_endpoints;
    if let Some(&bad) = order.iter().find(|&&e| e as usize >= n_ep) {
        return Err(CoreError::InvalidArgument(format!(
            "engine_run: order names endpoint {bad}, expected 0..{n_ep}"
        ))
        .into());
    }
    let costs = Costs {
        o_send,
        o_recv,
        o_per_byte,
        gamma,
        copy,
        eager_threshold: eager,
        window,
    };
    let sync = sync_named(sync)?;
    let detours = match os_kind {
        "quiet" => Detours::Quiet,
        "periodic" => Detours::Periodic {
            period: os_a.max(1),
            length: os_b,
            seed: os_seed,
        },
        "random" => Detours::Random {
            mean_gap: os_a.max(1),
            length: os_b,
            seed: os_seed,
        },
        "trace" => {
            let start = os_start
                .map(|a| a.as_slice().map(|s| s.to_vec()))
                .transpose()?
                .unwrap_or_default();
            let length = os_len
                .map(|a| a.as_slice().map(|s| s.to_vec()))
                .transpose()?
                .unwrap_or_default();
            if start.len() != length.len() {
                return Err(CoreError::InvalidArgument(format!(
                    "engine_run: OS-noise trace has {} starts but {} lengths",
                    start.len(),
                    length.len()
                ))
                .into());
            }
            Detours::Trace {
                start,
                length,
                span: os_a,
                seed: os_seed,
            }
        }
        _ => {
            return Err(CoreError::InvalidArgument(format!(
                "os_kind={os_kind:?}, expected 'quiet', 'periodic', 'random' or 'trace'"
            ))
            .into())
        }
    };
    let bg_eps: Vec<u32> = bg_endpoints
        .map(|a| a.as_slice().map(|s| s.to_vec()))
        .transpose()?
        .unwrap_or_default();
    let background = (!bg_eps.is_empty()).then(|| Background {
        endpoints: bg_eps.clone(),
        bytes: bg_bytes,
        seed: bg_seed,
    });
    let prog = &program.prog;
    let m = &program.matching;
    let model = model.to_string();
    let sharing = sharing.to_string();
    let result = py.allow_threads(move || -> Result<(Outcome, PerMessage), CoreError> {
        let mut routes = RouterRoutes::new(r);
        let mut os = OsNoise::new(detours, prog.n_ranks as usize);
        let mut go = |fabric: &mut dyn Fabric, bg: Option<&Background>| {
            simulate(
                prog,
                m,
                &order,
                &costs,
                sync,
                fabric,
                &mut routes,
                &mut os,
                bg,
                trace,
            )
        };
        match model.as_str() {
            "loggops" => {
                let nic = LogGopsNic { g, big_g, l, ports };
                let mut f = Reservation::new(links, n_ep, nic);
                Ok((go(&mut f, background.as_ref())?, vec![]))
            }
            "flow" => {
                let sharing = match sharing.as_str() {
                    "maxmin" => Sharing::MaxMin,
                    "cm02" => Sharing::Cm02,
                    _ => {
                        return Err(CoreError::InvalidArgument(format!(
                            "sharing={sharing:?}, expected 'maxmin' or 'cm02'"
                        )))
                    }
                };
                let cfg = FlowConfig {
                    sharing,
                    nic_bandwidth,
                    n_endpoints: n_ep,
                    tolerance,
                };
                let mut f = FlowFabric::new(links, cfg);
                Ok((go(&mut f, background.as_ref())?, vec![]))
            }
            "congestion" => {
                let mut ar = RouterRoutes::new(r);
                let bg = (!bg_eps.is_empty()).then_some((bg_eps.as_slice(), bg_seed));
                let ann = annotate(prog, m, &order, &links, &mut ar, bg)?;
                let mut f = Fixed::new(ann.duration, links.len());
                let mut out = go(&mut f, None)?;
                out.link_bytes = ann.link_flows;
                Ok((out, vec![("congestion", ann.congestion)]))
            }
            _ => Err(CoreError::InvalidArgument(format!(
                "model={model:?}, expected 'loggops', 'flow' or 'congestion'"
            ))),
        }
    })?;
    outcome_dict(py, result.0, result.1)
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
    m.add_function(wrap_pyfunction!(engine_run, m)?)?;
    m.add_function(wrap_pyfunction!(engine_lockstep, m)?)?;
    Ok(())
}
