"""The reference executor decides what each rank must end with from the
collective's definition, not from the schedule's own metadata, and runs the
ops with its own interpreter."""

import dataclasses

import numpy as np
import pytest

from topocoll.errors import VerificationError
from topocoll.schedules import generate
from topocoll.schedules.ir import Recv, Reduce, Schedule, Send
from topocoll.verify import check_against_reference, execute, integer_inputs, verify
from topocoll.verify.reference import defined_result_block


@pytest.mark.parametrize("name, p, params, blocks", [
    # Ma et al. 1994: position v ends with bitreverse(v); 3 bits: 1 = 001 -> 100 = 4, 3 = 011 -> 110 = 6
    ("binary_swap", 8, {}, [0, 4, 2, 6, 1, 5, 3, 7]),
    # radix-k paper Fig. 2, k = [4, 3]: member c0 = v mod 4 of the row keeps quarter c0 (3 blocks each),
    # member c1 = v // 4 of the column keeps third c1 of it: block 3·c0 + c1
    ("radix_k", 12, {"k": [4, 3]}, [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]),
    # one group of three: survivors 0, 1 split the image in slots of 2 and 1 blocks; 0 hands block 1 to 2
    ("two_three_swap", 3, {}, [0, 2, 1]),
    # p = 5: groups {0, 1}, {2, 3, 4}; survivors u = 0..3 at positions 0..3 in slots bitreverse(u) =
    # 0, 2, 1, 3; u = 2 (position 2) carries position 4, so slot 1 weighs 2 blocks: slots start at
    # 0, 1, 3, 4 -> positions 0, 1, 2, 3, 4 end with blocks 0, 3, 1, 4, 2
    ("two_three_swap", 5, {}, [0, 3, 1, 4, 2]),
    # the pipeline in depth order 2, 0, 1: rank 0 at position 1, rank 1 at 2, rank 2 at 0
    ("parallel_pipeline", 3, {"depth_order": [2, 0, 1]}, [1, 2, 0]),
    # direct send: rank i composites block i whatever the depth order (Cavin & Demengeon §2.2.1)
    ("direct_send", 3, {"depth_order": [2, 0, 1]}, [0, 1, 2]),
    ("ring", 4, {}, [0, 1, 2, 3]),
])
def test_result_blocks_follow_the_papers(name, p, params, blocks):
    sched = generate("reduce_scatter", name, p, count=p, **params)
    assert [defined_result_block(sched, r) for r in range(p)] == blocks
    assert [tuple(sched.result_blocks(r)) for r in range(p)] == [(b,) for b in blocks]
    check_against_reference(sched, integer_inputs(p, p, seed=p), "sum")


def _relabel(op, new):
    """``op`` with every block index ``b`` read as ``new(b)``."""
    fields = {"blocks": tuple(map(new, op.blocks))}
    if op.kind == "recv":
        fields["into"] = tuple(map(new, op.into))
    if op.kind == "copy":
        fields["src_blocks"] = tuple(map(new, op.src_blocks))
    return dataclasses.replace(op, **fields)


@pytest.mark.parametrize("p", [3, 5])
def test_a_consistently_rotated_ring_verifies_but_is_no_reduce_scatter(p):
    """The ring reduce-scatter with every block index shifted by one, and
    metadata that says so (rank r ends with block r + 1): a correct
    computation whose result lies where the schedule claims, so the verifier
    (which takes the claim) proves it, but MPI's reduce-scatter puts block r
    on rank r, and the reference says so."""
    ring = generate("reduce_scatter", "ring", p, count=p)
    ops = [[_relabel(op, lambda b: (b + 1) % p) for op in rank_ops] for rank_ops in ring.ops]
    rotated = Schedule.from_ops("reduce_scatter", ops, algorithm="ring", count=p, nblocks=p,
                                result_blocks=lambda r: ((r + 1) % p,))
    assert verify(rotated, op="sum") == "sum"
    with pytest.raises(AssertionError, match="rank 0 block 0 "):
        check_against_reference(rotated, integer_inputs(p, p, seed=p), "sum")


def test_result_blocks_that_misname_the_result_are_caught():
    """Binary swap's ops unchanged, its metadata claiming block r on rank r:
    the data are right, the claim (which ``composite`` and the MPI layer
    assemble pictures from) is not."""
    sched = generate("reduce_scatter", "binary_swap", 4, count=4)
    lying = dataclasses.replace(sched, result_blocks=lambda r: (r,))
    with pytest.raises(AssertionError, match=r"result_blocks\(1\) = \(1,\), but the definition puts block 2"):
        check_against_reference(lying, integer_inputs(4, 4, seed=4), "sum")


def test_execute_interprets_the_ops_itself():
    """Two ranks, two messages on one channel: the first send meets the first
    receive (list order), and each reduce combines in its stated order."""
    ops = [
        [Send(1, "data", (0,), 7, 0), Send(1, "data", (1,), 7, 0)],
        [Recv(0, "tmp", (0,), (1,), 7, 0), Recv(0, "tmp", (1,), (0,), 7, 0),
         Reduce("data", "tmp", (0, 1), "left", 1, (0, 1))],
    ]
    sched = Schedule.from_ops("reduce_scatter", ops, count=2, nblocks=2)
    out = execute(sched, [np.array([1, 2]), np.array([10, 20])], op=lambda a, b: 100 * a + b)
    # rank 1: tmp[1] = 1, tmp[0] = 2; data[b] = tmp[b] ∘ data[b] with ∘ = 100·a + b
    assert out[1].tolist() == [2 * 100 + 10, 1 * 100 + 20]
    assert out[0].tolist() == [1, 2]


@pytest.mark.parametrize("ops, message", [
    ([[Send(1, "data", (0,), 0, 0)], []], "1 sends from rank 0 to rank 1 with tag 0 but 0 receives"),
    ([[Reduce("data", "tmp", (0,), "left", 0)], []], r"reads tmp\[0\] before anything was written"),
    ([[Recv(1, "data", (0,), (0,), 0, 0), Send(1, "data", (0,), 0, 0, (0,))],
      [Recv(0, "data", (0,), (0,), 0, 0), Send(0, "data", (0,), 0, 0, (0,))]], "never became ready"),
])
def test_execute_names_what_cannot_run(ops, message):
    sched = Schedule.from_ops("allreduce", ops, count=1)
    with pytest.raises(VerificationError, match=message):
        execute(sched, [np.zeros(1, np.int64)] * 2)
