"""Open MPI's recursive doubling and neighbor exchange allgathers
(``ompi/mca/coll/base/coll_base_allgather.c``,
``ompi_coll_base_allgather_intra_recursivedoubling`` and
``ompi_coll_base_allgather_intra_neighborexchange``; Chen et al. 2005):
proofs by the verifier over many P, one-line refusals of the P Open MPI hands
to another algorithm, round counts and per-rank bytes against the closed
forms, and small cases checked by hand against Open MPI's code."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import SpecError
from topocoll.schedules import allgather, generate, lookup, report
from topocoll.schedules.allgather import (neighbor_exchange_allgather, neighbor_exchange_steps,
                                          recursive_doubling_allgather)
from topocoll.verify import check_against_reference, integer_inputs, verify
from topocoll.verify.testing import assert_views_equal

POWERS_OF_TWO = [1 << k for k in range(9)]             # 1 .. 256


def sends(sched, rank, kind="send"):
    """``(round, peer, blocks)`` of every send (or, with ``kind="recv"``, receive) of ``rank``."""
    return [(op.round, op.peer, list(op.blocks)) for op in sched.ops_for(rank) if op.kind == kind]


def sent_bytes_per_rank(sched):
    out = np.zeros(sched.p, dtype=np.int64)
    for rnd in sched.rounds():
        out += np.bincount(rnd.src, weights=rnd.nbytes, minlength=sched.p).astype(np.int64)
    return out


# ---- the verifier proves both for many P ---------------------------------------------

@settings(max_examples=25, deadline=None)
@given(p=st.sampled_from(POWERS_OF_TWO), extra=st.integers(0, 40))
def test_recursive_doubling_verifies_for_powers_of_two(p, extra):
    sched = recursive_doubling_allgather(p, count=p + extra)     # uneven blocks, empty ones when extra = 0..p
    assert verify(sched) == "noncommutative"
    assert [tuple(sched.input_blocks(r)) for r in (0, p - 1)] == [(0,), (p - 1,)]


@settings(max_examples=25, deadline=None)
@given(half=st.integers(1, 100), extra=st.integers(0, 40))
def test_neighbor_exchange_verifies_for_even_p(half, extra):
    p = 2 * half
    sched = neighbor_exchange_allgather(p, count=p + extra)
    assert verify(sched) == "noncommutative"


@pytest.mark.parametrize("name, ps", [("recursive_doubling", [1, 2, 4, 8, 16]),
                                      ("neighbor_exchange", [2, 4, 6, 8, 10, 12, 14])])
def test_reference_executor_and_array_view_agree(name, ps):
    for p in ps:
        sched = generate("allgather", name, p, count=3 * p + 1)
        check_against_reference(sched, integer_inputs(p, sched.count, seed=p), "sum")
        assert_views_equal(sched)


# ---- the P Open MPI hands to another algorithm: refused in one line -----------------

@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 100, 255, 257])
def test_recursive_doubling_refuses_other_p(p):
    with pytest.raises(SpecError) as err:
        recursive_doubling_allgather(p)
    line = str(err.value)
    assert "\n" not in line
    assert line == (f"recursive_doubling_allgather: p={p}, expected a power of two (Open MPI switches to "
                    "Bruck's allgather for other P)")
    info = lookup("allgather", "recursive_doubling")
    assert not info.supports(p)
    with pytest.raises(SpecError):
        info.generate(p)


@pytest.mark.parametrize("p", [1, 3, 5, 7, 99, 201])
def test_neighbor_exchange_refuses_odd_p(p):
    with pytest.raises(SpecError) as err:
        neighbor_exchange_allgather(p)
    line = str(err.value)
    assert "\n" not in line
    assert line == (f"neighbor_exchange_allgather: p={p}, expected an even number of ranks (Open MPI "
                    "switches to the ring allgather for odd P: allgather/ring)")
    info = lookup("allgather", "neighbor_exchange")
    assert not info.supports(p)
    with pytest.raises(SpecError):
        info.generate(p)


def test_registry_entries():
    rd, ne = lookup("allgather", "recursive_doubling"), lookup("allgather", "neighbor_exchange")
    assert (rd.rounds, ne.rounds) == ("log2 P", "P/2")
    assert (rd.p_rule_text, ne.p_rule_text) == ("2^k only", "even P only")
    assert not rd.needs.commutative and not ne.needs.commutative
    assert "ompi_coll_base_allgather_intra_recursivedoubling" in rd.paper
    assert "ompi_coll_base_allgather_intra_neighborexchange" in ne.paper and "Chen" in ne.paper
    assert [p for p in range(1, 20) if rd.supports(p)] == [1, 2, 4, 8, 16]
    assert [p for p in range(1, 20) if ne.supports(p)] == list(range(2, 20, 2))


# ---- rounds and per-rank bytes: the closed forms ---------------------------------------

@pytest.mark.parametrize("p", POWERS_OF_TWO)
def test_recursive_doubling_closed_form(p):
    per_block, itemsize = 3, 4
    n = per_block * p * itemsize                          # gathered bytes, a multiple of P
    sched = recursive_doubling_allgather(p, count=per_block * p, itemsize=itemsize)
    r = report(sched)
    k = p.bit_length() - 1
    assert r.rounds == k
    assert r.messages == p * k
    assert (sent_bytes_per_rank(sched) == (p - 1) * n // p).all()       # every rank: (P - 1)/P · n
    assert r.bytes_total == (p - 1) * n
    assert (r.cost.alpha, r.cost.beta, r.cost.gamma) == (k, (p - 1) * n // p, 0)
    assert lookup("allgather", "recursive_doubling").cost(p, {}, n // p, itemsize=itemsize) == r.cost


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 16, 30, 64, 100, 200])
def test_neighbor_exchange_closed_form(p):
    per_block, itemsize = 5, 2
    n = per_block * p * itemsize
    sched = neighbor_exchange_allgather(p, count=per_block * p, itemsize=itemsize)
    r = report(sched)
    assert r.rounds == p // 2
    assert r.messages == p * (p // 2)
    assert (sent_bytes_per_rank(sched) == (p - 1) * n // p).all()
    assert r.bytes_total == (p - 1) * n
    assert r.all_ranks_active_every_round
    assert (r.cost.alpha, r.cost.beta, r.cost.gamma) == (p // 2, (p - 1) * n // p, 0)
    assert lookup("allgather", "neighbor_exchange").cost(p, {}, n // p, itemsize=itemsize) == r.cost


@pytest.mark.parametrize("name, ps", [("recursive_doubling", [1, 2, 4, 8, 16, 32]),
                                      ("neighbor_exchange", [2, 4, 6, 8, 12, 18])])
def test_closed_form_on_uneven_blocks_equals_counted(name, ps):
    # the registered closed form also covers count mod P ≠ 0 (the first blocks one element longer)
    form = lookup("allgather", name).closed_form
    for p in ps:
        for count in (p, p + 1, 2 * p - 1, 3 * p + 2, 7 * p + p // 2):
            counted = report(generate("allgather", name, p, count=count, itemsize=8)).cost
            assert form.terms(p, {}, count, 8) == counted, (p, count)


# ---- small cases by hand, from Open MPI's code -----------------------------------------

def test_neighbor_exchange_p4_by_hand():
    # ompi_coll_base_allgather_intra_neighborexchange at size 4 (two steps):
    #   rank 0 (even): neighbor = {1, 3}, recv_data_from = {0, 0}, offset_at_step = {+2, -2}
    #     step 0: sendrecv block 0 -> 1, block 1 <- 1; send_data_from = rank = 0
    #     step 1 (i_parity 1): recv_data_from[1] = (0 - 2 + 4) % 4 = 2: blocks 0,1 -> 3, blocks 2,3 <- 3
    #   rank 1 (odd): neighbor = {0, 2}, recv_data_from = {0, 0}, offset_at_step = {-2, +2}
    #     step 0: block 1 -> 0, block 0 <- 0; send_data_from = recv_data_from[0] = 0
    #     step 1: recv_data_from[1] = 0 + 2 = 2: blocks 0,1 -> 2, blocks 2,3 <- 2
    #   rank 2 (even): neighbor = {3, 1}, recv_data_from = {2, 2}
    #     step 0: block 2 -> 3, block 3 <- 3; send_data_from = 2
    #     step 1: recv_data_from[1] = 2 - 2 = 0: blocks 2,3 -> 1, blocks 0,1 <- 1
    #   rank 3 (odd): neighbor = {2, 0}, recv_data_from = {2, 2}
    #     step 0: block 3 -> 2, block 2 <- 2; send_data_from = recv_data_from[0] = 2
    #     step 1: recv_data_from[1] = (2 + 2) % 4 = 0: blocks 2,3 -> 0, blocks 0,1 <- 0
    sched = neighbor_exchange_allgather(4, count=4)
    assert [sends(sched, r) for r in range(4)] == [
        [(0, 1, [0]), (1, 3, [0, 1])],
        [(0, 0, [1]), (1, 2, [0, 1])],
        [(0, 3, [2]), (1, 1, [2, 3])],
        [(0, 2, [3]), (1, 0, [2, 3])],
    ]
    assert [sends(sched, r, "recv") for r in range(4)] == [
        [(0, 1, [1]), (1, 3, [2, 3])],
        [(0, 0, [0]), (1, 2, [2, 3])],
        [(0, 3, [3]), (1, 1, [0, 1])],
        [(0, 2, [2]), (1, 0, [0, 1])],
    ]


def test_neighbor_exchange_p6_matches_open_mpis_example():
    # the "Example on 6 nodes" of Open MPI's comment: what each rank holds after steps 0 and 1
    after = {0: [{0, 1}, {0, 1}, {2, 3}, {2, 3}, {4, 5}, {4, 5}],
             1: [{0, 1, 4, 5}, {0, 1, 2, 3}, {0, 1, 2, 3}, {2, 3, 4, 5}, {2, 3, 4, 5}, {0, 1, 4, 5}]}
    sched = neighbor_exchange_allgather(6)
    for step, expected in after.items():
        held = [{r} | {b for op in sched.ops_for(r) if op.kind == "recv" and op.round <= step for b in op.blocks}
                for r in range(6)]
        assert held == expected, step


def test_recursive_doubling_p4_by_hand():
    # ompi_coll_base_allgather_intra_recursivedoubling at size 4, sendblocklocation = rank:
    #   distance 1: remote = rank ^ 1; send 1 block at sendblocklocation; ranks 1, 3 (rank > remote)
    #               then sendblocklocation -= 1 -> 0, 0, 2, 2
    #   distance 2: remote = rank ^ 2; send 2 blocks at sendblocklocation
    sched = recursive_doubling_allgather(4, count=4)
    assert [sends(sched, r) for r in range(4)] == [
        [(0, 1, [0]), (1, 2, [0, 1])],
        [(0, 0, [1]), (1, 3, [0, 1])],
        [(0, 3, [2]), (1, 0, [2, 3])],
        [(0, 2, [3]), (1, 1, [2, 3])],
    ]


def _recursive_doubling_traced(p, rank):
    """Open MPI's loop, literally: ``(remote, first block sent, first block received, blocks)``."""
    out, sendblocklocation, distance = [], rank, 1
    while distance < p:
        remote = rank ^ distance
        if rank < remote:
            send, recv = sendblocklocation, sendblocklocation + distance
        else:
            send, recv = sendblocklocation, sendblocklocation - distance
            sendblocklocation -= distance
        out.append((remote, send, recv, distance))
        distance <<= 1
    return out


@pytest.mark.parametrize("p", [2, 4, 8, 16, 32, 64])
def test_recursive_doubling_equals_open_mpis_loop(p):
    sched = recursive_doubling_allgather(p)
    for r in range(p):
        ops = sched.ops_for(r)
        got = [(s.peer, s.blocks[0], v.blocks[0], len(s.blocks)) for s, v in
               zip([o for o in ops if o.kind == "send"], [o for o in ops if o.kind == "recv"])]
        assert got == _recursive_doubling_traced(p, r), r


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 12, 20, 34, 64])
def test_neighbor_exchange_equals_open_mpis_loop(p):
    # the vectorised closed form against the literal trace of Open MPI's loop (neighbor_exchange_steps)
    sched = neighbor_exchange_allgather(p)
    for r in range(p):
        ops = sched.ops_for(r)
        got = [(s.peer, s.blocks[0], v.blocks[0]) for s, v in
               zip([o for o in ops if o.kind == "send"], [o for o in ops if o.kind == "recv"])]
        assert got == neighbor_exchange_steps(p, r), r
        assert [len(o.blocks) for o in ops if o.kind == "send"] == [1] + [2] * (p // 2 - 1)


def test_docstring_examples():
    failed, tried = doctest.testmod(allgather, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0
