"""Every registered generator, every parameter set of its sweep, P = 1..130:
the symbolic verifier proves it, the reference executor agrees with a serial
reduction (exactly, on integers; and on a non-commutative operator where the
algorithm claims to support one), and the array view equals the one derived
from the per-rank operations. Then the mutation test of issue 2 §3."""

import random

import pytest

from topocoll.errors import VerificationError
from topocoll.schedules import catalogue, generate
from topocoll.verify.testing import assert_views_equal
from topocoll.verify import affine, affine_inputs, check_against_reference, integer_inputs, verify

CATALOGUE = catalogue()
CASES = [(info, params) for info in CATALOGUE.values() for params in info.sweep]
MAX_P = 130
# collectives whose result depends on the operator (the others only move data)
REDUCTIONS = ("allreduce", "reduce", "reduce_scatter")


def case_id(case):
    info, params = case
    shown = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{info.collective}/{info.name}" + (f"[{shown}]" if shown else "")


def count_for(info, p):
    # uneven blocks wherever the collective allows them
    return 3 * p if info.collective == "alltoall" else 3 * p + 1


def supported(info, params, limit=MAX_P):
    return [p for p in range(1, limit + 1) if info.supports(p, params)]


# The issues' ranges: allreduce family and all-to-all P = 1..130 (issues 2, 4);
# image compositing P = 1..64 (issue 3), whose direct-send-like schedules are P².
MAX_P_BY_MODULE = {"compositing": 64}


def max_p(info):
    return MAX_P_BY_MODULE["compositing"] if ".compositing" in info.func.__module__ else MAX_P


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_verifier_and_reference_agree(case):
    info, params = case
    ps = supported(info, params, limit=max_p(info))
    assert ps, f"{case_id(case)} supports no P in 1..{max_p(info)}"
    op = "max" if info.operators == "idempotent" else "sum"
    for p in ps:
        sched = generate(info.collective, info.name, p, count=count_for(info, p), **params)
        verify(sched)
        check_against_reference(sched, integer_inputs(p, sched.count, seed=p), op)
        if info.noncommutative and not sched.needs.commutative and info.collective in REDUCTIONS:
            verify(sched, op="noncommutative")
            check_against_reference(sched, affine_inputs(p, sched.count, seed=p), affine)


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_array_view_matches_per_rank_view(case):
    info, params = case
    for p in supported(info, params, limit=40):
        assert_views_equal(generate(info.collective, info.name, p, count=count_for(info, p), **params))


# ---- mutation test (issue 2 §3) --------------------------------------------

def _messages(ops):
    """(src, send index, dst, recv index) of every matched message."""
    from topocoll.verify.replay import match
    from topocoll.schedules.ir import Schedule

    pairs = match(Schedule.from_ops("allreduce", ops))
    return [(s, si, d, ri) for (s, si), (d, ri) in sorted(pairs.items())]


def _remove(rank_ops, idx):
    """Drop op ``idx``; renumber deps, forgetting those on the dropped op."""
    out = []
    for i, op in enumerate(rank_ops):
        if i == idx:
            continue
        deps = tuple(d - (d > idx) for d in op.deps if d != idx)
        out.append(type(op)(**{**_fields(op), "deps": deps}))
    return out


def _insert_copy(rank_ops, idx):
    """Insert a copy of op ``idx`` right after it (a duplicated message)."""
    out = []
    for i, op in enumerate(rank_ops):
        deps = tuple(d + (d > idx) for d in op.deps)
        out.append(type(op)(**{**_fields(op), "deps": deps}))
        if i == idx:
            out.append(op)
    return out


def _fields(op):
    return {name: getattr(op, name) for name in op.__dataclass_fields__}


def mutants(sched, rng, per_kind=6):
    ops = sched.ops
    msgs = _messages(ops)
    picks = msgs if len(msgs) <= per_kind else [msgs[0], msgs[-1], *rng.sample(msgs, per_kind - 2)]
    for s, si, d, ri in picks:
        dropped = [list(r) for r in ops]
        if s == d:
            continue
        dropped[s] = _remove(ops[s], si)
        dropped[d] = _remove(ops[d], ri)
        yield f"drop {s}->{d}", dropped
        dup = [list(r) for r in ops]
        dup[s] = _insert_copy(ops[s], si)
        dup[d] = _insert_copy(ops[d], ri)
        yield f"duplicate {s}->{d}", dup
        redirected = [list(r) for r in ops]
        new_peer = next(q for q in range(d + 1, d + sched.p + 1) if q % sched.p not in (s, d)) % sched.p \
            if sched.p > 2 else d
        op = ops[s][si]
        redirected[s] = list(ops[s])
        redirected[s][si] = type(op)(**{**_fields(op), "peer": new_peer if sched.p > 2 else s})
        yield f"redirect {s}->{d} to {redirected[s][si].peer}", redirected


def mutation_ps(info, params):
    """Small P where every message matters: for idempotent-only algorithms the
    exact sizes (redundant messages would survive a drop legitimately)."""
    if info.operators == "idempotent":
        n = params.get("n", 1)
        return [p for p in ((n + 1) ** 1, (n + 1) ** 2, (n + 1) ** 3) if p <= 64 and info.supports(p, params)]
    return [p for p in (2, 3, 5, 8, 12, 17) if info.supports(p, params)]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_verifier_rejects_every_mutant(case):
    info, params = case
    rng = random.Random(7)
    tried = 0
    for p in mutation_ps(info, params):
        sched = generate(info.collective, info.name, p, count=count_for(info, p), **params)
        for what, ops in mutants(sched, rng):
            tried += 1
            with pytest.raises(VerificationError):
                verify(sched.with_ops(ops, algorithm=f"{sched.algorithm}+{what}"))
    assert tried > 0, f"{case_id(case)}: no mutant tried"


# ---- hypothesis: large P for the cheap (single-block) generators -----------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

def _single_block(info, params):
    p = next(p for p in range(4, 200) if info.supports(p, params))
    return generate(info.collective, info.name, p, **params).nblocks == 1


SINGLE_BLOCK = [c for c in CASES if _single_block(*c)]


@pytest.mark.parametrize("case", SINGLE_BLOCK, ids=[case_id(c) for c in SINGLE_BLOCK])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=st.integers(min_value=131, max_value=4096))
def test_large_p_verifies(case, p):
    info, params = case
    if not info.supports(p, params):
        return
    sched = generate(info.collective, info.name, p, **params)
    verify(sched)
