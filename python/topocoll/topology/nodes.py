"""Nodes with several ranks (issue 19 §1): a fabric's endpoints become hosts
that hold ``ppn`` rank slots each.

Spec: a topology spec followed by ``+ppn=N`` and node options,
comma-separated::

    kary:12,2+ppn=32                         32 ranks per host, block distribution
    kary:12,2@host.bw=12.5GB/s+ppn=32,dist=cyclic,lat=0.4us,bw=8GB/s,mem=80GB/s

========  ==================================================  ===========
``ppn``   rank slots per host (1..1024)                        required
``dist``  ``block`` (ranks 0..ppn−1 on the first host) or      ``block``
          ``cyclic`` (rank r on host r mod H, H = all
          hosts, or P when P is smaller) — Slurm's
          ``--distribution``
``lat``   one-way shared-memory latency between two ranks      0.3 µs
``bw``    one rank's copy bandwidth (into or out of the node)  10 GB/s
``mem``   the node's memory bandwidth for intra-node           100 GB/s
          messages, shared by its ranks
========  ==================================================  ===========

The defaults are assumptions of a typical dual-socket x86 node, not
measurements of one (OSU intra-node latencies of MPICH and Open MPI over
shared memory are a few tenths of a µs; one core copies at about 10 GB/s;
STREAM on two sockets gives 100–300 GB/s): set them from ``calibrate``
(its intra-node level) or your node's data.

Structure (the node's links, all the models read them; ``routing::nodes``
in the Rust core numbers them): each rank slot has a link to the host's
hub and one back (latency ``lat/2`` each, bandwidth ``bw``); the hub is the
fabric endpoint, so the host's links into the fabric are its NIC, shared by
its ranks (``host.bw=`` of the fabric spec sets the NIC's injection
bandwidth). A message between two ranks of one host goes up, through one
memory link per host (hub → memory → hub, bandwidth ``mem``, shared by the
host's intra-node messages) and down: ``lat + m / min(bw, mem share)``. A
message between hosts takes the fabric's route alone: the NIC reads and
writes the ranks' buffers itself (RDMA), so ``bw`` (a core's copy
bandwidth) does not cap it: a single rank's stream is limited by the host's
NIC link, and the host's ranks together share that link (their aggregate
injection).

The NIC's per-message costs are the host's too: ``loggops``'s lanes (its
gap ``g``: the NIC's message rate ``1/g``, and ``G``) and ``L``, and the
flow model's ``nic_bandwidth``, belong to the host, shared by its ranks,
and a message within a host pays none of them (``src/engine/loggops.rs``,
``src/engine/flow.rs``). What it does not model: several NICs per host
(multi-rail hosts keep one rank per adapter, ``--rail``), sockets, and a
message rate in the flow and packet models (they have no per-message gap).
``ppn=1`` is the fabric itself, unchanged: with one rank per host, the
node's links are left out (every model's results stay as they were).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from .network import Topology, parse_bandwidth, parse_latency

__all__ = ["NodeSpec", "parse_node_spec", "with_nodes", "place_on_nodes", "fabric_link_ids", "MAX_PPN", "MAX_SLOTS"]

#: most rank slots per host
MAX_PPN = 1024
#: most rank slots in all (each is an endpoint with two links)
MAX_SLOTS = 1 << 22
#: links that only join two parts of one node (memory → hub) carry this, B/s
UNLIMITED = 1e15
DISTRIBUTIONS = ("block", "cyclic")


@dataclass(frozen=True)
class NodeSpec:
    """Ranks per host and the node's intra-node path (SI units)."""

    ppn: int
    distribution: str = "block"
    shm_latency: float = 0.3e-6
    copy_bandwidth: float = 10e9
    memory_bandwidth: float = 100e9

    def describe(self) -> str:
        return (f"{self.ppn} ranks per node ({self.distribution}), shared memory {self.shm_latency * 1e6:g} µs, "
                f"{self.copy_bandwidth / 1e9:g} GB/s per rank, {self.memory_bandwidth / 1e9:g} GB/s per node")


def parse_node_spec(text: str, spec: str) -> NodeSpec:
    """``ppn=N[,dist=..][,lat=..][,bw=..][,mem=..]`` (the part after ``+``)."""
    values = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in ("ppn", "dist", "lat", "bw", "mem"):
            # the fabric's own options (bw=, lat=, host.lat=, map=) written after +ppn= without an @
            raise SpecError(f"{spec}: node option {item!r}, expected ppn=N, dist=block|cyclic, lat=, bw=, mem=; the "
                            "fabric's @ options go before +ppn= (e.g. kary:12,2@host.lat=200ns+ppn=32) or after "
                            "the node options behind their own @")
        if key in values:
            raise SpecError(f"{spec}: node option {key} given twice, expected it once")
        values[key] = value.strip()
    try:
        ppn = int(values.get("ppn", ""))
    except ValueError:
        raise SpecError(f"{spec}: ppn={values.get('ppn')!r}, expected an integer in 1..{MAX_PPN}") from None
    if not 1 <= ppn <= MAX_PPN:
        raise SpecError(f"{spec}: ppn={ppn}, expected an integer in 1..{MAX_PPN}")
    dist = values.get("dist", "block")
    if dist not in DISTRIBUTIONS:
        raise SpecError(f"{spec}: dist={dist!r}, expected block or cyclic")
    kw = {}
    if "lat" in values:
        kw["shm_latency"] = parse_latency(values["lat"])
    for key, field in (("bw", "copy_bandwidth"), ("mem", "memory_bandwidth")):
        if key in values:
            kw[field] = parse_bandwidth(values[key])
    return NodeSpec(ppn, dist, **kw)


def with_nodes(fabric: Topology, nodes: NodeSpec, spec: str) -> Topology:
    """The fabric with ``nodes.ppn`` rank slots on each endpoint (the
    numbering of the module note and of ``routing::nodes``)."""
    ppn, hosts = nodes.ppn, fabric.n_endpoints
    if ppn == 1:   # one rank per host: the fabric as every model had it (no node links to cross)
        return fabric
    slots = hosts * ppn
    if slots > MAX_SLOTS:
        raise SpecError(f"{spec}: {hosts} hosts x ppn={ppn} = {slots} rank slots, expected at most {MAX_SLOTS}")
    n_fab, n_links = fabric.n_nodes, fabric.n_links
    indptr = fabric.indptr
    fsrc = fabric.src.astype(np.int64)
    fdst = fabric.dst.astype(np.int64)
    fab_ids = _fabric_ids(fabric, ppn)
    total = n_links + 2 * slots + 2 * hosts
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    bw = np.empty(total)
    lat = np.empty(total)
    h_of = np.arange(slots) // ppn
    # slot → hub
    src[:slots], dst[:slots] = np.arange(slots), slots + h_of
    bw[:slots], lat[:slots] = nodes.copy_bandwidth, nodes.shm_latency / 2
    # fabric links
    src[fab_ids], dst[fab_ids] = slots + fsrc, slots + fdst
    bw[fab_ids], lat[fab_ids] = fabric.bandwidth, fabric.latency
    # hub → memory, hub → slots
    h = np.arange(hosts)
    base = slots + indptr[1:hosts + 1] + (1 + ppn) * h
    mem_node = slots + n_fab + h
    src[base], dst[base], bw[base], lat[base] = slots + h, mem_node, nodes.memory_bandwidth, 0.0
    down = (base[:, None] + 1 + np.arange(ppn)[None, :]).ravel()
    src[down], dst[down] = slots + h_of, np.arange(slots)
    bw[down], lat[down] = nodes.copy_bandwidth, nodes.shm_latency / 2
    # memory → hub
    back = slots + n_links + (1 + ppn) * hosts + h
    src[back], dst[back], bw[back], lat[back] = mem_node, slots + h, UNLIMITED, 0.0
    names = fabric.names
    slot_names = [f"{names[i // ppn]}/{i % ppn}" for i in range(slots)]
    mem_names = [f"{names[i]}/mem" for i in range(hosts)]
    params = {"fabric": fabric, "nodes": nodes}
    topo = Topology(spec, "nodes", slots, n_fab + hosts, src.astype(np.uint32), dst.astype(np.uint32), bw, lat,
                    params, tuple(slot_names) + tuple(names) + tuple(mem_names))
    return topo


def _fabric_ids(fabric: Topology, ppn: int) -> np.ndarray:
    """New ids of the fabric's links: shifted past the slots and the extra
    links (to memory and to slots) of the hosts before their source."""
    return (fabric.n_endpoints * ppn + np.arange(fabric.n_links)
            + (1 + ppn) * np.minimum(fabric.src.astype(np.int64), fabric.n_endpoints))


def fabric_link_ids(topology: Topology) -> np.ndarray:
    """``ids[i]``: the id in a ``+ppn`` network of its fabric's link ``i``."""
    return _fabric_ids(topology.params["fabric"], topology.params["nodes"].ppn)


def hosts_used(nodes: NodeSpec, n_ranks: int, n_hosts: int) -> int:
    """Hosts ``n_ranks`` ranks occupy out of ``n_hosts``: ``block`` fills
    ⌈P / ppn⌉ of them; ``cyclic`` deals over all hosts of the allocation
    (one rank each while there are fewer ranks than hosts), as Slurm's
    ``--distribution=cyclic`` does: "consecutive tasks are distributed over
    consecutive nodes (in a round-robin fashion)" — on three nodes with two
    CPUs each, four tasks go one and four to the first node, two to the
    second, three to the third (srun(1), ``--distribution``)."""
    if nodes.distribution == "block":
        return -(-n_ranks // nodes.ppn)
    return min(n_hosts, n_ranks)


def place_on_nodes(host_order: np.ndarray, nodes: NodeSpec, n_ranks: int) -> np.ndarray:
    """Slots of ``n_ranks`` ranks on the hosts ``host_order`` (one entry per
    host used, in order, :func:`hosts_used` of them): ``block`` fills a host
    before the next, ``cyclic`` deals rank ``r`` to host ``r mod H`` (Slurm's
    ``--distribution``)."""
    hosts = np.asarray(host_order, dtype=np.int64)
    r = np.arange(n_ranks)
    if nodes.distribution == "block":
        host, slot = r // nodes.ppn, r % nodes.ppn
    else:
        host, slot = r % len(hosts), r // len(hosts)
    return hosts[host] * nodes.ppn + slot
