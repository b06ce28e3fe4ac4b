"""Synthesized schedules on disk: one JSON document (``docs/synthesis.md``, "The file").

A cluster synthesizes once and runs many times: :func:`save` writes what
:func:`~.search.synthesize` made, :func:`load` reads it back as a
:class:`~.plan.Plan` (or, where a fixed algorithm won, that algorithm's name
and parameters), :func:`load_schedule` as a schedule for any vector.
Loading checks the fingerprint of the routes the schedule was made for
(:func:`~.routes.routes_hash`) against the network it is to run on — the
given one, else the one the file names, rebuilt — and refuses a mismatch in
one line. A ``.gz`` name is written and read gzip-compressed.

Top-level fields: ``format`` (``topocoll-synthesized-schedule``),
``version`` (1), ``collective``, ``p``, ``size`` (bytes, MPI's convention),
``count`` and ``itemsize`` (the vector it was made for), ``root``,
``chunking`` (``blocks``, ``chunks_per_rank``: block ``b`` starts at — or,
for a reduction, ends at — rank ``b // chunks_per_rank``), ``network``
(``topology`` spec, ``routing`` and ``routing_options``, ``order`` text,
``endpoints``: the endpoint of every rank, ``routes_sha256``), ``model``
(``name``, ``time_s``, ``alpha_s``, ``reduce_bandwidth``), ``seed``,
``settings`` (the greedy's), ``best_fixed`` (``algorithm``, ``params``,
``time_s``, or null), ``fixed`` (the fixed algorithm to run instead, or
null), and ``phases``: per phase ``kind`` (``gather``, ``reduce``,
``direct``), ``offset`` (first round), ``tau_s`` (seconds per step), and the
transfers as arrays of equal length — ``src``, ``dst``, ``step``, ``steps``
(duration in steps), ``port`` and ``inport`` (first and last link of the
route: the ports whose transfers run in the planned order) — with their chunks
as ``chunk_ptr`` / ``chunks`` (transfer ``i`` carries
``chunks[chunk_ptr[i]:chunk_ptr[i+1]]``).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from .greedy import Transfers
from .plan import COLLECTIVES, KINDS, Phase, Plan
from .routes import MAX_SYNTH_P

__all__ = ["FORMAT", "VERSION", "Loaded", "save", "load", "read_header", "load_schedule", "check_file", "check_network",
           "MAX_FILE_BYTES"]

FORMAT = "topocoll-synthesized-schedule"
VERSION = 1
#: largest file read, bytes (2 GiB: the largest schedule, 4 M transfers, takes about 150 MB)
MAX_FILE_BYTES = 1 << 31
#: most transfers in a file: the per-rank views' bound
MAX_FILE_TRANSFERS = 1 << 22


def _open(path, mode):
    path = os.fspath(path)
    return gzip.open(path, mode + "t", encoding="utf-8") if path.endswith(".gz") else \
        open(path, mode, encoding="utf-8")


def _network_doc(result) -> dict:
    net = result.network
    router = net.router
    return {"topology": router.topology.spec, "routing": router.name,
            "routing_options": {k: str(v) for k, v in router.options.items()},
            "order": net.label, "endpoints": [int(x) for x in net.order],
            "routes_sha256": result.routes.sha256}


def save(result, path) -> None:
    """Write a :class:`~.search.Synthesized` as the JSON document of the module doc."""
    plan = result.plan
    fixed = None
    if result.fixed_won:
        fixed = {"algorithm": result.best_fixed[0], "params": _jsonable(result.best_fixed[1]),
                 "time_s": result.best_fixed[2]}
    doc = {
        "format": FORMAT, "version": VERSION, "collective": result.collective, "p": result.p,
        "size": result.size, "count": result.count, "itemsize": result.itemsize, "root": plan.root,
        "chunking": {"blocks": plan.nblocks, "chunks_per_rank": plan.c},
        "network": _network_doc(result),
        "model": {"name": result.model, "time_s": result.synthesized_time,
                  "alpha_s": getattr(result.platform, "alpha", None),
                  "reduce_bandwidth": getattr(result.platform, "reduce_bandwidth", None)},
        "seed": result.seed, "settings": _jsonable(plan.settings),
        "best_fixed": None if result.best_fixed is None else {
            "algorithm": result.best_fixed[0], "params": _jsonable(result.best_fixed[1]),
            "time_s": result.best_fixed[2]},
        "fixed": fixed,
        "phases": [_phase_doc(ph) for ph in plan.phases],
    }
    with _open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _phase_doc(ph: Phase) -> dict:
    tr = ph.transfers
    return {"kind": ph.kind, "offset": int(ph.offset), "tau_s": float(tr.tau),
            **{name: getattr(tr, name).astype(np.int64).tolist()
               for name in ("src", "dst", "step", "steps", "chunk_ptr", "chunks")},
            "port": ph.port.astype(np.int64).tolist(),
            "inport": (ph.port if ph.inport is None else ph.inport).astype(np.int64).tolist()}


@dataclass
class Loaded:
    """A file read back: the plan (None where a fixed algorithm is to run), the
    fixed algorithm (``fixed``: name and params, or None), and the document."""

    path: str
    plan: Plan | None
    fixed: dict | None
    doc: dict

    @property
    def collective(self) -> str:
        return self.doc["collective"]

    @property
    def p(self) -> int:
        return self.doc["p"]

    @property
    def sha256(self) -> str:
        return self.doc["network"]["routes_sha256"]


def _bad(path, what: str) -> SpecError:
    return SpecError(f"{path}: {what}")


def _int_array(path, phase: int, name: str, value, low: int, high: int) -> np.ndarray:
    if not isinstance(value, list):
        raise _bad(path, f"phase {phase} {name} is {type(value).__name__}, expected a list of integers")
    try:
        arr = np.asarray(value, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise _bad(path, f"phase {phase} {name}: expected integers") from None
    if arr.ndim != 1:
        raise _bad(path, f"phase {phase} {name}: expected a flat list of integers")
    if arr.size and (arr.min() < low or arr.max() > high):
        raise _bad(path, f"phase {phase} {name}: values {int(arr.min())}..{int(arr.max())}, expected {low}..{high}")
    return arr


def read_header(path) -> dict:
    """The document of a schedule file checked only as far as its kind, collective, P and network
    fingerprint (no transfer is read into arrays, no route computed): what the registry's
    ``supports`` and ``tune --synthesize`` ask before loading it whole (:func:`load`)."""
    path = os.fspath(path)
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise _bad(path, f"{os.path.getsize(path)} bytes, expected at most {MAX_FILE_BYTES}")
        with _open(path, "r") as f:
            doc = json.load(f)
    except OSError as e:
        raise SpecError(f"{path}: cannot read ({e.strerror or e}), expected a file written by `topocoll synthesize`") \
            from None
    except (ValueError, EOFError):
        raise _bad(path, "not JSON, expected a file written by `topocoll synthesize`") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _bad(path, f"format {doc.get('format') if isinstance(doc, dict) else None!r}, expected {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise _bad(path, f"version {doc.get('version')!r}, expected {VERSION}")
    coll = doc.get("collective")
    if coll not in COLLECTIVES:
        raise _bad(path, f"collective {coll!r}, expected one of {', '.join(COLLECTIVES)}")
    p = doc.get("p")
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= MAX_SYNTH_P:
        raise _bad(path, f"p={p!r}, expected 1..{MAX_SYNTH_P}")
    net = doc.get("network")
    if not isinstance(net, dict) or not isinstance(net.get("routes_sha256"), str) \
            or not isinstance(net.get("topology"), str):
        raise _bad(path, "no network with topology and routes_sha256, expected the network it was made for")
    return doc


def load(path, network=None) -> Loaded:
    """Read a file written by :func:`save`; check its routes against
    ``network`` (a :class:`~topocoll.sim.model.Network`), or, without one,
    against the network the file names, rebuilt (:func:`check_network`).

    Raises
    ------
    SpecError
        Unreadable file, wrong format or version, a field out of bounds, or
        routes that differ from the network's (one line each).
    """
    path = os.fspath(path)
    doc = read_header(path)
    coll, p = doc["collective"], doc["p"]
    chunking = doc.get("chunking") or {}
    nblocks, c = chunking.get("blocks"), chunking.get("chunks_per_rank")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in (nblocks, c)) \
            or nblocks != (c if coll == "bcast" else p * c) or nblocks > 1 << 24:
        raise _bad(path, f"chunking {chunking!r}, expected blocks = chunks_per_rank (bcast) or P·chunks_per_rank, "
                         "at most 2^24")
    root = doc.get("root")
    if coll == "bcast" and not (isinstance(root, int) and 0 <= root < p):
        raise _bad(path, f"root={root!r}, expected a rank in 0..{p - 1}")
    check_network(doc, path, network)
    fixed = doc.get("fixed")
    if fixed is not None:
        if not isinstance(fixed, dict) or not isinstance(fixed.get("algorithm"), str) \
                or not isinstance(fixed.get("params", {}), dict):
            raise _bad(path, f"fixed={fixed!r}, expected {{algorithm, params}} or null")
        return Loaded(path, None, fixed, doc)
    phases_doc = doc.get("phases")
    if not isinstance(phases_doc, list) or not 1 <= len(phases_doc) <= 2:
        raise _bad(path, "phases: expected a list of 1 or 2 phases")
    phases, total = [], 0
    for i, ph in enumerate(phases_doc):
        if not isinstance(ph, dict) or ph.get("kind") not in KINDS:
            raise _bad(path, f"phase {i} kind {ph.get('kind') if isinstance(ph, dict) else None!r}, "
                             f"expected one of {', '.join(KINDS)}")
        src = _int_array(path, i, "src", ph.get("src"), 0, p - 1)
        n = src.shape[0]
        total += n
        if total > MAX_FILE_TRANSFERS:
            raise _bad(path, f"more than {MAX_FILE_TRANSFERS} transfers, expected at most that many")
        dst = _int_array(path, i, "dst", ph.get("dst"), 0, p - 1)
        step = _int_array(path, i, "step", ph.get("step"), 0, 1 << 40)
        steps = _int_array(path, i, "steps", ph.get("steps"), 1, 1 << 40)
        port = _int_array(path, i, "port", ph.get("port"), -1, 1 << 40)
        inport = _int_array(path, i, "inport", ph.get("inport"), -1, 1 << 40)
        ptr = _int_array(path, i, "chunk_ptr", ph.get("chunk_ptr"), 0, 1 << 40)
        chunks = _int_array(path, i, "chunks", ph.get("chunks"), 0, nblocks - 1)
        if not all(x.shape[0] == n for x in (dst, step, steps, port, inport)) or ptr.shape[0] != n + 1 or \
                (n and (ptr[0] != 0 or np.any(np.diff(ptr) < 1) or ptr[-1] != chunks.shape[0])):
            raise _bad(path, f"phase {i}: arrays of unequal length or chunk_ptr not rising from 0 to len(chunks), "
                             "expected one entry per transfer")
        if np.any(src == dst):
            raise _bad(path, f"phase {i}: a transfer from a rank to itself, expected distinct ranks")
        offset = ph.get("offset", 0)
        tau = ph.get("tau_s", 1.0)
        if not isinstance(offset, int) or offset < 0 or not isinstance(tau, (int, float)) or not tau > 0:
            raise _bad(path, f"phase {i}: offset={offset!r}, tau_s={tau!r}, expected an integer >= 0 and a time > 0")
        phases.append(Phase(ph["kind"], Transfers(src, dst, step, steps, ptr, chunks, float(tau)), port, offset,
                            inport))
    plan = Plan(coll, p, nblocks, c, phases, root=root if coll == "bcast" else None,
                settings=dict(doc.get("settings") or {}))
    return Loaded(path, plan, None, doc)


def check_file(path, network) -> None:
    """Refuse, in one line, running the schedule file ``path`` on ``network``
    when their routes differ (:func:`load` with that network)."""
    load(path, network)


def check_network(doc: dict, path: str, network=None) -> None:
    """Refuse, in one line, a file whose routes differ from ``network``'s (or,
    without one, from those of the network the file names, rebuilt)."""
    from .routes import pair_routes
    net_doc = doc["network"]
    p = doc["p"]
    if network is None:
        network = _rebuild(net_doc, p, path)
    if len(network.order) != p:
        raise _bad(path, f"made for P={p}, the network places {len(network.order)} ranks, expected P={p}")
    have = pair_routes(network, p).sha256
    want = net_doc["routes_sha256"]
    if have != want:
        raise _bad(path, f"made for the routes of {net_doc['topology']} (routing {net_doc.get('routing')}, "
                         f"routes {want[:12]}), but the given network ({network.label}) has other routes ({have[:12]}): "
                         "expected the network it was synthesized for (synthesize again for this one)")


def _rebuild(net_doc: dict, p: int, path: str):
    from ..sim.model import Network
    from ..topology import make_router, parse_topology
    endpoints = net_doc.get("endpoints")
    if not isinstance(endpoints, list) or len(endpoints) != p:
        raise _bad(path, f"network endpoints: expected {p} endpoint ids, one per rank")
    topo = parse_topology(net_doc["topology"])
    order = np.asarray(endpoints, dtype=np.int64)
    if order.size and (order.min() < 0 or order.max() >= topo.n_endpoints):
        raise _bad(path, f"network endpoints outside 0..{topo.n_endpoints - 1}")
    opts = net_doc.get("routing_options") or {}
    router = make_router(topo, net_doc.get("routing"), **opts)
    return Network(router, order, f"{topo.spec}, routing {router.name}, the file's order")


def load_schedule(path, *, count: int | None = None, itemsize: int | None = None, network=None):
    """The schedule a file holds, for ``count`` elements of ``itemsize`` bytes
    (default: the vector it was made for); the routes checked as :func:`load` does."""
    from ..schedules.sizes import check_vector
    from .schedule import to_schedule
    loaded = load(path, network)
    doc = loaded.doc
    count = doc.get("count", 1) if count is None else count
    itemsize = doc.get("itemsize", 1) if itemsize is None else itemsize
    count, itemsize = check_vector(f"{path}", count, itemsize)
    if loaded.fixed is not None:
        from ..schedules.registry import lookup
        return lookup(doc["collective"], loaded.fixed["algorithm"]).generate(
            doc["p"], **loaded.fixed.get("params", {}), count=count, itemsize=itemsize)
    root = {"root": loaded.plan.root} if loaded.plan.collective == "bcast" else {}
    return to_schedule(loaded.plan, count, itemsize, {"file": os.fspath(path), **root})
