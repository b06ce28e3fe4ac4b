"""Closed-form α-β-γ costs, where the papers give them.

The α-β-γ model is the one :func:`.metrics.report` counts (Chan et al.,
"Collective communication: theory, practice, and experience", CCPE 2007): a
round costs ``max_msgs·α + max_bytes·β + max_reduced·γ``, each maximum over
ranks, a schedule the sum of its rounds. Each function below returns those
coefficients for one algorithm without generating its schedule, or ``None``
where its formula does not hold exactly (uneven blocks, an extra gather);
:meth:`AlgorithmInfo.cost <.registry.AlgorithmInfo.cost>` then counts them
from the schedule's rounds. ``tests/test_registry.py`` holds every formula
equal to the counted terms at several P.

Notation: ``n = count·itemsize`` bytes of the vector, ``b = ⌈count/P⌉·itemsize``
the largest of ``P`` blocks, ``m`` bytes per destination (all-to-all),
``k = ⌈log2 P⌉``.

Sources: End et al. 2016 §I, §III (binomial tree, pairwise exchange,
n-way dissemination, Bruck; ``butterfly-allreduce-gaspi.txt``); Thakur,
Rabenseifner & Gropp 2005 (ring, Rabenseifner); Kumar & Heidelberger 2008
(the all-to-all crossbar forms of :func:`.alltoall_cost.crossbar_cost`);
Cavin & Demengeon 2012 Table 1 (:func:`.compositing.table1_costs`).
"""

from __future__ import annotations

from .alltoall_cost import crossbar_cost
from .bruck import bruck_peers
from .dissemination import smallest_usable_n
from .common import ceil_log, floor_log2
from .compositing import check_k, table1_costs
from .metrics import CostTerms
from .registry import closed_form

ZERO = CostTerms(0.0, 0.0, 0.0)


def _cost(a, b, g=0.0) -> CostTerms:
    return CostTerms(float(a), float(b), float(g))


def _largest_block(count: int, itemsize: int, blocks: int) -> int:
    return -(-count // blocks) * itemsize


# ---- trees and butterflies (End et al. 2016 §I, §III-A) ----------------------

@closed_form("allreduce", "binomial", "2⌈log2 P⌉α + 2⌈log2 P⌉nβ + ⌈log2 P⌉nγ")
def _binomial_allreduce(p, params, count, itemsize):
    k, n = ceil_log(p, 2), count * itemsize
    return _cost(2 * k, 2 * k * n, k * n)


@closed_form("reduce", "binomial", "⌈log2 P⌉(α + nβ + nγ), one more α + nβ if order=rank and root ≠ 0")
def _binomial_reduce(p, params, count, itemsize):
    k, n = ceil_log(p, 2), count * itemsize
    extra = int(params["order"] == "rank" and params["root"] != 0)
    return _cost(k + extra, (k + extra) * n, k * n)


@closed_form("bcast", "binomial", "⌈log2 P⌉(α + nβ)")
def _binomial_bcast(p, params, count, itemsize):
    k = ceil_log(p, 2)
    return _cost(k, k * count * itemsize)


def _fold_rounds(p):
    """Rounds of the pairwise-exchange fold: log2 P for P = 2^k, else ⌊log2 P⌋ + 2."""
    return 0 if p == 1 else floor_log2(p) + (0 if p & (p - 1) == 0 else 2)


@closed_form("allreduce", "pairwise_exchange",
             "P = 2^k: log2 P·(α + nβ + nγ); else (⌊log2 P⌋ + 2)(α + nβ) + (⌊log2 P⌋ + 1)nγ")
def _pairwise_exchange(p, params, count, itemsize):
    n, r = count * itemsize, _fold_rounds(p)
    reductions = r if p & (p - 1) == 0 else r - 1
    return _cost(r, r * n, reductions * n)


@closed_form("barrier", "butterfly", "P = 2^k: log2 P·α; else (⌊log2 P⌋ + 2)α")
def _butterfly_barrier(p, params, count, itemsize):
    r, n = _fold_rounds(p), count * itemsize
    return _cost(r, r * n, (r if p & (p - 1) == 0 else r - 1) * n)


@closed_form("allreduce", "butterfly_virtual",
             "P = 2^k: log2 P·(α + nβ + nγ); else ⌈log2 P⌉·(2α + 2nβ + 2nγ) − nγ")
def _butterfly_virtual(p, params, count, itemsize):
    # the virtual roles skip their last reduction, whose result nothing reads
    k, n = ceil_log(p, 2), count * itemsize
    f = 1 if p & (p - 1) == 0 else 2
    return _cost(f * k, f * k * n, (f * k - (f - 1)) * n)


# ---- n-way dissemination and Bruck (End et al. 2016 §III-B, §III-C) -----------

def _dissemination_messages(p: int, n: int) -> int:
    """Messages a rank sends: in round l to ``p + i(n+1)^(l-1)``, i = 1..n
    (eq. 1), skipping offsets that wrap onto itself or onto an earlier peer."""
    return sum(len({i * (n + 1) ** t % p for i in range(1, n + 1)} - {0}) for t in range(ceil_log(p, n + 1)))


@closed_form("barrier", "dissemination", "⌈log_{n+1} P⌉·n·α (fewer where i(n+1)^l wraps onto a rank)")
def _dissemination_barrier(p, params, count, itemsize):
    a = _dissemination_messages(p, params["n"])
    return _cost(a, a * count * itemsize, a * count * itemsize)


@closed_form("allreduce", "nway_dissemination_unadapted",
             "⌈log_{n+1} P⌉·n(α + mβ + mγ) (fewer where i(n+1)^l wraps onto a rank)")
def _nway_unadapted(p, params, count, itemsize):
    a, m = _dissemination_messages(p, params["n"]), count * itemsize
    return _cost(a, a * m, a * m)


def _nway_messages(p, params):
    n = smallest_usable_n(p) if params["n"] == "auto" else params["n"]
    return _dissemination_messages(p, n)


@closed_form("allreduce", "nway_dissemination",
             "P = (n+1)^k: k·n(α + mβ + mγ); else the last round is cut (eq. 8): counted",
             messages=_nway_messages)
def _nway_adapted(p, params, count, itemsize):
    n = params["n"]
    if not isinstance(n, int) or (n + 1) ** ceil_log(p, n + 1) != p:
        return None
    return _nway_unadapted(p, params, count, itemsize)


@closed_form("allreduce", "bruck",
             "Σ over the base-(n+1) digits α_l of P − 1 (eq. 15): round l sends n messages (α_{k−1} in "
             "round 1) of m bytes; ≈ ⌈log_{n+1} P⌉·n(α + mβ + mγ)")
def _bruck_allreduce(p, params, count, itemsize):
    plan = bruck_peers(p, params["n"])
    m = count * itemsize
    a = g = 0
    for t, (s1, s0) in enumerate(plan):
        received = len(s1) + len(s0)
        a += received
        reductions = received - (t == 0)                  # eq. (18): round 1 receives into S[0]
        reductions += t + 1 < len(plan) and bool(plan[t + 1][0])   # eq. (19): S[1] = x ∘ S[0]
        reductions += t == len(plan) - 1                   # eq. (24)
        g += reductions
    return _cost(a, a * m, g * m)


# ---- ring and Rabenseifner (Thakur, Rabenseifner & Gropp 2005) ---------------

@closed_form("allreduce", "ring", "2(P − 1)α + 2(P − 1)bβ + (P − 1)bγ, b = ⌈n/P⌉ (= n/P for even blocks)")
def _ring_allreduce(p, params, count, itemsize):
    b = _largest_block(count, itemsize, p)
    return _cost(2 * (p - 1), 2 * (p - 1) * b, (p - 1) * b)


@closed_form("reduce_scatter", "ring", "(P − 1)(α + bβ + bγ), b = ⌈n/P⌉")
def _ring_reduce_scatter(p, params, count, itemsize):
    b = _largest_block(count, itemsize, p)
    return _cost(p - 1, (p - 1) * b, (p - 1) * b)


@closed_form("allgather", "ring", "(P − 1)(α + bβ), b = ⌈n/P⌉ (n: the gathered vector)")
def _ring_allgather(p, params, count, itemsize):
    b = _largest_block(count, itemsize, p)
    return _cost(p - 1, (p - 1) * b)


@closed_form("allgather", "recursive_doubling",
             "log2 P·α + ((P − 1)/P)nβ (n: the gathered vector, a multiple of P; P = 2^k)")
def _recursive_doubling_allgather(p, params, count, itemsize):
    # step j moves the aligned group of 2^j blocks; the largest is [0, 2^j)
    # (the first count mod P blocks hold one element more)
    base, extra = divmod(count, p)
    k = floor_log2(p)
    return _cost(k, sum((base << j) + min(1 << j, extra) for j in range(k)) * itemsize)


@closed_form("allgather", "neighbor_exchange",
             "(P/2)α + ((P − 1)/P)nβ (n: the gathered vector, a multiple of P; P even)")
def _neighbor_exchange_allgather(p, params, count, itemsize):
    # step 0 moves one block (the largest: block 0), steps 1 .. P/2 - 1 a pair
    # each (the largest: blocks 0 and 1, received by some rank in every step)
    base, extra = divmod(count, p)
    return _cost(p // 2, (base + min(1, extra) + (p // 2 - 1) * (2 * base + min(2, extra))) * itemsize)


@closed_form("allreduce", "rabenseifner",
             "P' = 2^⌊log2 P⌋, f = [P ≠ P']: (2 log2 P' + 2f)α + (2(P' − 1)/P' + 2f)nβ + ((P' − 1)/P' + f)nγ "
             "(n a multiple of P')")
def _rabenseifner(p, params, count, itemsize):
    q = 1 << floor_log2(p)
    if count % q:
        return None
    f, n, log = int(p != q), count * itemsize, floor_log2(p)
    return _cost(2 * log + 2 * f, 2 * (q - 1) * n // q + 2 * f * n, (q - 1) * n // q + f * n)


# ---- all-to-all on a crossbar (Kumar & Heidelberger 2008; alltoall_cost) -------

def _alltoall(name, formula, messages=None):
    @closed_form("alltoall", name, formula, messages=messages)
    def terms(p, params, count, itemsize):
        if count % p:
            return None
        if name == "randomized" and (params["packets"] != 1 or params["burst"] not in (None, 1)):
            return None
        keep = {"seed", "k", "shape", "linear", "dims", "d"}
        return crossbar_cost(name, p, count // p * itemsize, **{k: v for k, v in params.items() if k in keep})
    return terms


_alltoall("direct", "P·α + P(P−1)·m·β (round j funnels P − 1 messages into rank j)")
_alltoall("shift", "(P−1)(α + m·β)")
_alltoall("pairwise_exchange", "(P−1)(α + m·β)")
_alltoall("randomized", "(P−1)α + m·β·Σ_t max_j |{i: π_i(t) = j}| (loads counted from the seeded permutations)",
          messages=lambda p, params: (p - 1) * params["packets"])
_alltoall("bruck", "Σ_rounds Σ_messages (α + |J|·m·β); P = (k+1)^n: n·k·(α + (P/(k+1))·m·β)")
_alltoall("two_phase_schedule", "(P−1)·α + ((L−1)·P/L + P−L)·m·β")
_alltoall("virtual_mesh", "Σ_d (P_d − 1)·(α + (P/P_d)·m·β)")


# ---- image compositing: Table 1 of Cavin & Demengeon 2012 -----------------------

def _compositing(name, formula, radices):
    """Table 1's α and β where they are exact (even blocks, rank order, no gather). γ:
    round ``i`` of radix ``k_i`` composites ``k_i − 1`` pieces of
    ``n/(k_1···k_i)`` bytes, and for ``k_i ≥ 3`` the out-of-order rule
    (radix-k §3.1) composites one more in the step where the runs join."""
    @closed_form("reduce_scatter", name, formula)
    def terms(p, params, count, itemsize):
        if count % p or params["gather_root"] is not None or params["depth_order"] is not None:
            return None             # a depth order changes which runs join, and when
        if p == 1:
            return ZERO
        n = count * itemsize
        row = table1_costs(p, n, k=params.get("k"))[name]
        g, share = 0, n
        for k in radices(p, params):
            share //= k
            g += (k - 1 + (k >= 3)) * share
        return _cost(row.latency, row.bandwidth, g)
    return terms


_compositing("direct_send", "Table 1: α(P−1) + βn(P−1)/P; γn(P−1)/P + γn/P (P ≥ 3, the runs' join)",
             lambda p, params: [p])
_compositing("shift_based", "Table 1: α(P−1) + βn(P−1)/P; γn(P−1)/P + γn/P (P ≥ 3, the runs' join)",
             lambda p, params: [p])
_compositing("binary_swap", "Table 1: α·log2 P + βn(P−1)/P + γn(P−1)/P",
             lambda p, params: [2] * floor_log2(p))
_compositing("radix_k", "Table 1 (corrected): α·Σ(k_i − 1) + βn(P−1)/P; γ·Σ_i (k_i − 1 + [k_i ≥ 3])·n/(k_1···k_i)",
             lambda p, params: check_k(p, params["k"]))


@closed_form("reduce_scatter", "parallel_pipeline",
             "Table 1: α(P−1) + βn(P−1)/P on bidirectional ring links; the single-port model charges up to "
             "two messages in the stages past P/2: counted")
def _parallel_pipeline(p, params, count, itemsize):
    return None


@closed_form("reduce_scatter", "two_three_swap",
             "Table 1 (Yu et al.'s 2-3 swap): 4α·log2 P + 1.3βn(P−1)/P is a bound for another algorithm; "
             "ours is counted")
def _two_three_swap(p, params, count, itemsize):
    return None
