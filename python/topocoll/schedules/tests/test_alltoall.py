"""All-to-all generators (Kumar & Heidelberger, alltoall-blue-gene-torus.txt;
Cavin & Demengeon §2.1.4): proofs by the verifier, the reference executor
against a direct transpose, both views agreeing, forwarded blocks that go
missing being reported, and the cost models against closed forms and the
paper's own numbers."""

import doctest
import importlib
import math
import pkgutil
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import SpecError, VerificationError
from topocoll.schedules import alltoall, alltoall_cost, report
from topocoll.schedules.alltoall import (
    balanced_dims, bruck_alltoall, choose_linear_dimension, direct_alltoall, linear_candidates,
    pairwise_exchange_alltoall, parse_shape, randomized_alltoall, shift_alltoall, two_phase_schedule,
    virtual_mesh_alltoall,
)
from topocoll.schedules.alltoall.randomized import inverse_permutations, permutation_keys, random_permutations
from topocoll.schedules.alltoall_cost import (
    BLUE_GENE_L_AR, BLUE_GENE_L_VMESH, changeover_bytes, contention_factor, crossbar_cost, direct_torus_time,
    peak_time, two_phase_torus_time, virtual_mesh_torus_time,
)
from topocoll.schedules.arraypattern import TablePattern
from topocoll.schedules.pattern import CirculantPattern
from topocoll.schedules.program import COPY, RECV, SEND, concatenate
from topocoll.verify import execute, serial_reference, verify
from topocoll.verify.replay import match
from topocoll.verify.testing import assert_views_equal

pytestmark = pytest.mark.timeout(120)

# name -> (generator(p, count, itemsize), supports(p), crossbar_cost params)
GENERATORS = {
    "direct": (lambda p, **kw: direct_alltoall(p, **kw), lambda p: True, {}),
    "shift": (lambda p, **kw: shift_alltoall(p, **kw), lambda p: True, {}),
    "pairwise_exchange": (lambda p, **kw: pairwise_exchange_alltoall(p, **kw), lambda p: p & (p - 1) == 0, {}),
    "randomized": (lambda p, **kw: randomized_alltoall(p, seed=11, **kw), lambda p: True, {"seed": 11}),
    "bruck": (lambda p, **kw: bruck_alltoall(p, **kw), lambda p: True, {"k": 1}),
    "bruck_k3": (lambda p, **kw: bruck_alltoall(p, k=3, **kw), lambda p: True, {"k": 3}),
    "two_phase_schedule": (lambda p, **kw: two_phase_schedule(p, **kw), lambda p: True, {}),
    "virtual_mesh": (lambda p, **kw: virtual_mesh_alltoall(p, **kw), lambda p: True, {}),
    "virtual_mesh_3d": (lambda p, **kw: virtual_mesh_alltoall(p, d=3, **kw), lambda p: True, {"d": 3}),
}
COST_NAME = {"bruck_k3": "bruck", "virtual_mesh_3d": "virtual_mesh"}




def distinct_inputs(p, count, dtype=np.int64):
    """Every element of every rank different (as far as the dtype allows)."""
    base = np.arange(p * count, dtype=np.int64).reshape(p, count)
    return [row.astype(dtype) for row in (base * 7919 + 13)]


def assert_transposes(sched, dtype=np.int64):
    """Reference executor == serial reference == a direct transpose."""
    p, count = sched.p, sched.count
    inputs = distinct_inputs(p, count, dtype)
    out = execute(sched, inputs, "sum")
    expected = serial_reference(sched, inputs, "sum")
    width = count // p
    for rank, blocks in enumerate(expected):
        assert sorted(blocks) == list(range(p))
        for position, want in blocks.items():
            assert np.array_equal(out[rank][position * width:(position + 1) * width], want), \
                f"{sched.label()}: rank {rank} block {position}"
    want = np.stack(inputs).reshape(p, p, width).transpose(1, 0, 2).reshape(p, count)
    assert np.array_equal(np.stack(out), want), sched.label()


def assert_recv_names_match_send(sched):
    """Recv.blocks names blocks as the sender does."""
    for (s, si), (d, ri) in match(sched).items():
        assert sched.ops[d][ri].blocks == sched.ops[s][si].blocks, (sched.label(), s, si, d, ri)


# ---- correctness: every P ≤ 40, sampled P up to 130 ------------------------------

@pytest.mark.parametrize("name", GENERATORS)
def test_every_p_up_to_40(name):
    gen, supports, _ = GENERATORS[name]
    for p in range(1, 41):
        if not supports(p):
            continue
        sched = gen(p, count=3 * p)
        assert verify(sched) == "noncommutative"
        assert_transposes(sched)
        assert_views_equal(sched)
        assert_recv_names_match_send(sched)


@pytest.mark.parametrize("name, p", [(name, p) for name, (_, supports, _) in GENERATORS.items()
                                     for p in (64, 97, 120, 130) if supports(p)])
def test_sampled_p_up_to_130(name, p):
    sched = GENERATORS[name][0](p, count=p, itemsize=1)
    verify(sched)
    assert_transposes(sched, np.uint8)


@pytest.mark.parametrize("shape", ["3x5x7", "2x3x5M", "1x4x3", "5x1x1", "4x6", "3"])
def test_two_phase_odd_shapes_every_linear_dimension_and_mapping(shape):
    parsed = parse_shape("test", shape)
    p, d = parsed.p, len(parsed.sizes)
    axes = "xyz"[:d]
    cases = [(None, axes), (None, axes[::-1])] + [(a, axes[(i + 1) % d:] + axes[:(i + 1) % d])
                                                  for i, a in enumerate(axes)]
    for linear, mapping in cases:
        sched = two_phase_schedule(p, shape=shape, linear=linear, mapping=mapping, count=2 * p)
        verify(sched)
        assert_transposes(sched)
        if p <= 40:
            assert_views_equal(sched)


def test_two_phase_explicit_mapping():
    rng = random.Random(5)
    nodes = list(range(60))
    rng.shuffle(nodes)
    sched = two_phase_schedule(60, shape="5x4x3", mapping=nodes, count=60)
    verify(sched)
    assert_transposes(sched)
    assert_views_equal(sched)
    assert sched.params["mapping"] == tuple(nodes)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3), linear=st.integers(0, 2),
       flip=st.booleans())
def test_two_phase_any_shape_verifies(sizes, linear, flip):
    d = len(sizes)
    axes = "xyz"[:d]
    p = math.prod(sizes)
    sched = two_phase_schedule(p, shape=tuple(sizes), linear=axes[linear % d],
                               mapping=axes[::-1] if flip else axes)
    verify(sched)
    assert_views_equal(sched)


@settings(max_examples=25, deadline=None)
@given(dims=st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_virtual_mesh_any_dims_verifies(dims):
    p = math.prod(dims)
    sched = virtual_mesh_alltoall(p, dims=tuple(dims), count=2 * p)
    verify(sched)
    assert_views_equal(sched)


@pytest.mark.parametrize("name", ["shift", "bruck", "two_phase_schedule", "virtual_mesh", "randomized"])
@pytest.mark.parametrize("m_bytes, itemsize", [(1, 1), (8, 8), (240, 1), (4096, 8), (65536, 1)])
def test_message_sizes_one_byte_to_64_kib(name, m_bytes, itemsize):
    gen = GENERATORS[name][0]
    p = 6
    count = p * m_bytes // itemsize
    sched = gen(p, count=count, itemsize=itemsize)
    assert set(sched.block_bytes.tolist()) == {m_bytes}
    assert_transposes(sched, np.uint8 if itemsize == 1 else np.int64)
    sent = sum(int(r.nbytes.sum()) for r in sched.rounds())
    direct = p * (p - 1) * m_bytes
    assert sent == direct if name in ("shift", "randomized") else sent >= direct


# ---- forwarded blocks lost, duplicated or misdelivered are reported ---------------

FORWARDING = {
    "two_phase_schedule": lambda: two_phase_schedule(12, shape="3x2x2", count=24),
    "virtual_mesh": lambda: virtual_mesh_alltoall(12, dims="4x3", count=24),
    "virtual_mesh_3d": lambda: virtual_mesh_alltoall(12, dims="2x3x2", count=24),
    "bruck": lambda: bruck_alltoall(11, k=2, count=22),
}


def _fields(op):
    return {name: getattr(op, name) for name in op.__dataclass_fields__}


def _replace(op, **changes):
    return type(op)(**{**_fields(op), **changes})


def _remove(rank_ops, idx):
    out = []
    for i, op in enumerate(rank_ops):
        if i != idx:
            out.append(_replace(op, deps=tuple(d - (d > idx) for d in op.deps if d != idx)))
    return out


def forwarded_messages(sched):
    """(src, send idx, dst, recv idx) of messages sent out of a scratch buffer
    (blocks an intermediate forwards), combined ones first."""
    out = [(s, si, d, ri) for (s, si), (d, ri) in match(sched).items() if sched.ops[s][si].buf != "send"
           and sched.ops[s][si].buf != "data"]
    return sorted(out, key=lambda m: (-len(sched.ops[m[0]][m[1]].blocks), m))


def _other(ops, rank, idx, kind, buf):
    """Another op of ``rank`` of the same kind on the same buffer."""
    return next(op for i, op in enumerate(ops[rank]) if i != idx and op.kind == kind and op.buf == buf
                and (op.blocks if kind == "send" else op.into) != (ops[rank][idx].blocks if kind == "send"
                                                                    else ops[rank][idx].into))


def mutate(sched, msg, how):
    s, si, d, ri = msg
    ops = [list(r) for r in sched.ops]
    send, recv = ops[s][si], ops[d][ri]
    if how == "lose one block":
        ops[s][si] = _replace(send, blocks=send.blocks[1:])
        ops[d][ri] = _replace(recv, blocks=recv.blocks[1:], into=recv.into[1:])
    elif how == "duplicate a block":
        # the intermediate sends a block it also forwards elsewhere instead of blocks[0]
        twin = send.blocks[1] if len(send.blocks) > 1 else _other(ops, s, si, "send", send.buf).blocks[0]
        ops[s][si] = _replace(send, blocks=(twin,) + send.blocks[1:])
    elif how == "misdeliver":
        # the receiver stores the first block where another block belongs
        into = recv.into[1:] + recv.into[:1] if len(recv.into) > 1 else \
            _other(ops, d, ri, "recv", recv.buf).into[:1]
        ops[d][ri] = _replace(recv, into=into)
    elif how == "drop the message":
        ops[s] = _remove(ops[s], si)
        ops[d] = _remove(ops[d], ri)
    elif how == "deliver twice":
        ops[s].insert(si + 1, send)
        ops[d].insert(ri + 1, recv)
        for rank, idx in ((s, si), (d, ri)):
            ops[rank] = [op if i <= idx + 1 else _replace(op, deps=tuple(x + (x > idx) for x in op.deps))
                         for i, op in enumerate(ops[rank])]
    return sched.with_ops(ops, algorithm=f"{sched.algorithm}+{how}")


@pytest.mark.parametrize("how", ["lose one block", "duplicate a block", "misdeliver", "drop the message",
                                 "deliver twice"])
@pytest.mark.parametrize("name", FORWARDING)
def test_forwarded_block_faults_are_reported(name, how):
    sched = FORWARDING[name]()
    verify(sched)
    msgs = forwarded_messages(sched)
    assert msgs, f"{name} forwards nothing"
    for msg in [msgs[0], msgs[len(msgs) // 2], msgs[-1]]:
        mutant = mutate(sched, msg, how)
        with pytest.raises(VerificationError, match=r"rank \d+"):
            verify(mutant)


def test_misdelivered_forward_names_rank_and_block():
    sched = two_phase_schedule(12, shape="3x2x2", count=12)
    msg = next(m for m in forwarded_messages(sched))
    s, si, d, ri = msg
    ops = [list(r) for r in sched.ops]
    recv = ops[d][ri]
    wrong = next(b for b in range(12) if b not in recv.into and b != d)
    ops[d][ri] = _replace(recv, into=(wrong,))
    # both blocks now land on one position: a race, or a wrong block at the end
    with pytest.raises(VerificationError, match=rf"rank {d}\b.*data\[({wrong}|{recv.into[0]})\]"):
        verify(sched.with_ops(ops))


# ---- structure: rounds, forwarding, parameters ----------------------------------

def test_shift_rounds_are_the_shift_permutation():
    p = 9
    for s, rnd in enumerate(shift_alltoall(p).rounds(), start=1):
        assert rnd.dst.tolist() == [(i + s) % p for i in range(p)]
    assert report(shift_alltoall(p)).all_ranks_active_every_round


def test_direct_is_a_hot_spot():
    rnds = list(direct_alltoall(6).rounds())
    assert [set(r.dst.tolist()) for r in rnds] == [{j} for j in range(6)]


def test_randomized_seed_changes_order_and_is_printed():
    a, b, a2 = randomized_alltoall(16, seed=1), randomized_alltoall(16, seed=2), randomized_alltoall(16, seed=1)
    order = lambda s: [r.dst.tolist() for r in s.rounds()]  # noqa: E731
    assert order(a) == order(a2) != order(b)
    assert "seed=1" in a.label()
    # every rank visits every peer once
    dst = np.array(order(a))
    assert all(sorted(dst[:, i].tolist()) == [j for j in range(16) if j != i] for i in range(16))


def test_bruck_round_count_is_log_k_plus_1():
    for p in (2, 7, 9, 27, 28, 100):
        for k in (1, 2, 3):
            rounds = {r.round for r in bruck_alltoall(p, k=k).rounds()}
            assert len(rounds) == math.ceil(round(math.log(p, k + 1), 9)), (p, k)
            assert max(len(r) for r in bruck_alltoall(p, k=k).rounds()) <= k * p


def test_bruck_rotations_are_copies():
    sched = bruck_alltoall(5)
    kinds = [op.kind for op in sched.ops[2]]
    assert kinds[0] == "copy" and kinds[-1] == "copy"
    assert sched.ops[2][0].src_blocks == (3, 4, 0, 1)


@pytest.mark.parametrize("p, k", [(5, 1), (12, 2), (16, 3)])
def test_bruck_position_j_of_rank_i_is_label_i_plus_j(p, k):
    """Every rank runs rank 0's ops moved by its rank (one Circulant
    template): rotated position j of rank i is label (i + j) mod P of rot and
    fwd, so the rotation copy reads block i + j and the inverse rotation
    writes block i − j from label i + j."""
    sched = bruck_alltoall(p, k=k)
    assert isinstance(sched.pattern, CirculantPattern)
    for i in range(p):
        ops = sched.ops_for(i)
        rot, unrot = ops[0], ops[-1]
        assert rot.blocks == rot.src_blocks == tuple((i + j) % p for j in range(1, p))
        assert unrot.blocks == tuple((i - j) % p for j in range(1, p))
        assert unrot.src_blocks == tuple((i + j) % p for j in range(1, p))
        for op, op0 in zip(ops, sched.ops_for(0)):   # rank 0's messages, moved by i
            if op.kind == "send":
                assert op.peer == (op0.peer + i) % p
                assert op.blocks == tuple((b + i) % p for b in op0.blocks)


def _program(sched):
    """The whole op program as one chunk and each row's round."""
    chunks = list(sched.program())
    return concatenate(chunks), np.concatenate([np.full(len(c), c.round) for c in chunks])


def assert_forwards_pipelined(sched, q):
    """A phase-1 message waits for nothing but the staging copy; a forward
    waits for exactly one op, the phase-1 receive of the slot before that
    wrote its block (slots of ``q − 1`` rounds)."""
    whole, rounds = _program(sched)
    fwd = sched.program().buffers.index("fwd")
    forwards = 0
    for i in range(len(whole)):
        if whole.kind[i] != SEND:
            continue
        deps = whole.deps_of(i)
        if whole.buf[i] != fwd:      # phase-1 messages and the slot-0 forwards of a rank's own blocks
            assert (whole.kind[deps] == COPY).all() and (rounds[deps] == 0).all(), f"send {i} waits"
            continue
        forwards += 1
        assert len(deps) == 1, f"forward {i} waits on {deps.tolist()}"
        d = int(deps[0])
        slot = rounds[i] // (q - 1)
        assert whole.kind[d] == RECV and whole.buf[d] == fwd and rounds[d] == (slot - 1) * (q - 1)
        (block, _, _), = whole.runs_of(i)
        assert any(lo <= block < lo + n for lo, _, n in whole.runs_of(d)), "not the receive of its block"
        earlier = (whole.rank[:i] == whole.rank[i]) & (whole.kind[:i] == RECV)
        assert slot < 2 or earlier.sum() > 1   # from slot 2 on, other receives precede it
    return forwards


def test_two_phase_pipelines_phase_2_behind_phase_1():
    """§4.1: phase 2 "is done in a pipelined fashion allowing Phase 1 and
    Phase 2 to overlap". In the op program's exact dependencies a forward
    waits only for the phase-1 receive that brought its block, not for every
    receive before it; a schedule that serialises them is rejected."""
    sched = two_phase_schedule(10 * 2 * 2, shape="10x2x2", count=40)
    q = 4
    assert len({c.round for c in sched.program()}) == sched.p - 10
    assert assert_forwards_pipelined(sched, q) == sched.p * (10 - 1) * (q - 1)
    serialised = []   # every forward also waits for every receive before it
    for rank_ops in sched.ops:
        recvs, out = [], []
        for idx, op in enumerate(rank_ops):
            if op.kind == "send" and op.buf == "fwd":
                op = _replace(op, deps=tuple(sorted(set(op.deps) | set(recvs))))
            recvs += [idx] if op.kind == "recv" else []
            out.append(op)
        serialised.append(out)
    verify(sched.with_ops(serialised))
    with pytest.raises(AssertionError, match="waits on"):
        assert_forwards_pipelined(sched.with_ops(serialised), q)


def test_pairwise_exchange_stages_each_block_in_its_round():
    """Each send and receive depends only on the copy of its own block into
    ``send``, made in the same round (the XOR image of a block range is no
    range: one copy of every block would be P − 1 runs per rank)."""
    sched = pairwise_exchange_alltoall(16)
    whole, rounds = _program(sched)
    for i in np.flatnonzero((whole.kind == SEND) | (whole.kind == RECV)).tolist():
        deps = whole.deps_of(i).tolist()
        assert len(deps) == 1 and whole.kind[deps[0]] == COPY and rounds[deps[0]] == rounds[i]
        (copied, _, n), = whole.runs_of(deps[0])
        (block, _, _), = whole.runs_of(i)      # the block sent, or the position received into
        assert n == 1 and copied == block
    assert (whole.run_len == 1).all()


def test_two_phase_phase_1_follows_the_linear_dimension():
    sched = two_phase_schedule(16 * 8 * 8, shape="16x8x8", count=1024, itemsize=1)
    assert sched.params["linear"] == "x"
    for rank in (0, 1, 17, 500, 1023):   # one rank's ops each (the whole program is P² ops)
        sends = [op for op in sched.ops_for(rank) if op.kind == "send"]
        line = [op.peer for op in sends if len(op.blocks) == 64]
        plane = [op.peer for op in sends if len(op.blocks) == 1]
        assert len(line) == 16 - 1 and len(plane) == 1024 - 16 and len(sends) == len(line) + len(plane)
        assert all(peer // 16 == rank // 16 for peer in line)     # same y, z: along X
        assert all(peer % 16 == rank % 16 for peer in plane)      # phase 2 keeps x


def test_virtual_mesh_messages_as_in_section_4_2():
    # "Each processor sends Pvx messages Pvy·m bytes in size", then Pvy messages of Pvx·m
    sched = virtual_mesh_alltoall(32 * 16, dims="32x16", count=512, itemsize=1)
    sizes = [sorted(set(r.nbytes.tolist())) for r in sched.rounds()]
    assert sizes == [[16]] * 31 + [[32]] * 15


# ---- one description each: circulant templates and rank-wise builders --------------

@pytest.mark.parametrize("name, kind", [
    ("direct", TablePattern), ("shift", CirculantPattern), ("pairwise_exchange", CirculantPattern),
    ("randomized", TablePattern), ("bruck", CirculantPattern), ("two_phase_schedule", TablePattern),
    ("virtual_mesh", TablePattern),
])
def test_each_generator_has_one_pattern(name, kind):
    assert isinstance(GENERATORS[name][0](16).pattern, kind)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 257])
def test_inverse_permutations_undo_random_permutations(n):
    keys = permutation_keys(9, seed=n)
    seen = np.zeros((n, 9), dtype=bool)
    for t in range(n):
        value = random_permutations(keys, t, n)
        seen[value, np.arange(9)] = True
        assert (inverse_permutations(keys, value, n) == t).all()
    assert seen.all()   # a permutation of 0 … n-1 per column


def test_randomized_receives_what_every_permutation_sends():
    """One rank's receives, found by inverting its senders' permutations,
    equal those of evaluating every rank's permutation round by round."""
    p, seed, packets, burst = 41, 7, 3, 2
    sched = randomized_alltoall(p, seed=seed, packets=packets, burst=burst)
    keys = permutation_keys(p, seed)
    dst = np.stack([(np.arange(p) + 1 + random_permutations(keys, t, p - 1)) % p for t in range(p - 1)])
    for j in (0, 1, 17, 40):
        got = [(op.round, op.peer, op.blocks, op.into) for op in sched.ops_for(j) if op.kind == "recv"]
        want = [(q * (p - 1) + t, i, tuple(j * packets + x for x in range(q * burst, min(packets, (q + 1) * burst))),
                 tuple(i * packets + x for x in range(q * burst, min(packets, (q + 1) * burst))))
                for q in range(2) for t in range(p - 1) for i in np.flatnonzero(dst[t] == j).tolist()]
        assert got == want
        sends = [(op.round, op.peer) for op in sched.ops_for(j) if op.kind == "send"]
        assert sends == [(q * (p - 1) + t, int(dst[t, j])) for q in range(2) for t in range(p - 1)]


def test_rankwise_ops_for_one_rank_at_20480():
    """ops_for(rank) builds that rank's ops only (the MPI executor's view)."""
    p = 20480
    ops = randomized_alltoall(p, seed=0).ops_for(12345)
    assert sorted(op.peer for op in ops if op.kind == "recv") == [r for r in range(p) if r != 12345]
    ops = two_phase_schedule(p, shape="40x32x16").ops_for(777)
    assert sum(op.kind == "send" for op in ops) == (40 - 1) + (p - 40)


def test_paper_default_dims():
    assert balanced_dims(512, 2) == (32, 16)          # §4.2: 32×16 on the midplane
    assert balanced_dims(512, 3) == (8, 8, 8)
    assert balanced_dims(20480, 3) == (32, 32, 20)
    assert balanced_dims(97, 2) == (97, 1)
    assert virtual_mesh_alltoall(512).params == {"dims": "32x16"}


# ---- linear dimension rule (§4.1, Table 3) ------------------------------------------

TABLE_3 = [  # shape, phase-1 dimension the paper ran
    ((8, 8, 8), "z"), ((16, 8, 8), "x"), ((8, 16, 8), "y"), ((8, 8, 16), "z"), ((16, 16, 8), "z"),
    ((16, 8, 16), "y"), ((8, 16, 16), "x"), ((8, 32, 16), "y"), ((16, 16, 16), "x"), ((16, 32, 16), "y"),
    ((32, 16, 16), "x"), ((32, 32, 16), "z"), ((40, 32, 16), "x"),
]


@pytest.mark.parametrize("shape, paper", TABLE_3)
def test_linear_dimension_rule_reproduces_table_3(shape, paper):
    axis = "xyz".index(paper)
    assert axis in linear_candidates(shape) or not linear_candidates(shape)
    if len(set(shape)) == 1:   # a cube: every choice leaves a symmetric plane
        assert linear_candidates(shape) == [0, 1, 2]
    else:
        assert choose_linear_dimension(shape) == axis
        assert two_phase_schedule(math.prod(shape), shape=shape).params["linear"] == paper


def test_linear_dimension_rule_examples_of_the_text():
    n = 4
    assert choose_linear_dimension((2 * n, 2 * n, n)) == 2        # "2n×2n×n: the linear dimension would be Z"
    assert choose_linear_dimension((2 * n, n, n)) == 0            # "2n×n×n: the (best) linear dimension is X"


# ---- cost models ------------------------------------------------------------------

@pytest.mark.parametrize("name", GENERATORS)
def test_crossbar_closed_forms_equal_report(name):
    gen, supports, params = GENERATORS[name]
    for p in (1, 2, 3, 8, 12, 16, 27, 30, 64):
        if not supports(p):
            continue
        m = 3 * 8
        got = report(gen(p, count=3 * p)).cost
        want = crossbar_cost(COST_NAME.get(name, name), p, m, **params)
        assert (got.alpha, got.beta, got.gamma) == (want.alpha, want.beta, want.gamma), (name, p)


def test_crossbar_two_phase_with_shape_and_bruck_k_port():
    sched = two_phase_schedule(105, shape="3x5x7", count=105)
    want = crossbar_cost("two_phase_schedule", 105, 8, shape="3x5x7")
    assert str(report(sched).cost) == str(want)
    for k, n in ((1, 5), (2, 3), (3, 3)):
        p = (k + 1) ** n
        single = crossbar_cost("bruck", p, 1, k=k)
        multi = crossbar_cost("bruck", p, 1, k=k, ports="k")
        assert (single.alpha, single.beta) == (n * k, n * k * p // (k + 1))
        assert (multi.alpha, multi.beta) == (n, n * p // (k + 1))


def test_randomized_costs_at_least_the_shift():
    for p in (5, 16, 33):
        got = report(randomized_alltoall(p, seed=3)).cost
        assert got.alpha == p - 1 and got.beta >= (p - 1) * 8


def test_contention_factor_is_m_over_8():
    # eq. 2: C = M/8 for the longest dimension M
    assert contention_factor("40x32x16") == 5.0
    assert contention_factor("8x8x8") == 1.0
    assert contention_factor((8, 32, 16)) == 4.0
    assert contention_factor("8x8x16M") == 4.0       # a mesh line has half the bisection links
    # eq. 2 = eq. 3 without start-up and header
    assert peak_time("16x16x16", 1000, beta=1.0) == direct_torus_time("16x16x16", 1000, alpha=0, beta=1.0, header=0)
    assert peak_time("16x16x16", 1000, beta=1.0) == 4096 * 2 * 1000


def test_eq_3_against_table_4_on_the_midplane():
    # Table 4: AR all-to-all of 1 byte on 8×8×8 measured 0.52 ms; eq. 3 with the §3
    # parameters (α = 450 cycles ≈ 0.64 µs, β = 6.48 ns/B, h = 48 B, 64-byte packets)
    t = direct_torus_time("8x8x8", 1, alpha=BLUE_GENE_L_AR.alpha, beta=BLUE_GENE_L_AR.beta,
                          header=BLUE_GENE_L_AR.header, min_packet=BLUE_GENE_L_AR.min_packet)
    assert t == pytest.approx(0.52e-3, rel=0.1)


def test_eq_4_and_the_32_byte_changeover():
    # §4.2: the β terms of eq. 3 and eq. 4 meet at m = h − 2·proto = 32 bytes
    assert changeover_bytes(48, 8) == 32
    shape = "8x8x8"
    beta3 = direct_torus_time(shape, 32, alpha=0, beta=1.0, header=48)
    beta4 = virtual_mesh_torus_time(shape, 32, dims="32x16", alpha=0, beta=1.0, gamma=0, proto=8)
    assert beta3 == beta4
    # eq. 4 written out for the paper's 32×16 mesh
    vm = BLUE_GENE_L_VMESH
    t = virtual_mesh_torus_time(shape, 8, dims="32x16", alpha=vm.alpha, beta=vm.beta, gamma=vm.gamma)
    assert t == pytest.approx((32 + 16) * vm.alpha + 2 * 512 * (8 + 8) * (1 * vm.beta + vm.gamma))


def test_eq_4_short_and_long_messages_as_in_section_4_2():
    ar, vm = BLUE_GENE_L_AR, BLUE_GENE_L_VMESH

    def direct(m):
        return direct_torus_time("8x8x8", m, alpha=ar.alpha, beta=ar.beta, min_packet=ar.min_packet)

    def mesh(m):
        return virtual_mesh_torus_time("8x8x8", m, dims="32x16", alpha=vm.alpha, beta=vm.beta, gamma=vm.gamma)

    # "for very short messages the mesh strategy is about two times better than AR"
    assert 2.0 <= direct(8) / mesh(8) <= 3.0
    # "for large messages as the network term (β) is two times larger" the mesh loses
    big = 1 << 20
    assert mesh(big) > direct(big)
    assert virtual_mesh_torus_time("8x8x8", big, alpha=0, beta=1, gamma=0) / \
        direct_torus_time("8x8x8", big, alpha=0, beta=1) == pytest.approx(2.0, rel=1e-3)


def test_two_phase_phase_costs_section_4_1():
    # 40×32×16: linear X; the plane needs only 32/40 of its peak
    c = two_phase_torus_time("40x32x16", 1 << 16, alpha=0, beta=1.0, header=0)
    assert c.linear == "x" and c.planar_share == pytest.approx(32 / 40)
    assert c.total == peak_time("40x32x16", 1 << 16, beta=1.0)
    # 8×32×16: "the bisection bandwidth/node on the plane is twice that of the 32 way Y line"
    c = two_phase_torus_time("8x32x16", 1 << 16, alpha=0, beta=1.0, header=0)
    assert c.linear == "y" and c.planar_share == pytest.approx(0.5)
    # symmetric plane: both phases at the same network time
    c = two_phase_torus_time("16x8x8", 1 << 16, alpha=0, beta=1.0, header=0)
    assert c.linear == "x" and c.planar_share == pytest.approx(0.5)
    c = two_phase_torus_time("40x32x16", 100, alpha=2.0, beta=0.0, header=0)
    assert c.total == (40 * 32 * 16 - 1) * 2.0


# ---- bad input: one line, naming the value ------------------------------------------

@pytest.mark.parametrize("call, fragment", [
    (lambda: two_phase_schedule(60, shape="4x4x4"), "shape 4x4x4 has 64 nodes, expected p=60"),
    (lambda: two_phase_schedule(8, shape="2x2x2x1"), "expected 1 to 3 positive sizes"),
    (lambda: two_phase_schedule(8, shape="2xZx4"), "shape='2xZx4'"),
    (lambda: two_phase_schedule(8, shape="2x2x2", linear="w"), "linear='w'"),
    (lambda: two_phase_schedule(8, shape="2x2x2", mapping="xxz"), "mapping='xxz'"),
    (lambda: two_phase_schedule(4, shape="2x2", mapping=[0, 1, 1, 2]), "mapping of length 4"),
    (lambda: virtual_mesh_alltoall(12, dims="5x3"), "dims 5x3 have 15 points, expected p=12"),
    (lambda: shift_alltoall(4, count=6), "count=6 is not a multiple of p=4"),
    (lambda: pairwise_exchange_alltoall(6), "p=6, expected a power of two"),
    (lambda: bruck_alltoall(6, k=0), "k=0, expected an integer >= 1"),
    (lambda: randomized_alltoall(6, seed=-1), "seed=-1"),
    (lambda: direct_alltoall(0), "p=0"),
    (lambda: crossbar_cost("nosuch", 4, 1), "algorithm 'nosuch'"),
])
def test_bad_input_is_one_line_spec_error(call, fragment):
    with pytest.raises(SpecError) as err:
        call()
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_doctests():
    submodules = [importlib.import_module(f"{alltoall.__name__}.{m.name}")
                  for m in pkgutil.iter_modules(alltoall.__path__)]
    for module in (*submodules, alltoall_cost):
        failed, attempted = doctest.testmod(module)
        assert attempted > 0 and failed == 0, module.__name__


def test_serial_reference_is_the_transpose():
    sched = shift_alltoall(3, count=6)
    inputs = distinct_inputs(3, 6)
    ref = serial_reference(sched, inputs)
    assert np.array_equal(ref[2][0], inputs[0][4:6]) and np.array_equal(ref[0][1], inputs[1][0:2])


# ---- packets and bursts of the randomized order (§3, AR strategy) ----------

@pytest.mark.parametrize("p, packets, burst", [(7, 4, 1), (7, 4, 3), (9, 2, 2), (16, 5, 2)])
def test_randomized_packets_and_bursts(p, packets, burst):
    from topocoll.schedules import report
    from topocoll.verify import check_against_reference, integer_inputs

    sched = randomized_alltoall(p, seed=11, packets=packets, burst=burst, count=p * packets * 3, itemsize=2)
    verify(sched)
    check_against_reference(sched, integer_inputs(p, sched.count, seed=p), "sum")
    rep = report(sched)
    passes = -(-packets // burst)          # ⌈packets / burst⌉ walks of the random order
    assert rep.rounds == passes * (p - 1)
    assert rep.bytes_total == p * (p - 1) * packets * 3 * 2
    first = next(iter(sched.rounds()))
    assert set(first.nbytes.tolist()) == {min(burst, packets) * 3 * 2}


@pytest.mark.parametrize("p, per_destination, packets", [(6, 2, 3), (37, 1, 2), (5, 7, 3), (4, 9, 4)])
def test_randomized_packets_need_not_divide_count(p, per_destination, packets):
    """A destination's count/p elements split into near-equal packets (some
    empty): packets never straddle two destinations, and the schedule verifies
    (the MPI check at count 37 aborted on this before)."""
    s = randomized_alltoall(p, packets=packets, burst=2, count=p * per_destination)
    sizes = np.diff(s.bounds).reshape(p, packets)
    assert (sizes.sum(axis=1) == per_destination).all()
    assert sizes.max() - sizes.min() <= 1
    assert verify(s) == "noncommutative"
