"""Node orders: which endpoint each rank runs on (rank -> endpoint).

=====================  ==========================================================
``identity``           rank r on endpoint r
``routing``            the routing engine's order (shift-based paper §5.2, "the
                       order given by the OpenSM routing engine")
``random``             seeded random permutation (the paper's "alphabetical
                       order" case: an order unrelated to the routing)
``blocked:2x2x2``      torus only: successive ranks fill 2×2×2 blocks, blocks in
                       x-fastest order (radix-k paper §4.3, Fig. 9)
``hostfile:PATH``      hosts listed in a hostfile, matched to endpoint names
``slurm:PATH``         nodes of a Slurm ``topology.conf``, leaf switch by leaf switch
=====================  ==========================================================
"""

from __future__ import annotations

import numpy as np

from topocoll.errors import SpecError, TopologyError

from .network import Topology
from .routing import routing_order

__all__ = ["node_order", "ORDERS"]

ORDERS = ("identity", "routing", "random", "blocked", "hostfile", "slurm")


def _blocked(topology, block_text):
    if topology.family != "torus":
        raise SpecError(f"order 'blocked:{block_text}': {topology.spec} is not a torus, expected a torus or mesh")
    k = topology.params["k"]
    try:
        block = [int(x) for x in block_text.lower().split("x")]
    except ValueError:
        raise SpecError(f"order 'blocked:{block_text}': expected block sizes like 2x2x2") from None
    if len(block) != len(k) or any(b < 1 or kk % b for b, kk in zip(block, k)):
        dims = "x".join(map(str, k))
        raise SpecError(f"order 'blocked:{block_text}': expected {len(k)} block sizes >= 1 dividing the torus {dims}")
    # rank r -> (block index, offset in block), both x-fastest
    k = np.array(k)
    block = np.array(block)
    nblocks = k // block
    r = np.arange(int(np.prod(k)))
    vol = int(np.prod(block))
    b_idx, off = np.divmod(r, vol)
    coord = np.zeros((len(r), len(k)), dtype=np.int64)
    for i in range(len(k)):
        off, o = np.divmod(off, block[i])
        b_idx, bi = np.divmod(b_idx, nblocks[i])
        coord[:, i] = bi * block[i] + o
    stride = np.concatenate([[1], np.cumprod(k)[:-1]])
    return coord @ stride


def _by_names(topology, names, source):
    index = {}
    for i, n in enumerate(topology.endpoint_names()):
        index.setdefault(n, i)
    out, seen = [], set()
    for n in names:
        if n not in index:
            raise TopologyError(f"order from {source}: host {n!r} is not an endpoint of {topology.spec}")
        if n in seen:
            continue
        seen.add(n)
        out.append(index[n])
    return np.array(out, dtype=np.int64)


def node_order(topology: Topology, name: str = "identity", *, seed: int = 0, n_ranks: int | None = None) -> np.ndarray:
    """Rank -> endpoint mapping.

    Parameters
    ----------
    topology : Topology
    name : str
        One of the orders in the module docstring.
    seed : int
        Seed of the ``random`` order (printed with every result).
    n_ranks : int, optional
        Number of ranks (all endpoints, or all listed hosts, by default); the
        first ``n_ranks`` entries of the order are returned.

    Returns
    -------
    numpy.ndarray of int64
        ``order[rank]`` is the endpoint of ``rank``.

    Raises
    ------
    SpecError
        Unknown order, bad block, or more ranks than endpoints.
    TopologyError
        A host listed in a file is not an endpoint.

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> node_order(parse_topology("torus:4x4x4"), "blocked:2x2x2")[:8].tolist()
    [0, 1, 4, 5, 16, 17, 20, 21]
    """
    kind, _, arg = name.partition(":")
    n = topology.n_endpoints
    if kind == "identity":
        order = np.arange(n, dtype=np.int64)
    elif kind == "routing":
        order = routing_order(topology)
    elif kind == "random":
        if int(seed) < 0:
            raise SpecError(f"order 'random': seed={seed}, expected >= 0")
        order = np.random.default_rng(int(seed)).permutation(n).astype(np.int64)
    elif kind == "blocked":
        order = _blocked(topology, arg)
    elif kind in ("hostfile", "slurm"):
        if not arg:
            raise SpecError(f"order {name!r}: expected {kind}:PATH")
        from .io.slurm import read_hostfile, read_slurm_topology_order
        names = read_hostfile(arg) if kind == "hostfile" else read_slurm_topology_order(arg)
        order = _by_names(topology, names, arg)
    else:
        raise SpecError(f"order {name!r}: expected one of identity, routing, random, blocked:AxBxC, hostfile:PATH, slurm:PATH")
    if n_ranks is not None:
        if isinstance(n_ranks, bool) or int(n_ranks) < 1:
            raise SpecError(f"order: n_ranks={n_ranks}, expected >= 1")
        if int(n_ranks) > len(order):
            raise SpecError(f"order {name!r}: {n_ranks} ranks but only {len(order)} endpoints available on {topology.spec}")
        order = order[: int(n_ranks)]
    return order
