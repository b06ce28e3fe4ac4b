"""Ring (reduce-scatter, allgather, allreduce) and Rabenseifner's allreduce
(Thakur, Rabenseifner & Gropp 2005, [17] of End et al. 2016): proofs by the
verifier, exact agreement with a serial reduction on uneven blocks, round
counts and α-β-γ closed forms."""

import doctest
import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import SpecError, VerificationError
from topocoll.schedules import report, ring
from topocoll.schedules.program import KIND_CODES, LEFT_SIDE, RIGHT_SIDE
from topocoll.schedules.ring import rabenseifner, ring_allgather, ring_allreduce, ring_reduce_scatter
from topocoll.verify import check_against_reference, integer_inputs, verify
from topocoll.verify.testing import assert_views_equal, round_rows

MODULUS = 1_000_003
# the ring's per-rank schedules grow as P²: every P up to 24, then a spread up
# to 130 (the catalogue test in tests/ sweeps every P once more)
RING_PS = [*range(1, 25), 31, 32, 33, 63, 64, 65, 100, 127, 128, 130]


def matrix_product(left, right):
    """2x2 integer matrices mod a prime: associative, not commutative, exact."""
    return np.matmul(left, right) % MODULUS


def matrix_inputs(p, count, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, MODULUS, (count, 2, 2), dtype=np.int64) for _ in range(p)]




@pytest.mark.parametrize("p", RING_PS)
def test_ring_allreduce(p):
    count = 2 * p + 3 if p < 40 else p - 1 or 1      # uneven blocks; empty ones for large P
    sched = ring_allreduce(p, count=count)
    assert verify(sched) == ("sum" if p > 2 else "noncommutative")
    check_against_reference(sched, integer_inputs(p, count, seed=p), "sum")
    if p <= 24:
        check_against_reference(sched, integer_inputs(p, count, seed=p), "max")
    assert report(sched).rounds == 2 * (p - 1)


@pytest.mark.parametrize("p", RING_PS[:30])
def test_ring_reduce_scatter_and_allgather(p):
    count = 3 * p + 1
    rs = ring_reduce_scatter(p, count=count)
    assert [tuple(rs.result_blocks(r)) for r in range(p)] == [(r,) for r in range(p)]
    verify(rs)
    check_against_reference(rs, integer_inputs(p, count, seed=p), "sum")
    ag = ring_allgather(p, count=count)
    assert verify(ag) == "noncommutative"
    check_against_reference(ag, integer_inputs(p, count, seed=p), "sum")
    assert report(rs).rounds == report(ag).rounds == p - 1


@pytest.mark.parametrize("p", [3, 4, 5, 8])
def test_ring_needs_a_commutative_operator(p):
    # each block's partial result starts mid-ring and wraps past rank 0
    with pytest.raises(VerificationError, match="non-adjacent"):
        verify(ring_allreduce(p), op="noncommutative")
    with pytest.raises(AssertionError):
        check_against_reference(ring_reduce_scatter(p, count=p), matrix_inputs(p, p, seed=p), matrix_product)


@pytest.mark.parametrize("p", [1, 2])
def test_ring_of_two_is_in_rank_order(p):
    sched = ring_allreduce(p, count=3)
    assert verify(sched, op="noncommutative") == "noncommutative"
    check_against_reference(sched, matrix_inputs(p, 3, seed=p), matrix_product)


# `make test` runs these P (all up to 12, powers of two, primes, P next to a power
# of two); `make test-all` adds every other P up to 130 (marker `exhaustive`)
SAMPLE_P = {*range(1, 13), 16, 17, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129, 130}


@pytest.mark.parametrize("p", [p if p in SAMPLE_P else pytest.param(p, marks=pytest.mark.exhaustive)
                               for p in range(1, 131)])
def test_rabenseifner_noncommutative(p):
    count = p + 3                                    # uneven over 2^⌊log2 P⌋ blocks
    sched = rabenseifner(p, count=count)
    assert verify(sched) == "noncommutative"
    check_against_reference(sched, integer_inputs(p, count, seed=p), "sum")
    check_against_reference(sched, matrix_inputs(p, count, seed=p), matrix_product)
    k = math.floor(math.log2(p))
    assert report(sched).rounds == (2 * k if p == 2**k else 2 * k + 2)


@pytest.mark.parametrize("p, count", [(5, 1), (8, 3), (12, 7), (33, 5)])
def test_fewer_elements_than_blocks(p, count):
    for sched in (rabenseifner(p, count=count), ring_allreduce(p, count=count),
                  ring_reduce_scatter(p, count=count), ring_allgather(p, count=count)):
        verify(sched)
        check_against_reference(sched, integer_inputs(p, count, seed=count), "sum")


def test_rabenseifner_ownership_after_halving():
    # MPICH's halving order (distance 1 first): rank n ends the reduce-scatter
    # owning block bitreverse(n), and halves the bytes it sends every step
    p, k = 8, 3
    sched = rabenseifner(p, count=8, itemsize=1)
    for n in range(p):
        last = [tuple(op.blocks) for op in sched.ops_for(n) if op.kind == "reduce" and op.round == k - 1]
        assert last == [(int(f"{n:03b}"[::-1], 2),)]
    halving = list(sched.rounds())[:k]
    assert [sorted(set(r.nbytes.tolist())) for r in halving] == [[4], [2], [1]]
    assert [sorted(set(r.reduce_bytes.tolist())) for r in halving] == [[4], [2], [1]]
    assert round_rows(halving[0])[:2] == [(0, 1, 4), (1, 0, 4)]
    assert round_rows(halving[2])[:2] == [(0, 4, 1), (1, 5, 1)]
    # exact dependencies: the first sends wait for nothing; rank 0's send of
    # step j waits only for its reduction of step j - 1 (the blocks it sends)
    ops0 = sched.ops_for(0)
    assert [(op.kind, op.round, op.deps) for op in ops0[:9] if op.kind == "send"] == [
        ("send", 0, ()), ("send", 1, (2,)), ("send", 2, (5,))]
    chunks = list(sched.program())[:k]
    assert [c.first_id for c in chunks] == [0, 3 * p, 6 * p]          # 3 ops per rank and step
    assert [c.deps_of(0).tolist() for c in chunks] == [[], [2], [3 * p + 2]]


@pytest.mark.parametrize("p", range(1, 41))
def test_array_view_equals_per_rank_view(p):
    for sched in (ring_allreduce(p, count=2 * p + 1), ring_reduce_scatter(p, count=p + 1, itemsize=4),
                  ring_allgather(p, count=3 * p - 1), rabenseifner(p, count=p + 5, itemsize=2)):
        assert_views_equal(sched)


def global_ids(ops, p, rank):
    """Global op ids of one rank's ops in a circulant program, from that rank's
    ops alone: chunks are rounds, every rank has the same number of ops in a
    round, and rows are rank-major in posting order."""
    per_round = Counter(op.round for op in ops)
    first, total = {}, 0
    for t in sorted(per_round):
        first[t], total = total, total + p * per_round[t]
    seen = Counter()
    out = []
    for op in ops:
        out.append(first[op.round] + rank * per_round[op.round] + seen[op.round])
        seen[op.round] += 1
    return first, out


def assert_row_is_op(chunk, row, op, buffers, block_bytes, gid):
    """Program row ``row`` of ``chunk`` describes ``op`` (its deps as global ids)."""
    assert chunk.kind[row] == KIND_CODES[op.kind]
    if op.kind in ("send", "recv"):
        assert (chunk.peer[row], chunk.tag[row], buffers[chunk.buf[row]]) == (op.peer, op.tag, op.buf)
        dst, src = (op.into, op.blocks) if op.kind == "recv" else (op.blocks, op.blocks)
        assert chunk.side[row] == -1
    else:
        assert (chunk.peer[row], chunk.tag[row]) == (-1, -1)
        assert (buffers[chunk.buf[row]], buffers[chunk.src_buf[row]]) == (op.dst, op.src)
        dst, src = op.blocks, (op.blocks if op.kind == "reduce" else op.src_blocks)
        assert chunk.side[row] == ((LEFT_SIDE if op.side == "left" else RIGHT_SIDE) if op.kind == "reduce" else -1)
    runs = chunk.runs_of(row)
    assert [b for d, _, n in runs for b in range(d, d + n)] == list(dst)
    assert [b for _, s, n in runs for b in range(s, s + n)] == list(src)
    assert chunk.nbytes[row] == int(block_bytes[list(dst)].sum())
    assert chunk.deps_of(row).tolist() == [gid[d] for d in op.deps]


@settings(max_examples=3, deadline=None)
@given(p=st.integers(1, 2**16), extra=st.integers(0, 99), data=st.data(),
       make=st.sampled_from([ring_allreduce, ring_reduce_scatter, ring_allgather]))
def test_ring_program_equals_ops_for_at_large_p(p, extra, data, make):
    # the vectorised circulant program, read for a few ranks in its first
    # rounds, equals those ranks' own ops: no rank's ops but theirs are built
    sched = make(p, count=p + extra)                 # uneven blocks, wrapping runs
    ranks = data.draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=2, unique=True), label="ranks")
    program = sched.program()
    chunks = list(itertools.islice(program, data.draw(st.integers(1, 3), label="rounds")))
    for rank in ranks:
        ops = sched.ops_for(rank)
        first, gid = global_ids(ops, p, rank)
        by_round = {}
        for i, op in enumerate(ops):
            by_round.setdefault(op.round, []).append(i)
        for chunk in chunks:
            assert chunk.first_id == first[chunk.round]
            rows = np.flatnonzero(chunk.rank == rank)
            mine = by_round[chunk.round]
            assert (chunk.first_id + rows).tolist() == [gid[i] for i in mine]
            for row, i in zip(rows.tolist(), mine):
                assert_row_is_op(chunk, row, ops[i], program.buffers, sched.block_bytes, gid)


RABENSEIFNER_CASES = dict(p=st.integers(1, 4096), per_block=st.integers(1, 50), itemsize=st.sampled_from([1, 8]))
#: `make test`'s draw: P up to 1,024 (the whole range in `make test-all`)
RABENSEIFNER_QUICK = dict(RABENSEIFNER_CASES, p=st.integers(1, 1024))


def rabenseifner_report_closed_form(p, per_block, itemsize):
    k = p.bit_length() - 1
    pof2 = 1 << k
    f = int(p > pof2)
    n = per_block * pof2 * itemsize
    r = report(rabenseifner(p, count=per_block * pof2, itemsize=itemsize))
    assert r.rounds == 2 * k + 2 * f
    assert r.cost.alpha == 2 * k + 2 * f
    assert r.cost.beta == 2 * n * (pof2 - 1) // pof2 + 2 * f * n
    assert r.cost.gamma == n * (pof2 - 1) // pof2 + f * n
    assert r.all_ranks_active_every_round == (f == 0)


# `make test` draws 15 examples, `make test-all` 60 more
test_rabenseifner_report_closed_form = settings(max_examples=15, deadline=None)(
    given(**RABENSEIFNER_QUICK)(rabenseifner_report_closed_form))
test_rabenseifner_report_closed_form_60_examples = pytest.mark.exhaustive(settings(max_examples=60, deadline=None)(
    given(**RABENSEIFNER_CASES)(rabenseifner_report_closed_form)))


def ring_report_closed_form(p, per_block):
    n = per_block * p * 8
    r = report(ring_allreduce(p, count=per_block * p))
    assert r.rounds == 2 * (p - 1)
    assert r.messages == 2 * p * (p - 1)
    assert r.bytes_total == 2 * (p - 1) * n
    assert r.all_ranks_active_every_round
    assert (r.cost.alpha, r.cost.beta, r.cost.gamma) == (2 * (p - 1), 2 * (p - 1) * n // p, (p - 1) * n // p)


# the ring's report is O(P²) messages: `make test` draws P up to 1,024 (under a
# second each), `make test-all` up to 4,096 (15 s for 6 examples)
test_ring_report_closed_form = settings(max_examples=6, deadline=None)(
    given(p=st.integers(1, 1024), per_block=st.integers(1, 9))(ring_report_closed_form))
test_ring_report_closed_form_to_4096 = pytest.mark.exhaustive(settings(max_examples=6, deadline=None)(
    given(p=st.integers(1, 4096), per_block=st.integers(1, 9))(ring_report_closed_form)))


@pytest.mark.parametrize("func", [ring_allreduce, ring_reduce_scatter, ring_allgather, rabenseifner])
def test_bad_input(func):
    with pytest.raises(SpecError, match=rf"{func.__name__}: p=-1, expected a positive integer"):
        func(-1)
    with pytest.raises(SpecError, match=r"count=0, expected a positive number"):
        func(4, count=0)


def test_docstring_examples():
    failed, tried = doctest.testmod(ring, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0
