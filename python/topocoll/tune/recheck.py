"""Say what an answer can be trusted for, and re-rank with the packet model where it is cheap enough.

:func:`judge` takes one answer (the candidates of one collective, P and size,
ranked by some model) and returns a :class:`Verdict`: the model and its
settings, the caveats that matter (:func:`topocoll.sim.caveats.caveats`:
a mechanism the model lacks by which the candidates differ) and, where the
packet model expresses that mechanism and its run fits the time budget, the
candidates re-ranked by it.

Which candidates are re-ranked: those within the caveat's factor of the
fastest (the largest slowdown its source reports, e.g. 2.45× for direct
send against shift-based, shift-based paper §5.2): a candidate slower than
that by the first model would stay behind. If they cost too much, only the
fastest affected candidate and the fastest unaffected one (the pair the
caveat is about); if that costs too much too, none, and the verdict says
what it would cost.

Cost: packet-hops = Σ over messages ⌈bytes / packet_bytes⌉ × hops of the
message's route, at :data:`PACKET_HOPS_PER_S` (a conservative rate:
BENCHMARKS.md measures 2.4 M/s for dimension-order runs of the all-to-all
paper's cases and 4.7–9.2 M/s on uniform traffic, "Packet model: speed and
the all-to-all paper's % of peak", "Packet model: packet-hops per second";
``engine.expected_cpu_seconds`` counts the packet model per op, not per
packet, so it does not cover large messages), plus the per-op cost
``engine.expected_cpu_seconds`` gives, and :data:`ADAPTIVE_PACKET_HOPS_PER_S`
with adaptive routing (0.9–1.2 M/s measured there).
"""

from __future__ import annotations

import dataclasses
import time as _time
from dataclasses import dataclass, field

import numpy as np

from ..errors import SpecError, TopocollError
from ..sim.caveats import Caveat, caveats, has_nic_field, lacks, model_summary, recheck_packet_options, \
    settings_text, topology_kind

__all__ = ["ADAPTIVE_PACKET_HOPS_PER_S", "PACKET_HOPS_PER_S", "RECHECK_BUDGET_S", "Budget", "Candidate",
           "Verdict", "judge", "model_key", "packet_hops"]

#: packet-hops per CPU second assumed for the estimate (conservative; module doc)
PACKET_HOPS_PER_S = 2e6
#: the same with adaptive routing on a torus
ADAPTIVE_PACKET_HOPS_PER_S = 1e6
#: default seconds of packet-model runs one command may spend re-ranking
RECHECK_BUDGET_S = 20.0
#: largest recheck budget a command accepts, s
MAX_RECHECK_BUDGET_S = 86400.0


@dataclass
class Budget:
    """Seconds of packet-model runs left to one command (shared by its answers)."""

    seconds: float = RECHECK_BUDGET_S
    spent: float = 0.0

    @property
    def left(self) -> float:
        return max(0.0, self.seconds - self.spent)


@dataclass(frozen=True)
class Candidate:
    """One ranked candidate: what to generate, its time by the first model,
    a key the caller knows it by, and (optionally) its own platform (tune's
    node orders) and schedule report (its bytes, for a quick bound)."""

    algorithm: str
    params: dict
    time: float
    key: object
    platform: object = None
    report: object = None


@dataclass
class Verdict:
    """What one answer can be trusted for (see the module doc)."""

    model: str
    model_text: str
    settings: dict
    caveats: list[Caveat]
    order: list                      # keys, final ranking
    rechecked: dict = field(default_factory=dict)     # key -> packet-model time, s
    recheck_settings: dict = field(default_factory=dict)
    recheck_reason: str = ""
    remaining: list[Caveat] = field(default_factory=list)
    skipped: str = ""
    packet_hops: int = 0
    seconds: float = 0.0

    @property
    def by_packet(self) -> bool:
        return bool(self.rechecked)

    def lines(self) -> list[str]:
        """One or two short lines per caveat and for the re-rank (for a terminal)."""
        out = []
        if self.rechecked:
            out += [f"ranked by the packet model ({settings_text(_short(self.recheck_settings))}) because "
                    + line for line in self.recheck_reason.split("\n", 1)[:1]]
            out += ["  " + line for line in self.recheck_reason.split("\n")[1:]]
            for c in self.remaining:
                out.append(f"caveat: {c.line()}")
        else:
            for c in self.caveats:
                out.append(f"caveat: {c.line()}")
            if self.skipped:
                out.append(self.skipped)
        return out

    def as_dict(self) -> dict:
        return {"model": self.model, "model_settings": _jsonable(self.settings),
                "caveats": [c.as_dict() for c in self.caveats],
                "recheck": None if not self.rechecked else {
                    "model": "packet", "settings": _jsonable(self.recheck_settings), "reason": self.recheck_reason,
                    "times_s": dict(self.rechecked),
                    "packet_hops": self.packet_hops, "cpu_s": round(self.seconds, 3),
                    "remaining_caveats": [c.as_dict() for c in self.remaining]},
                "recheck_skipped": self.skipped or None}


def _short(settings: dict) -> dict:
    """The packet settings worth a terminal line: the NIC where there is one, else the defaults' name."""
    keep = {k: v for k, v in settings.items() if k in ("packet.nic", "sync")}
    return keep


def _jsonable(d: dict) -> dict:
    return {k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v)) for k, v in d.items()}


def model_key(model) -> str:
    """A model object's name in :data:`topocoll.sim.MODELS`."""
    kind = getattr(model, "kind", None)
    if kind:
        return kind
    return {"α-β-γ": "alpha-beta-gamma", "static contention": "static"}.get(model.name, model.name)


# ---- cost ----------------------------------------------------------------------------------

def _network(platform, p):
    if platform.network is not None:
        return platform.network
    from ..sim.engine import platform_network
    return platform_network(platform, p)[0]


def packet_hops(schedule, network, packet_bytes: int) -> int:
    """Σ over the schedule's messages of ⌈bytes / packet_bytes⌉ (at least one
    packet) × the hops of the message's route on ``network`` (for a route
    split over paths, the mean hops weighted by the split)."""
    from ..topology import route
    order = np.asarray(network.order, dtype=np.int64)
    srcs, dsts, pkts = [], [], []
    for rnd in schedule.rounds():
        if len(rnd) == 0:
            continue
        nb = np.asarray(rnd.nbytes, dtype=np.int64)
        srcs.append(order[np.asarray(rnd.src, dtype=np.int64)])
        dsts.append(order[np.asarray(rnd.dst, dtype=np.int64)])
        pkts.append(np.maximum(1, -(-nb // int(packet_bytes))))
    if not srcs:
        return 0
    s, d, k = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(pkts)
    keep = s != d
    s, d, k = s[keep], d[keep], k[keep]
    if not len(s):
        return 0
    n = int(network.topology.n_endpoints)
    pair, inverse = np.unique(s * n + d, return_inverse=True)
    per_pair = np.bincount(inverse, weights=k.astype(np.float64))
    indptr, links, w = route(network.router, pair // n, pair % n, weights=True)
    hops = np.add.reduceat(w, indptr[:-1]) if len(w) else np.zeros(len(pair))
    hops[np.diff(indptr) == 0] = 0.0
    return int(round(float(np.dot(per_pair, hops))))


def _estimate(schedule, platform, config) -> tuple[int, float]:
    """(packet-hops, expected CPU seconds) of a packet-model run."""
    from ..sim.engine import expected_cpu_seconds
    net = _network(platform, schedule.p)
    hops = packet_hops(schedule, net, config.options.packet.packet_bytes)
    rate = ADAPTIVE_PACKET_HOPS_PER_S if net.router.name == "adaptive" else PACKET_HOPS_PER_S
    return hops, hops / rate + expected_cpu_seconds(schedule, config)


def _lower_bound(candidate, config, platform) -> float:
    """Seconds a packet-model run of ``candidate`` takes at least: its bytes in
    whole packets (from the schedule report, no schedule built) over the
    fewest hops any message makes (2 where endpoints hang off switches), at
    :data:`PACKET_HOPS_PER_S`. 0 without a report."""
    rep = candidate.report
    if rep is None:
        return 0.0
    net = _network(platform, 1) if platform.network is not None else None
    hops = 2
    if net is not None:
        topo = net.topology
        e = topo.n_endpoints
        hops = 1 if bool(np.any((np.asarray(topo.src) < e) & (np.asarray(topo.dst) < e))) else 2
    return rep.bytes_total / config.options.packet.packet_bytes * hops / PACKET_HOPS_PER_S


# ---- the verdict ---------------------------------------------------------------------------

def _packet_config(model, kind: str):
    from ..sim.engine import EngineConfig, EngineOptions
    base = getattr(model, "options", None)
    base = base if isinstance(base, EngineOptions) else EngineOptions()
    packet = recheck_packet_options(kind, base.packet if model_key(model) == "packet" else None)
    return EngineConfig("packet", dataclasses.replace(base, packet=packet))


def judge(collective: str, p: int, size: int, candidates: list[Candidate], model, platform, *,
          itemsize: int = 1, budget: Budget | None = None) -> Verdict:
    """The :class:`Verdict` on one answer.

    Parameters
    ----------
    collective, p, size
        The question (size in MPI's convention, as :func:`~topocoll.tune.rank`).
    candidates : list of Candidate
        Ranked by ``model``, fastest first.
    model, platform
        What ranked them (a candidate's own ``platform`` overrides).
    itemsize : int
        Bytes per element, as the ranking used.
    budget : Budget, optional
        Packet-model seconds this answer may spend (shared; spent as used).
        None: no re-rank (``--no-recheck``), only the caveats.
    """
    key = model_key(model)
    options = getattr(model, "options", None)
    text, settings = model_summary(key, options)
    net = platform.network
    kind = topology_kind(net.topology if net is not None else None)
    routing = net.router.name if net is not None else None
    reduces = platform.reduce_bandwidth < 1e17
    spec = [(collective, c.algorithm, c.params) for c in candidates]
    found = caveats(key, spec, kind, options=options, routing=routing, reduces=reduces)
    verdict = Verdict(key, text, settings, found, [c.key for c in candidates])
    if not found or budget is None or key in ("packet", "alpha-beta-gamma") or not candidates:
        return verdict
    config = _packet_config(model, "crossbar" if kind == "none" else kind)
    packet_lacks = set(lacks("packet", config.options, routing))
    fixable = [c for c in found if not set(c.mechanisms) <= packet_lacks]
    if not fixable:
        return verdict
    affected = {a for c in fixable for a in c.affected}
    factor = max(c.factor for c in fixable)
    best = min(c.time for c in candidates)
    window = [c for c in candidates if c.time <= factor * best]
    ins = [c for c in window if c.algorithm in affected]
    outs = [c for c in window if c.algorithm not in affected]
    if not ins or not outs:
        verdict.skipped = (f"not re-ranked: the affected candidates are more than {factor:g}× slower than the "
                           "fastest, so the mechanism would only slow them further")
        return verdict
    if budget.left <= 0:
        verdict.skipped = f"not re-ranked by the packet model: the --recheck-budget of {budget.seconds:g} s is spent"
        return verdict
    from ..schedules.registry import lookup
    from ..schedules.sizes import from_bytes
    scheds, costs = {}, {}

    def exact(c):
        if c.key not in costs:
            sched = lookup(collective, c.algorithm).generate(p, **c.params, **from_bytes(collective, p, size,
                                                                                         itemsize=itemsize))
            scheds[c.key] = sched
            costs[c.key] = _estimate(sched, c.platform or platform, config)
        return costs[c.key]

    # the window; else the candidates ranked above the fastest unaffected one, and it; else the fastest
    # affected one and the fastest unaffected one. A tier whose lower bound (from the schedule report's bytes,
    # without building the schedule) already overruns the budget is passed over unbuilt.
    stake = window[:window.index(outs[0]) + 1]
    pair = sorted([ins[0], outs[0]], key=window.index)
    tiers = [(window, f"within {factor:.3g}× of the fastest"),
             (stake, "down to the fastest unaffected one; the others would overrun the budget"),
             (pair, "the fastest affected and unaffected; the others would overrun the budget")]
    bound = {c.key: _lower_bound(c, config, c.platform or platform) for c in window}
    chosen, how, total = pair, tiers[-1][1], None
    estimating = _time.process_time()          # building schedules to count hops is charged to the budget too
    left = budget.left
    try:
        for members, text in tiers:
            chosen, how = members, text
            if sum(bound[c.key] for c in members) > left:
                total = None
                continue
            total = sum(exact(c)[1] for c in members)
            if total <= left:
                break
    except TopocollError as exc:
        verdict.skipped = f"not re-ranked by the packet model: {exc}"
        return verdict
    finally:
        budget.spent += _time.process_time() - estimating
    if total is None or total > left:
        if total is None:
            hops = sum(bound[c.key] for c in chosen) * PACKET_HOPS_PER_S
            what = f"at least {sum(bound[c.key] for c in chosen):.0f} s (≥ {hops / 1e6:.1f} M packet-hops)"
        else:
            what = f"about {total:.0f} s ({sum(costs[c.key][0] for c in chosen) / 1e6:.1f} M packet-hops)"
        verdict.skipped = (f"not re-ranked by the packet model: {chosen[0].algorithm} and {chosen[1].algorithm} "
                           f"would take {what}, over the {left:.0f} s left of --recheck-budget "
                           f"{budget.seconds:g}")
        return verdict
    from ..sim import simulate
    times, start = {}, _time.process_time()
    try:
        for c in chosen:
            times[c.key] = simulate(scheds[c.key], c.platform or platform, config).time
    except TopocollError as exc:
        budget.spent += _time.process_time() - start
        verdict.skipped = f"not re-ranked by the packet model: {exc}"
        return verdict
    spent = _time.process_time() - start
    budget.spent += spent
    rechecked_keys = sorted(times, key=lambda k: (times[k], _index(candidates, k)))
    verdict.order = _merge(candidates, rechecked_keys)
    verdict.rechecked = times
    _, verdict.recheck_settings = model_summary("packet", config.options)
    # each mechanism's evidence named in one short phrase (the full source is in --json)
    fams = "; ".join(f"{c.name}: {', '.join(c.affected)}, {c.source.split(' (')[0].split(';')[0]}" for c in fixable)
    lacking = sorted({m for c in fixable for m in c.mechanisms})
    from ..sim.caveats import _names
    verdict.recheck_reason = (
        f"{key} lacks {_names(lacking)} ({fams})\n"
        f"{len(chosen)} candidate{'s' if len(chosen) != 1 else ''} ({how})"
        + f" re-ranked: {sum(costs[c.key][0] for c in chosen) / 1e6:.2f} M packet-hops, {spent:.1f} s CPU")
    verdict.packet_hops = sum(costs[c.key][0] for c in chosen)
    verdict.seconds = spent
    chosen_spec = [(collective, c.algorithm, c.params) for c in chosen]
    verdict.remaining = caveats("packet", chosen_spec, kind, options=config.options, routing=routing,
                                reduces=reduces)
    if not has_nic_field():
        verdict.remaining = [dataclasses.replace(c, text=c.text + " (this build's packet model has no nic option)")
                             for c in verdict.remaining]
    return verdict


def _index(candidates, key) -> int:
    return next(i for i, c in enumerate(candidates) if c.key == key)


def _merge(candidates, rechecked: list) -> list:
    """Re-ranked keys in their new order at the positions the re-ranked set
    held: the window is the fastest candidates, so they come first; in the
    pair case other candidates may sit between the two and keep their places."""
    slots = sorted(_index(candidates, k) for k in rechecked)
    out = [c.key for c in candidates]
    for slot, k in zip(slots, rechecked):
        out[slot] = k
    return out


# ---- the commands' side ----------------------------------------------------------------------

def add_recheck_arguments(p) -> None:
    """``--no-recheck`` and ``--recheck-budget`` (compare, tune, demo)."""
    from ..argtypes import finite_float
    p.add_argument("--no-recheck", action="store_true",
                   help="never re-rank with the packet model; the caveats are printed all the same")
    p.add_argument("--recheck-budget", type=finite_float(strict=True, unit="s"), default=RECHECK_BUDGET_S,
                   metavar="SECONDS",
                   help="CPU seconds the packet model may spend re-ranking candidates that differ by a mechanism "
                        f"the chosen model lacks (default {RECHECK_BUDGET_S:g}; estimated before any run at "
                        f"{PACKET_HOPS_PER_S / 1e6:g} M packet-hops/s)")


def budget_from(args) -> Budget | None:
    """The :class:`Budget` the flags ask for (None with ``--no-recheck``)."""
    if getattr(args, "no_recheck", False):
        return None
    seconds = getattr(args, "recheck_budget", RECHECK_BUDGET_S)
    if not 0 < seconds <= MAX_RECHECK_BUDGET_S:
        raise SpecError(f"--recheck-budget {seconds:g}, expected 0 < SECONDS <= {MAX_RECHECK_BUDGET_S:g}")
    return Budget(seconds)


def rerank_rows(collective: str, p: int, rows, model, platform, *, itemsize: int = 1, budget: Budget | None):
    """:func:`~topocoll.tune.rank`'s rows judged size by size: ``(rows, verdicts)``
    with the rows of a re-ranked size in the new order (``position`` renumbered)
    and ``verdicts[size]`` the :class:`Verdict`. Sizes are judged cheapest
    first, so a budget runs out on the largest."""
    sizes = list(dict.fromkeys(r.size for r in rows))
    verdicts = {}
    for size in sorted(sizes):
        mine = [r for r in rows if r.size == size]
        cands = [Candidate(r.algorithm, dict(r.params), r.time, row_key(r), report=r.report) for r in mine]
        verdicts[size] = judge(collective, p, size, cands, model, platform, itemsize=itemsize, budget=budget)
    out = []
    for size in sizes:
        mine = {row_key(r): r for r in rows if r.size == size}
        out += [dataclasses.replace(mine[k], position=i) for i, k in enumerate(verdicts[size].order, 1)]
    return out, verdicts


def row_key(row) -> str:
    """A ranked row's name in a :class:`Verdict`: ``algorithm`` or ``algorithm(k=v, ...)``."""
    shown = ", ".join(f"{k}={v}" for k, v in (row.params or {}).items())
    return row.algorithm + (f"({shown})" if shown else "")


def platform_text(platform, model, p: int) -> str:
    """The machine a ranking ran on, named: the network's label, or for an
    event model without ``--topology`` the ideal crossbar it runs on, or for
    the α-β-γ model "no network"."""
    key = model_key(model)
    if platform.network is not None:
        return platform.describe()
    gamma = f"γ = 1/({platform.reduce_bandwidth / 1e9:g} GB/s)"
    if key in ("alpha-beta-gamma", "static"):
        return f"no network (every message has its links to itself), {platform.describe()}"
    from ..sim.engine import platform_network
    return f"{platform_network(platform, p)[0].label}, α = {platform.alpha * 1e6:g} µs, {gamma}"


def model_line(model) -> str:
    """``model: WHAT IT IS; settings: ...`` for a ranking's header."""
    text, settings = model_summary(model_key(model), getattr(model, "options", None))
    return f"model: {text}; settings: {settings_text(settings)}"
