"""Rank-wise all-to-alls as one op table (issue 26 item 4;
``schedules/arraypattern.py``: ``TableBuilder``, ``TablePattern``,
``table_dependencies``).

The per-rank descriptions these tables replaced are kept here, one rank at a
time on :class:`~topocoll.schedules.dataflow.RankBuilder` as they were: every
rank's ops of the table equal them (kinds, peers, tags, rounds, blocks and
the dependencies), the program equals the one derived from every rank's ops
(the vectorised data flow equals ``RankBuilder``'s), and the verifier proves
every schedule, for hypothesis-drawn P and parameters.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.schedules.alltoall import (
    direct_alltoall, randomized_alltoall, two_phase_schedule, virtual_mesh_alltoall,
)
from topocoll.schedules.alltoall.randomized import inverse_permutations, permutation_keys, random_permutations
from topocoll.schedules.alltoall.two_phase import _two_phase_layout
from topocoll.schedules.alltoall.virtual_mesh import MeshLayout, resolve_mesh_dims
from topocoll.schedules.arraypattern import Run, TableBuilder, TablePattern, build_table, table_dependencies
from topocoll.schedules.dataflow import RankBuilder
from topocoll.schedules.ops import Copy, Recv, Send
from topocoll.verify import verify
from topocoll.verify.testing import assert_views_equal

pytestmark = pytest.mark.timeout(300)


# ---- the per-rank descriptions the tables replaced ------------------------------

def _stage(b, rank, p, packets=1):
    others = tuple(d * packets + x for d in range(p) if d != rank for x in range(packets))
    if others:
        b.copy(others, dst="send", src="data", round=0)


def direct_reference(p, i, b):
    _stage(b, i, p)
    for t in range(p):
        if t != i:
            b.send(t, (t,), buf="send", round=t)
            continue
        for peer in range(p):
            if peer != i:
                b.recv(peer, (i,), buf="data", into=(peer,), round=t)


def randomized_reference(p, seed, packets, burst, j, b):
    keys = permutation_keys(p, seed)
    passes = -(-packets // burst)
    _stage(b, j, p, packets)
    if p == 1:
        return
    mine = np.broadcast_to(keys[:, j:j + 1], (keys.shape[0], p - 1))
    dst = ((j + 1 + random_permutations(mine, np.arange(p - 1), p - 1)) % p).tolist()
    senders = np.delete(np.arange(p, dtype=np.int64), j)
    when = inverse_permutations(keys[:, senders], (j - senders - 1) % p, p - 1)
    order = np.lexsort((senders, when))
    arrivals = list(zip(when[order].tolist(), senders[order].tolist()))
    for q in range(passes):
        segs = range(q * burst, min(packets, (q + 1) * burst))
        k = 0
        for t in range(p - 1):
            rnd = q * (p - 1) + t
            b.send(dst[t], [dst[t] * packets + x for x in segs], buf="send", round=rnd)
            while k < len(arrivals) and arrivals[k][0] == t:
                i = arrivals[k][1]
                b.recv(i, [j * packets + x for x in segs], buf="data", into=[i * packets + x for x in segs],
                       round=rnd)
                k += 1


def two_phase_reference(lay, c, b):
    p, L, Q = lay.p, lay.L, lay.Q
    per_slot = max(Q - 1, 1)
    line = [lay.line_offset(r) for r in range(L)]
    plane = [lay.plane_offset(u) for u in range(Q)]
    members, q_of = lay.members, lay.q
    _stage(b, c, p)
    a, q = int(lay.a[c]), int(q_of[c])
    to_plane = [lay.move(c, plane[u]) for u in range(Q)]
    from_plane = [lay.move(c, -plane[u]) for u in range(Q)]
    for slot in range(L):
        a_s = (a - slot) % L
        if slot + 1 < L:
            r = slot + 1
            a_from = (a - r) % L
            line_to, line_from = lay.move(c, line[r]), lay.move(c, line[L - r])
        for u in range(1, max(Q, 2)):
            rnd = slot * per_slot + u - 1
            phase1 = u == 1 and slot + 1 < L
            if phase1:
                b.send(line_to, tuple(members[(a + r) % L].tolist()), buf="send", round=rnd)
            if u < Q:
                d = to_plane[u]
                if slot == 0:
                    b.send(d, (d,), buf="send", round=rnd)
                else:
                    b.send(d, (a_s * Q + int(q_of[d]),), buf="fwd", round=rnd)
            if phase1:
                b.recv(line_from, tuple(members[a].tolist()), buf="fwd",
                       into=tuple(a_from * Q + qq for qq in range(Q)), round=rnd)
                b.copy((line_from,), dst="data", src="fwd", src_blocks=(a_from * Q + q,), round=rnd)
            if u < Q:
                frm = from_plane[u]
                named = c if slot == 0 else a_s * Q + q
                b.recv(frm, (named,), buf="data", into=(int(members[a_s, q_of[frm]]),), round=rnd)


def mesh_reference(lay, c, b):
    p, phases = lay.p, lay.phases
    bases = [sum(lay.dims[k] - 1 for k in phases[:e]) for e in range(len(phases))]

    def with_coordinate(k, value):
        return tuple(lay.positions(k, value).tolist())

    if len(phases) == 1:
        _stage(b, c, p)
    prev = "send" if len(phases) == 1 else "data"
    for e, k in enumerate(phases):
        new = "data" if e == len(phases) - 1 else f"fwd{e}"
        base, n, ck = bases[e], lay.dims[k], c // lay.strides[k] % lay.dims[k]
        kept = tuple(h for h in with_coordinate(k, ck) if h != c)
        if kept and prev != new:
            b.copy(kept, dst=new, src=prev, round=base)
        for u in range(1, n):
            to_k, from_k = (ck + u) % n, (ck - u) % n
            b.send(c + (to_k - ck) * lay.strides[k], with_coordinate(k, to_k), buf=prev, round=base + u - 1)
            b.recv(c + (from_k - ck) * lay.strides[k], with_coordinate(k, ck), buf=new,
                   into=with_coordinate(k, from_k), round=base + u - 1)
        prev = new


def _plain(op):
    """An op with its block lists as tuples (``range`` and tuple compare unequal)."""
    if isinstance(op, Send):
        return Send(op.peer, op.buf, tuple(op.blocks), op.tag, op.round, op.deps)
    if isinstance(op, Recv):
        return Recv(op.peer, op.buf, tuple(op.blocks), tuple(op.into), op.tag, op.round, op.deps)
    if isinstance(op, Copy):
        return Copy(op.dst, op.src, tuple(op.blocks), tuple(op.src_blocks), op.round, op.deps)
    return op


def assert_equals_reference(sched, reference):
    for rank in range(sched.p):
        b = RankBuilder()
        reference(rank, b)
        want = [_plain(op) for op in b.ops]
        got = [_plain(op) for op in sched.ops_for(rank)]
        assert got == want, f"{sched.label()}: rank {rank} differs from the per-rank description"


def check(sched, reference):
    assert_equals_reference(sched, reference)
    assert_views_equal(sched)
    assert verify(sched) == "noncommutative"


# ---- hypothesis: tables = per-rank descriptions, views equal, verified ------------

@settings(max_examples=30, deadline=None)
@given(p=st.integers(1, 48))
def test_direct_table(p):
    sched = direct_alltoall(p, count=2 * p)
    check(sched, lambda i, b: direct_reference(p, i, b))


@settings(max_examples=30, deadline=None)
@given(p=st.integers(1, 40), seed=st.integers(0, 2**32), packets=st.integers(1, 4), burst=st.integers(1, 4))
def test_randomized_table(p, seed, packets, burst):
    sched = randomized_alltoall(p, seed=seed, packets=packets, burst=burst)
    check(sched, lambda j, b: randomized_reference(p, seed, packets, burst, j, b))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3), linear=st.integers(0, 2),
       mapping=st.integers(0, 5), shuffle=st.booleans())
def test_two_phase_table(sizes, linear, mapping, shuffle):
    d = len(sizes)
    p = math.prod(sizes)
    orders = ["".join(o) for o in __import__("itertools").permutations("xyz"[:d])]
    order = orders[mapping % len(orders)]
    if shuffle:
        order = [int(x) for x in np.random.default_rng(p + linear).permutation(p)]
    sched = two_phase_schedule(p, shape=tuple(sizes), linear="xyz"[linear % d], mapping=order)
    lay = _two_phase_layout(p, tuple(sizes), "xyz"[linear % d], order)
    check(sched, lambda c, b: two_phase_reference(lay, c, b))


@settings(max_examples=30, deadline=None)
@given(dims=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_virtual_mesh_table(dims):
    p = math.prod(dims)
    sched = virtual_mesh_alltoall(p, dims=tuple(dims))
    lay = MeshLayout(resolve_mesh_dims("test", p, tuple(dims), None))
    check(sched, lambda c, b: mesh_reference(lay, c, b))


@pytest.mark.parametrize("p", [64, 97, 150])
def test_larger_p_every_rank_equals_the_reference(p):
    """Beyond hypothesis' range: every rank at P = 64 … 150, direct and randomized."""
    assert_equals_reference(direct_alltoall(p), lambda i, b: direct_reference(p, i, b))
    assert_equals_reference(randomized_alltoall(p, seed=3), lambda j, b: randomized_reference(p, 3, 1, 1, j, b))


# ---- the vectorised data-flow rule on its own ---------------------------------------

def _table_of(record, p, nblocks, buffers):
    b = TableBuilder(np.arange(p, dtype=np.int64), nblocks)
    record(b)
    return build_table(b, {name: k for k, name in enumerate(buffers)})


def test_dependencies_read_after_write_write_after_read_and_write():
    """One rank: copy data[0:4] → tmp (reads data, writes tmp), send tmp[1],
    receive into data[2] (write after the copy's read), receive into tmp[1]
    (write after the send's read and the copy's write), send tmp[0:2]."""
    def record(b):
        r = b.ranks
        b.copy(r, Run(0, 4), dst="tmp", src="data", round=0)
        b.send(r, 1, Run(1, 1), buf="tmp", round=1)
        b.recv(r, 1, Run(0, 1), buf="data", into=Run(2, 1), round=1)
        b.recv(r, 1, Run(0, 1), buf="tmp", into=Run(1, 1), round=2)
        b.send(r, 1, Run(0, 2), buf="tmp", round=3)
    tab = _table_of(record, 1, 4, ("data", "tmp"))
    ptr, idx = table_dependencies(tab, 2, 4)
    deps = [idx[ptr[i]:ptr[i + 1]].tolist() for i in range(len(tab))]
    assert deps == [[], [0], [0], [0, 1], [0, 3]]
    b = RankBuilder()
    b.copy(range(4), dst="tmp", src="data", round=0)
    b.send(1, (1,), buf="tmp", round=1)
    b.recv(1, (0,), buf="data", into=(2,), round=1)
    b.recv(1, (0,), buf="tmp", into=(1,), round=2)
    b.send(1, (0, 1), buf="tmp", round=3)
    assert [list(op.deps) for op in b.ops] == deps


def test_ranks_post_by_round_then_call_then_position():
    """Rows of one call for several rounds interleave with another call's by round."""
    def record(b):
        r = b.ranks[:, None]
        t = np.arange(3)[None, :]
        b.send(r, (r + 1) % 2, Run(t, 1), round=t)
        b.recv(r, (r + 1) % 2, Run(t, 1), into=Run(t + 3, 1), round=t)
    tab = _table_of(record, 2, 6, ("data",))
    assert tab.round.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert tab.rank.tolist() == [0, 0, 1, 1] * 3
    assert tab.kind.tolist() == [0, 1, 0, 1] * 3


def test_pattern_program_is_cached_and_reiterable():
    sched = direct_alltoall(9)
    first = [c.first_id for c in sched.program()]
    assert first == [c.first_id for c in sched.program()]
    assert isinstance(sched.pattern, TablePattern) and sched.pattern._program is not None
