//! Python face of `crate::routing`: network generators and routing engines
//! on NumPy arrays, with the interpreter released while Rust works.
//!
//! `topocoll.topology` validates every argument first and raises topocoll's
//! own errors; a [`CoreError`] from here (a `ValueError` in Python) is the
//! last line of defence.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::error::CoreError;
use crate::routing::bfs::{endpoint_diameter, Diameter};
use crate::routing::dragonfly::Dragonfly;
use crate::routing::fattree::{FatTreeRule, Xgft};
use crate::routing::graph::Graph;
use crate::routing::nodes::NodeRoutes;
use crate::routing::tables::{minhop_tables, Table, UpDown};
use crate::routing::torus::{Tie, Torus};
use crate::routing::{Engine, Router};

type LinkPair<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>);

fn pair<'py>(py: Python<'py>, (s, d): (Vec<u32>, Vec<u32>)) -> LinkPair<'py> {
    (s.into_pyarray(py), d.into_pyarray(py))
}

/// Link table `(src, dst)` of XGFT/PGFT(h; m; w; p), sorted by source and port.
#[pyfunction]
fn routing_xgft_links<'py>(
    py: Python<'py>,
    m: Vec<u64>,
    w: Vec<u64>,
    p: Vec<u64>,
) -> PyResult<LinkPair<'py>> {
    let x = Xgft::new(&m, &w, &p)?;
    Ok(pair(py, py.allow_threads(|| x.links())))
}

/// Link table of a torus/mesh with dimension sizes `k` and wrap flags.
#[pyfunction]
fn routing_torus_links<'py>(
    py: Python<'py>,
    k: Vec<u64>,
    wrap: Vec<bool>,
) -> PyResult<LinkPair<'py>> {
    let t = Torus::new(&k, &wrap)?;
    Ok(pair(py, py.allow_threads(|| t.links())))
}

/// Link table of a dragonfly(a, p, h, g).
#[pyfunction]
fn routing_dragonfly_links<'py>(
    py: Python<'py>,
    a: u64,
    p: u64,
    h: u64,
    g: u64,
) -> PyResult<LinkPair<'py>> {
    let df = Dragonfly::new(a, p, h, g)?;
    Ok(pair(py, df.links()))
}

fn graph(
    n_nodes: usize,
    n_endpoints: usize,
    src: PyReadonlyArray1<u32>,
    dst: PyReadonlyArray1<u32>,
) -> PyResult<Graph> {
    Ok(Graph::new(
        n_nodes,
        n_endpoints,
        src.as_slice()?.to_vec(),
        dst.as_slice()?.to_vec(),
    )?)
}

fn tie(name: &str) -> PyResult<Tie> {
    match name {
        "positive" => Ok(Tie::Positive),
        "negative" => Ok(Tie::Negative),
        "source-parity" => Ok(Tie::SourceParity),
        "simgrid" => Ok(Tie::SimGrid),
        _ => Err(CoreError::InvalidArgument(format!(
            "tie={:?}, expected 'positive', 'negative', 'source-parity' or 'simgrid'",
            name
        ))
        .into()),
    }
}

/// A routing engine bound to one network.
#[pyclass(name = "RoutingEngine", module = "topocoll._core", frozen)]
pub struct PyRouter {
    pub(crate) inner: Router,
}

#[pymethods]
impl PyRouter {
    /// Arithmetic fat-tree routing on the network made by `routing_xgft_links`.
    #[staticmethod]
    #[pyo3(signature = (src, dst, m, w, p, rule, seed=0))]
    fn fat_tree(
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        m: Vec<u64>,
        w: Vec<u64>,
        p: Vec<u64>,
        rule: &str,
        seed: u64,
    ) -> PyResult<Self> {
        let tree = Xgft::new(&m, &w, &p)?;
        let g = graph(
            tree.n_nodes() as usize,
            tree.n_endpoints() as usize,
            src,
            dst,
        )?;
        if g.n_links() as u64 != tree.n_links() {
            return Err(CoreError::InvalidArgument(format!(
                "fat_tree: {} links, expected {}",
                g.n_links(),
                tree.n_links()
            ))
            .into());
        }
        let rule = match rule {
            "d-mod-k" => FatTreeRule::DModK,
            "random" => FatTreeRule::Random(seed),
            _ => {
                return Err(CoreError::InvalidArgument(format!(
                    "rule={:?}, expected 'd-mod-k' or 'random'",
                    rule
                ))
                .into())
            }
        };
        Ok(PyRouter {
            inner: Router {
                graph: g,
                engine: Engine::FatTree { tree, rule },
            },
        })
    }

    /// Torus/mesh routing: dimension order `order`, or minimal adaptive.
    #[staticmethod]
    #[pyo3(signature = (src, dst, k, wrap, order, tie_rule, adaptive))]
    fn torus(
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        k: Vec<u64>,
        wrap: Vec<bool>,
        order: Vec<usize>,
        tie_rule: &str,
        adaptive: bool,
    ) -> PyResult<Self> {
        let t = Torus::new(&k, &wrap)?;
        let n = t.n_nodes() as usize;
        let g = graph(n, n, src, dst)?;
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if sorted != (0..k.len()).collect::<Vec<_>>() {
            return Err(CoreError::InvalidArgument(format!(
                "order={:?} is not a permutation of the {} dimensions",
                order,
                k.len()
            ))
            .into());
        }
        let tie = tie(tie_rule)?;
        let engine = if adaptive {
            Engine::TorusAdaptive { torus: t, tie }
        } else {
            Engine::TorusDor {
                torus: t,
                order,
                tie,
            }
        };
        Ok(PyRouter {
            inner: Router { graph: g, engine },
        })
    }

    /// Dragonfly minimal routing, or Valiant with `valiant_seed`.
    #[staticmethod]
    #[pyo3(signature = (src, dst, a, p, h, g, valiant_seed=None))]
    fn dragonfly(
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        a: u64,
        p: u64,
        h: u64,
        g: u64,
        valiant_seed: Option<u64>,
    ) -> PyResult<Self> {
        let df = Dragonfly::new(a, p, h, g)?;
        if valiant_seed.is_some() && g < 3 {
            return Err(CoreError::InvalidArgument(format!(
                "valiant: g={} groups, expected >= 3 (an intermediate group other than source and destination)",
                g
            ))
            .into());
        }
        let gr = graph(df.n_nodes() as usize, df.n_endpoints() as usize, src, dst)?;
        Ok(PyRouter {
            inner: Router {
                graph: gr,
                engine: Engine::Dragonfly {
                    df,
                    valiant: valiant_seed,
                },
            },
        })
    }

    /// Given forwarding tables: `entries[(switch - n_endpoints) * n_endpoints + d]`
    /// is the out-link id, or 2**32 - 1 for none.
    #[staticmethod]
    fn table(
        n_nodes: usize,
        n_endpoints: usize,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        entries: PyReadonlyArray1<u32>,
    ) -> PyResult<Self> {
        let g = graph(n_nodes, n_endpoints, src, dst)?;
        let entries = entries.as_slice()?.to_vec();
        if entries.len() != (n_nodes - n_endpoints) * n_endpoints {
            return Err(CoreError::InvalidArgument(format!(
                "table: {} entries, expected switches x endpoints = {}",
                entries.len(),
                (n_nodes - n_endpoints) * n_endpoints
            ))
            .into());
        }
        if let Some(&bad) = entries
            .iter()
            .find(|&&l| l != u32::MAX && l as usize >= g.n_links())
        {
            return Err(CoreError::InvalidArgument(format!(
                "table: link id {} out of range 0..{}",
                bad,
                g.n_links()
            ))
            .into());
        }
        Ok(PyRouter {
            inner: Router {
                graph: g,
                engine: Engine::Table(Table {
                    n_endpoints,
                    entries,
                }),
            },
        })
    }

    /// Min-hop forwarding tables with port balancing, computed from the graph.
    /// Destinations are balanced in `order` (endpoint index order by default).
    #[staticmethod]
    #[pyo3(signature = (n_nodes, n_endpoints, src, dst, order=None))]
    fn minhop(
        py: Python<'_>,
        n_nodes: usize,
        n_endpoints: usize,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        order: Option<PyReadonlyArray1<u32>>,
    ) -> PyResult<Self> {
        let g = graph(n_nodes, n_endpoints, src, dst)?;
        let order: Option<Vec<u32>> = match order {
            Some(o) => Some(o.as_slice()?.to_vec()),
            None => None,
        };
        let (g, t) = py.allow_threads(move || {
            let t = minhop_tables(&g, order.as_deref());
            (g, t)
        });
        let t = t?;
        Ok(PyRouter {
            inner: Router {
                graph: g,
                engine: Engine::Table(t),
            },
        })
    }

    /// Up*/down* routing with ranks from BFS over `roots`.
    #[staticmethod]
    fn updown(
        n_nodes: usize,
        n_endpoints: usize,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        roots: Vec<u32>,
    ) -> PyResult<Self> {
        let g = graph(n_nodes, n_endpoints, src, dst)?;
        if let Some(&r) = roots.iter().find(|&&r| r as usize >= n_nodes) {
            return Err(CoreError::InvalidArgument(format!(
                "updown: root {} out of range 0..{}",
                r, n_nodes
            ))
            .into());
        }
        let ud = UpDown::new(&g, &roots)?;
        Ok(PyRouter {
            inner: Router {
                graph: g,
                engine: Engine::UpDown(ud),
            },
        })
    }

    /// Several rank slots per endpoint of `fabric` (`topocoll.topology.nodes`):
    /// the expanded network's graph (`n_nodes`, `src`, `dst`, endpoints =
    /// `ppn` slots per fabric endpoint) routed through each node's memory or the
    /// fabric's own routes (`routing::nodes`).
    #[staticmethod]
    fn nodes(
        fabric: &PyRouter,
        n_nodes: usize,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        ppn: u32,
    ) -> PyResult<Self> {
        let inner = NodeRoutes::new(fabric.inner.clone(), ppn)?;
        let slots = fabric.inner.graph.n_endpoints * ppn as usize;
        let g = graph(n_nodes, slots, src, dst)?;
        let want = fabric.inner.graph.n_links() + 2 * slots + 2 * fabric.inner.graph.n_endpoints;
        if g.n_links() != want {
            return Err(CoreError::InvalidArgument(format!(
                "nodes: {} links, expected {want}",
                g.n_links()
            ))
            .into());
        }
        Ok(PyRouter {
            inner: Router {
                graph: g,
                engine: Engine::Nodes(Box::new(inner)),
            },
        })
    }

    /// True when a pair's links are a flow split over several paths.
    #[getter]
    fn multipath(&self) -> bool {
        self.inner.multipath()
    }

    /// Forwarding tables as a flat array (table engines only), else None.
    fn table_entries<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<u32>>> {
        match &self.inner.engine {
            Engine::Table(t) => Some(t.entries.clone().into_pyarray(py)),
            _ => None,
        }
    }

    /// Routes of a batch: `(indptr uint64, links uint32, weights float64)`.
    #[allow(clippy::type_complexity)]
    fn route<'py>(
        &self,
        py: Python<'py>,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
    ) -> PyResult<(
        Bound<'py, PyArray1<u64>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<f64>>,
    )> {
        let (s, d) = (src.as_slice()?, dst.as_slice()?);
        let p = py.allow_threads(|| self.inner.route(s, d))?;
        Ok((
            p.indptr.into_pyarray(py),
            p.links.into_pyarray(py),
            p.weights.into_pyarray(py),
        ))
    }

    /// Number of routes (weighted) crossing each link.
    fn loads<'py>(
        &self,
        py: Python<'py>,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (s, d) = (src.as_slice()?, dst.as_slice()?);
        let mut load = vec![0f64; self.inner.graph.n_links()];
        py.allow_threads(|| self.inner.add_loads(s, d, &mut load))?;
        Ok(load.into_pyarray(py))
    }

    /// Effective-bisection-bandwidth fraction of each pattern of `per_pattern` flows.
    fn ebb<'py>(
        &self,
        py: Python<'py>,
        src: PyReadonlyArray1<u32>,
        dst: PyReadonlyArray1<u32>,
        per_pattern: usize,
        bandwidth: PyReadonlyArray1<f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (s, d, bw) = (src.as_slice()?, dst.as_slice()?, bandwidth.as_slice()?);
        let out = py.allow_threads(|| self.inner.ebb(s, d, per_pattern, bw))?;
        Ok(out.into_pyarray(py))
    }
}

/// Largest endpoint-to-endpoint hop count over switch-only paths:
/// `(hops, None)`, or `(None, (from, to))` for an endpoint pair without path.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn routing_endpoint_diameter(
    py: Python<'_>,
    n_nodes: usize,
    n_endpoints: usize,
    src: PyReadonlyArray1<u32>,
    dst: PyReadonlyArray1<u32>,
) -> PyResult<(Option<u32>, Option<(u32, u32)>)> {
    let (s, d) = (src.as_slice()?, dst.as_slice()?);
    Ok(
        match py.allow_threads(|| endpoint_diameter(n_nodes, n_endpoints, s, d))? {
            Diameter::Hops(h) => (Some(h), None),
            Diameter::Unreachable { from, to } => (None, Some((from, to))),
        },
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(routing_endpoint_diameter, m)?)?;
    m.add_function(wrap_pyfunction!(routing_xgft_links, m)?)?;
    m.add_function(wrap_pyfunction!(routing_torus_links, m)?)?;
    m.add_function(wrap_pyfunction!(routing_dragonfly_links, m)?)?;
    m.add_class::<PyRouter>()?;
    Ok(())
}
