"""Open-loop synthetic traffic through the packet model, as interconnect
simulators offer it: ``topocoll simulate traffic PATTERN --load L`` (issue 17).

Every endpoint creates single-packet messages by Bernoulli injection at an
offered load, to destinations a pattern chooses; the run reports accepted
throughput and latency per load, so the packet model can be checked against
the literature (head-of-line blocking, bisection bounds) and against other
packet simulators (BookSim). The semantics are written once, in
``src/engine/traffic.rs``; in short:

- a *slot* is one packet's serialisation time (payload + header) on one link,
  at the lowest bandwidth of the links leaving an endpoint;
- at every slot each endpoint creates a packet with probability ``load``
  (packets per endpoint per slot: a fraction of one link's bandwidth,
  BookSim's packets/cycle/node); the source queue is unbounded (open loop);
- slots ``[0, warmup)`` warm up, packets created in ``[warmup, warmup +
  measure)`` are measured; sources keep injecting while the measured packets
  drain, for at most ``measure + DRAIN_EXTRA_SLOTS`` slots after the window;
- accepted throughput counts arrivals during the window; latency is creation
  to arrival of measured packets; *saturated* means the source queues grew
  (the window accepted fewer than it created by more than 5 % and 3σ), the
  drain did not finish, or the measured packets' mean latency passed
  ``latency_thres`` (BookSim's test, default 500 cycles with the flit routers;
  in slots, and off unless given, with the packet-granular model);
  ``saturated_by`` names which (``backlog``, ``drain``, ``latency``).

Ties on a torus (``tie``): dimension order sends a k/2 offset ``+``
(``positive``, the routing's default), ``+`` from even coordinates
(``source-parity``), or either way by a coin per packet seeded by ``seed``
(``random``).

Patterns (Dally & Towles, *Principles and Practices of Interconnection
Networks*, 2004, §3.2): ``uniform``, ``transpose`` (4^m endpoints),
``bit-complement`` (2^m endpoints), ``tornado`` (tori), ``hot-spot``.
Endpoint ids are the topology's endpoint numbers (a torus node's number has
dimension 0 fastest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _core
from ..errors import SpecError
from ..topology import make_router, parse_topology
from .engine import EngineConfig, EngineOptions
from .model import Network, Platform
from .packet import PacketOptions

__all__ = ["traffic", "traffic_network", "TrafficRow", "PATTERNS", "MAX_SLOTS", "MAX_LOADS", "MAX_PACKETS",
           "DRAIN_EXTRA_SLOTS", "WARMUP_SLOTS", "MEASURE_SLOTS"]

PATTERNS = {"uniform": _core.Pattern.Uniform, "transpose": _core.Pattern.Transpose,
            "bit-complement": _core.Pattern.BitComplement, "tornado": _core.Pattern.Tornado,
            "hot-spot": _core.Pattern.HotSpot}
#: BookSim's ``latency_thres`` (``booksim_config.cpp``): a mean latency above this many cycles is unstable
LATENCY_THRES_CYCLES = 500.0
TIES = ("positive", "source-parity", "random")
#: default windows, slots: BookSim-like (its warm-up ends when latency settles; a fixed 1,000 slots covers
#: the networks here below saturation), a 10,000-slot window gives ±1 % on accepted throughput at 64 endpoints
WARMUP_SLOTS = 1000
MEASURE_SLOTS = 10000
#: most slots of a warm-up or of a window (a million packet times: minutes of simulated BG/L time)
MAX_SLOTS = 1_000_000
#: the drain after the window lasts at most ``measure + DRAIN_EXTRA_SLOTS`` slots: a stable network drains
#: in a few latencies; one that needs longer saturated
DRAIN_EXTRA_SLOTS = 1000
#: most loads of one sweep
MAX_LOADS = 100
#: most packets one run may create (``src/engine/traffic.rs``'s MAX_PACKETS: 4 B per packet of creation times,
#: and the saturated backlog in the packet fabric, a few GiB at worst)
MAX_PACKETS = 1 << 25
_PS = 1e12


@dataclass(frozen=True)
class TrafficRow:
    """One load of a sweep. Rates in packets per endpoint per slot; times in s.

    Attributes
    ----------
    offered : float
        The load asked for.
    created : float
        Packets created in the window per endpoint per slot (below ``offered``
        where the pattern silences endpoints, e.g. the transpose diagonal).
    accepted : float
        Packets that arrived during the window, per endpoint per slot.
    mean_latency, p99_latency : float
        Creation to arrival of the measured packets that arrived (s).
    measured, delivered : int
        Packets created in the window; of those, arrived.
    saturated : bool
        The source queues grew without bound (module doc).
    saturated_by : str
        Which tests fired: ``backlog``, ``latency``, ``drain`` joined by ``+`` ("" when not saturated).
    drain_error : str
        One line when the measured packets did not drain in time, else "".
    """

    pattern: str
    offered: float
    created: float
    accepted: float
    mean_latency: float
    p99_latency: float
    measured: int
    delivered: int
    saturated: bool
    backlog: int
    drain_error: str
    slot: float
    seed: int
    packet_hops: int
    saturated_by: str = ""
    #: the flit routers' cycle, s (0: packet-granular model)
    cycle: float = 0.0
    #: the latency threshold in force, s (0: none)
    latency_threshold: float = 0.0


def traffic_network(topology: str, routing: str | None = None) -> Network:
    """A routed network for synthetic traffic (endpoints in their own order)."""
    topo = parse_topology(topology)
    router = make_router(topo, routing)
    return Network(router, np.arange(topo.n_endpoints, dtype=np.int64),
                   f"{topo.spec} ({topo.n_endpoints} endpoints), routing {router.name}")


def _load(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= 1:
        raise SpecError(f"traffic: load {value!r}, expected an offered load in (0, 1] packets per endpoint per slot")
    return float(value)


def _slots(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_SLOTS:
        raise SpecError(f"traffic: {name}={value!r}, expected {low}..{MAX_SLOTS} slots")
    return value


def traffic(pattern: str, loads, network: Network | str, options: PacketOptions = PacketOptions(), *,
            seed: int = 0, warmup: int = WARMUP_SLOTS, measure: int = MEASURE_SLOTS, hot_fraction: float = 0.1,
            hot_node: int = 0, routing: str | None = None, tie: str | None = None,
            latency_thres: float | None = None) -> list[TrafficRow]:
    """Synthetic traffic of ``pattern`` at each of ``loads`` through the packet model on ``network``.

    Parameters
    ----------
    pattern : str
        One of :data:`PATTERNS`.
    loads : float or sequence of float
        Offered loads in (0, 1], packets per endpoint per slot.
    network : Network or str
        A routed network, or a topology spec (routed by ``routing``).
    options : PacketOptions
        The packet model (packet size and header set the slot; ``vcs`` ≥ 2 on a torus).
    seed : int
        Seed of the sources (printed with the result).
    warmup, measure : int
        Slots of warm-up and of the measurement window.
    hot_fraction, hot_node : float, int
        ``hot-spot``: fraction of packets to ``hot_node``, the rest uniform.
    tie : str, optional
        Tori: ``positive``, ``source-parity`` or ``random`` (module doc); not with ``routing``.
    latency_thres : float, optional
        Saturated when the measured mean latency passes this many cycles (flit routers; default 500,
        BookSim's) or slots (packet-granular model; default none).

    Returns
    -------
    list of TrafficRow, one per load, in the order given.

    Raises
    ------
    SpecError
        One line: an unknown pattern, a load outside (0, 1], a pattern the
        endpoint count or topology does not allow, windows out of bounds or
        too many packets, a deadlock (naming its cycle of buffers).

    References
    ----------
    Karol, Hluchyj & Morgan, "Input versus output queueing on a space-division packet switch", IEEE Trans.
    Commun. 35(12), 1987. Dally & Towles, *Principles and Practices of Interconnection Networks*, 2004,
    §3.2 (patterns), §3.3 (bisection bound), ch. 23 (simulation methodology).

    Examples
    --------
    >>> rows = traffic("uniform", [0.2], "crossbar:8", PacketOptions(vcs=1), warmup=100, measure=2000)
    >>> rows[0].saturated, round(rows[0].accepted, 1)
    (False, 0.2)
    """
    if pattern not in PATTERNS:
        raise SpecError(f"traffic: pattern {pattern!r}, expected one of {', '.join(PATTERNS)}")
    loads = [loads] if not isinstance(loads, (list, tuple, np.ndarray)) else list(loads)
    if not 1 <= len(loads) <= MAX_LOADS:
        raise SpecError(f"traffic: {len(loads)} loads, expected 1..{MAX_LOADS}")
    loads = [_load(x) for x in loads]
    warmup, measure = _slots("warmup", warmup, 0), _slots("measure", measure, 1)
    if not isinstance(options, PacketOptions):
        raise SpecError(f"traffic: options={options!r}, expected a PacketOptions")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise SpecError(f"traffic: seed={seed!r}, expected 0..2^64-1")
    alt = None
    if tie is not None:
        if tie not in TIES:
            raise SpecError(f"traffic: tie={tie!r}, expected one of {', '.join(TIES)}")
        if routing is not None or not isinstance(network, str):
            raise SpecError(f"traffic: tie={tie!r} with a routing given, expected one of them (the tie picks "
                            "dimension order's: dor:tie=...)")
        if parse_topology(network).family != "torus":
            raise SpecError(f"traffic: tie={tie!r} on {network}, expected a torus (ties of dimension order)")
        routing = f"dor:tie={'positive' if tie == 'random' else tie}"
        if tie == "random":
            alt = traffic_network(network, "dor:tie=negative").router.engine
    if latency_thres is not None and (isinstance(latency_thres, bool) or not isinstance(latency_thres, (int, float))
                                      or not math.isfinite(latency_thres) or not latency_thres > 0):
        raise SpecError(f"traffic: latency_thres={latency_thres!r}, expected a positive number of cycles (slots)")
    net = traffic_network(network, routing) if isinstance(network, str) else network
    topo = net.topology
    n = int(topo.n_endpoints)
    label = f"traffic {pattern} on {topo.spec}"
    if pattern in ("uniform", "hot-spot") and n < 2:
        raise SpecError(f"{label}: {n} endpoint, expected at least 2")
    if pattern == "bit-complement" and (n & (n - 1) or n < 2):
        raise SpecError(f"{label}: {n} endpoints, expected a power of two")
    if pattern == "transpose" and (n & (n - 1) or (n.bit_length() - 1) % 2):
        raise SpecError(f"{label}: {n} endpoints, expected an even power of two (4, 16, 64, …: a square matrix)")
    dims = None
    if pattern == "tornado":
        wrap = topo.params.get("wrap", ()) if topo.family == "torus" else ()
        if not wrap or not all(wrap):
            raise SpecError(f"{label}: not a torus, expected a torus:KxK… topology (tornado moves every coordinate "
                            "⌈k/2⌉ − 1 around its ring)")
        dims = [int(k) for k in topo.params["k"]]
        if all(-(-k // 2) - 1 == 0 for k in dims):
            raise SpecError(f"{label}: radices {dims} move no packet (⌈k/2⌉ − 1 = 0), expected a radix of at least 3")
    if pattern == "hot-spot":
        if isinstance(hot_fraction, bool) or not isinstance(hot_fraction, (int, float)) \
                or not 0 <= hot_fraction <= 1:
            raise SpecError(f"{label}: hot fraction {hot_fraction!r}, expected 0..1")
        if isinstance(hot_node, bool) or not isinstance(hot_node, int) or not 0 <= hot_node < n:
            raise SpecError(f"{label}: hot node {hot_node!r}, expected an endpoint 0..{n - 1}")
    drain = measure + DRAIN_EXTRA_SLOTS
    worst = n * (warmup + measure + drain) * max(loads)
    if worst > MAX_PACKETS:
        raise SpecError(f"{label}: {n} endpoints × {warmup + measure + drain} slots at load {max(loads)} create up "
                        f"to {worst:.3g} packets, expected at most {MAX_PACKETS} (shorter warmup/measure)")
    config = EngineConfig("packet", EngineOptions(packet=options)).core(Platform(), net)
    bandwidth = np.ascontiguousarray(topo.bandwidth, dtype=np.float64)
    latency = np.round(np.asarray(topo.latency, dtype=np.float64) * _PS).astype(np.uint64)
    # the latency threshold: cycles of the flit routers, or slots of the packet model (Rust converts to ps)
    thres = (LATENCY_THRES_CYCLES if latency_thres is None else float(latency_thres)) if options.flit_bytes > 0 \
        else (0.0 if latency_thres is None else float(latency_thres))
    rows = []
    for load in loads:
        try:
            r = _core.traffic_run(net.router.engine, bandwidth, latency, config, PATTERNS[pattern], load,
                                  hot_fraction=float(hot_fraction), hot_node=int(hot_node), dims=dims,
                                  warmup_slots=warmup, measure_slots=measure, drain_slots=drain, seed=seed,
                                  latency_thres=thres, alt_router=alt)
        except ValueError as e:
            raise SpecError(f"{label} at load {load}: {e}") from None
        rows.append(TrafficRow(pattern, load, r.created, r.accepted, r.mean_latency_ps / _PS, r.p99_latency_ps / _PS,
                               int(r.measured), int(r.delivered), bool(r.saturated), int(r.backlog), r.drain_error,
                               r.slot_ps / _PS, seed, int(r.packet_hops), r.saturated_by, r.cycle_ps / _PS,
                               r.latency_threshold_ps / _PS))
    return rows
