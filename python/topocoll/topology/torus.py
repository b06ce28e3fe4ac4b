"""Tori and meshes in any dimension, with per-dimension wrap-around.

Node ``v`` has coordinates ``c_0 .. c_{D-1}`` with ``c_0`` varying fastest.
The all-to-all paper's "8 × 8 × 2M" partitions (Kumar & Heidelberger, seed
``alltoall-blue-gene-torus.txt``) mix torus and mesh dimensions: spec
``torus:8x8x4m`` makes the last dimension a mesh. A ring of size 2 has a
single cable. Torus nodes are endpoints and routers at once (no switches).
"""

from __future__ import annotations

import math

import numpy as np

from topocoll import _core
from topocoll.errors import SpecError

from .network import Topology, make_topology

__all__ = ["torus", "dimension_classes", "NOT_A_DIMENSION", "BGL_BANDWIDTH", "BGL_LATENCY"]

#: Blue Gene/L torus link: 175 MB/s per direction; ~100 ns per hop.
BGL_BANDWIDTH = 175e6
BGL_LATENCY = 100e-9


def _whole(value) -> bool:
    """True for 4, np.int64(4) and 4.0; False for 4.5, True, '4', nan."""
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        return int(value) == value
    except (TypeError, ValueError, OverflowError):
        return False


def torus(dims, wrap=True, *, bandwidth=BGL_BANDWIDTH, latency=BGL_LATENCY, spec=None) -> Topology:
    """A torus / mesh with dimension sizes ``dims``.

    Parameters
    ----------
    dims : sequence of int
        Size of each dimension (>= 1).
    wrap : bool or sequence of bool
        Wrap-around per dimension (True: torus ring, False: mesh line).

    Returns
    -------
    Topology
        A torus dimension of size k >= 3 has k cables per ring, a mesh one k-1.

    Examples
    --------
    >>> t = torus((8, 8, 4), wrap=(True, True, False))
    >>> t.n_endpoints, t.n_links // 2
    (256, 704)
    """
    dims = tuple(dims)
    for k in dims:   # int(4.5) would silently build a 4-ring
        if not _whole(k) or k < 1:
            raise SpecError(f"torus: dimension size {k!r} in dims={list(dims)}, expected integers >= 1")
    dims = tuple(int(k) for k in dims)
    if not dims:
        raise SpecError("torus: dims=[], expected one or more sizes >= 1")
    wraps = (bool(wrap),) * len(dims) if isinstance(wrap, bool) else tuple(bool(x) for x in wrap)
    if len(wraps) != len(dims):
        raise SpecError(f"torus: {len(wraps)} wrap flags for {len(dims)} dimensions")
    n = math.prod(dims)
    if n > 4_000_000:
        raise SpecError(f"torus: {n} nodes, expected at most 4,000,000")
    src, dst = _core.routing_torus_links(list(dims), list(wraps))
    if spec is None:
        spec = "torus:" + "x".join(f"{k}{'' if w else 'm'}" for k, w in zip(dims, wraps))
    return make_topology(spec, "torus", n, 0, src, dst, bandwidth, latency,
                         params={"k": dims, "wrap": wraps})


#: ``link_dim`` of a link that is not a torus dimension's
NOT_A_DIMENSION = 255


def dimension_classes(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Per link: the torus dimension it moves along, and whether it is the
    ring's dateline (the wrap-around cable, k−1 → 0 or 0 → k−1).

    A packet model routes dimension order on rings deadlock free by moving a
    packet to a second virtual channel once it has crossed the dateline of
    its current dimension (Dally & Seitz 1987; Dally & Towles 2004 §14.2):
    every cycle of channel dependencies in a ring crosses the dateline, so
    none remains. Meshes (no wrap) and rings of size 2 (one cable) have no
    dateline. Other families: every link is :data:`NOT_A_DIMENSION`.

    Examples
    --------
    >>> dim, dateline = dimension_classes(torus((4, 2)))
    >>> t = torus((4, 2))
    >>> [(int(t.src[i]), int(t.dst[i]), int(dim[i])) for i in np.flatnonzero(dateline)]
    [(0, 3, 0), (3, 0, 0), (4, 7, 0), (7, 4, 0)]
    """
    n = len(topology.src)
    if topology.family == "nodes":   # the fabric's classes on its links; the nodes' own links have none
        from .nodes import fabric_link_ids
        fab_dim, fab_dateline = dimension_classes(topology.params["fabric"])
        dim, dateline = np.full(n, NOT_A_DIMENSION, np.uint8), np.zeros(n, bool)
        ids = fabric_link_ids(topology)
        dim[ids], dateline[ids] = fab_dim, fab_dateline
        return dim, dateline
    if topology.family != "torus":
        return np.full(n, NOT_A_DIMENSION, np.uint8), np.zeros(n, bool)
    dims = np.asarray(topology.params["k"], dtype=np.int64)
    wraps = np.asarray(topology.params["wrap"], dtype=bool)
    stride = np.concatenate(([1], np.cumprod(dims)[:-1]))
    src = np.asarray(topology.src, dtype=np.int64)[:, None] // stride % dims   # coordinates, links × D
    dst = np.asarray(topology.dst, dtype=np.int64)[:, None] // stride % dims
    moved = src != dst
    if not (moved.sum(axis=1) == 1).all():
        raise SpecError(f"dimension_classes: {topology.spec} has a link that moves along {moved.sum(axis=1).max()} "
                        "dimensions, expected one")
    dim = moved.argmax(axis=1)
    a, b, k = src[np.arange(n), dim], dst[np.arange(n), dim], dims[dim]
    dateline = wraps[dim] & (k > 2) & (np.abs(a - b) == k - 1)
    return dim.astype(np.uint8), dateline
