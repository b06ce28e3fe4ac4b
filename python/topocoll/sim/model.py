"""The model seam: a schedule and a platform in, an :class:`Estimate` out.

Every way topocoll predicts a schedule's time is a :class:`Model` with one
method, ``estimate(schedule, platform) -> Estimate``; the ranking
(:func:`topocoll.tune.rank`), the CLI and the tuner call models only through
it. Two implementations today:

- :class:`AlphaBetaGamma` — the α-β-γ model of Chan et al. ("Collective
  communication: theory, practice, and experience", CCPE 2007), the model all
  five papers use: a round costs ``max_msgs·α + max_bytes·β +
  max_reduced·γ`` (:func:`topocoll.schedules.report`);
- :class:`StaticContention` — the round-synchronous static contention model
  of :mod:`.static` on the platform's network (Kumar & Heidelberger §3 eq. 3;
  Cavin & Demengeon §2.2, §5).

The event-driven models (``loggops``, ``flow``, ``congestion``) live in
:mod:`.engine`, on the Rust event engine.

A :class:`Platform` holds what the models need, in SI units: the software
overhead α per message (s), the link bandwidth (B/s) of the α-β-γ model, the
reduction throughput (B/s), and optionally a :class:`Network` (a routed
topology plus the ranks' node order) whose links carry their own bandwidths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import SpecError
from ..schedules.ir import Schedule
from ..schedules.metrics import CostTerms, report
from ..topology import make_router, node_order, parse_topology
from .static import static_contention

__all__ = ["AlphaBetaGamma", "Estimate", "Model", "Network", "Platform", "StaticContention", "make_network",
           "model_named", "MODELS"]


def _positive(where: str, name: str, value, *, allow_zero: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        expected = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise SpecError(f"{where}: {name}={value!r}, expected {expected}")
    return number


@dataclass(frozen=True)
class Network:
    """A routed topology and where each rank runs on it.

    Attributes
    ----------
    router : topocoll.topology.Router
        Topology plus static routing (:func:`topocoll.topology.make_router`).
    order : ndarray of int
        ``order[rank]`` = endpoint of the rank (:func:`topocoll.topology.node_order`).
    label : str
        How results name this network (spec, routing, order, seed).
    """

    router: object
    order: np.ndarray
    label: str

    @property
    def topology(self):
        return self.router.topology

    def link_name(self, link: int | None) -> str:
        """``"src→dst"`` of a directed link id (``"-"`` for None)."""
        if link is None or link < 0:
            return "-"
        topo = self.topology
        return f"{topo.names[int(topo.src[link])]}→{topo.names[int(topo.dst[link])]}"


def make_network(topology: str, ranks: int, *, routing: str | None = None, order: str = "routing",
                 seed: int = 0, rail: str | None = None) -> Network:
    """A :class:`Network` from a topology spec (``kary:12,2``, ``torus:8x8x8``, ``ibnet:FILE``).

    Parameters
    ----------
    topology : str
        Spec, see ``topocoll topo``.
    ranks : int
        Number of ranks to place.
    routing : str, optional
        Routing engine (the topology family's default if omitted).
    order : str
        Node order: ``routing``, ``identity``, ``random``, ``blocked:2x2x2``,
        ``hostfile:FILE``, ``slurm:FILE``.
    seed : int
        Seed of a random order (part of the label).
    rail : str, optional
        Multi-rail hosts of a ``hostfile:``/``slurm:`` order: ``first``,
        ``round-robin`` or an adapter number (:func:`topocoll.topology.node_order`).
    """
    topo = parse_topology(topology)
    router = make_router(topo, routing)
    placed = node_order(topo, order, seed=seed, n_ranks=ranks, rail=rail)
    size = (f"{topo.params['fabric'].n_endpoints} hosts x {topo.params['nodes'].ppn} ranks"
            if topo.family == "nodes" else f"{topo.n_endpoints} endpoints")
    # a per-packet tie draw is a random choice: its seed goes in the label
    tie = (f":tie=random,seed={router.options.get('seed', 0)}" if router.options.get("tie") == "random" else "")
    label = (f"{topo.spec} ({size}), routing {router.name}{tie}, order {order}"
             + (f" (seed {seed})" if order == "random" else "") + (f", rail {rail}" if rail else ""))
    return Network(router, np.asarray(placed, dtype=np.int64), label)


@dataclass(frozen=True)
class Platform:
    """What a model needs to know about the machine, in SI units.

    Attributes
    ----------
    alpha : float
        Software overhead per message sent, s (default 1 µs).
    bandwidth : float
        Link bandwidth of the α-β-γ model, B/s (default 2 GB/s, DDR
        InfiniBand); a :class:`Network`'s links carry their own.
    reduce_bandwidth : float
        Bytes reduced per second (default 4 GB/s).
    network : Network, optional
        The routed topology (needed by :class:`StaticContention`).
    """

    alpha: float = 1e-6
    bandwidth: float = 2e9
    reduce_bandwidth: float = 4e9
    network: Network | None = None

    def __post_init__(self):
        object.__setattr__(self, "alpha", _positive("Platform", "alpha", self.alpha, allow_zero=True))
        object.__setattr__(self, "bandwidth", _positive("Platform", "bandwidth", self.bandwidth))
        object.__setattr__(self, "reduce_bandwidth",
                           _positive("Platform", "reduce_bandwidth", self.reduce_bandwidth))

    @property
    def beta(self) -> float:
        """Seconds per byte on a link (1 / bandwidth)."""
        return 1.0 / self.bandwidth

    @property
    def gamma(self) -> float:
        """Seconds per byte reduced (1 / reduce_bandwidth)."""
        return 1.0 / self.reduce_bandwidth

    def describe(self) -> str:
        text = f"α = {self.alpha * 1e6:g} µs"
        if self.network is None:
            text += f", β = 1/({self.bandwidth / 1e9:g} GB/s)"
        else:
            text = f"{self.network.label}, " + text
        return text + f", γ = 1/({self.reduce_bandwidth / 1e9:g} GB/s)"


@dataclass(frozen=True)
class Estimate:
    """A model's prediction for one schedule on one platform.

    Attributes
    ----------
    time : float
        Predicted completion time, s.
    model : str
        Name of the model that made it.
    terms : CostTerms or None
        α, β and γ coefficients (α-β-γ model).
    congestion : float or None
        Largest ratio of a link's bytes to the largest message in a round
        (1: no link shared; static contention model).
    hot_link : str or None
        The busiest link over the whole schedule, ``"src→dst"``.
    detail : object
        The model's own result (:class:`~topocoll.schedules.metrics.ScheduleReport`,
        :class:`~.static.StaticEstimate`).
    """

    time: float
    model: str
    terms: CostTerms | None = None
    congestion: float | None = None
    hot_link: str | None = None
    detail: object = None


class Model(Protocol):
    """Anything that predicts a schedule's time on a platform."""

    name: str

    def estimate(self, schedule: Schedule, platform: Platform) -> Estimate:
        ...


class AlphaBetaGamma:
    """The α-β-γ model (Chan et al. 2007): ``Σ_rounds max_msgs·α +
    max_bytes·β + max_reduced·γ`` over the schedule's rounds.

    Examples
    --------
    >>> from topocoll.schedules import generate
    >>> est = AlphaBetaGamma().estimate(generate("allreduce", "ring", 4, count=4, itemsize=8),
    ...                                 Platform(alpha=1e-6, bandwidth=1e9, reduce_bandwidth=1e9))
    >>> str(est.terms), round(est.time * 1e6, 3)
    ('6·α + 48·β + 24·γ', 6.072)
    """

    name = "α-β-γ"

    def estimate(self, schedule: Schedule, platform: Platform) -> Estimate:
        rep = report(schedule)
        time = rep.cost.time(platform.alpha, platform.beta, platform.gamma)
        return Estimate(time, self.name, terms=rep.cost, detail=rep)


class StaticContention:
    """Round-synchronous static contention on the platform's network (:mod:`.static`)."""

    name = "static contention"

    def estimate(self, schedule: Schedule, platform: Platform) -> Estimate:
        net = platform.network
        if net is None:
            raise SpecError("static contention model: the platform has no network, expected "
                            "Platform(network=make_network(...))")
        est = static_contention(schedule, net.router, net.order, alpha=platform.alpha, gamma=platform.gamma)
        hot = est.hot_links[0][0] if est.hot_links else None
        return Estimate(est.time, self.name, congestion=est.max_congestion, hot_link=net.link_name(hot),
                        detail=est)


MODELS = {"alpha-beta-gamma": AlphaBetaGamma, "static": StaticContention,
          "loggops": None, "flow": None, "congestion": None, "packet": None}


def model_named(name: str, **options) -> Model:
    """A model by its name: ``alpha-beta-gamma``, ``static``, or one of the
    event-driven ``loggops``, ``flow``, ``congestion``, ``packet`` (:mod:`.engine`;
    ``options`` go to :class:`~.engine.EventModel`)."""
    if name in ("loggops", "flow", "congestion", "packet"):
        from .engine import EventModel   # engine builds on this module
        return EventModel(name, **options)
    try:
        return MODELS[name]()
    except (KeyError, TypeError):
        raise SpecError(f"model {name!r}, expected one of {', '.join(MODELS)}") from None
