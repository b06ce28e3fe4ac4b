"""The verifier catches every defect class of issue 2 §3, with a diagnosis
naming rank, operation, block, expected and found."""

import pytest

from topocoll.errors import VerificationError
from topocoll.schedules.ir import (LEFT, RIGHT, OperatorNeeds, Recv, Reduce, Schedule,
                                   ScheduleBuilder, Send)
from topocoll.verify import verify


def two_rank_allreduce(side0=RIGHT, side1=LEFT):
    """Rank 0 and 1 swap their data and combine it in rank order."""
    b = ScheduleBuilder(2)
    for me, peer, side in ((0, 1, side0), (1, 0, side1)):
        b.send(me, peer, (0,), round=0)
        b.recv(me, peer, (0,), buf="tmp", round=0)
        b.reduce(me, (0,), src="tmp", side=side, round=0)
    return Schedule.from_ops("allreduce", b.build())


def test_correct_exchange_passes_noncommutative():
    assert verify(two_rank_allreduce()) == "noncommutative"


def test_wrong_order_is_reported_for_noncommutative_only():
    sched = two_rank_allreduce(side0=LEFT)  # rank 0 computes x1∘x0
    with pytest.raises(VerificationError, match=r"rank 0 op 2 .*non-adjacent pieces x1 \(front\) and x0"):
        verify(sched, op="noncommutative")
    assert verify(sched, op="sum") == "sum"


def test_missing_contribution():
    b = ScheduleBuilder(3)
    b.send(1, 0, (0,), round=0)
    b.recv(0, 1, (0,), buf="tmp", round=0)
    b.reduce(0, (0,), src="tmp", side=RIGHT, round=0)
    sched = Schedule.from_ops("reduce", b.build(), root=0)
    with pytest.raises(VerificationError, match=r"rank 0 data\[0\] misses contribution x2: found x0..x1, expected x0..x2"):
        verify(sched)


def test_double_count_rejected_for_sum_accepted_for_max():
    b = ScheduleBuilder(2)
    for rnd in (0, 1):
        b.send(1, 0, (0,), round=rnd)
        b.recv(0, 1, (0,), buf="tmp", round=rnd)
        b.reduce(0, (0,), src="tmp", side=RIGHT, round=rnd)
    sched = Schedule.from_ops("reduce", b.build(), root=0, needs=OperatorNeeds(commutative=True))
    with pytest.raises(VerificationError, match=r"counts contribution x1 twice"):
        verify(sched, op="sum")
    assert verify(sched, op="max") == "max"


def test_unmatched_receive_and_unreceived_send():
    ops = [[Send(1, "data", (0,), 0, 0)], []]
    with pytest.raises(VerificationError, match=r"rank 0 op 0 \(send data\[0\] to 1, tag 0\): send never received"):
        verify(Schedule.from_ops("bcast", ops, root=0))
    ops = [[], [Recv(0, "data", (0,), (0,), 0, 0)]]
    with pytest.raises(VerificationError, match=r"rank 1 op 0 \(recv data\[0\] from 0, tag 0\): no matching send"):
        verify(Schedule.from_ops("bcast", ops, root=0))


def test_tag_mismatch_is_unmatched():
    ops = [[Send(1, "data", (0,), 5, 0)], [Recv(0, "data", (0,), (0,), 6, 0)]]
    with pytest.raises(VerificationError, match="tag 5"):
        verify(Schedule.from_ops("bcast", ops, root=0))


def test_cyclic_wait_is_deadlock():
    # each rank receives before it sends, and the send depends on the receive
    ops = [
        [Recv(1, "tmp", (0,), (0,), 0, 0), Send(1, "data", (0,), 0, 0, deps=(0,))],
        [Recv(0, "tmp", (0,), (0,), 0, 0), Send(0, "data", (0,), 0, 0, deps=(0,))],
    ]
    with pytest.raises(VerificationError, match=r"deadlock .*rank 0 op 1 .*rank 1 op 1"):
        verify(Schedule.from_ops("allreduce", ops, needs=OperatorNeeds(commutative=True)))


def test_read_before_write():
    ops = [[Send(1, "tmp", (0,), 0, 0)], [Recv(0, "data", (0,), (0,), 0, 0)]]
    with pytest.raises(VerificationError, match=r"rank 0 op 0 .*reads tmp\[0\] before anything was written"):
        verify(Schedule.from_ops("bcast", ops, root=0))


def test_race_without_dependency():
    # the reduction does not depend on the receive that fills its source
    ops = [
        [Send(1, "data", (0,), 0, 0), Recv(1, "tmp", (0,), (0,), 0, 0),
         Reduce("data", "tmp", (0,), RIGHT, 0, deps=(0,))],
        [Send(0, "data", (0,), 0, 0), Recv(0, "tmp", (0,), (0,), 0, 0),
         Reduce("data", "tmp", (0,), LEFT, 0, deps=(0, 1))],
    ]
    with pytest.raises(VerificationError, match=r"rank 0 op 2 .*(before anything was written|without depending)"):
        verify(Schedule.from_ops("allreduce", ops))


def test_reducing_different_blocks():
    b = ScheduleBuilder(2)
    b.send(1, 0, (1,), round=0)
    b.recv(0, 1, (1,), buf="tmp", into=(0,), round=0)
    b.reduce(0, (0,), src="tmp", side=RIGHT, round=0)
    sched = Schedule.from_ops("reduce", b.build(), nblocks=2, root=0)
    with pytest.raises(VerificationError, match=r"reduces data of block 0 with data of block 1"):
        verify(sched)


def test_peer_out_of_range():
    ops = [[Send(7, "data", (0,), 0, 0)], []]
    with pytest.raises(VerificationError, match=r"peer 7 is not a rank of 0..1"):
        verify(Schedule.from_ops("bcast", ops, root=0))


def test_barrier_needs_transitive_knowledge():
    # 0 -> 1 -> 2 only: rank 0 never hears from anyone
    b = ScheduleBuilder(3)
    for src, dst, rnd in ((0, 1, 0), (1, 2, 1)):
        b.send(src, dst, (0,), round=rnd)
        b.recv(dst, src, (0,), buf="tmp", round=rnd)
        b.reduce(dst, (0,), src="tmp", side=RIGHT, round=rnd)
    sched = Schedule.from_ops("barrier", b.build(), itemsize=0,
                              needs=OperatorNeeds(commutative=True, idempotent=True))
    with pytest.raises(VerificationError, match=r"rank 0 data\[0\] misses contributions x1, x2"):
        verify(sched)
