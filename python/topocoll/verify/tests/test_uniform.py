"""Same result on every rank (issue 16, item 7): the expression-tree analysis
of :mod:`topocoll.verify.uniform` against the catalogue's rules and against
real float32 arithmetic in the reference executor."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import SpecError
from topocoll.schedules.collectives import expected_contributions
from topocoll.schedules.ir import LEFT, RIGHT
from topocoll.schedules.registry import catalogue, generate, lookup
from topocoll.verify import execute
from topocoll.verify.uniform import (
    ALLREDUCE_SAME_RESULT, NO_DATA, OPERANDS, catalogue_identical, identical_results, operands_for, same_result,
    uniformity_report,
)

ALLREDUCE = [(name, params) for (c, name), info in catalogue().items() if c == "allreduce"
             for params in info.sweep]
#: P where Bruck and the dissemination start to differ, non-powers of two, primes, powers of two
SMALL_PS = [*range(1, 13), 16, 17, 31, 32, 33]


def analysed(collective, name, p, params, operands="commutative"):
    """The analysis of the schedule at ``p`` ranks, every block non-empty."""
    schedule = generate(collective, name, p, **params, count=2 * p)
    return uniformity_report(schedule, operands=operands)


def float32_inputs(p, count, seed):
    """Values spread over six decades, so different bracketings round differently."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(count) * 10.0 ** rng.uniform(-3, 3, count)).astype(np.float32)
            for _ in range(p)]


def bit_differences(schedule, outputs):
    """(rank, block, reference rank) where a result's bits differ from those
    of the lowest rank holding the same result, as the report lists them."""
    bounds, found, reference = schedule.bounds, [], {}
    for rank in range(schedule.p):
        for block, contribution in expected_contributions(schedule, rank).items():
            bits = outputs[rank][bounds[block]:bounds[block + 1]].view(np.uint32)
            if bits.size == 0:
                continue
            ref_rank, ref_bits = reference.setdefault(contribution, (rank, bits))
            if not np.array_equal(bits, ref_bits):
                found.append((rank, block, ref_rank))
    return tuple(found)


# ---- the catalogue's rules hold --------------------------------------------

def test_every_allreduce_algorithm_is_analysed():
    names = {name for (c, name) in catalogue() if c == "allreduce"}
    assert names == set(ALLREDUCE_SAME_RESULT)


@pytest.mark.parametrize("name, params", ALLREDUCE, ids=lambda v: str(v))
def test_allreduce_rule_matches_the_analysis(name, params):
    info, rule = lookup("allreduce", name), ALLREDUCE_SAME_RESULT[name]
    for p in SMALL_PS:
        if info.supports(p, params):
            for operands in OPERANDS:
                assert analysed("allreduce", name, p, params, operands).identical == rule.holds(p, operands), \
                    (name, params, p, operands)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(ALLREDUCE), st.integers(1, 70))
def test_allreduce_rule_matches_the_analysis_at_random_p(case, p):
    name, params = case
    info = lookup("allreduce", name)
    if info.supports(p, params):
        assert analysed("allreduce", name, p, params).identical == ALLREDUCE_SAME_RESULT[name].holds(p)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name, params", ALLREDUCE, ids=lambda v: str(v))
def test_allreduce_rule_up_to_130(name, params):
    info, rule = lookup("allreduce", name), ALLREDUCE_SAME_RESULT[name]
    for p in range(1, 131):
        if info.supports(p, params):
            assert analysed("allreduce", name, p, params).identical == rule.holds(p), (name, params, p)
            if p <= 64:
                assert analysed("allreduce", name, p, params, "ordered").identical == rule.holds(p, "ordered")


@pytest.mark.parametrize("key", [k for k in catalogue() if k[0] != "allreduce"], ids="/".join)
def test_other_collectives_agree_by_definition(key):
    info = catalogue()[key]
    for params in info.sweep:
        for p in (1, 2, 3, 4, 5, 8):
            if info.supports(p, params):
                schedule = info.generate(p, **params)
                assert uniformity_report(schedule).identical, (key, params, p)
                assert same_result(*key).holds(p)


# ---- the analysis agrees with float32 arithmetic ----------------------------

@pytest.mark.parametrize("name, params, p", [
    ("bruck", {"n": 1}, 3), ("bruck", {"n": 1}, 4), ("bruck", {"n": 2}, 4), ("bruck", {"n": 1}, 7),
    ("nway_dissemination", {"n": 1}, 3), ("nway_dissemination", {"n": 1}, 4), ("nway_dissemination", {"n": 2}, 9),
    ("pairwise_exchange", {}, 3), ("pairwise_exchange", {}, 6), ("pairwise_exchange", {}, 8),
    ("binomial", {}, 5), ("rabenseifner", {}, 6), ("ring", {}, 5),
])
def test_float32_bits_differ_exactly_where_the_trees_do(name, params, p):
    schedule = generate("allreduce", name, p, **params, count=64 * p)
    report = uniformity_report(schedule)
    outputs = execute(schedule, float32_inputs(p, schedule.count, seed=16 + p), op="sum")
    assert bit_differences(schedule, outputs) == report.differing
    assert report.identical == ALLREDUCE_SAME_RESULT[name].holds(p)


def test_bruck_at_four_ranks_chains_from_each_rank():
    """Every rank r computes x_r∘(x_{r+1}∘(x_{r+2}∘x_{r+3})): four chains, so
    three ranks differ from rank 0, with or without operand order."""
    schedule = generate("allreduce", "bruck", 4, count=256)
    for operands in ("commutative", "ordered"):
        assert [r for r, _, _ in uniformity_report(schedule, operands=operands).differing] == [1, 2, 3]
    outputs = execute(schedule, float32_inputs(4, 256, seed=7), op="sum")
    for rank in (1, 2, 3):
        assert not np.array_equal(outputs[rank].view(np.uint32), outputs[0].view(np.uint32))


def test_dissemination_at_four_ranks_rank_two_swaps_rank_zeros_operands():
    """Rank 0 brackets (x0∘x3)∘(x1∘x2), rank 2 (x2∘x1)∘(x3∘x0): the same tree
    up to operand order, so the same float sum bit for bit; ranks 1 and 3
    bracket (x0∘x1)∘(x2∘x3)."""
    schedule = generate("allreduce", "nway_dissemination", 4, count=256)
    assert [r for r, _, _ in uniformity_report(schedule).differing] == [1, 3]
    assert [r for r, _, _ in uniformity_report(schedule, operands="ordered").differing] == [1, 2, 3]
    outputs = execute(schedule, float32_inputs(4, 256, seed=7), op="sum")
    assert np.array_equal(outputs[2].view(np.uint32), outputs[0].view(np.uint32))
    assert not np.array_equal(outputs[1].view(np.uint32), outputs[0].view(np.uint32))


def test_integer_sums_agree_whatever_the_trees():
    schedule = generate("allreduce", "bruck", 5, count=40)
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-2**31, 2**31 - 1, 40, dtype=np.int32) for _ in range(5)]
    outputs = execute(schedule, inputs, op="sum")
    assert all(np.array_equal(out, outputs[0]) for out in outputs)
    assert identical_results(schedule, "sum", np.int32) and not identical_results(schedule, "sum", np.float32)


def swapped_first_reduce(schedule, rank):
    """``schedule`` with ``rank``'s first reduction taking its operands the other way round."""
    ops = [list(rank_ops) for rank_ops in schedule.ops]
    idx = next(i for i, op in enumerate(ops[rank]) if op.kind == "reduce")
    ops[rank][idx] = dataclasses.replace(ops[rank][idx], side=RIGHT if ops[rank][idx].side == LEFT else LEFT)
    return schedule.with_ops(ops)


def test_operand_order_matters_only_when_ordered():
    original = generate("allreduce", "pairwise_exchange", 4, count=128)
    mutant = swapped_first_reduce(original, 1)
    assert uniformity_report(mutant).identical
    ordered = uniformity_report(mutant, operands="ordered")
    # rank 1 holds x1∘x0 after round 0 and rank 3 receives it in round 1
    assert [r for r, _, _ in ordered.differing] == [1, 3]
    assert ordered.first.rank == 1 and ordered.first.reference == 0
    assert "x1∘x0" in ordered.first.found and "x0∘x1" in ordered.first.expected
    outputs = execute(mutant, float32_inputs(4, 128, seed=1), op="sum")
    assert bit_differences(mutant, outputs) == ()
    # the cache keys generated schedules only: the mutant (same label) is analysed itself
    assert identical_results(original, "noncommutative") and not identical_results(mutant, "noncommutative")
    assert original.label() == mutant.label()


# ---- the API ----------------------------------------------------------------

def test_report_names_rank_block_and_both_trees():
    report = uniformity_report(generate("allreduce", "bruck", 3))
    assert not report.identical and report.differing == ((1, 0, 0), (2, 0, 0))
    assert str(report.first) == "rank 1 data[0] = ((x0∘x2)∘x1), rank 0 data[0] = (x0∘(x1∘x2))"


def test_long_trees_are_cut():
    report = uniformity_report(generate("allreduce", "bruck", 64))
    assert report.first.found.endswith(" …") and len(report.first.found) <= 122


def test_empty_blocks_and_barriers_hold_nothing_to_compare():
    assert uniformity_report(generate("allreduce", "ring", 4, count=1)).identical   # 3 of 4 blocks empty
    barrier = generate("barrier", "dissemination", 5)
    assert barrier.block_bytes.sum() == 0 and uniformity_report(barrier).identical
    assert same_result("barrier", "dissemination") is NO_DATA


@pytest.mark.parametrize("op, dtype, expected", [
    ("sum", None, "commutative"), ("sum", "float32", "commutative"), ("prod", "complex128", "commutative"),
    ("sum", "int64", None), ("prod", "uint8", None), ("max", "int32", None), ("band", "float64", None),
    ("xor", None, None), ("lor", "float32", None),
    ("max", "float32", "ordered"), ("min", None, "ordered"), ("noncommutative", "int64", "ordered"),
    ("over", "float32", "ordered"),
])
def test_operands_for(op, dtype, expected):
    assert operands_for(op, dtype) == expected


def test_catalogue_identical_follows_the_rule_and_the_operator():
    assert catalogue_identical("allreduce", "bruck", 2) and not catalogue_identical("allreduce", "bruck", 3)
    assert not catalogue_identical("allreduce", "bruck", 2, "max", "float64")      # ±0: operand order
    assert catalogue_identical("allreduce", "bruck", 3, "max", "int16")
    assert catalogue_identical("allreduce", "ring", 100_000, "prod", "float32")
    assert catalogue_identical("reduce_scatter", "radix_k", 64) and catalogue_identical("barrier", "dissemination", 9)
    assert catalogue_identical("allreduce", "no_such_algorithm", 4) is None


def test_bad_names_are_one_line_errors():
    with pytest.raises(SpecError, match="operator 'avg', expected one of sum"):
        operands_for("avg")
    with pytest.raises(SpecError, match="operands='loose', expected one of commutative, ordered"):
        uniformity_report(generate("allreduce", "ring", 2), operands="loose")


def test_algorithms_lists_the_guarantee():
    # a separate process: no module imports the CLI (tests/test_cli.py)
    done = subprocess.run([sys.executable, "-m", "topocoll", "algorithms", "allreduce"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "same result on every rank" in out.splitlines()[0]
    rows = {line.split()[1]: line for line in out.splitlines()[2:]}
    assert "P ≤ 2 only" in rows["bruck"] and "P ≤ 2 only" in rows["nway_dissemination"]
    assert "P ≤ 2 only" not in rows["pairwise_exchange"] and " yes " in rows["pairwise_exchange"]
