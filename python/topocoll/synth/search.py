"""``synthesize``: plans tried within a budget, each judged by a model, against the fixed algorithms.

The greedy (:mod:`.greedy`) has a few knobs whose best setting depends on
the network and the message size: chunks per rank ``c`` (more chunks
pipeline better and balance many ports, but cost more α), chunks per transfer
``agg`` (1: one chunk per message, bandwidth-bound sizes; every useful
chunk: recursive-doubling-like, latency-bound sizes), and the order of
acceptance (cheapest route first, or random). :func:`variants` lists
settings in the order worth trying for the size; :func:`synthesize` builds
and verifies nothing more than it must: it plans each variant, turns it into
a schedule, asks the model for its time, keeps the best, and stops when the
budget (wall-clock seconds) is spent — after the first variant at the
least. Then it ranks the registry's fixed algorithms for the same collective,
size, network and model (their comparison parameters, as ``compare`` does);
if one of them is faster the result *is* that algorithm's schedule and says
so: synthesized ÷ best fixed is never above 1.0 by the model that chose.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import SpecError, TopocollError
from ..schedules.ir import Schedule, block_bounds
from ..schedules.sizes import from_bytes
from .plan import COLLECTIVES, Plan, capacity_violations, make_plan
from .routes import PairRoutes, pair_routes
from .schedule import to_schedule

__all__ = ["Variant", "Tried", "Synthesized", "synthesize", "variants", "resolve_network", "MAX_BUDGET",
           "MAX_TRANSFERS"]

#: longest budget, s (a day)
MAX_BUDGET = 86_400.0
#: most planned transfers of one schedule: the per-rank views' bound (``registry.MAX_PER_RANK_MESSAGES``)
MAX_TRANSFERS = 1 << 22
#: the share of the budget for planning variants; the rest tries the best plan's looser port orders
PLANNING_SHARE = 0.7
#: the flow model's cost of the best plan without port chains over its cost with them, per P²: without chains
#: every transfer whose data is there is in flight at once, and max-min sharing over that many flows grows
#: far faster than the chained run (all-gather of 1 MiB on kary:16,2, CPU s with / without chains: P = 128
#: 0.03 / 1.24, P = 256 0.11 / 16.6; extrapolated, about an hour at P = 1024, past any budget)
UNCHAINED_FLOW_COST = 0.0025
#: chunks per rank tried (all-gather, reduce-scatter, allreduce); a broadcast's chunks in all
CHUNKS = (1, 2, 4, 8)
BCAST_CHUNKS = (1, 4, 16, 64, 2, 8, 32, 128)


@dataclass(frozen=True)
class Variant:
    """One setting of the greedy (module doc); ``agg=0``: every useful chunk."""

    c: int
    agg: int
    order: str = "near"
    seed: int = 0
    locality: str = "strict"

    def text(self) -> str:
        agg = "all" if self.agg == 0 else str(self.agg)
        return f"c={self.c} agg={agg} {self.order}{' loose' if self.locality == 'loose' else ''} seed={self.seed}"

    def params(self) -> dict:
        out = {"c": self.c, "agg": "all" if self.agg == 0 else self.agg, "order": self.order, "seed": self.seed}
        return {**out, "locality": "loose"} if self.locality == "loose" else out


@dataclass
class Tried:
    """One variant's outcome: the plan's own estimate and the model's time (NaN: not evaluated)."""

    variant: Variant
    planned: float
    time: float
    transfers: int
    rounds: int
    cpu: float
    chains: str = "both"

    def text(self) -> str:
        return self.variant.text() + ("" if self.chains == "both" else f" chains={self.chains}")


@dataclass
class Synthesized:
    """What :func:`synthesize` returns.

    ``schedule`` is the one to use: the best synthesized, or the best fixed
    algorithm's where that is faster (``fixed_won``). ``plan`` is the best
    synthesized plan (saved by :func:`.fileformat.save`); ``best_fixed`` is
    ``(algorithm, params, time)`` or None (not compared)."""

    collective: str
    p: int
    size: int
    schedule: Schedule
    plan: Plan
    synthesized_schedule: Schedule
    time: float
    synthesized_time: float
    best_fixed: tuple | None
    fixed_won: bool
    model: str
    seed: int
    budget: float
    tried: list
    routes: PairRoutes
    network: object
    count: int
    itemsize: int
    link_test: list = field(default_factory=list)
    cpu: float = 0.0
    wall: float = 0.0
    estimate: object = None      # the model's Estimate of the best synthesized schedule
    platform: object = None

    @property
    def ratio(self) -> float | None:
        """The returned schedule's time ÷ the best fixed algorithm's (≤ 1)."""
        if self.best_fixed is None or not self.best_fixed[2] > 0:
            return None
        return self.time / self.best_fixed[2]

    @property
    def synthesized_ratio(self) -> float | None:
        """The best synthesized schedule's time ÷ the best fixed algorithm's."""
        if self.best_fixed is None or not self.best_fixed[2] > 0:
            return None
        return self.synthesized_time / self.best_fixed[2]

    def save(self, path) -> None:
        from .fileformat import save
        save(self, path)


def resolve_network(network, p: int, platform=None):
    """A :class:`~topocoll.sim.model.Network` from a Network, a topology spec, or
    None (the platform's network, else an ideal crossbar at its bandwidth)."""
    from ..sim.model import Network, make_network
    if isinstance(network, Network):
        return network
    if isinstance(network, str):
        return make_network(network, p)
    if network is None:
        if platform is not None and platform.network is not None:
            return platform.network
        bw = platform.bandwidth if platform is not None else 2e9
        return make_network(f"crossbar:{max(p, 2)}@bw={bw:.17g},lat=0", p, order="identity")
    raise SpecError(f"synthesize: network={network!r}, expected a Network, a topology spec or None")


def block_bytes(collective: str, p: int, count: int, itemsize: int, c: int) -> float:
    """Bytes of the largest block of a plan with ``c`` chunks per rank (a broadcast's: in all)."""
    from .schedule import nested_bounds
    bounds = block_bounds(count, c) if collective == "bcast" else nested_bounds(count, p, c)
    return float(np.diff(bounds).max() * itemsize)


def variants(collective: str, p: int, size: int, routes: PairRoutes, *, alpha: float, seed: int) -> list[Variant]:
    """The settings worth trying, best guess first (module doc): latency-bound
    sizes (a rank's chunk crosses a typical route in less time than α) start
    with every useful chunk per transfer, bandwidth-bound ones with one."""
    finite = routes.rate[np.isfinite(routes.rate)]
    bw = float(np.median(finite)) if finite.size else 1e9
    chunk = size if collective in ("allgather", "alltoall") else size / max(p, 1)
    small = chunk / bw < alpha
    out: list[Variant] = []
    if collective == "alltoall":
        out = [Variant(1, 1, order, seed) for order in ("near", "far", "random")]
    elif collective == "bcast":
        chunks = [c for c in BCAST_CHUNKS if c <= max(1, size)]
        if small:
            chunks = [1] + [c for c in chunks if c != 1]
        out = [Variant(c, 1, "near", seed) for c in chunks] + [Variant(c, 1, "far", seed) for c in chunks[:4]]
    else:
        limit = max(1, MAX_TRANSFERS // max(1, p * max(p - 1, 1)))
        cs = [c for c in CHUNKS if c <= limit and p * c <= max(1, size)] or [1]
        if small:
            out = [Variant(1, 0, "near", seed), Variant(1, 0, "far", seed), Variant(1, 4, "near", seed),
                   Variant(1, 1, "near", seed), Variant(1, 0, "random", seed)]
        else:
            out = [Variant(1, 1, "near", seed), Variant(1, 1, "far", seed)]
            out += [Variant(c, 1, order, seed) for c in cs[1:3] for order in ("near", "far")]
            out += [Variant(1, 1, "random", seed), Variant(1, 4, "near", seed), Variant(1, 0, "near", seed)]
            out += [Variant(c, 1, "near", seed) for c in cs[3:]]
    if collective != "alltoall":
        out += [Variant(v.c, v.agg, v.order, seed, "loose") for v in out[:3]]
    out += [Variant(v.c, v.agg, v.order, seed + 1, v.locality) for v in list(out)]
    seen, unique = set(), []
    for v in out:
        if v not in seen:
            seen.add(v)
            unique.append(v)
    return unique


def _shown(settings: dict) -> dict:
    """A plan's settings as its schedule's parameters (labels, compare tables)."""
    out = {k: settings[k] for k in ("c", "agg", "order", "seed") if k in settings}
    if settings.get("locality", "strict") != "strict":
        out["locality"] = settings["locality"]
    if settings.get("chains", "both") != "both":
        out["chains"] = settings["chains"]
    return out


def _model(model, options=None):
    from ..sim.model import model_named
    if isinstance(model, str):
        if model in ("loggops", "flow", "congestion", "packet"):
            from ..sim.engine import EngineOptions
            return model_named(model, options=options or EngineOptions())
        return model_named(model)
    return model


def best_fixed(collective: str, p: int, size: int, model, platform, *, root: int = 0, itemsize: int = 1):
    """``(algorithm, params, time, schedule)`` of the fastest registered fixed
    algorithm (comparison parameters, as ``compare`` ranks them; the root set
    for a broadcast), or None where none runs."""
    from ..schedules.registry import MAX_MODEL_MESSAGES, catalogue, operator_allows
    from ..tune.rank import compare_params
    best = None
    args = from_bytes(collective, p, size, itemsize=itemsize)
    for info in catalogue().values():
        if info.collective != collective or info.name == "synthesized":
            continue
        params = compare_params(info, p, platform)
        if collective == "bcast" and "root" in info.params:
            params["root"] = root
        if not info.supports(p, params):
            continue
        try:
            info.check_size(p, params, limit=MAX_MODEL_MESSAGES, purpose="a model")
            sched = info.generate(p, **params, **args)
        except TopocollError:
            continue
        if not operator_allows(sched.needs, commutative=True, idempotent=False):
            continue
        t = model.estimate(sched, platform).time
        if best is None or t < best[2]:
            best = (info.name, dict(sched.params), t, sched)
    return best


def synthesize(collective: str, network, p: int, size: int, *, budget: float = 30.0, seed: int = 0,
               model="flow", platform=None, root: int = 0, compare_fixed: bool = True, itemsize: int = 1,
               progress: bool | None = None, options=None) -> Synthesized:
    """A schedule for ``collective`` made for ``network`` (module doc).

    Parameters
    ----------
    collective : str
        ``allgather``, ``reduce_scatter``, ``allreduce``, ``bcast`` or ``alltoall``.
    network : Network, str or None
        The routed network and placement (:func:`topocoll.sim.make_network`),
        a topology spec (routing and order the family's defaults), or None
        (the platform's network, else an ideal crossbar).
    p : int
        Ranks, ``1 ..`` :data:`~.routes.MAX_SYNTH_P`.
    size : int
        Message size in bytes, MPI's convention (per rank for allgather, per
        destination for alltoall, the whole vector otherwise).
    budget : float
        Wall-clock seconds for trying variants; the first variant and the
        fixed algorithms' ranking always run.
    seed : int
        Seed of the greedy's random choices (printed with the result).
    model : str or Model
        The model that judges: ``flow`` (default), ``loggops``,
        ``congestion``, ``packet``, ``static``, ``alpha-beta-gamma``.
    platform : Platform, optional
        α, reduction bandwidth, network (default: ``Platform(network=network)``).
    root : int
        Broadcast root.
    compare_fixed : bool
        Rank the fixed algorithms too and return the best of them where it is faster.
    progress : bool, optional
        A progress bar on stderr (default: when stderr is a terminal).
    options : EngineOptions, optional
        Options of an event-driven model.
    """
    from ..progress import bar
    from ..schedules.registry import check_procs
    from ..sim.model import Platform
    if collective not in COLLECTIVES:
        raise SpecError(f"synthesize: collective {collective!r}, expected one of {', '.join(COLLECTIVES)}")
    p = check_procs(f"synthesize {collective}", p)
    try:
        budget = float(budget)
    except (TypeError, ValueError):
        budget = math.nan
    if not 0 <= budget <= MAX_BUDGET:
        raise SpecError(f"synthesize: budget={budget!r}, expected 0..{MAX_BUDGET:g} seconds")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 63:
        raise SpecError(f"synthesize: seed={seed!r}, expected an integer in 0..2^63-1")
    if collective == "bcast" and not (isinstance(root, (int, np.integer)) and 0 <= root < p):
        raise SpecError(f"synthesize bcast: root={root!r}, expected a rank in 0..{p - 1}")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    net = resolve_network(network, p, platform)
    if platform is None:
        platform = Platform(network=net)
    judge = _model(model, options)
    args = from_bytes(collective, p, size, itemsize=itemsize)
    count, isz = args["count"], args["itemsize"]
    routes = pair_routes(net, p)
    tries = variants(collective, p, size, routes, alpha=platform.alpha, seed=int(seed))
    show = bar(len(tries) + 3 + (1 if compare_fixed else 0), f"synthesize {collective} P={p}", unit="plan",
               force=bool(progress)) if progress is not False else None
    tried: list[Tried] = []
    best = None
    try:
        per_chunk = None          # wall seconds per chunk per rank of the variants so far (plan + model)
        model_cpu = 0.0           # the longest the model took on one of them (CPU s)
        for i, v in enumerate(tries):
            spent = time.perf_counter() - wall0
            if i and spent > PLANNING_SHARE * budget:
                break
            if per_chunk is not None and spent + per_chunk * v.c > PLANNING_SHARE * budget:
                continue          # would overrun the budget: a variant with fewer chunks may still fit
            t0, w0 = time.process_time(), time.perf_counter()
            plan = make_plan(collective, routes, c=v.c, block_bytes=block_bytes(collective, p, count, isz, v.c),
                             alpha=platform.alpha, gamma=platform.gamma if collective in ("reduce_scatter", "allreduce")
                             else 0.0, agg=(1 << 62) if v.agg == 0 else v.agg, order=v.order, locality=v.locality,
                             rng=np.random.default_rng(v.seed), root=root)
            plan.settings.update(v.params())
            sched = to_schedule(plan, count, isz, {**_shown(plan.settings)})
            m0 = time.process_time()
            estimate = judge.estimate(sched, platform)
            model_cpu = max(model_cpu, time.process_time() - m0)
            est = estimate.time
            took = (time.perf_counter() - w0) / v.c
            per_chunk = took if per_chunk is None else max(per_chunk, took)
            tried.append(Tried(v, plan.planned_seconds, est, plan.transfers, sum(ph.rounds for ph in plan.phases),
                               time.process_time() - t0))
            if best is None or est < best[0]:
                best = (est, plan, sched, estimate, v)
            if show is not None:
                show.set_postfix_str(f"best {best[0] * 1e6:.4g} µs")
                show.update(1)
        # the best plan with looser port order (no new plan: only the control chains differ)
        for chains in ("send", "none", "recv"):
            if time.perf_counter() - wall0 > budget:
                break
            if chains == "none" and getattr(judge, "name", judge) == "flow" and \
                    time.perf_counter() - wall0 + model_cpu * UNCHAINED_FLOW_COST * p * p > budget:
                continue      # would overrun the budget many times over (UNCHAINED_FLOW_COST)
            t0 = time.process_time()
            est0, plan0, _, _, v = best
            loose = dataclasses.replace(plan0, settings={**plan0.settings, "chains": chains})
            sched = to_schedule(loose, count, isz, {**_shown(loose.settings)})
            estimate = judge.estimate(sched, platform)
            tried.append(Tried(v, loose.planned_seconds, estimate.time, loose.transfers,
                               sum(ph.rounds for ph in loose.phases), time.process_time() - t0, chains))
            if estimate.time < est0:
                best = (estimate.time, loose, sched, estimate, v)
            if show is not None:
                show.set_postfix_str(f"best {best[0] * 1e6:.4g} µs")
                show.update(1)
        fixed = None
        if compare_fixed:
            fixed = best_fixed(collective, p, size, judge, platform, root=root, itemsize=itemsize)
            if show is not None:
                show.update(1)
    finally:
        if show is not None:
            show.close()
    est, plan, sched, estimate, _ = best
    won = fixed is not None and fixed[2] < est
    return Synthesized(collective, p, int(size), fixed[3] if won else sched, plan, sched, fixed[2] if won else est,
                       est, None if fixed is None else fixed[:3], won, getattr(judge, "name", str(model)), int(seed),
                       budget, tried, routes, net, count, isz, capacity_violations(plan, routes),
                       time.process_time() - cpu0, time.perf_counter() - wall0, estimate, platform)
