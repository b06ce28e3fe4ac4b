"""The n-way dissemination algorithm: barrier, allreduce, and its adaption.

End et al. 2016 §III-B (``../shared/seeds/butterfly-allreduce-gaspi.txt``).
In round ``l = 1 .. k`` with ``k = ⌈log_{n+1} P⌉`` every rank ``p`` sends to
the ``n`` peers ``p + i(n+1)^(l-1)`` and receives from ``p - j(n+1)^(l-1)``
(eq. 1), ``i, j = 1 .. n``; as an allreduce it reduces the received partial
results into its own, ``S_l^p = S_{l-1}^p ∘ S_{l-1}^{r_{l,1}} ∘ … ∘
S_{l-1}^{r_{l,n}}`` (eq. 2), so that ``S_l^p`` covers the ``(n+1)^l``
left-hand neighbours ``p, p-1, …`` (eq. 4).

- :func:`dissemination` is the barrier of Hensgen et al. (1988) and Hoefler
  et al. (2006): a one-block token, "heard from" is idempotent.
- :func:`nway_dissemination_unadapted` is that pattern used as an allreduce.
  For ``P ≠ (n+1)^k`` some inputs arrive twice (eq. 3), so it is correct for
  idempotent operators only (max, min, and, or).
- :func:`nway_dissemination` is the *adapted* algorithm: the last round is
  cut so that every input is reduced exactly once (boundaries eqs. 5-7, the
  5-tuple of eq. 8, Theorem 1 and the base border ``g_B``), for every
  commutative operator; it exists only for some ``(n, P)``.

Round numbers in schedules are 0-based: schedule round ``t`` is the paper's
round ``l = t + 1``.

The schedules are *circulant*: every rank runs the operations of rank 0 with
its peers shifted by its own rank: one :class:`~topocoll.schedules.pattern.Circulant`
template (rank 0's operations, peers as offsets) gives every view, the op
program vectorised over ranks. Bruck's algorithm
(:mod:`topocoll.schedules.bruck`) uses it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from .common import ceil_log, check_count, check_p
from .ir import OperatorNeeds, Schedule, block_bounds
from .pattern import Circulant
from .registry import algorithm
from ..errors import ScheduleError, SpecError

PAPER = "End et al. 2016 §III-B, eqs. (1)-(14), Theorem 1 (butterfly-allreduce-gaspi)"
SWEEP = tuple({"n": n} for n in range(1, 7))

__all__ = [
    "Adaptation", "Circulant", "adaptation", "adaptations", "adapted_schedule", "circulant_schedule",
    "is_adaptable", "smallest_usable_n", "usable_n",
    "dissemination", "nway_dissemination", "nway_dissemination_unadapted",
]


def check_n(where: str, n, *, auto: bool = False) -> int | str:
    if auto and n == "auto":
        return n
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        expected = "a positive integer or 'auto'" if auto else "a positive integer"
        raise SpecError(f"{where}: n={n!r}, expected {expected} (messages per rank and round)")
    return n


# ---- the adaption: boundaries, the 5-tuple of eq. (8), Theorem 1 -----------

def _prefix_size(l: int, j: int, n: int) -> int:
    """Inputs in a rank's partial result at its boundary ``g_l[j]``: its own
    plus ``n Σ_{i=0}^{l-2} (n+1)^i + j (n+1)^(l-1)`` more (eqs. 5, 6);
    ``l = 0`` is the rank's own input alone."""
    return 1 if l == 0 else (j + 1) * (n + 1) ** (l - 1)


@dataclass(frozen=True)
class Adaptation:
    """How the last round of the n-way dissemination is cut (Theorem 1).

    ``(s, l_snd, l_rcv, j_snd, j_rcv)`` is the paper's 5-tuple of eq. (8),
    ``case`` the case of Theorem 1 that applies (``"base border"`` where a
    sender boundary meets ``g_B``, ``P - 1 = g^s_{l_snd}[j_snd]``; there
    ``l_rcv = j_rcv = 0``). ``l = 0`` means a rank's own input (``j = 0``).

    The realisation, from the receiving rank ``p``'s view in round ``k``:
    the ``full`` senders ``p - i(n+1)^(k-1)``, ``i = 1 .. full``, send their
    whole partial result; the next one sends its partial result up to its
    boundary ``prefix_at`` (``prefix`` inputs; 0: no message); the receiver
    recomputes its result without its partial result up to its boundary
    ``takeout_at`` (``takeout`` inputs; 0: nothing taken out).
    """

    p: int
    n: int
    k: int
    s: int
    l_snd: int
    j_snd: int
    l_rcv: int
    j_rcv: int
    case: str
    full: int
    prefix: int
    prefix_at: tuple[int, int]
    takeout: int
    takeout_at: tuple[int, int]

    @property
    def last_round_messages(self) -> int:
        return self.full + (self.prefix > 0)

    @property
    def extra_reductions(self) -> int:
        """Received partial results reduced twice to allow the take-out."""
        if not self.takeout:
            return 0
        l, j = self.takeout_at
        after = self.n * (self.k - 1) - (0 if l == 0 else (l - 1) * self.n + j)
        return max(after - 1, 0)   # the first piece after it is received into ``rest``

    def describe(self) -> str:
        tup = f"(s, l_snd, l_rcv, j_snd, j_rcv) = ({self.s}, {self.l_snd}, {self.l_rcv}, {self.j_snd}, {self.j_rcv})"
        kind = "base border g_B" if self.case == "base border" else f"Theorem 1 case {self.case}"
        return f"P={self.p}, n={self.n}, k={self.k}: {tup}, {kind}"


def _realise(p, n, k, d, s, snd, rcv, case) -> Adaptation | None:
    """The last round of one 5-tuple, as Theorem 1 prescribes."""
    (l_snd, j_snd), (l_rcv, j_rcv) = snd, rcv
    full, prefix_at, takeout_at = s - 1, snd, rcv
    prefix, takeout = _prefix_size(*snd, n), _prefix_size(*rcv, n)
    if case == "base border":
        takeout, takeout_at = 0, (0, 0)
    elif case == "2":
        prefix, prefix_at = 1, (0, 0)
    elif case == "3":
        prefix, prefix_at, takeout, takeout_at = 0, (0, 0), 0, (0, 0)
        if s == 1:          # P = (n+1)^(k-1): k - 1 rounds would do; not this k
            return None
    elif case == "4":       # send up to g_1[j_snd - 1]; j_snd = 1: the initial data
        prefix_at = (1, j_snd - 1) if j_snd > 1 else (0, 0)
        prefix, takeout, takeout_at = _prefix_size(*prefix_at, n), 0, (0, 0)
    elif case == "5":
        takeout, takeout_at = 1, (0, 0)
    if prefix and prefix == takeout:   # the sender would be p itself: that is case 3
        return None
    return Adaptation(p, n, k, s, l_snd, j_snd, l_rcv, j_rcv, case, full, prefix, prefix_at,
                      takeout, takeout_at)


_CASE_ORDER = {"base border": 0, "3": 1, "4": 2, "1": 3, "2": 4, "5": 5}


def adaptations(p: int, n: int) -> list[Adaptation]:
    """Every 5-tuple of eq. (8) and every base-border match for ``(n, P)``,
    realised by Theorem 1, cheapest first.

    Searches ``s = 1 .. n`` and all boundaries ``l = 0 .. k-1``,
    ``j = 1 .. n`` (``j = 0`` for ``l = 0``) of sender and receiver:
    ``P = g^s_{l_snd}[j_snd] - g_{l_rcv}[j_rcv]`` (eq. 8) or
    ``P - 1 = g^s_{l_snd}[j_snd]`` (base border). Cheapest: no take-out,
    then fewest last-round messages, then fewest extra reductions.

    Examples
    --------
    The paper's example (§III-B, Fig. 3): for 8 ranks and n = 2 the boundary
    ``g_1^2[1]`` of rank 2 meets the base border of rank 0, so rank 2 sends
    only ``x2 ∘ x1``:

    >>> best = adaptations(8, 2)[0]
    >>> best.describe()
    'P=8, n=2, k=2: (s, l_snd, l_rcv, j_snd, j_rcv) = (2, 1, 0, 1, 0), base border g_B'
    >>> best.full, best.prefix, best.takeout
    (1, 2, 0)
    """
    p = check_p("adaptations", p)
    n = check_n("adaptations", n)
    if p == 1:
        return []
    k = ceil_log(p, n + 1)
    d = (n + 1) ** (k - 1)
    bounds = [(0, 0)] + [(l, j) for l in range(1, k) for j in range(1, n + 1)]
    size = {b: _prefix_size(*b, n) for b in bounds}
    by_size = {v: b for b, v in size.items()}
    found = []
    for s in range(1, n + 1):
        snd = by_size.get(p - s * d)                    # base border: P - 1 = g^s[..]
        if snd is not None:
            found.append(_realise(p, n, k, d, s, snd, (0, 0), "base border"))
        for rcv in bounds:                               # eq. (8)
            snd = by_size.get(p - s * d + size[rcv])
            if snd is None:
                continue
            (l_snd, _), (l_rcv, _) = snd, rcv
            if l_rcv > 0:
                case = "1" if l_snd > 0 else "2"
            else:
                case = "3" if l_snd == 0 else "4" if l_snd == 1 else "5"
            found.append(_realise(p, n, k, d, s, snd, rcv, case))
    found = [a for a in found if a is not None]
    found.sort(key=lambda a: (a.takeout > 0, a.last_round_messages, a.extra_reductions,
                              _CASE_ORDER[a.case], a.s, a.l_snd, a.j_snd, a.l_rcv, a.j_rcv))
    return found


def is_adaptable(p: int, n: int) -> bool:
    """Whether the n-way dissemination allreduce can be adapted for ``(n, P)``."""
    return p == 1 or bool(adaptations(p, n))


def usable_n(p: int, *, limit: int | None = None) -> list[int]:
    """The ``n`` (up to ``limit``, default ``max(P - 1, 1)``) for which the
    adaption exists; ``n ≥ P - 1`` always works (one round)."""
    p = check_p("usable_n", p)
    top = max(p - 1, 1) if limit is None else limit
    return [n for n in range(1, top + 1) if is_adaptable(p, n)]


def adaptation(p: int, n: int) -> Adaptation | None:
    """The cheapest adaption for ``(n, P)`` (None for P = 1, nothing to cut).

    Raises
    ------
    ScheduleError
        If no 5-tuple and no base border exists; the message names the
        usable ``n`` nearest below and above.
    """
    found = adaptations(p, n)
    if found or p == 1:
        return found[0] if found else None
    below = next((m for m in range(n - 1, 0, -1) if is_adaptable(p, m)), None)
    above = next(m for m in range(n + 1, max(p, n + 2)) if is_adaptable(p, m))
    near = ", ".join(f"n={m}" for m in (below, above) if m is not None)
    raise ScheduleError(
        f"nway_dissemination: n={n} cannot be adapted for p={p} (no 5-tuple of eq. (8), no base border); "
        f"usable near it: {near}, or n='auto'")


def smallest_usable_n(p: int) -> int:
    """``n="auto"``: the smallest n with an adaption, as End et al. choose it (§IV)."""
    return next(n for n in range(1, max(p, 2)) if is_adaptable(p, n))


# ---- templates ---------------------------------------------------------------

def _dissemination_needs(p: int, n: int) -> OperatorNeeds:
    """Exactly what :func:`_dissemination_template` needs of the operator.

    After the rounds, rank r holds the contributions of ``r - Σ_t o_t`` for
    every choice of one offset ``o_t`` per round (0 or one of the round's
    distinct offsets), counted with multiplicity: ``Π_t (1 + |offsets_t|)``
    contributions, and every residue mod P at least once (the schedule is a
    correct allreduce for idempotent operators). So no contribution arrives
    twice exactly when that product is P (P = (n+1)^k, but also P = 6 with
    n = 2, whose wrapped offsets 3 and 6 ≡ 0 fall away), and then a
    commutative operator suffices; elsewhere it must be idempotent too
    (Hoefler et al. 2006, End et al. 2016 §III-B). One rank holds everything
    at P = 1: any operator will do. O(rounds · n), stopping once the product
    passes P.
    """
    count = 1
    for t in range(ceil_log(p, n + 1)):
        dist = (n + 1) ** t
        count *= 1 + len({i * dist % p for i in range(1, n + 1)} - {0})
        if count > p:
            break
    return OperatorNeeds(commutative=p > 1, idempotent=count != p)


def _dissemination_template(p: int, n: int) -> Circulant:
    """Hoefler's n-way dissemination, eqs. (1), (2): every round in full.
    Offsets equal modulo P (only where ``n ≥ P``) are sent once; none is 0."""
    c = Circulant()
    for t in range(ceil_log(p, n + 1)):
        dist = (n + 1) ** t
        offsets = list(dict.fromkeys(i * dist % p for i in range(1, n + 1)))
        offsets = [o for o in offsets if o]
        for o in offsets:
            c.send(t, o)
        for j, o in enumerate(offsets, 1):
            c.recv(t, o, f"r{j}")
        for j in range(1, len(offsets) + 1):
            c.reduce(t, dst="data", src=f"r{j}")
    return c


def _adapted_template(a: Adaptation) -> Circulant:
    """The adapted n-way dissemination (Theorem 1) for one 5-tuple.

    ``data`` accumulates ``S_l`` (eq. 2). The sender's partial result up to
    its boundary is kept in ``part`` in the round it is created (§III-B,
    "store this partial result in the round it is created"); the partial
    results after the receiver's boundary are accumulated separately in
    ``rest``, so the final result is recomputed without the taken-out part
    (no inverse of ∘ is assumed). With a take-out, ``data`` is overwritten
    by ``rest`` at the end, so a piece is reduced into ``data`` only while
    ``data`` is still read afterwards (sent, or kept in ``part``): no
    reduction is dead.
    """
    n, k = a.n, a.k
    d = (n + 1) ** (k - 1)
    c = Circulant()
    last_full = n * (k - 1)                       # pieces received before round k
    snd_pos = 0 if a.prefix_at[0] == 0 else (a.prefix_at[0] - 1) * n + a.prefix_at[1]
    rcv_pos = 0 if a.takeout_at[0] == 0 else (a.takeout_at[0] - 1) * n + a.takeout_at[1]
    keep_part = a.prefix > 0 and snd_pos < last_full
    data_sent_last = a.full > 0 or (a.prefix > 0 and not keep_part)
    # the last piece reduced into ``data``: all of them, unless a take-out
    # rebuilds the result in ``rest`` and ``data`` is read no more
    data_upto = last_full if not a.takeout or data_sent_last else \
        max(n * (k - 2), snd_pos if keep_part else 0)
    if keep_part and snd_pos == 0:
        c.copy(0, dst="part", src="data")
    piece = 0
    for t in range(k - 1):
        dist = (n + 1) ** t
        for j in range(1, n + 1):
            c.send(t, j * dist)
        bufs = []
        for j in range(1, n + 1):
            piece += 1
            bufs.append("rest" if a.takeout and piece == rcv_pos + 1 else f"r{j}")
            c.recv(t, j * dist, bufs[-1])
        for j, buf in enumerate(bufs, 1):
            q = piece - n + j
            if q <= data_upto:
                c.reduce(t, dst="data", src=buf)
            if a.takeout and q > rcv_pos + 1:
                c.reduce(t, dst="rest", src=buf)
            if keep_part and q == snd_pos:
                c.copy(t, dst="part", src="data")
    t = k - 1
    for i in range(1, a.full + 1):
        c.send(t, i * d)
    if a.prefix:
        c.send(t, (a.full + 1) * d, "part" if keep_part else "data")
    bufs = []
    for i in range(1, a.last_round_messages + 1):
        piece += 1
        bufs.append("rest" if a.takeout and piece == rcv_pos + 1 else f"r{i}")
        c.recv(t, i * d, bufs[-1])
    if a.takeout:
        for buf in bufs:
            if buf != "rest":
                c.reduce(t, dst="rest", src=buf)
        c.copy(t, dst="data", src="rest")
    else:
        for buf in bufs:
            c.reduce(t, dst="data", src=buf)
    return c


def circulant_schedule(collective, name, p, count, itemsize, params, needs, template) -> Schedule:
    """A one-block schedule whose every view comes from one rank's ``template``."""
    return Schedule(collective, name, p, count, itemsize, block_bounds(count, 1), params, needs,
                    template.pattern(p))


# ---- generators -------------------------------------------------------------

def _adapted_supports(p: int, params: dict) -> bool:
    n = params.get("n", 1)
    return n == "auto" or is_adaptable(p, n)


@algorithm(collective="allreduce", name="nway_dissemination", params={"n": 1}, needs="commutative",
           rounds="⌈log_{n+1} P⌉", paper=PAPER, sweep=SWEEP, supports=_adapted_supports,
           supports_text="(n, P) with an adaption (Theorem 1)", compare={"n": "auto"})
def nway_dissemination(p: int, *, n: int | str = 1, count: int = 1, itemsize: int = 8) -> Schedule:
    """Allreduce by the adapted n-way dissemination algorithm.

    Rounds ``1 .. k-1`` are Hoefler's n-way dissemination (eqs. 1, 2); the
    last round is cut by the 5-tuple ``(s, l_snd, l_rcv, j_snd, j_rcv)`` of
    eq. (8) (or the base border ``g_B``) as Theorem 1 prescribes, so every
    input enters every result exactly once, for any commutative operator.

    Parameters
    ----------
    p : int
        Number of ranks ``P``.
    n : int or "auto"
        Messages per rank and round. ``"auto"`` takes the smallest ``n`` for
        which the adaption exists, as End et al. do (§IV).
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Returns
    -------
    Schedule
        ``k = ⌈log_{n+1} P⌉`` rounds; every rank sends ``n`` messages in
        rounds ``1 .. k-1`` and ``s`` or ``s - 1`` in round ``k``.

    Raises
    ------
    ScheduleError
        If ``(n, P)`` has no adaption; the message names the usable ``n``
        nearest to it.

    Notes
    -----
    Buffers: ``data`` holds ``S_l``; ``part`` keeps the partial result a
    rank sends in the last round, stored in the round it is created;
    ``rest`` accumulates the partial results after the receiver's boundary,
    so "taking out" recomputes the result without them (no inverse).
    α-β-γ cost with ``m = count·itemsize`` bytes: ``(k-1)·n(α + mβ + mγ)``
    plus ``s(α + mβ + mγ)`` for the last round (plus ``m γ`` per received
    piece after the receiver's boundary when it takes a part out).

    References
    ----------
    V. End, R. Yahyapour, C. Simmendinger, T. Alrutz, "Adapted n-way
    dissemination and Bruck's algorithm for butterfly-like allreduce in
    GASPI", IJASM 9(3&4), 2016, §III-B (seed
    ``butterfly-allreduce-gaspi.txt``). T. Hoefler, T. Mehlan, F. Mietke,
    W. Rehm, "Fostering the n-way dissemination algorithm", 2006.

    Examples
    --------
    Table I's 8 ranks with n = 2: the unadapted algorithm counts ``x0`` twice
    on rank 0 (eq. 3); the adaption does not.

    >>> from topocoll.verify import verify
    >>> verify(nway_dissemination(8, n=2), op="sum")
    'sum'
    >>> from topocoll.errors import VerificationError
    >>> try:
    ...     verify(nway_dissemination_unadapted(8, n=2), op="sum")
    ... except VerificationError as err:
    ...     print(str(err).split(": ", 1)[1])
    rank 0 data[0] counts contribution x0 twice: found x0∘x0..x7, expected x0..x7 once each
    >>> nway_dissemination(13, n="auto").params
    {'n': 2}
    """
    p = check_p("nway_dissemination", p)
    n = check_n("nway_dissemination", n, auto=True)
    count, itemsize = check_count("nway_dissemination", count, itemsize)
    if n == "auto":
        n = smallest_usable_n(p)
    a = adaptation(p, n)
    template = Circulant() if a is None else _adapted_template(a)
    return circulant_schedule("allreduce", "nway_dissemination", p, count, itemsize, {"n": n},
                     OperatorNeeds(commutative=p > 1), template)


@algorithm(collective="allreduce", name="nway_dissemination_unadapted", params={"n": 1},
           needs="commutative, idempotent", rounds="⌈log_{n+1} P⌉",
           paper="End et al. 2016 §III-B, eqs. (1)-(3); Hoefler et al. 2006 [16] (butterfly-allreduce-gaspi)",
           sweep=SWEEP)
def nway_dissemination_unadapted(p: int, *, n: int = 1, count: int = 1, itemsize: int = 8) -> Schedule:
    """Allreduce by Hoefler's n-way dissemination, unadapted (idempotent ∘ only).

    Every round in full (eqs. 1, 2): for ``P ≠ (n+1)^k`` inputs are reduced
    more than once (eq. 3), which max, min, and, or tolerate and sum does not.

    Parameters
    ----------
    p : int
        Number of ranks.
    n : int
        Messages per rank and round.
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Notes
    -----
    ``⌈log_{n+1} P⌉`` rounds of ``n(α + mβ + mγ)`` for ``m = count·itemsize``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> verify(nway_dissemination_unadapted(5, n=2))
    'max'
    """
    p = check_p("nway_dissemination_unadapted", p)
    n = check_n("nway_dissemination_unadapted", n)
    count, itemsize = check_count("nway_dissemination_unadapted", count, itemsize)
    return circulant_schedule("allreduce", "nway_dissemination_unadapted", p, count, itemsize, {"n": n},
                     _dissemination_needs(p, n), _dissemination_template(p, n))


@algorithm(collective="barrier", name="dissemination", params={"n": 1}, needs="commutative, idempotent",
           rounds="⌈log_{n+1} P⌉", paper="End et al. 2016 §III-B [7], [16] (butterfly-allreduce-gaspi)",
           sweep=SWEEP)
def dissemination(p: int, *, n: int = 1, count: int = 1, itemsize: int = 0) -> Schedule:
    """Barrier by the n-way dissemination algorithm (Hensgen et al. 1988 for
    n = 1; Hoefler et al. 2006).

    In round ``l`` rank ``p`` signals ``p + i(n+1)^(l-1)`` and waits for
    ``p - j(n+1)^(l-1)`` (eq. 1); after ``⌈log_{n+1} P⌉`` rounds every rank
    has heard, transitively, from every rank. The token is one block of
    ``count`` elements of ``itemsize`` bytes (default: 0 bytes); "heard from"
    is idempotent, so the verifier checks it as a max-reduction.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> from topocoll.schedules import report
    >>> verify(dissemination(9, n=2), op="max"), report(dissemination(9, n=2)).rounds
    ('max', 2)
    """
    p = check_p("dissemination", p)
    n = check_n("dissemination", n)
    count, itemsize = check_count("dissemination", count, itemsize)
    return circulant_schedule("barrier", "dissemination", p, count, itemsize, {"n": n},
                     _dissemination_needs(p, n), _dissemination_template(p, n))


def adapted_schedule(a: Adaptation, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """The adapted allreduce for one given 5-tuple (any of :func:`adaptations`,
    not only the cheapest): to check every case of Theorem 1."""
    count, itemsize = check_count("adapted_schedule", count, itemsize)
    return circulant_schedule("allreduce", "nway_dissemination", a.p, count, itemsize, {"n": a.n},
                     OperatorNeeds(commutative=a.p > 1), _adapted_template(a))

