"""The tuner: the fastest algorithm, parameters and node order over a grid of P and sizes.

:func:`tune` answers, for each collective and every grid point (P, message
size), which schedule a model predicts fastest, by how much it beats the
runner-up, and what it gains over the default choice of Open MPI and MPICH
(:mod:`.libdefaults`). The result is a :class:`DecisionTable`: the grid, the
rules it folds into (P range × size range → algorithm), and every estimate
made, from which the text table, JSON, CSV, plot, ``--explain`` and the
tuning files (:mod:`.emit`) are written.

Search space, per collective and P (:func:`candidates`):

- every algorithm of the registry that exists at P and whose needs the
  operator meets (:func:`~topocoll.schedules.registry.operator_allows`);
- its comparison parameters (:attr:`AlgorithmInfo.compare`) always — so the
  tuned choice is never slower than any algorithm with its fixed parameters,
  on the same model — plus the parameter values a parameter's meaning
  suggests: ``n`` (ports of n-way dissemination, Bruck's allreduce) and
  Bruck's all-to-all ``k`` the smallest value for each round count
  ⌈log_{n+1} P⌉ (a larger n at the same rounds only sends more); radix-k's
  ``k`` every factorisation of P into radices ≥ 2, unordered, pruned by the
  α-β-γ cost (order does not change it: the bytes telescope to n(P−1)/P) to
  the best :data:`KEEP`, each then tried ascending and descending (the order
  decides which ranks group, which the network sees); the two-phase
  schedule's shape (x·y·z = P) and linear dimension and the virtual mesh's
  2- and 3-dimensional shapes, each pruned by the α-β-γ cost at the grid's
  smallest and largest size to the best :data:`KEEP`; ``leftover`` both ways;
- node orders (``orders``): the network's ``identity``, ``routing`` and
  ``blocked`` (tori: 2×2×2 blocks) orders, orders that place the ranks
  alike counted once.

Every count is bounded: :data:`MAX_GRID` points, :data:`MAX_SPACE` values of
a parameter before pruning. A time budget (``budget``, s) stops the extra
parameter values once spent — the comparison parameters and the libraries'
choices are always evaluated — and the table says how many were skipped.
"""

from __future__ import annotations

import csv
import io
import math
import time as _time
from dataclasses import dataclass, field

from ..errors import SpecError, TopocollError
from ..schedules.metrics import ScheduleReport
from ..schedules.pattern import RankwisePattern
from ..schedules.registry import MAX_MODEL_MESSAGES, catalogue, check_collective, check_procs, lookup
from ..schedules.sizes import CONVENTION, from_bytes
from ..sim.model import AlphaBetaGamma, Model, Platform, StaticContention, make_network
from .libdefaults import LIBRARIES, LibraryChoice, check_library, library_default
from .batch import Batch, Job, estimate_seconds, run_batches
from .rank import _check_workers, compare_params

#: most grid points (collectives × P × sizes) one run tunes
MAX_GRID = 4096
#: largest P the tuner takes (the papers' largest machines have 34,816 processes; above this the
#: search space of every P-round algorithm passes the models' message limit anyway)
MAX_TUNE_P = 1 << 16
#: most values one parameter is given before pruning (factorisations, shapes)
MAX_SPACE = 5000
#: parameter values kept per algorithm after α-β-γ pruning, at each pruning size
KEEP = 3
#: collectives the tuner accepts (the ones MPI libraries select by size; barrier has none)
TUNABLE = ("allreduce", "reduce_scatter", "alltoall", "bcast", "allgather")
#: extra parameter values more than this factor slower than the best candidate by the α-β-γ
#: model at a size are not evaluated there (the network may reorder candidates, rarely by 3×)
SCREEN = 3.0
#: default node orders searched with a network
DEFAULT_ORDERS = ("routing", "identity", "blocked")

__all__ = ["DEFAULT_ORDERS", "KEEP", "MAX_GRID", "TUNABLE", "Choice", "DecisionTable", "GridPoint",
           "candidates", "tune"]


def _frozen(params: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def params_text(params: dict) -> str:
    def value(v):
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    return ", ".join(f"{k}={value(v)}" for k, v in params.items()) or "-"


@dataclass(frozen=True)
class Choice:
    """One evaluated candidate at one grid point.

    ``params`` are the parameters asked for (what a tuning file names),
    ``resolved`` those the schedule reports (``n="auto"`` → the n chosen).
    """

    algorithm: str
    params: dict
    order: str
    time: float
    resolved: dict = field(default_factory=dict)
    report: ScheduleReport | None = None
    estimate: object = None

    def label(self) -> str:
        text = self.algorithm + (f"({params_text(self.params)})" if self.params else "")
        return text + (f" [{self.order}]" if self.order != "-" else "")

    def key(self) -> tuple:
        return self.algorithm, _frozen(self.params), self.order


@dataclass(frozen=True)
class LibraryPoint:
    """A library's default choice at a grid point and the model's time for it (None: not modelled)."""

    choice: LibraryChoice
    time: float | None
    why: str = ""


@dataclass
class GridPoint:
    """The tuned answer at one (collective, P, size)."""

    collective: str
    p: int
    size: int
    choices: list[Choice]                      # every candidate evaluated, fastest first
    libraries: dict[str, LibraryPoint]
    verdict: object = None                     # .recheck.Verdict where tune(recheck=...) judged it

    @property
    def best(self) -> Choice:
        return self.choices[0]

    @property
    def runner_up(self) -> Choice | None:
        """The fastest choice that is another algorithm (not the same one with other parameters)."""
        return next((c for c in self.choices[1:] if c.algorithm != self.best.algorithm), None)

    @property
    def margin(self) -> float | None:
        """How much slower the runner-up is, as a fraction (0.25: 25 % slower)."""
        ru = self.runner_up
        v = self.verdict
        if ru is not None and v is not None and v.by_packet:      # ranked by the packet model: its times
            best, other = v.rechecked.get(self.best.label()), v.rechecked.get(ru.label())
            return None if best is None or other is None or best <= 0 else other / best - 1.0
        return None if ru is None or self.best.time <= 0 else ru.time / self.best.time - 1.0

    def gain(self, library: str) -> float | None:
        """Library default's time over the tuned time (2.0: twice as fast); None where not modelled."""
        lib = self.libraries.get(library)
        if lib is None or lib.time is None or self.best.time <= 0:
            return None
        return lib.time / self.best.time

    def fixed(self) -> dict[str, Choice]:
        """The fastest evaluation of each algorithm (any parameters, any order)."""
        out: dict[str, Choice] = {}
        for c in self.choices:
            out.setdefault(c.algorithm, c)
        return out


@dataclass(frozen=True)
class SizeRule:
    lo: int
    hi: int | None          # inclusive; None: no upper bound
    choice: Choice


@dataclass(frozen=True)
class PBlock:
    lo: int
    hi: int | None
    p: int                   # the grid P that decided it
    rules: tuple[SizeRule, ...]


@dataclass
class DecisionTable:
    """Everything one :func:`tune` run found (see the module docstring)."""

    collectives: list[str]
    procs: list[int]
    sizes: list[int]
    commutative: bool
    idempotent: bool
    model: str
    platform: str
    orders: list[str]
    libraries: list[str]
    itemsize: int
    seed: int
    budget: float | None
    points: dict[tuple[str, int, int], GridPoint]
    evaluated: int = 0
    skipped: int = 0
    elapsed: float = 0.0
    notes: list[str] = field(default_factory=list)
    judged: bool = False                       # tune(recheck=...) gave every point a verdict
    profile: str | None = None                 # the machine profile file the costs came from (tune --profile)

    # ---- the rules ----------------------------------------------------------------------

    def point(self, collective: str, p: int, size: int) -> GridPoint:
        try:
            return self.points[collective, p, size]
        except KeyError:
            raise SpecError(f"tune: no grid point {collective} P={p} size={size}, expected P in "
                            f"{self.procs} and a size in {self.sizes}") from None

    def rules(self, collective: str, pick=None, *, exact: bool = False) -> list[PBlock]:
        """The grid folded into ranges: grid P_i stands for P_i .. P_{i+1} − 1 (the first
        block from P = 1, the last without bound), size s_j for s_j .. s_{j+1} − 1 (the
        first from 0, the last without bound), neighbouring sizes with the same choice
        merged. ``pick(point) -> Choice`` chooses (default: the best).

        ``exact``: a rule is stated only for the P where its choice exists and the operator
        meets its needs (:func:`_holds_over`). A block whose winner holds at its grid P only
        (a k-vector that multiplies to that P, a schedule the verifier passed for a sum at
        that P but that double counts at others) is split: the grid P keeps the winner, the
        rest of the range gets the fastest candidate that holds over it, or no rule. The
        printed rules and ``--json`` use it; the library files pick their own way (emit)."""
        pick = pick or (lambda point: point.best)
        blocks = []
        ps = sorted(p for p in self.procs if (collective, p, self.sizes[0]) in self.points)
        for i, p in enumerate(ps):
            lo = 1 if i == 0 else p
            hi = ps[i + 1] - 1 if i + 1 < len(ps) else None
            rules = self._size_rules(collective, p, pick)
            if not exact or all(self._holds_over(collective, r.choice, lo, hi) for r in rules):
                blocks.append(PBlock(lo, hi, p, rules))
                continue
            for a, b in ((lo, p - 1), (p, p), (p + 1, hi)):
                if a == p and b == p:
                    blocks.append(PBlock(p, p, p, rules))
                elif b is None or a <= b:
                    fallback = self._size_rules(collective, p, lambda pt, a=a, b=b: next(
                        (c for c in pt.choices if self._holds_over(collective, c, a, b)), None))
                    if all(r.choice is not None for r in fallback):
                        blocks.append(PBlock(a, b, p, fallback))
        return blocks

    def size_rules(self, collective: str, p: int, pick) -> tuple[SizeRule, ...]:
        """The sizes of grid P ``p`` folded into ranges, ``pick(point) -> Choice`` choosing at each."""
        return self._size_rules(collective, p, pick)

    def _size_rules(self, collective: str, p: int, pick) -> tuple[SizeRule, ...]:
        rules: list[SizeRule] = []
        for j, size in enumerate(self.sizes):
            choice = pick(self.points[collective, p, size])
            if rules and choice is not None and rules[-1].choice is not None \
                    and rules[-1].choice.key() == choice.key():
                rules[-1] = SizeRule(rules[-1].lo, None, rules[-1].choice)
            else:
                if rules:
                    rules[-1] = SizeRule(rules[-1].lo, size - 1, rules[-1].choice)
                rules.append(SizeRule(0 if j == 0 else size, None, choice))
        return tuple(rules)

    def _holds_over(self, collective: str, choice: Choice, lo: int, hi: int | None) -> bool:
        """Whether ``choice`` exists at every P of ``lo .. hi`` and the operator meets the
        registry's needs for it (which hold for any P; the tuner's own check was the
        verifier's, exact at the grid P only). P is checked one by one up to ``lo + 4096``
        and at the powers of two and their neighbours beyond, to ``MAX_P`` for an open end."""
        from ..schedules.registry import MAX_P, lookup, operator_allows
        info = lookup(collective, choice.algorithm)
        reduction = collective in ("allreduce", "reduce_scatter", "reduce")
        if not operator_allows(info.needs, commutative=self.commutative or not reduction,
                               idempotent=self.idempotent or not reduction):
            return False
        top = MAX_P if hi is None else hi
        params = {**info.sweep[0], **choice.params}
        probes = set(range(lo, min(top, lo + 4096) + 1))
        probes |= {q for k in range(1, top.bit_length() + 1) for q in ((1 << k) - 1, 1 << k, (1 << k) + 1)
                   if lo <= q <= top}
        return all(info.supports(q, params) for q in sorted(probes))

    # ---- views --------------------------------------------------------------------------

    def rows(self) -> list[dict]:
        """One flat row per grid point (what CSV and JSON hold)."""
        out = []
        for (coll, p, size), pt in sorted(self.points.items(), key=lambda kv: (self.collectives.index(kv[0][0]),
                                                                               kv[0][1], kv[0][2])):
            ru = pt.runner_up
            row = {"collective": coll, "p": p, "size": size, "algorithm": pt.best.algorithm,
                   "params": params_text(pt.best.params), "order": pt.best.order, "time_s": pt.best.time,
                   "runner_up": ru.label() if ru else "", "runner_up_time_s": ru.time if ru else None,
                   "margin": pt.margin}
            for lib in self.libraries:
                lp = pt.libraries.get(lib)
                row[f"{lib}_default"] = lp.choice.algorithm if lp else ""
                row[f"{lib}_time_s"] = lp.time if lp else None
                row[f"{lib}_gain"] = pt.gain(lib)
            out.append(row)
        return out

    def to_json(self) -> dict:
        rules = {}
        for coll in self.collectives:
            rules[coll] = [{"p_min": b.lo, "p_max": b.hi, "p_tuned": b.p,
                            "rules": [{"size_min": r.lo, "size_max": r.hi, "algorithm": r.choice.algorithm,
                                       "params": _jsonable(r.choice.params), "order": r.choice.order,
                                       "time_s": r.choice.time} for r in b.rules]}
                           for b in self.rules(coll, exact=True)]
        return {"format": "topocoll-decision-table", "version": 1,
                "collectives": self.collectives, "procs": self.procs, "sizes": self.sizes,
                "size_convention": {c: CONVENTION[c] for c in self.collectives},
                "operator": {"commutative": self.commutative, "idempotent": self.idempotent},
                "model": self.model, "platform": self.platform, "profile": self.profile, "orders": self.orders,
                "itemsize": self.itemsize,
                "seed": self.seed, "budget_s": self.budget, "evaluated": self.evaluated, "skipped": self.skipped,
                "elapsed_s": round(self.elapsed, 3), "notes": self.notes, "rules": rules,
                "points": [{k: _jsonable(v) for k, v in row.items()} for row in self.rows()],
                **(self._judged_json() if self.judged else {})}

    def _judged_json(self) -> dict:
        """Each point's model, caveats and packet-model re-rank (``tune(recheck=...)``)."""
        first = next(iter(self.points.values())).verdict
        out = {"model_text": first.model_text, "model_settings": _jsonable(first.settings), "verdicts": []}
        for (coll, p, size), pt in self.points.items():
            out["verdicts"].append({"collective": coll, "p": p, "size": size, "best": pt.best.label(),
                                    **_jsonable(pt.verdict.as_dict())})
        return out

    def to_csv(self) -> str:
        rows = self.rows()
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["collective"], lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else (f"{v:.6g}" if isinstance(v, float) else v))
                             for k, v in row.items()})
        return buf.getvalue()

    def text(self) -> str:
        from ..text import human_bytes, table
        lines = [f"tune: {', '.join(self.collectives)} on P = {', '.join(map(str, self.procs))}, "
                 f"{len(self.sizes)} size{'s' if len(self.sizes) != 1 else ''}, {self.model} model: {self.platform}"
                 + (f"; profile {self.profile}" if self.profile else ""),
                 f"operator: {'commutative' if self.commutative else 'non-commutative'}"
                 + (", idempotent" if self.idempotent else "") + f"; orders: {', '.join(self.orders)}; "
                 f"seed {self.seed}; {self.evaluated} evaluations"
                 + (f", {self.skipped} skipped (budget {self.budget:g} s)" if self.skipped else "")
                 + f" in {self.elapsed:.1f} s"]
        lines += [f"note: {n}" for n in self.notes]
        if self.judged:
            from ..sim.caveats import settings_text
            first = next(iter(self.points.values())).verdict
            lines.append(f"model: {first.model_text}; settings: {settings_text(first.settings)}")
        for coll in self.collectives:
            packet = self.judged and any(pt.verdict.by_packet for (c, _, _), pt in self.points.items() if c == coll)
            head = ["P", "size", "best", "time"] + (["time (packet)"] if packet else []) + ["runner-up", "margin"]
            head += [f"{lib} default" for lib in self.libraries] + [f"gain vs {lib}" for lib in self.libraries]
            rows = [tuple(head)]
            for p in self.procs:
                for size in self.sizes:
                    pt = self.points.get((coll, p, size))
                    if pt is None:
                        continue
                    ru = pt.runner_up
                    mark = " †" if pt.verdict is not None and pt.verdict.by_packet else ""
                    row = [str(p), human_bytes(size) if CONVENTION[coll] != "none" else "-", pt.best.label() + mark,
                           _us(pt.best.time)]
                    if packet:
                        t = pt.verdict.rechecked.get(pt.best.label()) if pt.verdict.by_packet else None
                        row.append(_us(t) if t is not None else "-")
                    row += [ru.label() if ru else "-",
                           f"{pt.margin * 100:.1f}%" if pt.margin is not None else "-"]
                    row += [pt.libraries[lib].choice.algorithm.removeprefix("MPIR_") if lib in pt.libraries else "-"
                            for lib in self.libraries]
                    row += [(f"{pt.gain(lib):.2f}×" if pt.gain(lib) is not None else "not modelled")
                            for lib in self.libraries]
                    rows.append(tuple(row))
            lines += ["", f"{coll} ({CONVENTION[coll]}):", table(rows)]
            lines += self._verdict_lines(coll)
            lines += ["", f"{coll} decision rules:"]
            for block in self.rules(coll, exact=True):
                prange = (f"P {block.lo}" if block.lo == block.hi else f"P {block.lo}..{block.hi}"
                          if block.hi is not None else f"P ≥ {block.lo}")
                for r in block.rules:
                    srange = (f"< {human_bytes(r.hi + 1)}" if r.lo == 0 and r.hi is not None else
                              f"{human_bytes(r.lo)} ≤ · < {human_bytes(r.hi + 1)}" if r.hi is not None
                              else f"≥ {human_bytes(r.lo)}")
                    lines.append(f"  {prange:<14} size {srange:<22} → {r.choice.label()}")
        return "\n".join(lines)

    def _verdict_lines(self, collective: str) -> list[str]:
        """The re-rank and the caveats of one collective's points, each said once with where it applies."""
        if not self.judged:
            return []
        from ..text import human_bytes
        pts = [pt for (coll, _, _), pt in self.points.items() if coll == collective]
        out = []
        rechecked = [pt for pt in pts if pt.verdict.by_packet]
        if rechecked:
            reason = rechecked[0].verdict.recheck_reason.split("\n")[0]
            out.append(f"† ranked by the packet model at {len(rechecked)} of {len(pts)} points "
                       f"({_where(rechecked)}) because {reason}")
        said: dict[tuple, list] = {}       # (model, family, mechanisms) or a skip reason -> [caveat, affected, points]
        for pt in pts:
            v = pt.verdict
            for c in (v.remaining if v.by_packet else v.caveats):
                entry = said.setdefault((c.model, c.family, c.mechanisms), [c, {}, []])
                entry[1].update(dict.fromkeys(c.affected))
                entry[2].append(pt)
            if v.skipped:
                reason = v.skipped if "budget" not in v.skipped else \
                    "not re-ranked by the packet model: over --recheck-budget (the largest points come last)"
                said.setdefault((reason,), [None, {}, []])[2].append(pt)
        for key, (c, affected, where) in said.items():
            line = f"caveat: {c.line(tuple(affected))}" if c is not None else key[0]
            out.append(f"{line} [{_where(where) if len(where) < len(pts) else 'every point'}]")
        return out or [f"caveats: none (the candidates differ by no mechanism the {self.model} model lacks)"]

    def explain(self, collective: str, p: int, size: int) -> str:
        """Why the winner wins at one point: rounds, bytes, α-β-γ terms, hottest links, overlap."""
        from ..text import human_bytes, table
        pt = self.point(collective, p, size)
        lines = [f"{collective} on P={p}, {human_bytes(size)} ({CONVENTION[collective]}), {self.model} model: "
                 f"{self.platform}"]
        shown = [pt.best] + ([pt.runner_up] if pt.runner_up else [])
        shown += [c for c in pt.fixed().values() if c not in shown][:4]
        rows = [("", "candidate", "time", "rounds", "msgs/rank", "bytes/rank", "α·β·γ terms", "congestion",
                 "hottest link", "every rank busy every round")]
        for i, c in enumerate(shown):
            rep, est = c.report, c.estimate
            rows.append(("winner" if i == 0 else ("runner-up" if c is pt.runner_up else "fixed"), c.label(),
                         _us(c.time), str(rep.rounds) if rep else "-", str(rep.max_messages_per_rank) if rep else "-",
                         human_bytes(rep.max_bytes_per_rank) if rep else "-", str(rep.cost) if rep else "-",
                         f"{est.congestion:.3g}×" if getattr(est, "congestion", None) is not None else "-",
                         _hot(est), ("yes" if rep.all_ranks_active_every_round else "no") if rep else "-"))
        lines.append(table(rows))
        best, ru = pt.best, pt.runner_up
        if ru is not None and best.report is not None and ru.report is not None:
            why = []
            b, r = best.report, ru.report
            if b.rounds != r.rounds:
                why.append(f"{'fewer' if b.rounds < r.rounds else 'more'} rounds ({b.rounds} vs {r.rounds}: "
                           f"{abs(b.rounds - r.rounds)}·α)")
            if b.max_bytes_per_rank != r.max_bytes_per_rank:
                why.append(f"{'fewer' if b.max_bytes_per_rank < r.max_bytes_per_rank else 'more'} bytes per rank "
                           f"({human_bytes(b.max_bytes_per_rank)} vs {human_bytes(r.max_bytes_per_rank)})")
            bc, rc = getattr(best.estimate, "congestion", None), getattr(ru.estimate, "congestion", None)
            if bc is not None and rc is not None and bc != rc:
                why.append(f"{'less' if bc < rc else 'more'} link sharing ({bc:.3g}× vs {rc:.3g}×)")
            lines.append(f"\n{best.label()} wins by {pt.margin * 100:.1f}% over {ru.label()}: "
                         + ("; ".join(why) if why else "the same rounds and bytes, a better placement") + ".")
        for lib in self.libraries:
            lp = pt.libraries.get(lib)
            if lp is None:
                continue
            tail = (f"{_us(lp.time)}, the tuned choice {pt.gain(lib):.2f}× faster" if lp.time is not None
                    else lp.why or lp.choice.fidelity)
            lines.append(f"{LIBRARIES[lib]}: {lp.choice.text()} — {tail}")
        return "\n".join(lines)


def _where(points) -> str:
    """``P=64: 8 B, 64 KiB; P=144: 4 MiB`` (at most 6 sizes per P shown)."""
    from ..text import human_bytes
    by_p: dict[int, list[int]] = {}
    for pt in points:
        by_p.setdefault(pt.p, []).append(pt.size)
    parts = []
    for p, sizes in by_p.items():
        shown = ", ".join(human_bytes(s) for s in sizes[:6]) + (f", … {len(sizes) - 6} more" if len(sizes) > 6 else "")
        parts.append(f"P={p}: {shown}")
    return "; ".join(parts)


def _us(t: float) -> str:
    return f"{t * 1e6:.2f} µs"


def _hot(est) -> str:
    detail = getattr(est, "detail", None)
    hot = getattr(detail, "hot_links", None)
    if not hot:
        return getattr(est, "hot_link", None) or "-"
    return getattr(est, "hot_link", None) or "-"


def _jsonable(value):
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


# ---- the search space ----------------------------------------------------------------------

def _port_values(p: int) -> list[int]:
    """For each round count r = 1 .. ⌈log2 P⌉, the fewest ports n with (n + 1)^r ≥ P."""
    out = []
    for r in range(1, max(1, (p - 1).bit_length()) + 1):
        n = max(1, math.ceil(p ** (1.0 / r)) - 1)
        while (n + 1) ** r < p:
            n += 1
        while n > 1 and n ** r >= p:
            n -= 1
        if n <= max(1, p - 1) and n not in out:
            out.append(n)
    return sorted(out)


def _factorisations(p: int, smallest: int = 2, limit: int = MAX_SPACE) -> list[list[int]]:
    """Unordered factorisations of ``p`` into factors ≥ 2, each non-increasing; at most ``limit``."""
    out: list[list[int]] = []

    def walk(rest, most, prefix):
        if len(out) >= limit:
            return
        if rest == 1:
            out.append(prefix)
            return
        for f in range(min(rest, most), smallest - 1, -1):
            if rest % f == 0:
                walk(rest // f, f, prefix + [f])

    walk(p, p, [])
    return out


def _shapes(p: int, dims: int) -> list[tuple[int, ...]]:
    """Ordered shapes of ``dims`` sizes ≥ 2 with product ``p`` (bounded by MAX_SPACE)."""
    out = []

    def walk(rest, left, prefix):
        if len(out) >= MAX_SPACE:
            return
        if left == 1:
            if rest >= 2:
                out.append(tuple(prefix + [rest]))
            return
        for f in range(2, rest + 1):
            if rest % f == 0:
                walk(rest // f, left - 1, prefix + [f])

    walk(p, dims, [])
    return out


def _space(info, p: int, base: dict | None = None) -> list[dict]:
    """Parameter sets worth trying for ``info`` at ``p`` (before pruning), the comparison set
    (``base``, default the registry's) first."""
    base = dict(info.compare) if base is None else dict(base)
    out = [base]
    seen = [{**info.params, **base}]

    def add(**changes):
        params = {**base, **changes}
        full = {**info.params, **params}
        if full not in seen:
            seen.append(full)
            out.append(params)

    names = set(info.params)
    default_k = info.params.get("k")
    if "n" in names:
        for n in _port_values(p):
            add(n=n)
    if "k" in names and not isinstance(default_k, str):          # Bruck's all-to-all: ports
        for k in _port_values(p):
            add(k=k)
    if "k" in names and isinstance(default_k, str) and p > 1:    # radix-k: radices
        for ks in _factorisations(p):
            add(k=list(ks))
    if "leftover" in names:
        add(leftover="neighbours")
        add(leftover="last")
    if "shape" in names and "linear" in names and p >= 4:
        for dims in (2, 3):
            for shape in _shapes(p, dims):
                for axis in "xyz"[:dims]:
                    add(shape="x".join(map(str, shape)), linear=axis)
    if "dims" in names and p >= 4:
        for dims in (2, 3):
            for shape in _shapes(p, dims):
                add(dims="x".join(map(str, shape)), d=dims)
    return out[:MAX_SPACE]


def _abg_time(info, p: int, params: dict, size: int, itemsize: int, platform: Platform) -> float:
    terms = info.cost(p, params, size, itemsize=itemsize)
    return terms.time(platform.alpha, platform.beta, platform.gamma)


def _prune_size(collective: str, p: int, size: int, itemsize: int) -> int:
    """A size near ``size`` whose vector splits evenly into P blocks (closed forms apply)."""
    if collective in ("reduce_scatter", "allreduce"):
        unit = p * itemsize
        return max(unit, round(size / unit) * unit)
    return max(size, itemsize)


def candidates(collective: str, p: int, prune_sizes, *, commutative: bool = True, idempotent: bool = False,
               itemsize: int = 8, keep: int = KEEP, platform: Platform | None = None) -> tuple[list, list, list]:
    """The search space at ``p``: ``(baseline, extra, left_out)``.

    ``baseline`` holds (info, params) of every applicable algorithm with its
    comparison parameters; ``extra`` the other parameter values kept after
    pruning by the α-β-γ cost at each of ``prune_sizes`` (the best ``keep``
    at each, radix-k's k-vectors then ascending and descending);
    ``left_out`` says why algorithms take no part.

    Examples
    --------
    >>> base, extra, _ = candidates("reduce_scatter", 12, [8 << 20])
    >>> sorted(params["k"] for info, params in extra if info.name == "radix_k")
    [[2, 2, 3], [2, 6], [3, 2, 2], [6, 2], [12]]
    """
    platform = platform or Platform()
    baseline, extra, left_out = [], [], []
    for info in catalogue().values():
        if info.collective != collective:
            continue
        # the registry's needs hold for the default parameters at any P; a schedule's own needs are
        # exact (butterfly_virtual needs idempotence only where P is not a power of two): the
        # evaluation checks them, as rank() does
        compare = compare_params(info, p, platform)   # the network's nodes for node-aware algorithms
        space = [params for params in _space(info, p, compare) if info.supports(p, params)]
        usable = []
        for params in space:
            try:
                info.check_size(p, params, limit=MAX_MODEL_MESSAGES, purpose="a model")
            except SpecError:
                continue
            usable.append(params)
        if not usable or usable[0] != compare:
            if not info.supports(p, compare):
                left_out.append(f"{info.name} (not for P={p}: {info.p_rule_text})")
                if not usable:
                    continue
            elif not usable:
                left_out.append(f"{info.name} (too many messages at P={p})")
                continue
        if info.supports(p, compare) and compare in usable:
            baseline.append((info, compare))
        others = [params for params in usable if params != compare]
        if len(others) > keep and CONVENTION[collective] != "none":
            scored = []
            for params in others:
                try:
                    times = [_abg_time(info, p, params, _prune_size(collective, p, s, itemsize), itemsize, platform)
                             for s in prune_sizes]
                except TopocollError:
                    continue
                scored.append((times, params))
            kept = []
            for i in range(len(prune_sizes)):
                for _, params in sorted(scored, key=lambda t: (t[0][i], str(t[1])))[:keep]:
                    if params not in kept:
                        kept.append(params)
            if "k" in info.params and isinstance(info.params["k"], str):
                orderings = []
                for params in kept:
                    for ks in (sorted(params["k"]), sorted(params["k"], reverse=True)):
                        candidate = {**params, "k": ks}
                        if candidate not in orderings:
                            orderings.append(candidate)
                kept = orderings
            others = kept
        extra.extend((info, params) for params in others if params != compare)
    return baseline, extra, left_out


def _screen(collective, p, size, base, extra, itemsize, platform, factor) -> list:
    """The extra candidates whose α-β-γ time at ``size`` is within ``factor`` of the best candidate's."""
    if factor is None or not extra:
        return list(extra)
    nominal = _prune_size(collective, p, size, itemsize)

    def abg(info, params):
        try:
            return _abg_time(info, p, params, nominal, itemsize, platform)
        except TopocollError:
            return math.inf

    times = [abg(info, params) for info, params in extra]
    best = min([abg(info, params) for info, params in base] + times)
    return [cand for cand, t in zip(extra, times) if t <= factor * best]


# ---- the run -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Setting:
    """One network placement: (P, order) → platform."""

    p: int
    order: str
    platform: Platform


def _orders_for(topology, p, orders, routing, seed, platform_base: dict, notes: list) -> list[_Setting]:
    if topology is None:
        return [_Setting(p, "-", Platform(**platform_base))]
    import numpy as np
    out, seen = [], []
    for order in orders:
        spec = "blocked:2x2x2" if order == "blocked" else order
        try:
            net = make_network(topology, p, routing=routing, order=spec, seed=seed)
        except SpecError as exc:
            if order == "blocked":
                note = f"order blocked left out at P={p}: {exc}"
                if note.split(":")[0] not in {n.split(":")[0] for n in notes}:
                    notes.append(note)
                continue
            raise
        if any(np.array_equal(net.order, prior) for prior in seen):
            continue
        seen.append(net.order)
        values = {k: v for k, v in platform_base.items() if k != "bandwidth"}
        out.append(_Setting(p, spec, Platform(**values, network=net)))
    return out


def _parse_grid(collectives, procs, sizes) -> tuple[list[str], list[int], list[int]]:
    collectives = list(dict.fromkeys(collectives or []))
    if not collectives:
        raise SpecError("tune: no collective, expected at least one of " + ", ".join(TUNABLE))
    for coll in collectives:
        check_collective(coll)
        if coll not in TUNABLE:
            raise SpecError(f"tune: collective {coll!r} cannot be tuned, expected one of {', '.join(TUNABLE)}")
    procs = sorted(set(check_procs("tune", p) for p in (procs or [])))
    if not procs:
        raise SpecError("tune: no P, expected at least one number of ranks")
    if procs[-1] > MAX_TUNE_P:
        raise SpecError(f"tune: P={procs[-1]}, expected at most {MAX_TUNE_P} ranks (MAX_TUNE_P)")
    sizes = sorted(set(sizes or []))
    if not sizes:
        raise SpecError("tune: no message size, expected at least one")
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise SpecError(f"tune: size {s!r}, expected a whole number of bytes >= 1")
    if len(collectives) * len(procs) * len(sizes) > MAX_GRID:
        raise SpecError(f"tune: {len(collectives)} collectives × {len(procs)} P × {len(sizes)} sizes = "
                        f"{len(collectives) * len(procs) * len(sizes)} points, expected at most {MAX_GRID}")
    return collectives, procs, sizes


def tune(collectives, procs, sizes, *, topology: str | None = None, routing: str | None = None,
         orders=None, model: Model | None = None, alpha: float = 1e-6, bandwidth: float = 2e9,
         reduce_bandwidth: float = 4e9, commutative: bool = True, idempotent: bool = False,
         libraries=tuple(LIBRARIES), budget: float | None = None, workers: int | None = 1, itemsize: int = 8,
         seed: int = 0, keep: int = KEEP, screen: float | None = SCREEN, on_progress=None,
         on_plan=None, recheck=False, synthesize=None, synth_budget: float | None = None) -> DecisionTable:
    """Tune ``collectives`` over the grid ``procs`` × ``sizes``.

    Parameters
    ----------
    collectives : list of str
        Any of :data:`TUNABLE`.
    procs : list of int
        Numbers of ranks (each ≤ the network's endpoints with ``topology``).
    sizes : list of int
        Message sizes in bytes, MPI's convention (:mod:`topocoll.schedules.sizes`),
        each a multiple of ``itemsize`` where the collective splits a vector.
    topology, routing : str, optional
        The network (``kary:12,2``, ``torus:8x8x8``); without it the α-β-γ
        model ranks on a crossbar of ``bandwidth`` B/s.
    orders : list of str, optional
        Node orders searched (default :data:`DEFAULT_ORDERS` with a network).
    model : Model, optional
        Default: static contention with a network, α-β-γ without.
    alpha, bandwidth, reduce_bandwidth : float
        s per message, B/s of a link (α-β-γ), B/s reduced.
    commutative, idempotent : bool
        The operator's properties (reductions only; an algorithm needing more
        is left out).
    libraries : list of str
        Whose default choice to compare with (:data:`.libdefaults.LIBRARIES`).
    budget : float, optional
        Seconds after which the extra parameter values are skipped.
    workers : int, optional
        Worker processes (as :func:`~topocoll.tune.rank`; default 1, in-process).
    itemsize : int
        Bytes per element (default 8, ``MPI_DOUBLE``).
    seed : int
        Seed of a ``random`` node order (the only random choice).
    keep : int
        Parameter values kept per algorithm and pruning size, ``1 .. 64``.
    screen : float or None
        An extra parameter value is evaluated at a size only where its
        α-β-γ time is within ``screen`` times the best α-β-γ time of any
        candidate there (default :data:`SCREEN`; None: every size). The
        comparison parameters are always evaluated.
    on_progress : callable, optional
        ``on_progress(done, total)`` as evaluations finish (after each
        candidate's batch of sizes and orders, :mod:`.batch`).
    on_plan : callable, optional
        ``on_plan(evaluations, batches, processes, seconds)`` once the search
        space is known, before any evaluation: ``seconds`` is the expected
        time (:func:`.batch.estimate_seconds`, from message counts and
        measured rates).
    recheck : Budget, None or False
        False (default): no verdicts. None: every point gets a
        :class:`.recheck.Verdict` (the model, its settings, the caveats that
        matter for its candidates). A :class:`.recheck.Budget`: the same, and
        points whose candidates differ by a mechanism the model lacks are
        re-ranked by the packet model where its estimated cost fits the
        budget, cheapest points first (:func:`.recheck.judge`); a re-ranked
        point's choices put the packet model's order first.
    synthesize : path, optional
        A directory of schedule files written by ``topocoll synthesize``:
        each is ranked beside the fixed algorithms (``synthesized`` with
        ``file=``) at the grid P and node order whose routes it was made for
        (:mod:`.synthesized`); needs ``topology``.
    synth_budget : float, optional
        With ``synthesize``: first synthesize, for every grid point without
        a file in that directory, a schedule for this network (seconds of
        search per point), written there.

    Returns
    -------
    DecisionTable

    Raises
    ------
    SpecError
        Empty or bad grid, unknown collective or library, a P above the
        network's endpoints, no algorithm allowed by the operator.

    Examples
    --------
    >>> table = tune(["allreduce"], [8], [8, 1 << 20])
    >>> [(pt.size, pt.best.algorithm) for pt in table.points.values()]
    [(8, 'butterfly_virtual'), (1048576, 'rabenseifner')]
    >>> table.point("allreduce", 8, 8).libraries["openmpi-5.0"].choice.text()
    'recursive_doubling (3) → pairwise_exchange(leftover=neighbours)'
    >>> table.point("allreduce", 8, 8).gain("openmpi-5.0")             # as fast, on P = 2^3
    1.0
    """
    start = _time.monotonic()
    collectives, procs, sizes = _parse_grid(collectives, procs, sizes)
    libraries = [check_library(lib) for lib in (libraries or [])]
    if isinstance(itemsize, bool) or not isinstance(itemsize, int) or not 1 <= itemsize <= 1 << 20:
        raise SpecError(f"tune: itemsize={itemsize!r}, expected a whole number of bytes in 1..1048576")
    if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= 64:
        raise SpecError(f"tune: keep={keep!r}, expected an integer in 1..64")
    if budget is not None and (not isinstance(budget, (int, float)) or not budget > 0 or not math.isfinite(budget)):
        raise SpecError(f"tune: budget={budget!r}, expected a positive number of seconds")
    workers = _check_workers(workers)
    quiet_blocked = False
    if topology is None:
        if orders:
            raise SpecError("tune: node orders given without a topology, expected --topology with --orders")
        orders = ["-"]
        model = model or AlphaBetaGamma()
    else:
        quiet_blocked = not orders         # the default list: blocked applies to tori only, say nothing
        orders = list(dict.fromkeys(orders or DEFAULT_ORDERS))
        model = model or StaticContention()
        from ..topology import parse_topology
        endpoints = parse_topology(topology).n_endpoints
        too_many = [p for p in procs if p > endpoints]
        if too_many:
            raise SpecError(f"tune: P={too_many[0]} on {topology}, expected at most its {endpoints} endpoints "
                            "(one rank per endpoint)")
    for coll in collectives:
        if CONVENTION[coll] in ("whole vector", "per rank", "per destination"):
            bad = [s for s in sizes if s % itemsize]
            if bad:
                raise SpecError(f"tune: size {bad[0]} B is not a whole number of {itemsize}-byte elements, "
                                f"expected multiples of itemsize={itemsize}")
    base_values = {"alpha": alpha, "bandwidth": bandwidth, "reduce_bandwidth": reduce_bandwidth}
    if screen is not None and (isinstance(screen, bool) or not isinstance(screen, (int, float))
                               or not 1 <= screen <= 1e6):
        raise SpecError(f"tune: screen={screen!r}, expected a factor in 1..1e6 or None")
    notes: list[str] = []
    abg_platform = Platform(**base_values)
    screened_out = 0

    # the evaluations, batched per candidate: (tier, collective, P, algorithm, parameters) → its
    # sizes and orders (.batch: one op program for every size of a schedule, one report per size)
    groups: dict[tuple[int, str], _Setting] = {}
    for p in procs:
        for setting in _orders_for(topology, p, orders, routing, seed, base_values,
                                   [] if quiet_blocked else notes):
            groups[p, setting.order] = setting
    first_order = {p: next(o for (q, o) in groups if q == p) for p in procs}
    synthesized = []
    if synthesize is not None:
        from . import synthesized as synth_files
        if topology is None:
            raise SpecError("tune: --synthesize needs a network (a schedule is made for its routes), expected "
                            "--topology SPEC")
        if synth_budget is not None:
            synth_files.synthesize_missing(synthesize, collectives, procs, sizes, groups, model, budget=synth_budget,
                                           seed=seed, itemsize=itemsize, notes=notes)
        synthesized = synth_files.candidates(synth_files.scan(synthesize, notes), collectives, procs, groups, notes)
    elif synth_budget is not None:
        raise SpecError("tune: --synth-budget without --synthesize DIR, expected the directory to write the "
                        "schedules into")
    batches: dict[tuple, dict] = {}
    lib_wanted: dict[tuple, list] = {}

    def want(tier, coll, p, info, params, comm, idem, size, order, key):
        spec = batches.setdefault((tier, coll, p, info.name, _frozen(params)),
                                  {"info": info, "params": dict(params), "comm": comm, "idem": idem,
                                   "sizes": {}, "jobs": []})
        index = spec["sizes"].setdefault(size, len(spec["sizes"]))
        spec["jobs"].append(Job(key, index, order))

    for coll in collectives:
        reduction = coll in ("allreduce", "reduce_scatter")
        comm = commutative if reduction else True
        idem = idempotent if reduction else True
        for p in procs:
            base, extra, left_out = candidates(coll, p, [sizes[0], sizes[-1]], commutative=comm, idempotent=idem,
                                               itemsize=itemsize, keep=keep, platform=abg_platform)
            if not base and not extra:
                raise SpecError(f"tune: no {coll} algorithm runs on P={p} for a "
                                f"{'commutative' if comm else 'non-commutative'} operator: "
                                + ("; ".join(left_out) or "none registered"))
            screened = {size: _screen(coll, p, size, base, extra, itemsize, abg_platform, screen)
                        for size in sizes}
            for (q, order) in groups:
                if q != p:
                    continue
                for size in sizes:
                    for tier, pool in ((0, base), (1, screened[size])):
                        for info, params in pool:
                            want(tier, coll, p, info, params, comm, idem, size, order, (coll, p, size))
            screened_out += sum(len(extra) - len(screened[size]) for size in sizes)
            info = lookup(coll, "synthesized")
            for (c, q, order, path) in synthesized:   # at its own P and placement only: made for them
                if c == coll and q == p:
                    for size in sizes:
                        want(0, coll, p, info, {"file": path}, comm, idem, size, order, (coll, p, size))
            for size in sizes:
                for lib in libraries:
                    choice = library_default(lib, coll, p, size, commutative=comm, itemsize=itemsize)
                    lib_wanted.setdefault((coll, p, size), []).append(choice)
                    if choice.schedule is not None:
                        want(0, coll, p, lookup(coll, choice.schedule), choice.schedule_params, comm, idem, size,
                             first_order[p], ("lib", lib, coll, p, size))

    if screened_out:
        notes.append(f"{screened_out} (extra parameter value, size) pairs screened out by the α-β-γ model "
                     f"(more than {screen:g}× its best)")
    work = [_batch(tier, coll, p, spec, itemsize) for (tier, coll, p, _, _), spec in batches.items()]
    total = sum(len(b.jobs) for b in work)
    if on_plan is not None:
        on_plan(total, len(work), min(workers, len(work)), estimate_seconds(work, workers))
    done = [0]
    results: dict[tuple, list[Choice]] = {}
    lib_times: dict[tuple, tuple[float | None, str]] = {}
    evaluated = skipped = 0

    def record(batch, outcomes):
        nonlocal evaluated
        for job, (row, why) in zip(batch.jobs, outcomes):
            done[0] += 1
            evaluated += 1
            key = job.key
            if key[0] == "lib":
                lib_times[key[1:]] = (row[0], "") if row is not None else (None, why)
                continue
            if row is None:
                continue
            t, name, resolved, rep, est = row
            results.setdefault(key, []).append(Choice(name, dict(batch.params), job.order, t, dict(resolved),
                                                      rep, est))
        if on_progress is not None:
            on_progress(done[0], total)

    def over_budget(batch) -> bool:
        nonlocal skipped
        if batch.tier == 0 or budget is None or _time.monotonic() - start <= budget:
            return False
        skipped += len(batch.jobs)
        done[0] += len(batch.jobs)
        if on_progress is not None:
            on_progress(done[0], total)
        return True

    platforms = {group: setting.platform for group, setting in groups.items()}
    run_batches(work, model, platforms, workers=workers, on_done=record, skip=over_budget)

    points: dict[tuple, GridPoint] = {}
    for coll in collectives:
        tuned_sizes = sizes
        for p in procs:
            for size in tuned_sizes:
                found = results.get((coll, p, size), [])
                if not found:
                    raise SpecError(f"tune: no {coll} algorithm is correct for a "
                                    f"{'commutative' if commutative else 'non-commutative'}"
                                    f"{', idempotent' if idempotent else ''} operator on P={p} with {size} B, "
                                    "expected an operator with more properties (--commutative)")
                found.sort(key=lambda c: (c.time, c.algorithm, str(c.params), c.order))
                libs = {}
                for choice in lib_wanted.get((coll, p, size), []):
                    t, why = lib_times.get((choice.library, coll, p, size), (None, choice.fidelity))
                    libs[choice.library] = LibraryPoint(choice, t, why if t is None else "")
                points[coll, p, size] = GridPoint(coll, p, size, found, libs)
    if recheck is not False:
        _judge_points(points, model, {g: s.platform for g, s in groups.items()}, abg_platform, itemsize, recheck)
    return DecisionTable(collectives, procs, sizes, commutative, idempotent, model.name,
                         (_describe_bare(model, base_values) if topology is None
                          else _describe(groups, procs)), [o for o in orders], libraries, itemsize, seed, budget,
                         points, evaluated=evaluated, skipped=skipped, elapsed=_time.monotonic() - start, notes=notes,
                         judged=recheck is not False)


def _judge_points(points: dict, model, platforms: dict, abg_platform: Platform, itemsize: int, budget) -> None:
    """Give every point a verdict (:func:`.recheck.judge`) on its fastest choice per algorithm; smallest
    points first, so a budget runs out on the largest. A re-ranked point's choices put the re-ranked ones
    first in the packet model's order."""
    from .recheck import Candidate, judge
    for (coll, p, size), pt in sorted(points.items(), key=lambda kv: (kv[0][2] * kv[0][1], kv[0])):
        fixed = list(pt.fixed().values())
        cands = [Candidate(c.algorithm, dict(c.params), c.time, c.label(),
                           platform=platforms.get((p, c.order), abg_platform), report=c.report) for c in fixed]
        first = cands[0].platform
        pt.verdict = judge(coll, p, size, cands, model, first, itemsize=itemsize, budget=budget)
        if pt.verdict.by_packet:
            by_label = {c.label(): c for c in fixed}
            moved = [by_label[k] for k in pt.verdict.order]
            pt.choices = moved + [c for c in pt.choices if c not in moved]


def _batch(tier: int, collective: str, p: int, spec: dict, itemsize: int) -> Batch:
    """A :class:`.batch.Batch` from the evaluations ``want`` gathered for one candidate, with
    its message count and kind (for the time estimate)."""
    info, params = spec["info"], spec["params"]
    sizes = sorted(spec["sizes"], key=spec["sizes"].get)
    args = tuple(from_bytes(collective, p, size, itemsize=itemsize) for size in sizes)
    try:
        work = info.check_size(p, params, limit=MAX_MODEL_MESSAGES, purpose="a model")
    except SpecError:
        work = 0
    try:
        rankwise = type(info.generate(p, **params, **args[0]).pattern) is RankwisePattern   # lazy: cheap
    except TopocollError:
        rankwise = False
    return Batch(collective, info.name, p, params, args, spec["comm"], spec["idem"], "tune", tier,
                 tuple(spec["jobs"]), work=work, rankwise=rankwise)


def _describe_bare(model, base_values: dict) -> str:
    """The machine without a topology: the α-β-γ model's, or the ideal crossbar an event model runs on."""
    text = Platform(**base_values).describe()
    if isinstance(model, AlphaBetaGamma):
        return text
    return (f"ideal crossbar (one endpoint per rank, {base_values['bandwidth'] / 1e9:g} GB/s links, no latency), "
            + text.replace(f", β = 1/({base_values['bandwidth'] / 1e9:g} GB/s)", ""))


def _describe(groups, procs) -> str:
    setting = groups[next(iter(groups))]
    label = setting.platform.describe()
    return label.replace(f"order {setting.order}", "orders searched")
