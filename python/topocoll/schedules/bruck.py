"""Bruck's n-port global combine (allreduce), for every (n, P).

End et al. 2016 §III-C (``../shared/seeds/butterfly-allreduce-gaspi.txt``),
after J. Bruck and C.-T. Ho, "Efficient global combine operations in
multi-port message-passing systems", Parallel Processing Letters 3(4), 1993.

Write ``P - 1 = (α_{k-1} … α_1 α_0)`` in base ``n + 1`` (eq. 15),
``k = ⌈log_{n+1} P⌉``. Every rank ``p`` keeps two partial results:
``S_l^p[0]``, the reduction of everything it has received (without its own
input), and ``S_l^p[1] = x_p ∘ S_l^p[0]``; ``c`` counts the inputs in
``S[0]`` (``c = 0`` before round 1). In round ``l`` with digit
``α = α_{k-l}``:

- ``S[1]`` goes to the ``α`` ranks ``p - i(c+1)``, ``i = 1 .. α``
  (eqs. 16, 17, 20), and ``S[0]`` to the ``n - α`` ranks
  ``p - c - α(c+1) - (m-1)c``, ``m = 1 .. n - α`` (eq. 21; none while
  ``S[0]`` is empty, ``c = 0``);
- ``p`` receives from ``p + i(c+1)`` and ``p + c + α(c+1) + (m-1)c``
  (eqs. 22, 23) the pieces that cover, in this order, the next
  ``α(c+1) + (n-α)c`` inputs to its right, and appends them to ``S[0]``
  (eqs. 18, 19);
- ``c ← (n+1)c + α``, the value of the leading ``l`` digits of ``P - 1``.

After round ``k``, ``c = P - 1`` and ``x_p ∘ S[0]`` is the result (eq. 24).
Round numbers in the schedule are 0-based (schedule round ``t`` is the
paper's ``l = t + 1``).
"""

from __future__ import annotations

from .common import check_count, check_p
from .dissemination import Circulant, check_n, circulant_schedule
from .ir import LEFT, RIGHT, OperatorNeeds, Schedule
from .registry import algorithm

PAPER = "End et al. 2016 §III-C, eqs. (15)-(24); Bruck & Ho 1993 (butterfly-allreduce-gaspi)"

__all__ = ["bruck", "bruck_digits", "bruck_peers"]


def bruck_digits(p: int, n: int) -> list[int]:
    """The base-(n+1) digits of ``P - 1``, most significant first (eq. 15).

    Examples
    --------
    >>> bruck_digits(8, 2)   # 7 = (21)_3
    [2, 1]
    """
    digits, rest = [], p - 1
    while rest:
        rest, digit = divmod(rest, n + 1)
        digits.append(digit)
    return digits[::-1]


def bruck_peers(p: int, n: int) -> list[tuple[list[int], list[int]]]:
    """Per round, the offsets ``o`` of the pieces a rank receives: from
    ``rank + o``, ``S[1]`` pieces first, then ``S[0]`` pieces; it sends the
    same pieces of its own to ``rank - o``.

    Returns a list of ``(s1_offsets, s0_offsets)``, one per round.

    Examples
    --------
    The paper's example, P = 8 and n = 2: rank 0 receives ``S[1]`` from 1
    and 2, then ``S[1]`` from 3 and ``S[0]`` from 5 (eqs. 16-23).

    >>> bruck_peers(8, 2)
    [([1, 2], []), ([3], [5])]
    """
    out, c = [], 0
    for alpha in bruck_digits(p, n):
        s1 = [i * (c + 1) for i in range(1, alpha + 1)]
        s0 = [c + alpha * (c + 1) + (m - 1) * c for m in range(1, n - alpha + 1)] if c else []
        out.append((s1, s0))
        c = (n + 1) * c + alpha
    return out


def _bruck_template(p: int, n: int) -> Circulant:
    """One rank's operations. Buffers: ``data`` holds ``x_p`` until the end,
    ``acc0`` is ``S[0]``, ``s1`` is ``S[1] = x_p ∘ S[0]``, formed only when a
    next round sends it; ``r1 .. rn`` receive."""
    tpl = Circulant()
    plan = bruck_peers(p, n)
    for t, (s1, s0) in enumerate(plan):
        for o in s1:
            tpl.send(t, -o, "data" if t == 0 else "s1")
        for o in s0:
            tpl.send(t, -o, "acc0")
        bufs = []
        for j, o in enumerate(s1 + s0, 1):
            bufs.append("acc0" if t == 0 and j == 1 else f"r{j}")
            tpl.recv(t, -o, bufs[-1])
        for buf in bufs:
            if buf != "acc0":
                tpl.reduce(t, dst="acc0", src=buf, side=RIGHT)      # eq. (18)
        if t + 1 < len(plan) and plan[t + 1][0]:
            tpl.copy(t, dst="s1", src="acc0")                       # eq. (19)
            tpl.reduce(t, dst="s1", src="data", side=LEFT)
    if plan:
        tpl.reduce(len(plan) - 1, dst="data", src="acc0", side=RIGHT)  # eq. (24)
    return tpl


@algorithm(collective="allreduce", name="bruck", params={"n": 1}, needs="commutative", rounds="⌈log_{n+1} P⌉",
           paper=PAPER, sweep=tuple({"n": n} for n in range(1, 7)))
def bruck(p: int, *, n: int = 1, count: int = 1, itemsize: int = 8) -> Schedule:
    """Allreduce by Bruck and Ho's n-port global combine, every (n, P).

    Parameters
    ----------
    p : int
        Number of ranks ``P``.
    n : int
        Ports: messages a rank sends (and receives) per round.
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Returns
    -------
    Schedule
        ``k = ⌈log_{n+1} P⌉`` rounds; every rank sends ``α_{k-1}`` messages
        in round 1 and ``n`` in every later round, and receives as many.

    Notes
    -----
    The destination ranks of a round split into the ``α`` that receive
    ``S[1]`` and the ``n - α`` that receive ``S[0]``, with ``α`` the digits
    of ``P - 1`` in base ``n + 1``, most significant first, and the counter
    ``c`` (§III-C). Every input is reduced exactly once, for any commutative
    operator; the pieces of a rank's result wrap around rank ``P - 1``, so
    the order is not the rank order. α-β-γ cost for ``m = count·itemsize``
    bytes: ``α_{k-1}(α + mβ) + (k-1)·n(α + mβ + mγ)`` plus about ``2mγ`` per
    round to form ``S[1]`` and the result.

    References
    ----------
    J. Bruck, C.-T. Ho, "Efficient global combine operations in multi-port
    message-passing systems", Parallel Processing Letters 3(4), 1993. V. End
    et al., IJASM 9(3&4), 2016, §III-C (seed ``butterfly-allreduce-gaspi.txt``).

    Examples
    --------
    The paper's example, P = 8 and n = 2 (Fig. 4, eqs. 15-24): rank 0 sends
    ``x0`` to 7 and 6, then ``S[1]`` to 5 and ``S[0]`` to 3.

    >>> sched = bruck(8, n=2)
    >>> [(op.round, op.peer, op.buf) for op in sched.ops[0] if op.kind == "send"]
    [(0, 7, 'data'), (0, 6, 'data'), (1, 5, 's1'), (1, 3, 'acc0')]
    >>> from topocoll.verify import verify
    >>> verify(sched)
    'sum'
    """
    p = check_p("bruck", p)
    n = check_n("bruck", n)
    count, itemsize = check_count("bruck", count, itemsize)
    return circulant_schedule("allreduce", "bruck", p, count, itemsize, {"n": n},
                     OperatorNeeds(commutative=p > 1), _bruck_template(p, n))
