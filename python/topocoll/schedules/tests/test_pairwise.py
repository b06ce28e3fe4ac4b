"""Butterfly and pairwise exchange (End et al. 2016 §III-A, Fig. 1): proofs by
the verifier, exact agreement with a serial reduction, the paper's round
count, and the virtual-process butterfly being wrong for sum."""

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import SpecError, VerificationError
from topocoll.schedules import pairwise, report
from topocoll.schedules.pairwise import butterfly, butterfly_virtual, fold_plan, pairwise_exchange
from topocoll.verify import check_against_reference, integer_inputs, verify
from topocoll.verify.testing import assert_views_equal, round_rows

MODULUS = 1_000_003
# `make test` runs these P (all up to 12, powers of two, primes, P next to a power
# of two); `make test-all` adds every other P up to 130 (marker `exhaustive`)
SAMPLE_P = {*range(1, 13), 16, 17, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129, 130}
PS = [p if p in SAMPLE_P else pytest.param(p, marks=pytest.mark.exhaustive) for p in range(1, 131)]


def matrix_product(left, right):
    """2x2 integer matrices mod a prime, element-wise over a block: associative,
    not commutative, exact."""
    return np.matmul(left, right) % MODULUS


def matrix_inputs(p, count, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, MODULUS, (count, 2, 2), dtype=np.int64) for _ in range(p)]


def is_power_of_two(p):
    return p & (p - 1) == 0




@pytest.mark.parametrize("p", PS)
def test_pairwise_exchange_neighbours_is_correct_for_noncommutative(p):
    sched = pairwise_exchange(p, count=3)
    assert verify(sched) == "noncommutative"
    check_against_reference(sched, integer_inputs(p, 3, seed=p), "sum")
    check_against_reference(sched, matrix_inputs(p, 3, seed=p), matrix_product)


@pytest.mark.parametrize("p", PS)
def test_pairwise_exchange_last_as_in_figure_1(p):
    sched = pairwise_exchange(p, leftover="last", count=2)
    assert verify(sched, op="sum") == "sum"
    check_against_reference(sched, integer_inputs(p, 2, seed=p), "sum")
    if is_power_of_two(p):
        assert verify(sched) == "noncommutative"


@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 100])
def test_pairwise_exchange_last_is_wrong_for_noncommutative(p):
    sched = pairwise_exchange(p, leftover="last", count=2)
    with pytest.raises(VerificationError, match="non-adjacent"):
        verify(sched, op="noncommutative")
    with pytest.raises(AssertionError):
        check_against_reference(sched, matrix_inputs(p, 2, seed=p), matrix_product)


@pytest.mark.parametrize("p", PS)
def test_pe_rounds_floor_log2_plus_2(p):
    # §III-D: "The pairwise exchange algorithm needs ⌊log2(P)⌋+2 communication rounds"
    # (for P = 2^k + q with q > 0; the plain butterfly for q = 0)
    for leftover in ("neighbours", "last"):
        rounds = report(pairwise_exchange(p, leftover=leftover)).rounds
        if is_power_of_two(p):
            assert rounds == math.log2(p)
        else:
            assert rounds == math.floor(math.log2(p)) + 2


@pytest.mark.parametrize("p", PS)
def test_butterfly_virtual_is_wrong_for_sum_unless_power_of_two(p):
    sched = butterfly_virtual(p, count=2)
    assert verify(sched, op="max") == "max"
    check_against_reference(sched, integer_inputs(p, 2, seed=p), "max")
    if is_power_of_two(p):
        assert verify(sched, op="sum") == "sum"
        assert verify(sched, op="noncommutative") == "noncommutative"
        check_against_reference(sched, integer_inputs(p, 2, seed=p), "sum")
    else:
        with pytest.raises(VerificationError, match="twice"):
            verify(sched, op="sum")
        with pytest.raises(AssertionError):
            check_against_reference(sched, [np.ones(2, dtype=np.int64)] * p, "sum")
    assert report(sched).rounds == math.ceil(math.log2(p))


@pytest.mark.parametrize("p", PS)
def test_butterfly_barrier_every_rank_hears_from_all(p):
    sched = butterfly(p)
    assert sched.collective == "barrier" and sched.itemsize == 0
    assert verify(sched) == "noncommutative"
    assert verify(butterfly(p, leftover="last"), op="max") == "max"
    r = report(sched)
    assert r.bytes_total == 0
    assert r.rounds == (math.log2(p) if is_power_of_two(p) else math.floor(math.log2(p)) + 2)


def test_figure_1_right_pairwise_exchange_p5():
    # rank 4 folds into 0, ranks 0..3 run the butterfly, 0 hands the result back
    got = [(r.round, round_rows(r)) for r in pairwise_exchange(5, leftover="last", count=1, itemsize=8).rounds()]
    pairs = [(rnd, [(s, d) for s, d, *_ in rr]) for rnd, rr in got]
    assert pairs == [
        (0, [(4, 0)]),
        (1, [(0, 1), (1, 0), (2, 3), (3, 2)]),
        (2, [(0, 2), (1, 3), (2, 0), (3, 1)]),
        (3, [(0, 4)]),
    ]
    # exact dependencies: rank 0 enters the butterfly once it has reduced
    # rank 4's input, and hands the result back after its last reduction;
    # rank 4 receives the result into the buffer its own send read
    ops0 = pairwise_exchange(5, leftover="last").ops_for(0)
    assert [(op.kind, op.round, op.deps) for op in ops0 if op.kind == "send"] == [
        ("send", 1, (1,)), ("send", 2, (4,)), ("send", 3, (7,))]
    chunks = list(pairwise_exchange(5, leftover="last").program())
    assert [(c.round, c.first_id, c.rank.tolist()) for c in chunks[::3]] == [(0, 0, [0, 0, 4]), (3, 27, [0, 4])]
    assert chunks[3].deps_of(0).tolist() == [chunks[2].first_id + 2]   # rank 0's reduce of round 2
    assert chunks[3].deps_of(1).tolist() == [2]                         # rank 4's send of round 0


def test_figure_1_left_virtual_processes_p5():
    # "Processes 0 to 2 act as if they were additional processes 5, 6 and 7"
    pairs = [sorted({(s, d) for s, d, *_ in round_rows(r)}) for r in butterfly_virtual(5).rounds()]
    assert pairs[0] == [(0, 1), (0, 4), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (4, 0)]   # 4<->5, 6<->7
    assert pairs[1] == [(0, 2), (1, 3), (1, 4), (2, 0), (3, 1), (4, 1)]                   # 5<->7, 4<->6
    # 0<->4, and 5->1, 6->2, 7->3 only: Fig. 1 draws the virtual roles' last
    # receive too, but its result is never read (a dead reduction), so it is left out
    assert pairs[2] == [(0, 1), (0, 4), (1, 2), (2, 3), (4, 0)]
    assert report(butterfly_virtual(5)).max_messages_per_rank == 6      # two roles, 3 rounds
    # rank 0 posts for role 0, then for role 5, whose first send waits only
    # for the copy of rank 0's input
    ops0 = butterfly_virtual(5).ops_for(0)
    assert [(op.kind, getattr(op, "peer", None), getattr(op, "buf", None) or op.dst, op.deps) for op in ops0[:7]] == [
        ("copy", None, "virt", ()), ("send", 1, "data", ()), ("recv", 1, "tmp", ()), ("reduce", None, "data", (0, 1, 2)),
        ("send", 4, "virt", (0,)), ("recv", 4, "vtmp", ()), ("reduce", None, "virt", (0, 4, 5))]
    assert report(butterfly_virtual(8)).max_messages_per_rank == 3


def test_fold_plan_neighbours_keeps_rank_order():
    for p in range(1, 300):
        k, survivors, folded, partners = fold_plan(p)
        assert len(survivors) == 1 << k and len(folded) == p - (1 << k)
        assert np.all(np.diff(survivors) > 0)
        assert sorted([*survivors.tolist(), *folded.tolist()]) == list(range(p))
        assert np.all(partners == folded + 1)


@pytest.mark.parametrize("p", range(1, 41))
def test_array_view_equals_per_rank_view(p):
    for sched in (pairwise_exchange(p, count=p + 2), pairwise_exchange(p, leftover="last", count=3),
                  butterfly(p), butterfly_virtual(p, count=5, itemsize=4)):
        assert_views_equal(sched)


PAIRWISE_CASES = dict(p=st.integers(1, 4096), count=st.integers(1, 1000), itemsize=st.sampled_from([1, 4, 8]),
                      leftover=st.sampled_from(["neighbours", "last"]))


def pairwise_report_closed_form(p, count, itemsize, leftover):
    k = p.bit_length() - 1
    q = p - (1 << k)
    f = int(q > 0)
    n = count * itemsize
    r = report(pairwise_exchange(p, leftover=leftover, count=count, itemsize=itemsize))
    assert r.rounds == k + 2 * f
    assert r.messages == (1 << k) * k + 2 * q
    assert r.bytes_total == r.messages * n
    assert r.all_ranks_active_every_round == (q == 0)  # vacuously true for P = 1
    assert (r.cost.alpha, r.cost.beta, r.cost.gamma) == (k + 2 * f, (k + 2 * f) * n, (k + f) * n)


# `make test` draws 15 examples, `make test-all` 60 more
test_pairwise_report_closed_form = settings(max_examples=15, deadline=None)(
    given(**PAIRWISE_CASES)(pairwise_report_closed_form))
test_pairwise_report_closed_form_60_examples = pytest.mark.exhaustive(settings(max_examples=60, deadline=None)(
    given(**PAIRWISE_CASES)(pairwise_report_closed_form)))


def butterfly_virtual_report_closed_form(p, count):
    k = math.ceil(math.log2(p)) if p > 1 else 0
    roles = 2 if not is_power_of_two(p) else 1
    n = count * 8
    virtual = (1 << k) - p
    r = report(butterfly_virtual(p, count=count))
    assert r.rounds == k
    # the virtual roles' last receive (and its reduction) is never read: left out
    assert r.messages == (1 << k) * k - virtual
    assert (r.cost.alpha, r.cost.beta, r.cost.gamma) == (roles * k, roles * k * n, (roles * k - (roles - 1)) * n)


BUTTERFLY_VIRTUAL_CASES = dict(p=st.integers(1, 4096), count=st.integers(1, 100))
# `make test` draws 10 examples, `make test-all` 40 more
test_butterfly_virtual_report_closed_form = settings(max_examples=10, deadline=None)(
    given(**BUTTERFLY_VIRTUAL_CASES)(butterfly_virtual_report_closed_form))
test_butterfly_virtual_report_closed_form_40_examples = pytest.mark.exhaustive(
    settings(max_examples=40, deadline=None)(given(**BUTTERFLY_VIRTUAL_CASES)(butterfly_virtual_report_closed_form)))


@pytest.mark.parametrize("bad, match", [
    (dict(p=0), r"pairwise_exchange: p=0, expected a positive integer"),
    (dict(p=4, leftover="first"), r"leftover='first', expected one of neighbours, last"),
    (dict(p=4, count=0), r"count=0, expected a positive number"),
])
def test_bad_input(bad, match):
    with pytest.raises(SpecError, match=match):
        pairwise_exchange(**bad)
    with pytest.raises(SpecError):
        butterfly(**bad)


def test_docstring_examples():
    failed, tried = doctest.testmod(pairwise, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0
