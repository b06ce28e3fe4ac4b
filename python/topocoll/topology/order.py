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

Multi-rail hosts (one host name, several adapters: ``"node01 mlx5_0"`` ..
``"node01 mlx5_3"``) are every adapter an endpoint. A host named in a
hostfile or ``topology.conf`` maps to its adapters by ``rail=``:

- ``"first"`` (default): one rank per host, on its first adapter;
- ``"round-robin"``: one rank per adapter, the host's consecutive ranks on
  its adapters in turn (slot counts are still ignored: one rank per endpoint);
- ``N`` (an int, 0-based): one rank per host, on adapter N; a host with N or
  fewer adapters is an error naming the host.

A host's adapters are numbered by adapter name (``mlx5_0`` < ``mlx5_1``,
``HCA-1`` < ``HCA-2``, numbers compared as numbers), then by node GUID: rail
0 is ``mlx5_0`` or ``HCA-1``. :func:`describe_rails` says what was done.
"""

from __future__ import annotations

import re

import numpy as np

from topocoll.errors import SpecError, TopologyError

from .network import Topology
from .routing import routing_order
from .torus import _whole

__all__ = ["node_order", "ORDERS", "RAILS", "host_adapters", "describe_rails"]

ORDERS = ("identity", "routing", "random", "blocked", "hostfile", "slurm")
#: named rail choices; an adapter number N >= 0 is accepted too
RAILS = ("first", "round-robin")


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


def _parse_rail(rail):
    """``None``/``'first'``/``'round-robin'``/``N`` -> ``'first'``, ``'round-robin'`` or an int."""
    if rail is None:
        return "first"
    if isinstance(rail, str) and rail in RAILS:
        return rail
    try:
        n = int(rail)
        ok = not isinstance(rail, bool) and n >= 0 and str(rail).strip().lstrip("+").isdigit()
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise SpecError(f"rail={rail!r}: expected first, round-robin or an adapter number N >= 0 (0-based)")
    return n


def _natural(text):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text) if t]


def host_adapters(topology: Topology) -> dict:
    """Endpoints by host name, each host's adapters in rail order.

    Returns
    -------
    dict
        ``{host: [endpoint, ...]}`` in endpoint order of each host's first
        adapter; a host's adapters sorted by adapter name (``mlx5_0`` <
        ``mlx5_1``, ``HCA-1`` < ``HCA-2``), then node GUID, then endpoint id.
    """
    n = topology.n_endpoints
    adapters = topology.params.get("adapters") or ("",) * n
    guids = topology.params.get("guids") or ("",) * n
    groups = {}
    for i, name in enumerate(topology.names[:n]):
        groups.setdefault(name, []).append(i)
    for name, eps in groups.items():
        if len(eps) > 1:
            eps.sort(key=lambda e: (adapters[e] == "", _natural(adapters[e]), guids[e], e))
    return groups


def describe_rails(topology: Topology, rail=None, order: str | None = None) -> str | None:
    """One line on multi-rail hosts and how ranks were put on them; None
    when every host has one adapter."""
    multi = [len(v) for v in host_adapters(topology).values() if len(v) > 1]
    if not multi:
        return None
    rail = _parse_rail(rail)
    span = f"{min(multi)}" if min(multi) == max(multi) else f"{min(multi)}-{max(multi)}"
    hosts = f"{len(multi)} host{'s' if len(multi) > 1 else ''} with {span} adapters"
    if order is not None and order.partition(":")[0] not in ("hostfile", "slurm"):
        return f"{hosts}; order {order} places ranks on every adapter (--rail applies to hostfile:/slurm: orders)"
    how = {"first": "mapped to each host's first adapter (rail 0)",
           "round-robin": "mapped round-robin (one rank per adapter, a host's ranks on its adapters in turn)"}
    return f"{hosts}, {how.get(rail, f'mapped to adapter {rail} (0-based) of each host')}"


def _unnamed_hint(topology) -> str:
    """How to fix a host name missing from a fabric whose endpoints are named
    by node GUID (an ibnetdiscover file read without ``@map=FILE``, or a map
    that leaves some out); "" when every endpoint has a host name."""
    guids = topology.params.get("guids")
    if not guids:
        return ""
    n = topology.n_endpoints
    unnamed = [i for i in range(n) if topology.names[i] == guids[i]]
    if not unnamed:
        return ""
    example = topology.names[unnamed[0]]
    body, at, options = topology.spec.partition("@")
    if "map=" in options:
        return (f"; {len(unnamed)} of its {n} endpoints have no host name in its map (e.g. {example!r}), expected "
                "a 'NODE-ID HOSTNAME' line for the host in the map")
    with_map = f"{body}@{options},map=FILE" if at else f"{body}@map=FILE"
    return (f"; its {n} endpoints are named by node GUID (e.g. {example!r}), expected host names: give them with "
            f"a map of 'NODE-ID HOSTNAME' lines, {with_map}")


def _hostfile_slots(topology, path: str, n_ranks: int, rail) -> np.ndarray:
    """Slots of ``n_ranks`` ranks on a ``+ppn`` network from a hostfile: each
    listed host takes up to its ``slots`` (``ppn`` where the line gives
    none, at most ``ppn``), ``block`` filling a host before the next,
    ``cyclic`` dealing one rank per host with a free slot in turn."""
    from .io.slurm import read_hostfile_slots
    if not path:
        raise SpecError("order 'hostfile:': expected hostfile:PATH")
    nodes, fabric = topology.params["nodes"], topology.params["fabric"]
    entries = read_hostfile_slots(path)
    rail = _parse_rail(rail)
    if rail == "round-robin":
        raise SpecError(f"order from {path}: rail round-robin on a network with nodes, expected first or an "
                        "adapter number (a host's ranks share its hub)")
    hosts = _by_names(fabric, [h for h, _ in entries], path, rail)
    caps = []
    for (host, slots), _ in zip(entries, hosts):
        if slots is not None and slots > nodes.ppn:
            raise SpecError(f"order from {path}: host {host!r} has slots={slots}, expected at most ppn={nodes.ppn}")
        caps.append(nodes.ppn if slots is None else slots)
    if sum(caps) < n_ranks:
        raise SpecError(f"order from {path}: {n_ranks} ranks but the file's hosts have {sum(caps)} slots, "
                        f"expected at least {n_ranks}")
    host_of, slot_of, used = [], [], [0] * len(caps)
    if nodes.distribution == "block":
        for h, cap in enumerate(caps):
            take = min(cap, n_ranks - len(host_of))
            host_of += [h] * take
            slot_of += list(range(take))
    else:
        while len(host_of) < n_ranks:
            for h, cap in enumerate(caps):
                if used[h] < cap and len(host_of) < n_ranks:
                    host_of.append(h)
                    slot_of.append(used[h])
                    used[h] += 1
    return np.asarray(hosts, dtype=np.int64)[host_of] * nodes.ppn + np.asarray(slot_of, dtype=np.int64)


def _by_names(topology, names, source, rail="first"):
    groups = host_adapters(topology)
    out, seen = [], set()
    for n in names:
        if n not in groups:
            raise TopologyError(f"order from {source}: host {n!r} is not an endpoint of {topology.spec}"
                                + _unnamed_hint(topology))
        if n in seen:
            continue
        seen.add(n)
        eps = groups[n]
        if rail == "round-robin":
            out.extend(eps)
        elif rail == "first":
            out.append(eps[0])
        elif rail < len(eps):
            out.append(eps[rail])
        else:
            have = f"{len(eps)} adapters (rails 0-{len(eps) - 1})" if len(eps) > 1 else "1 adapter (rail 0 only)"
            raise TopologyError(f"order from {source}: host {n!r} has {have}, expected at least {rail + 1} "
                                f"for rail={rail}")
    return np.array(out, dtype=np.int64)


def node_order(topology: Topology, name: str = "identity", *, seed: int = 0, n_ranks: int | None = None,
               rail=None) -> np.ndarray:
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
    rail : {"first", "round-robin"} or int, optional
        ``hostfile:``/``slurm:`` orders only: which adapter(s) of a
        multi-rail host (module docstring); ``"first"`` if omitted.

    Returns
    -------
    numpy.ndarray of int64
        ``order[rank]`` is the endpoint of ``rank``.

    Raises
    ------
    SpecError
        Unknown order, bad block, more ranks than endpoints, or ``rail``
        given with an order that names no hosts.
    TopologyError
        A host listed in a file is not an endpoint, or has no adapter ``rail``.

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> node_order(parse_topology("torus:4x4x4"), "blocked:2x2x2")[:8].tolist()
    [0, 1, 4, 5, 16, 17, 20, 21]
    """
    if topology.family == "nodes":   # an order of the hosts, then the ranks dealt onto their slots
        from .nodes import place_on_nodes
        nodes = topology.params["nodes"]
        total = topology.n_endpoints if n_ranks is None else n_ranks
        if not _whole(total) or total < 1 or total > topology.n_endpoints:
            raise SpecError(f"order {name!r}: {total} ranks on {topology.spec}, expected 1..{topology.n_endpoints} "
                            f"({topology.params['fabric'].n_endpoints} hosts x ppn={nodes.ppn})")
        if name.startswith("hostfile:"):   # the file's slots cap each host (mpiexec's --map-by slot / node)
            return _hostfile_slots(topology, name.partition(":")[2], int(total), rail)
        from .nodes import hosts_used
        fabric = topology.params["fabric"]
        hosts = node_order(fabric, name, seed=seed, n_ranks=hosts_used(nodes, int(total), fabric.n_endpoints),
                           rail=rail)
        return place_on_nodes(hosts, nodes, int(total))
    kind, _, arg = name.partition(":")
    n = topology.n_endpoints
    if rail is not None and kind not in ("hostfile", "slurm"):
        raise SpecError(f"order {name!r}: rail={rail!r} applies to hostfile:PATH and slurm:PATH orders only")
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
        order = _by_names(topology, names, arg, _parse_rail(rail))
    else:
        raise SpecError(f"order {name!r}: expected one of identity, routing, random, blocked:AxBxC, hostfile:PATH, slurm:PATH")
    if n_ranks is not None:
        if not _whole(n_ranks) or n_ranks < 1:   # int(3.7) would silently place 3 ranks
            raise SpecError(f"order: n_ranks={n_ranks!r}, expected an integer >= 1")
        if int(n_ranks) > len(order):
            raise SpecError(f"order {name!r}: {n_ranks} ranks but only {len(order)} endpoints available on {topology.spec}")
        order = order[: int(n_ranks)]
    return order
