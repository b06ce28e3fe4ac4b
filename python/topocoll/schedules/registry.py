"""The catalogue of generators: every algorithm registers itself here.

``@algorithm(...)`` records a generator with everything the rest of topocoll
asks about it, typed:

- ``params``: name → default; every name has a bounded specification in
  :data:`~.params.SPECS`, checked *before* the generator runs;
- ``needs``: the :class:`~.ir.OperatorNeeds` of the algorithm with its default
  parameters (``"associative"``: correct for non-commutative operators, in
  rank order; ``"commutative"``; ``"commutative, idempotent"``: max, min,
  and, or only). A schedule's own ``needs`` is exact for its P and
  parameters and never stronger than this;
- ``supports``: which P the algorithm exists for beyond the parameter bounds
  (``None``: every P; ``"power_of_two"``; or a predicate ``(p, params)``);
- ``compare``: the parameters a comparison uses (``{"n": "auto"}``);
- ``sweep``: parameter sets the catalogue tests cover.

:meth:`AlgorithmInfo.supports` is the one predicate for "can this be built",
:meth:`AlgorithmInfo.cost` the one call for its α-β-γ cost: a closed form
from :mod:`.costs` where the papers give one (``@closed_form``), else counted
from the generated schedule's rounds (:func:`.metrics.report`); tests hold
the two equal.

Limits: ``1 ≤ P ≤`` :data:`MAX_P` (2^20 ranks, above the papers' largest,
34,816 processes); vectors within :data:`.sizes.MAX_BYTES`.
"""

from __future__ import annotations

import importlib
import inspect
import numbers
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import SpecError
from .ir import OperatorNeeds, Schedule
from .metrics import CostTerms, report
from .params import SPECS, check_params
from .sizes import check_vector, from_bytes, schedule_args

#: largest number of ranks a schedule may have (2^20)
MAX_P = 1 << 20
#: messages of the largest schedule whose per-rank view topocoll builds (the
#: symbolic verifier, ``show``, the reference executor): 2^22, about 1.5 GiB of
#: per-rank operations
MAX_PER_RANK_MESSAGES = 1 << 22
#: messages of the largest schedule a model streams when ranking (2^24)
MAX_MODEL_MESSAGES = 1 << 24

# modules holding generators and closed forms; imported by ``catalogue()``
CATALOGUE_MODULES = (
    "tree", "pairwise", "dissemination", "bruck", "ring", "allgather", "compositing", "alltoall", "costs",
    "hierarchical", "synthesized",
)

#: ``needs=`` words -> what the operator must be
NEEDS = {
    "associative": OperatorNeeds(),
    "commutative": OperatorNeeds(commutative=True),
    "commutative, idempotent": OperatorNeeds(commutative=True, idempotent=True),
}

GENERIC_PARAMS = ("count", "itemsize")

__all__ = [
    "MAX_MODEL_MESSAGES", "MAX_P", "MAX_PER_RANK_MESSAGES", "NEEDS", "AlgorithmInfo", "ClosedForm", "algorithm", "catalogue", "check_procs", "closed_form",
    "generate", "lookup", "mpi_schedule", "needs_text", "operator_allows",
]


def needs_text(needs: OperatorNeeds) -> str:
    """``"associative"``, ``"commutative"`` or ``"commutative, idempotent"``."""
    return next((word for word, value in NEEDS.items() if value == needs),
                "idempotent" if needs.idempotent else "associative")


def operator_allows(needs: OperatorNeeds, *, commutative: bool, idempotent: bool) -> bool:
    """Whether an operator with these properties meets ``needs``."""
    return (commutative or not needs.commutative) and (idempotent or not needs.idempotent)


def check_procs(where: str, p) -> int:
    """``p`` as an int in ``1 .. MAX_P``, or a one-line :class:`SpecError`."""
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (numbers.Integral, np.integer)):
        raise SpecError(f"{where}: P={p!r}, expected a whole number of ranks in 1..{MAX_P}")
    if not 1 <= p <= MAX_P:
        raise SpecError(f"{where}: P={p}, expected 1..{MAX_P} ranks (the largest schedule topocoll builds)")
    return int(p)


def _power_of_two(p: int, params: dict) -> bool:
    """P a power of two"""
    return p & (p - 1) == 0


P_RULES = {"power_of_two": (_power_of_two, "2^k only")}


@dataclass(frozen=True)
class ClosedForm:
    """A paper's closed-form α-β-γ cost of one algorithm.

    ``terms(p, params, count, itemsize)`` returns the :class:`CostTerms` the
    α-β-γ model of :func:`.metrics.report` gives the schedule, or ``None``
    where the formula does not apply (then the cost is counted).
    """

    formula: str
    terms: Callable[[int, dict, int, int], CostTerms | None]
    messages: Callable[[int, dict], int] | None = None


_REGISTRY: dict[tuple[str, str], "AlgorithmInfo"] = {}
_CLOSED_FORMS: dict[tuple[str, str], ClosedForm] = {}


@dataclass(frozen=True)
class AlgorithmInfo:
    """One catalogue entry (see the module docstring for the fields)."""

    collective: str
    name: str
    func: Callable[..., Schedule]
    params: dict
    needs: OperatorNeeds
    rounds: str = ""
    paper: str = ""
    p_rule: Callable[[int, dict], bool] | None = None
    p_rule_text: str = "any"
    compare: dict = field(default_factory=dict)
    sweep: tuple = ({},)
    default_itemsize: int = 8

    @property
    def label(self) -> str:
        return f"{self.collective}/{self.name}"

    # ---- the one predicate ------------------------------------------------

    def check(self, p, params: dict | None = None) -> dict:
        """Check ``p`` and ``params`` against their bounds, before generating.

        Returns the parameters to hand the generator (normalised; ``count``
        and ``itemsize`` included when given). Raises :class:`SpecError` with
        one line naming the bad value and what was expected.
        """
        where = self.label
        p = check_procs(where, p)
        params = dict(params or {})
        unknown = sorted(set(params) - set(self.params) - set(GENERIC_PARAMS))
        if unknown:
            accepted = ", ".join(sorted(set(self.params) | set(GENERIC_PARAMS)))
            raise SpecError(f"{where}: unknown parameter {unknown[0]!r}, expected one of {accepted}")
        generic = {k: params.pop(k) for k in GENERIC_PARAMS if k in params}
        out = check_params(where, p, params, self.params)
        if generic.get("count") is not None or "itemsize" in generic:
            count = generic.get("count")
            itemsize = generic.get("itemsize", self.default_itemsize)
            count, itemsize = check_vector(where, 1 if count is None else count, itemsize)
            if generic.get("count") is not None:
                generic["count"] = count
            if "itemsize" in generic:
                generic["itemsize"] = itemsize
        return {**out, **generic}

    def supports(self, p, params: dict | None = None) -> bool:
        """Whether the algorithm exists for ``p`` ranks and these parameters."""
        try:
            checked = self.check(p, params)
        except SpecError:
            return False
        return self.p_rule is None or bool(self.p_rule(int(p), {**self.params, **checked}))

    def generate(self, p, **params) -> Schedule:
        """The schedule over ``p`` ranks (parameters checked first)."""
        checked = self.check(p, params)
        return self.func(int(p), **checked)

    # ---- the one cost -----------------------------------------------------

    @property
    def closed_form(self) -> ClosedForm | None:
        return _CLOSED_FORMS.get((self.collective, self.name))

    @property
    def cost_formula(self) -> str:
        """The closed form's formula, or how the cost is obtained without one."""
        form = self.closed_form
        return form.formula if form else "counted from the schedule's rounds"

    def cost(self, p, params: dict | None = None, nbytes: int = 8, *, itemsize: int = 1) -> CostTerms:
        """α, β and γ coefficients of this algorithm on ``p`` ranks.

        Parameters
        ----------
        p : int
            Number of ranks.
        params : dict, optional
            Generator parameters (defaults where absent).
        nbytes : int
            Message size in bytes, in MPI's convention (:mod:`.sizes`: per
            destination for alltoall, per rank for allgather, the whole
            vector otherwise).
        itemsize : int
            Bytes per element (blocks split on element boundaries).

        Returns
        -------
        CostTerms
            ``alpha`` (latencies), ``beta`` (bytes) and ``gamma`` (bytes
            reduced) of the α-β-γ model (Chan et al. 2007) as
            :func:`.metrics.report` counts them: the closed form of
            :mod:`.costs` where one applies, else counted from the schedule.
        """
        checked = self.check(p, params)
        p = int(p)
        args = from_bytes(self.collective, p, nbytes, itemsize=itemsize)
        form = self.closed_form
        if form is not None and self.supports(p, checked):
            terms = form.terms(p, {**self.params, **checked}, args["count"], args["itemsize"])
            if terms is not None:
                return terms
        return self.counted_cost(p, checked, nbytes, itemsize=itemsize)

    def message_bound(self, p, params: dict | None = None) -> int:
        """An upper bound on the schedule's messages, without generating it.

        ``P·α`` of the closed form (α counts a rank's messages, round by
        round) at an even vector and rank order, plus ``P`` for a final
        gather; ``P²·packets`` where no closed form applies. Guards what
        cannot be built (:meth:`check_size`).
        """
        checked = self.check(p, params)
        p = int(p)
        nominal = {**self.params, **checked}
        extra = p if nominal.get("gather_root") is not None else 0
        for name in ("depth_order", "gather_root"):
            if name in nominal:
                nominal[name] = None
        packets = nominal.get("packets", 1)
        form = self.closed_form
        if form is not None and form.messages is not None:
            return p * int(form.messages(p, nominal)) + extra
        if form is not None:
            terms = form.terms(p, nominal, p * (1 << (p.bit_length() - 1)) * packets, 1)
            if terms is not None:
                return p * int(terms.alpha) + extra
        return p * p * packets + extra

    def check_size(self, p, params: dict | None = None, *, limit: int | None = None,
                   purpose: str = "a per-rank view (verify, show)") -> int:
        """Refuse, before generating, a schedule whose :meth:`message_bound`
        passes ``limit`` (default :data:`MAX_PER_RANK_MESSAGES`); returns the bound."""
        limit = MAX_PER_RANK_MESSAGES if limit is None else limit
        bound = self.message_bound(p, params)
        if bound > limit:
            raise SpecError(f"{self.label} on P={int(p)}: up to {bound} messages, expected at most {limit} "
                            f"for {purpose}: choose a smaller P")
        return bound

    def program_schedule(self, p, params: dict | None = None) -> Schedule:
        """The schedule for its op program view alone (``simulate``): no
        per-rank view is built, so a program that streams round by round
        (``schedule.pattern.streams``: circulant and array patterns) is bounded
        only by the simulator's memory estimate (``sim.engine.check_memory``,
        before any work), at any P up to :data:`MAX_P`. A program built whole
        before its first round (per-rank op lists, op tables) keeps the
        per-rank views' bound (:meth:`check_size`), checked after generating:
        patterns build nothing until first asked."""
        checked = self.check(p, params)
        schedule = self.func(int(p), **checked)
        if not schedule.pattern.streams:
            self.check_size(p, checked, purpose="an op program built whole before its first round")
        return schedule

    def counted_cost(self, p, params: dict | None = None, nbytes: int = 8, *, itemsize: int = 1) -> CostTerms:
        """The α-β-γ coefficients counted from the generated schedule's rounds."""
        checked = self.check(p, params)
        args = from_bytes(self.collective, int(p), nbytes, itemsize=itemsize)
        return report(self.func(int(p), **{**checked, **args})).cost


_LEGACY = {
    "noncommutative": "needs='associative' (True) or needs='commutative' (False)",
    "operators": "needs='commutative, idempotent'",
    "any_p": "supports='power_of_two'",
    "valid_p": "supports=<predicate (p, params) -> bool>",
    "cost": "a @closed_form in schedules/costs.py",
}


def algorithm(*, collective: str, name: str, needs, params: dict | None = None, rounds: str = "",
              paper: str = "", supports=None, supports_text: str | None = None, compare: dict | None = None,
              sweep: tuple = ({},), **legacy):
    """Decorator registering a generator under (collective, name).

    Parameters
    ----------
    needs : OperatorNeeds or str
        ``"associative"``, ``"commutative"`` or ``"commutative, idempotent"``
        (:data:`NEEDS`), for the default parameters.
    params : dict
        Name → default; every name must have a spec in :data:`.params.SPECS`.
    supports : None, "power_of_two" or callable
        Which P the algorithm exists for (beyond the parameter bounds).
    supports_text : str, optional
        How ``topocoll algorithms`` shows ``supports`` (default: the
        predicate's docstring).
    compare : dict, optional
        Parameters a comparison uses instead of the defaults.
    """
    if legacy:
        key = sorted(legacy)[0]
        raise TypeError(f"algorithm({collective}/{name}): {key}= is no longer accepted, use "
                        f"{_LEGACY.get(key, 'one of the documented arguments')}")
    if isinstance(needs, str):
        if needs not in NEEDS:
            raise TypeError(f"algorithm({collective}/{name}): needs={needs!r}, expected one of {list(NEEDS)}")
        needs = NEEDS[needs]
    params = dict(params or {})
    missing = sorted(set(params) - set(SPECS))
    if missing:
        raise TypeError(f"algorithm({collective}/{name}): parameter {missing[0]!r} has no spec in params.SPECS")
    if supports is None:
        rule, text = None, "any"
    elif isinstance(supports, str):
        rule, text = P_RULES[supports]
    else:
        rule = supports
        text = ((supports.__doc__ or "").strip().splitlines() or ["some"])[0]
    text = supports_text or text

    def wrap(func):
        itemsize = inspect.signature(func).parameters.get("itemsize")
        _REGISTRY[(collective, name)] = AlgorithmInfo(
            collective, name, func, params, needs, rounds=rounds, paper=paper, p_rule=rule, p_rule_text=text,
            compare=dict(compare or {}), sweep=tuple(sweep),
            default_itemsize=itemsize.default if itemsize is not None and isinstance(itemsize.default, int) else 8)
        return func
    return wrap


def closed_form(collective: str, name: str, formula: str, *, messages=None):
    """Decorator registering ``terms(p, params, count, itemsize)`` as the
    closed-form cost of (collective, name) (see :class:`ClosedForm`);
    ``messages(p, params)`` bounds the messages of one rank where the terms
    do not always apply or cost more than counting them."""
    def wrap(terms):
        _CLOSED_FORMS[(collective, name)] = ClosedForm(formula, terms, messages)
        return terms
    return wrap


def catalogue() -> dict[tuple[str, str], AlgorithmInfo]:
    for mod in CATALOGUE_MODULES:
        importlib.import_module(f"{__package__}.{mod}")
    return dict(sorted(_REGISTRY.items()))


def collectives() -> list[str]:
    """Every collective with at least one algorithm."""
    return sorted({c for c, _ in catalogue()})


def check_collective(collective) -> str:
    names = collectives()
    if collective not in names:
        raise SpecError(f"collective {collective!r}, expected one of {', '.join(names)}")
    return collective


def lookup(collective: str, name: str) -> AlgorithmInfo:
    cat = catalogue()
    if (collective, name) in cat:
        return cat[(collective, name)]
    check_collective(collective)
    names = sorted(n for c, n in cat if c == collective)
    raise SpecError(f"algorithm {name!r} for {collective}, expected one of {', '.join(names)}")


def generate(collective: str, name: str, p: int, **params) -> Schedule:
    """Build the schedule of ``collective``/``name`` over ``p`` ranks.

    ``p`` and every parameter are checked against their bounds first
    (:meth:`AlgorithmInfo.check`); ``count`` and ``itemsize`` are the
    vector the schedule moves (see :func:`mpi_schedule` for MPI's counts).
    """
    return lookup(collective, name).generate(p, **params)


def mpi_schedule(collective: str, name: str, p: int, count, datatype=1, **params) -> Schedule:
    """The schedule for an MPI call: ``count`` elements of ``datatype`` as the
    MPI call takes them (:mod:`.sizes`: per destination for alltoall, per rank
    for allgather, the whole vector otherwise).

    Examples
    --------
    >>> s = mpi_schedule("alltoall", "shift", 4, 2, 8)     # MPI_Alltoall(sendcount=2, MPI_DOUBLE)
    >>> s.count, s.itemsize
    (8, 8)
    """
    info = lookup(collective, name)
    p = check_procs(info.label, p)
    return info.generate(p, **schedule_args(collective, p, count, datatype), **params)
