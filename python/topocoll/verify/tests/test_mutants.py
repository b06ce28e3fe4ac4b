"""Three defect classes the verifier once let through (issue 8 §3), as
mutants of every generator they apply to, each of which must be rejected:

(a) a channel reordered so that its first message can only be posted after
    its second one arrived: MPI matches a channel in posting order
    (MPI-3.1 §3.5), so under rendezvous sends this hangs;
(b) a receive sized as another block (uneven blocks): MPI fails with
    "message truncated" or leaves bytes unwritten;
(c) a block index beyond the schedule's blocks: IndexError in the MPI executor.

Each diagnosis names rank, op index and channel.
"""

import dataclasses

import pytest

from topocoll.errors import TopocollError, VerificationError
from topocoll.schedules import catalogue, generate
from topocoll.schedules.ir import Recv, Schedule, Send
from topocoll.verify import verify
from topocoll.verify.replay import match

CASES = [(info, params) for info in catalogue().values() for params in info.sweep]
SMALL_P = (4, 3, 5, 6, 8, 2, 9, 16)


def case_id(case):
    info, params = case
    shown = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{info.collective}/{info.name}" + (f"[{shown}]" if shown else "")


def small_p(info, params):
    return next((p for p in SMALL_P if info.supports(p, params)), None)


def count_for(collective, p):
    return 3 * p if collective == "alltoall" else 3 * p + 1


def _insert(rank_ops, pos, op):
    """``op`` inserted at ``pos`` (its deps already in the new numbering)."""
    out = [dataclasses.replace(o, deps=tuple(d + (d >= pos) for d in o.deps)) for o in rank_ops]
    out.insert(pos, op)
    return out


# ---- (a) a reordered channel ---------------------------------------------------

def channel_mutants(sched, limit=3):
    """``(control, mutant, channel)`` for up to ``limit`` pairs of messages
    m1, m2 from one rank S to another R, posted in the same order on both.

    Both put a zero-byte token from S to R that S sends once m2 completed,
    and R's receive of m1 waits for it. In the mutant m2 travels on m1's
    channel (its tag; matching is unchanged, MPI pairs a channel in posting
    order), so R must post m1's receive before m2's, which needs the token,
    which needs m2 received: a cyclic wait under rendezvous, though every
    dependency is satisfiable in *some* order, and eager sends would pass.
    In the control m2 travels on a channel of its own: nothing waits.
    """
    ops = sched.ops
    fresh = 1 + max((op.tag for rank_ops in ops for op in rank_ops if op.kind in ("send", "recv")), default=0)
    links: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for (s, si), (d, ri) in sorted(match(sched).items()):
        if s != d:
            links.setdefault((s, d), []).append((si, ri))
    made = 0
    for (s, d), msgs in sorted(links.items()):
        for (s1, r1), (s2, r2) in zip(msgs, msgs[1:]):
            tag = ops[s][s1].tag
            before_s = sum(1 for o in ops[s][:s2] if o.kind == "send" and o.peer == d and o.tag == tag)
            before_r = sum(1 for o in ops[d][:r2] if o.kind == "recv" and o.peer == s and o.tag == tag)
            if r1 > r2 or before_s != before_r:
                continue      # m2 on m1's channel would change the matching itself
            variants = []
            for m2_tag in (fresh + 1, tag):
                new = [list(rank_ops) for rank_ops in ops]
                new[s][s2] = dataclasses.replace(ops[s][s2], tag=m2_tag)
                new[d][r2] = dataclasses.replace(ops[d][r2], tag=m2_tag)
                token = Send(d, ops[s][s2].buf, (), fresh, ops[s][s2].round, deps=(s2,))
                new[s] = _insert(new[s], s2 + 1, token)
                new[d] = _insert(new[d], r1, Recv(s, "token", (), (), fresh, ops[d][r1].round))
                first = new[d][r1 + 1]
                new[d][r1 + 1] = dataclasses.replace(first, deps=tuple(sorted({*first.deps, r1})))
                variants.append(sched.with_ops(new, algorithm=f"{sched.algorithm}+reorder"))
            yield variants[0], variants[1], f"channel {s}->{d} tag {tag}"
            made += 1
            if made == limit:
                return


def two_rank_bcast(second_tag):
    """Root 0 sends blocks 0 and 1 on tag 0 and block 2 once block 1 is sent;
    rank 1 receives block 2 first and takes block 0 only after it."""
    ops = [
        [Send(1, "data", (0,), 0, 0), Send(1, "data", (1,), second_tag, 0),
         Send(1, "data", (2,), 5, 0, deps=(1,))],
        [Recv(0, "data", (2,), (2,), 5, 0), Recv(0, "data", (0,), (0,), 0, 0, deps=(0,)),
         Recv(0, "data", (1,), (1,), second_tag, 0)],
    ]
    return Schedule.from_ops("bcast", ops, nblocks=3, root=0)


def test_two_rank_bcast_deadlocks_under_posting_order():
    # block 1 on its own channel: every order the dependencies allow works
    assert verify(two_rank_bcast(second_tag=1)) == "noncommutative"
    # block 1 behind block 0 on channel 0->1 tag 0: rank 1 posts the receive
    # of block 1 only after that of block 0, which waits for block 2, which
    # rank 0 sends only once block 1 is received (rendezvous)
    with pytest.raises(VerificationError) as err:
        verify(two_rank_bcast(second_tag=0))
    assert str(err.value) == (
        "deadlock (cyclic wait under MPI posting order, rendezvous sends): "
        "rank 0 op 2 (send data[2] to 1, tag 5) waits for rank 0 op 1 (send data[1] to 1, tag 0) to complete, "
        "which completes only once rank 1 op 2 (recv data[1] from 0, tag 0) is posted (rendezvous), "
        "which cannot be posted before rank 1 op 1 (recv data[0] from 0, tag 0) (same channel 0->1 tag 0, "
        "MPI-3.1 §3.5), which waits for rank 1 op 0 (recv data[2] from 0, tag 5) to complete, "
        "which completes only once rank 0 op 2 (send data[2] to 1, tag 5) is posted (rendezvous)")


def test_butterfly_virtual_p6_reordered_channel():
    # P = 6: rank 0 plays roles 0 and 6, rank 1 roles 1 and 7, so in round 0
    # two messages share channel 0->1 tag 0 without any retagging
    sched = generate("allreduce", "butterfly_virtual", 6)
    control, mutant, channel = next(channel_mutants(sched))
    assert channel == "channel 0->1 tag 0"
    assert verify(control) == verify(sched) == "max"
    with pytest.raises(VerificationError, match=r"^deadlock .*rank 1 op \d+ \(recv tmp\[0\] from 0, tag 0\) "
                                                r"\(same channel 0->1 tag 0, MPI-3.1 §3.5\)"):
        verify(mutant)


# where one rank sends another two messages that the control shows to be
# independent; elsewhere (one message per rank pair and direction, or the
# second receive needs the first) the defect cannot arise
REORDERABLE = {"allgather/ring", "allreduce/bruck[n=2]", "allreduce/butterfly_virtual", "allreduce/rabenseifner",
               "allreduce/ring", "alltoall/two_phase_schedule", "reduce_scatter/parallel_pipeline",
               "reduce_scatter/ring"}


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_reordered_channel_is_rejected(case):
    info, params = case
    applied = 0
    for p in (2, 3, 4, 5, 6, 8):
        if not info.supports(p, params):
            continue
        sched = generate(info.collective, info.name, p, count=count_for(info.collective, p), **params)
        for control, mutant, channel in channel_mutants(sched, limit=2):
            try:
                verify(control)
            except VerificationError:
                continue      # m2 needs m1 even on a channel of its own: not this defect
            with pytest.raises(VerificationError, match=rf"^deadlock .*same {channel}, MPI-3\.1 §3\.5"):
                verify(mutant)
            applied += 1
    assert applied or case_id(case) not in REORDERABLE


# ---- (b) a receive sized as another block ------------------------------------------

def uneven(info, params):
    """The schedule at a small P with count = 2·nblocks + 1 (the first block
    one element longer), or None where blocks cannot differ."""
    p = small_p(info, params)
    try:
        nb = generate(info.collective, info.name, p, count=count_for(info.collective, p), **params).nblocks
        sched = generate(info.collective, info.name, p, count=2 * nb + 1, **params)
    except TopocollError:
        return None
    return sched if nb > 1 and len(set(sched.block_bytes.tolist())) > 1 else None


def size_mutants(sched, per_kind=3):
    """(what, ops): a receive whose sender naming (``blocks``) or storage
    (``into``) names a block of another size, for a few receives."""
    sizes = sched.block_bytes.tolist()
    recvs = [(r, i) for r, rank_ops in enumerate(sched.ops) for i, op in enumerate(rank_ops)
             if op.kind == "recv" and len(op.blocks)]
    for r, i in sorted({recvs[0], recvs[len(recvs) // 2], recvs[-1]})[:per_kind]:
        op = sched.ops[r][i]
        for field in ("blocks", "into"):
            named = list(getattr(op, field))
            named[0] = next(b for b in range(len(sizes)) if sizes[b] != sizes[named[0]])
            ops = [list(rank_ops) for rank_ops in sched.ops]
            ops[r][i] = dataclasses.replace(op, **{field: tuple(named)})
            yield field, r, i, sched.with_ops(ops, algorithm=f"{sched.algorithm}+resized")


UNEVEN = [c for c in CASES if uneven(*c) is not None]


def test_uneven_blocks_apply_to_every_multi_block_algorithm():
    # allgather/ring, allreduce/{rabenseifner, ring} and the reduce-scatters
    assert len({(info.collective, info.name) for info, _ in UNEVEN}) >= 10, [case_id(c) for c in UNEVEN]


@pytest.mark.parametrize("case", UNEVEN, ids=[case_id(c) for c in UNEVEN])
def test_receive_sized_as_another_block_is_rejected(case):
    sched = uneven(*case)
    verify(sched)
    for field, r, i, mutant in size_mutants(sched):
        expected = r"names blocks .* sends blocks \[.*\]" if field == "blocks" else r"receives \d+ B but .* sends \d+ B"
        with pytest.raises(VerificationError, match=rf"^rank {r} op {i} \(recv .* {expected} \(channel \d+->{r} tag \d+\)$"):
            verify(mutant)


def test_size_and_naming_messages():
    # count 3 in 2 blocks: block 0 holds 2 elements (16 B), block 1 one (8 B)
    def bcast(recv):
        return Schedule.from_ops("bcast", [[Send(1, "data", (0,), 4, 0)], [recv]], count=3, nblocks=2, root=0)
    with pytest.raises(VerificationError) as err:
        verify(bcast(Recv(0, "data", (1,), (0,), 4, 0)))
    assert str(err.value) == ("rank 1 op 0 (recv data[0] from 0, tag 4) names blocks [1] but the matching "
                              "rank 0 op 0 (send data[0] to 1, tag 4) sends blocks [0] (channel 0->1 tag 4)")
    with pytest.raises(VerificationError) as err:
        verify(bcast(Recv(0, "data", (0,), (1,), 4, 0)))
    assert str(err.value) == ("rank 1 op 0 (recv data[1] from 0, tag 4) receives 8 B but the matching "
                              "rank 0 op 0 (send data[0] to 1, tag 4) sends 16 B (channel 0->1 tag 4)")


# ---- (c) a block index out of range ------------------------------------------------

def range_mutants(sched):
    """(kind, field, rank, op index, mutant): the first op of each kind with
    its first block index moved to ``nblocks`` (just past the end)."""
    seen = set()
    fields = {"send": ("blocks",), "recv": ("into", "blocks"), "reduce": ("blocks",), "copy": ("src_blocks", "blocks")}
    for r, rank_ops in enumerate(sched.ops):
        for i, op in enumerate(rank_ops):
            for field in fields[op.kind]:
                if (op.kind, field) in seen or not len(getattr(op, field)):
                    continue
                seen.add((op.kind, field))
                named = list(getattr(op, field))
                named[0] = sched.nblocks
                ops = [list(rank_ops) for rank_ops in sched.ops]
                ops[r][i] = dataclasses.replace(op, **{field: tuple(named)})
                yield op.kind, field, r, i, sched.with_ops(ops, algorithm=f"{sched.algorithm}+out-of-range")


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_block_out_of_range_is_rejected(case):
    info, params = case
    p = small_p(info, params)
    sched = generate(info.collective, info.name, p, count=count_for(info.collective, p), **params)
    tried = 0
    for kind, field, r, i, mutant in range_mutants(sched):
        tried += 1
        with pytest.raises(VerificationError, match=rf"^rank {r} op {i} \({kind} .*\): block {sched.nblocks} of .* "
                                                    rf"is out of range, expected 0 <= block < {sched.nblocks}"):
            verify(mutant, op="max")
    assert tried > 0


def test_issue_example_recv_into_block_2_of_one_block_schedule():
    # butterfly_virtual at P = 5 holds every contribution more than once, so
    # under max a lost round-1 message left the result intact: the old
    # verifier passed it, the MPI executor raised IndexError
    sched = generate("allreduce", "butterfly_virtual", 5)
    assert sched.nblocks == 1
    i, op = next((i, op) for i, op in enumerate(sched.ops[2]) if op.kind == "recv" and op.round == 1)
    ops = [list(rank_ops) for rank_ops in sched.ops]
    ops[2][i] = dataclasses.replace(op, into=(2,))
    with pytest.raises(VerificationError) as err:
        verify(sched.with_ops(ops), op="max")
    assert str(err.value) == (f"rank 2 op {i} (recv {op.buf}[2] from {op.peer}, tag {op.tag}): block 2 of {op.buf} "
                              "is out of range, expected 0 <= block < 1 (the schedule's block count) "
                              f"(channel {op.peer}->2 tag {op.tag})")
    ops[2][i] = dataclasses.replace(op, blocks=(-1,))
    with pytest.raises(VerificationError, match=rf"^rank 2 op {i} .*: block -1 of the sender's blocks is out of range"):
        verify(sched.with_ops(ops), op="max")
