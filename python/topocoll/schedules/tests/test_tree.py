"""Binomial trees: every root, both orders, closed-form round counts."""

import math

import pytest

from topocoll.errors import SpecError, VerificationError
from topocoll.schedules import report
from topocoll.schedules.tree import binomial_allreduce, binomial_bcast, binomial_reduce
from topocoll.verify import affine, affine_inputs, check_against_reference, integer_inputs, verify
from topocoll.verify.testing import assert_views_equal


@pytest.mark.parametrize("p", range(1, 21))
def test_every_root(p):
    for root in range(p):
        verify(binomial_bcast(p, root=root))
        reduce_rank = binomial_reduce(p, root=root, count=5)
        assert verify(reduce_rank) == "noncommutative"
        check_against_reference(reduce_rank, affine_inputs(p, 5, seed=root), affine)
        relative = binomial_reduce(p, root=root, order="relative", count=5)
        verify(relative, op="sum")
        check_against_reference(relative, integer_inputs(p, 5, seed=root), "sum")


def test_relative_order_is_wrong_for_noncommutative():
    with pytest.raises(VerificationError, match="non-adjacent"):
        verify(binomial_reduce(6, root=3, order="relative"), op="noncommutative")


@pytest.mark.parametrize("p", [1, 2, 3, 7, 8, 9, 100, 1024, 1025])
def test_round_counts(p):
    k = math.ceil(math.log2(p)) if p > 1 else 0
    assert report(binomial_allreduce(p)).rounds == 2 * k
    assert report(binomial_bcast(p, root=p - 1)).rounds == k
    assert report(binomial_reduce(p, root=0)).rounds == k
    # a root other than 0 costs one forwarding round in rank order
    if p > 1:
        assert report(binomial_reduce(p, root=p - 1)).rounds == k + 1
    assert report(binomial_bcast(p)).messages == p - 1


def test_exact_dependencies():
    # P = 8, rank 4 (relative rank 4) reduces what 5 and 6 send, then sends to
    # 0 once its last reduction is done: each op waits only for the ops whose
    # data it reads or overwrites (the receive into tmp also waits for the
    # reduction still reading tmp)
    sched = binomial_reduce(8)
    assert [(op.kind, op.round, op.deps) for op in sched.ops_for(4)] == [
        ("recv", 0, ()), ("reduce", 0, (0,)), ("recv", 1, (0, 1)), ("reduce", 1, (1, 2)), ("send", 2, (3,))]
    chunks = list(sched.program())
    assert [c.rank.tolist() for c in chunks[1:]] == [[0, 0, 2, 4, 4, 6], [0, 0, 4]]
    assert chunks[2].deps_of(2).tolist() == [chunks[1].first_id + 4]   # rank 4's reduce of round 1
    # the broadcast forwards as soon as the data arrived: rank 1's two sends
    # both wait for its receive only, not for each other
    assert [(op.kind, op.peer, op.deps) for op in binomial_bcast(8).ops_for(1)] == [
        ("recv", 0, ()), ("send", 3, (0,)), ("send", 5, (0,))]


@pytest.mark.parametrize("p", [1, 2, 5, 8, 13])
def test_views_agree(p):
    for root in range(p):
        for sched in (binomial_reduce(p, root=root), binomial_reduce(p, root=root, order="relative"),
                      binomial_bcast(p, root=root)):
            assert_views_equal(sched)
    assert_views_equal(binomial_allreduce(p, count=3))


def test_bst_idles_ranks():
    assert not report(binomial_allreduce(8)).all_ranks_active_every_round


@pytest.mark.parametrize("bad, match", [
    (dict(p=0), r"p=0, expected a positive integer"),
    (dict(p=4, root=4), r"root=4, expected a rank in 0..3"),
    (dict(p=4, count=0), r"count=0, expected a positive number"),
    (dict(p=4, order="up"), r"order='up', expected one of rank, relative"),
])
def test_bad_input(bad, match):
    with pytest.raises(SpecError, match=match):
        binomial_reduce(**bad)
