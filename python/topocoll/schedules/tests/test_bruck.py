"""Bruck's n-port global combine (End et al. 2016 §III-C, Bruck & Ho 1993):
every (n, P) verified, the paper's worked example P = 8, n = 2 (eqs. 15-24),
closed forms at P up to 4096."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import SpecError, VerificationError
from topocoll.schedules import bruck as module
from topocoll.schedules import generate, report
from topocoll.schedules.bruck import bruck, bruck_digits
from topocoll.verify import check_against_reference, integer_inputs, verify
from topocoll.verify.replay import replay
from topocoll.verify.testing import assert_views_equal, positive_inputs, rounds_needed, shifted_product

MAX_P = 130
NS = range(1, 7)
# `make test` sweeps these P (all up to 12, powers of n + 1 and of two, primes, P
# next to them); `make test-all` adds every other P up to MAX_P (marker `exhaustive`)
SAMPLE_P = {*range(1, 13), 16, 17, 25, 27, 31, 32, 33, 36, 49, 63, 64, 65, 81, 97, 125, 127, 128, 129, 130}


def split_ps(ps):
    """``ps`` as two parameters: the sample ``make test`` runs and the rest."""
    ps = list(ps)
    return [pytest.param([p for p in ps if p in SAMPLE_P], id="sample"),
            pytest.param([p for p in ps if p not in SAMPLE_P], id="rest", marks=pytest.mark.exhaustive)]


class Ordered:
    """Values are the tuple of contributing ranks in the order reduced."""

    def initial(self, rank, block):
        return (rank,)

    def combine(self, left, right, where):
        return left + right


@pytest.mark.parametrize("ps", split_ps(range(1, MAX_P + 1)))
@pytest.mark.parametrize("n", NS)
def test_every_p_verifies_and_matches_reference(n, ps):
    for p in ps:
        sched = bruck(p, n=n, count=3)
        assert verify(sched, op="sum") == "sum" and sched.needs.commutative == (p > 1)
        check_against_reference(sched, integer_inputs(p, 3, seed=p), "sum")
        if p <= 16 or p % 17 == 0 or p in (64, 127):
            check_against_reference(sched, positive_inputs(p, 3, seed=p), shifted_product)


def test_order_wraps_so_not_for_noncommutative_operators():
    for n in NS:
        for p in range(1, 41):
            values = replay(bruck(p, n=n), Ordered())
            for rank in range(p):   # rank p ends with x_p ∘ x_{p+1} ∘ … ∘ x_{p-1}
                assert values[rank][("data", 0)] == tuple((rank + i) % p for i in range(p))
    with pytest.raises(VerificationError, match="non-adjacent"):
        verify(bruck(5, n=1), op="noncommutative")



def test_vectorised_program_equals_program_from_ops():
    for n in NS:
        for p in range(1, 41):
            sched = bruck(p, n=n, count=5, itemsize=4)
            assert_views_equal(sched)


# ---- the worked example, P = 8, n = 2 (§III-C, Fig. 4) ---------------------------

def test_paper_example_p8_n2():
    sched = bruck(8, n=2)
    assert bruck_digits(8, 2) == [2, 1]                 # eq. (15): 7 = (21)_3
    sent, snapshot = [], {}

    def on_transfer(src, dst, op, payload):
        sent.append((op.round, src, dst, payload[0]))

    def on_round_end(rnd, memories):
        snapshot[rnd] = dict(memories[0])

    final = replay(sched, Ordered(), on_round_end=on_round_end, on_transfer=on_transfer)
    from_0 = {(rnd, dst): value for rnd, src, dst, value in sent if src == 0}
    to_0 = {(rnd, src): value for rnd, src, dst, value in sent if dst == 0}
    # round 1: S_1^0[1] = x0 to α1 = 2 ranks, 7 and 6 (eqs. 16, 17); S[0] is empty
    assert from_0 == {(0, 7): (0,), (0, 6): (0,), (1, 5): (0, 1, 2), (1, 3): (1, 2)}
    # rank 0 receives S_1^1[1] = x1 and S_1^2[1] = x2, then S_2^3[1] and S_2^5[0] (eqs. 22, 23)
    assert [op.peer for op in sched.ops[0] if op.kind == "recv"] == [1, 2, 3, 5]
    assert to_0 == {(0, 1): (1,), (0, 2): (2,), (1, 3): (3, 4, 5), (1, 5): (6, 7)}
    # eqs. (18), (19): S_2^0[0] = x1∘x2, S_2^0[1] = x0∘x1∘x2
    assert snapshot[0][("acc0", 0)] == (1, 2)
    assert snapshot[0][("s1", 0)] == (0, 1, 2)
    # eq. (24): S_3^0[1] = x0∘x1∘x2∘(x3∘x4∘x5)∘(x6∘x7)
    assert final[0][("data", 0)] == (0, 1, 2, 3, 4, 5, 6, 7)
    assert report(sched).rounds == 2


def test_registered_with_its_sweep():
    sched = generate("allreduce", "bruck", 8, n=2)
    assert sched.algorithm == "bruck" and sched.params == {"n": 2}


@pytest.mark.parametrize("bad, match", [
    (dict(n=0), r"bruck: n=0, expected a positive integer"),
    (dict(n="auto"), r"n='auto'"),
    (dict(p=0), r"p=0"),
    (dict(itemsize=-1), r"itemsize=-1"),
])
def test_bad_input(bad, match):
    with pytest.raises(SpecError, match=match):
        bruck(**{"p": 8, **bad})


def test_doctests():
    assert doctest.testmod(module).failed == 0


# ---- closed forms at large P, array view only ---------------------------------------

@settings(max_examples=40, deadline=None)
@given(p=st.integers(min_value=1, max_value=4096), n=st.integers(min_value=1, max_value=6))
def test_array_view_closed_forms(p, n):
    sched = bruck(p, n=n, count=3, itemsize=8)
    rep = report(sched)
    k = rounds_needed(p, n)
    lead = (p - 1) // (n + 1) ** (k - 1) if k else 0     # α_{k-1}: messages in round 1
    assert rep.rounds == k
    assert rep.all_ranks_active_every_round
    assert rep.messages == p * (lead + (k - 1) * n if k else 0)
    assert rep.bytes_total == 24 * rep.messages
    assert rep.cost.alpha == (lead + (k - 1) * n if k else 0)
    for t, rnd in enumerate(sched.rounds()):
        per_rank = lead if t == 0 else n
        assert len(rnd) == p * per_rank
        assert (np.bincount(rnd.src, minlength=p) == per_rank).all()
        assert (np.bincount(rnd.dst, minlength=p) == per_rank).all()
        assert (rnd.src != rnd.dst).all()
