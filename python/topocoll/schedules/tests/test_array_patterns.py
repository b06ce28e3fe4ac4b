"""Array patterns (issue 18): the vectorised descriptions against the scalar ones they replaced.

Every array pattern's ``ops_for(rank)`` equals, op for op, what the old
one-rank-at-a-time description recorded (kept below, verbatim); its op
program equals the one derived from every rank's ops (class invariance of
the data flow included) over a range of P; and at large P sampled ranks'
program rows equal their ``ops_for``.
"""

from __future__ import annotations

import numpy as np
import pytest

from topocoll.schedules import generate
from topocoll.schedules.arraypattern import ArrayPattern
from topocoll.schedules.program import ops_from_chunk_rows
from topocoll.schedules.common import ceil_log, floor_log2
from topocoll.schedules.dataflow import RankBuilder
from topocoll.schedules.ops import RIGHT
from topocoll.schedules.pairwise import fold_role, lower_first, survivor
from topocoll.verify.testing import assert_views_equal


# ---- the scalar descriptions the array patterns replaced (verbatim, before issue 18)


def fold_in(b: RankBuilder, rank: int, n: int, mate: int, blocks) -> None:
    if n < 0:
        b.send(mate, blocks, round=0)
    elif mate >= 0:
        b.recv(mate, blocks, buf="tmp", round=0)
        b.reduce(blocks, src="tmp", side=lower_first(mate, rank), round=0)


def fold_out(b: RankBuilder, n: int, mate: int, blocks, *, round: int) -> None:
    if n < 0:
        b.recv(mate, blocks, round=round)
    elif mate >= 0:
        b.send(mate, blocks, round=round)


def pairwise_rank_ops(p: int, leftover: str, blocks=(0,)):
    k = floor_log2(p)
    r0 = int(p > 1 << k)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        n, mate = fold_role(p, leftover, rank)
        fold_in(b, rank, n, mate, blocks)
        if n >= 0:
            for level in range(k):
                peer = survivor(p, leftover, n ^ (1 << level))
                b.exchange(peer, blocks, recv_buf="tmp", round=r0 + level)
                b.reduce(blocks, src="tmp", side=lower_first(peer, rank), round=r0 + level)
        fold_out(b, n, mate, blocks, round=r0 + k)

    return rank_ops


def rabenseifner_rank_ops(p: int):
    k = floor_log2(p)
    pof2 = 1 << k
    every = range(pof2)
    r0 = int(p > pof2)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        n, mate = fold_role(p, "neighbours", rank)
        fold_in(b, rank, n, mate, every)
        if n >= 0:
            steps = []
            lo, size = 0, pof2
            for j in range(k):
                mask, half = 1 << j, size >> 1
                peer = survivor(p, "neighbours", n ^ mask)
                upper = bool(n & mask)
                lower_half, upper_half = range(lo, lo + half), range(lo + half, lo + size)
                send, keep = (lower_half, upper_half) if upper else (upper_half, lower_half)
                b.send(peer, send, round=r0 + j)
                b.recv(peer, keep, buf="tmp", round=r0 + j)
                b.reduce(keep, src="tmp", side=lower_first(peer, rank), round=r0 + j)
                steps.append((peer, lo, half, upper))
                lo, size = lo + (half if upper else 0), half
            for i, (peer, lo, half, upper) in enumerate(reversed(steps)):
                mine, theirs = (lo + half, lo) if upper else (lo, lo + half)
                b.send(peer, range(mine, mine + half), round=r0 + k + i)
                b.recv(peer, range(theirs, theirs + half), round=r0 + k + i)
        fold_out(b, n, mate, every, round=r0 + 2 * k)

    return rank_ops


def reduce_rank_ops(b: RankBuilder, p: int, root: int, order: str, rank: int, round0: int = 0) -> None:
    shift = root if order == "relative" else 0
    k = ceil_log(p, 2)
    v = (rank - shift) % p
    for level in range(k):
        mask = 1 << level
        low = v & (2 * mask - 1)
        if low == mask:
            b.send((v - mask + shift) % p, (0,), round=round0 + level)
        elif low == 0 and v + mask < p:
            b.recv((v + mask + shift) % p, (0,), buf="tmp", round=round0 + level)
            b.reduce((0,), src="tmp", side=RIGHT, round=round0 + level)
    if order == "rank" and root != 0:
        if rank == 0:
            b.send(root, (0,), round=round0 + k)
        elif rank == root:
            b.recv(0, (0,), round=round0 + k)


def bcast_rank_ops(b: RankBuilder, p: int, root: int, rank: int, round0: int = 0) -> None:
    v = (rank - root) % p
    for level in range(ceil_log(p, 2)):
        mask = 1 << level
        if v < mask and v + mask < p:
            b.send((v + mask + root) % p, (0,), round=round0 + level)
        elif mask <= v < 2 * mask:
            b.recv((v - mask + root) % p, (0,), round=round0 + level)


def binomial_allreduce_rank_ops(p: int):
    k = ceil_log(p, 2)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        reduce_rank_ops(b, p, 0, "rank", rank)
        bcast_rank_ops(b, p, 0, rank, round0=k)

    return rank_ops


def virtual_rank_ops(p: int):
    """``rank_ops(rank, b)`` of the virtual-process butterfly: rank ``r``
    plays role ``r`` and, if ``r + P < 2^k``, virtual role ``r + P`` (in
    ``virt``, from a copy of its input); role ``v`` exchanges with role
    ``v XOR 2^l`` in round ``l``, played by rank ``w`` or ``w - P``."""
    k = ceil_log(p, 2)
    blocks = (0,)

    def rank_ops(rank: int, b: RankBuilder) -> None:
        roles = (rank, rank + p) if rank + p < 1 << k else (rank,)
        if len(roles) > 1:
            b.copy(blocks, dst="virt", src="data", round=0)
        for level in range(k):
            # roles in increasing order: a rank posts for its real role first,
            # so two messages between the same ranks match in posting order
            for v in roles:
                w = v ^ (1 << level)
                buf, tmp = ("data", "tmp") if v < p else ("virt", "vtmp")
                peer = w if w < p else w - p
                last = level == k - 1
                # a virtual role's final result is never read: in the last
                # round it only sends, and its real partner sends it nothing
                if not (last and w >= p):
                    b.send(peer, blocks, buf=buf, round=level)
                if not (last and v >= p):
                    b.recv(peer, blocks, buf=tmp, round=level)
                    b.reduce(blocks, dst=buf, src=tmp, side=lower_first(w, v), round=level)

    return rank_ops


def reference_ops(rank_ops, p: int) -> list[list]:
    out = []
    for rank in range(p):
        b = RankBuilder()
        rank_ops(rank, b)
        out.append(b.ops)
    return out


PS = list(range(1, 34)) + [48, 63, 64, 65, 100]

CASES = {
    ("allreduce", "rabenseifner", ()): lambda p: rabenseifner_rank_ops(p),
    ("allreduce", "pairwise_exchange", (("leftover", "neighbours"),)):
        lambda p: pairwise_rank_ops(p, "neighbours"),
    ("allreduce", "pairwise_exchange", (("leftover", "last"),)): lambda p: pairwise_rank_ops(p, "last"),
    ("barrier", "butterfly", (("leftover", "neighbours"),)): lambda p: pairwise_rank_ops(p, "neighbours"),
    ("allreduce", "butterfly_virtual", ()): lambda p: virtual_rank_ops(p),
    ("allreduce", "binomial", ()): lambda p: binomial_allreduce_rank_ops(p),
    ("bcast", "binomial", (("root", 0),)): lambda p: lambda r, b: bcast_rank_ops(b, p, 0, r),
    ("bcast", "binomial", (("root", -1),)): lambda p: lambda r, b: bcast_rank_ops(b, p, p - 1, r),
    ("reduce", "binomial", (("order", "rank"), ("root", -1))):
        lambda p: lambda r, b: reduce_rank_ops(b, p, p - 1, "rank", r),
    ("reduce", "binomial", (("order", "relative"), ("root", -1))):
        lambda p: lambda r, b: reduce_rank_ops(b, p, p - 1, "relative", r),
    ("reduce", "binomial", (("order", "rank"), ("root", 0))):
        lambda p: lambda r, b: reduce_rank_ops(b, p, 0, "rank", r),
}


def _params(params, p):
    return {k: (p + v if k == "root" and v < 0 else v) for k, v in params}


def _norm(ops):
    def norm(op):
        fields = {f: getattr(op, f) for f in op.__dataclass_fields__}
        return type(op)(**{k: tuple(v) if isinstance(v, range) else v for k, v in fields.items()})
    return [[norm(op) for op in rank_ops] for rank_ops in ops]


def _id(case):
    coll, name, params = case
    return f"{coll}/{name}" + ("[" + ",".join(f"{k}={v}" for k, v in params) + "]" if params else "")


@pytest.mark.parametrize("case", list(CASES), ids=[_id(c) for c in CASES])
def test_array_pattern_is_the_scalar_description(case):
    coll, name, params = case
    for p in PS:
        sched = generate(coll, name, p, count=3 * p + 1, **_params(params, p))
        assert isinstance(sched.pattern, ArrayPattern)
        want = reference_ops(CASES[case](p), p)
        got = [sched.pattern.ops_for(r) for r in range(p)]
        assert _norm(got) == _norm(want), f"{sched.label()}: ops differ from the scalar description"
        assert_views_equal(sched)


@pytest.mark.parametrize("case", list(CASES), ids=[_id(c) for c in CASES])
@pytest.mark.parametrize("p", [777, 1024, 3000])
def test_array_program_matches_ops_for_at_large_p(case, p):
    coll, name, params = case
    sched = generate(coll, name, p, **_params(params, p))
    prog = sched.program()
    ranks = sorted({0, 1, 2, p // 3, p // 2 + 1, p - 2, p - 1})
    mine = {r: [] for r in ranks}
    local = {}
    for chunk in prog:
        rows = np.flatnonzero(np.isin(chunk.rank, ranks))
        for rank, gid, op in ops_from_chunk_rows(chunk, prog.buffers, rows):
            local[gid] = len(mine[rank])
            mine[rank].append(type(op)(**{**{f: getattr(op, f) for f in op.__dataclass_fields__},
                                          "deps": tuple(local[d] for d in op.deps)}))
    for r in ranks:
        assert mine[r] == _norm([sched.ops_for(r)])[0], f"{sched.label()} rank {r}: program rows differ"


def test_rabenseifner_program_at_65536_is_arrays():
    """The whole Rabenseifner program at P = 2^16 streams from a handful of
    classes: every rank's op count as ``ops_for`` gives it."""
    sched = generate("allreduce", "rabenseifner", 2**16)
    assert len(sched.pattern.classes()) == 1
    total = sum(len(c) for c in sched.program())
    assert total == len(sched.ops_for(12345)) * 2**16
