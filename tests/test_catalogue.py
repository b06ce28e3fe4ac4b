"""Every registered generator, every parameter set of its sweep, P = 1..130:
the symbolic verifier proves it, the reference executor agrees with a serial
reduction (exactly, on integers; and on a non-commutative operator where the
algorithm claims to support one), and the array view equals the one derived
from the per-rank operations. Then the mutation test of issue 2 §3.

Every (case, P) is one test. ``make test`` runs a seeded sample of P per case
(:func:`sample_ps`: every supported P ≤ 12, then one P above 12 drawn from each
of: powers of two, primes, P just above a power of two, any P); the other P
carry the ``exhaustive`` marker and run under ``make test-all``. The seed is
``TOPOCOLL_TEST_SEED`` (default 20240), printed in pytest's header."""

import functools
import os
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


# ---- the seeded sample of P that `make test` runs --------------------------

SEED = int(os.environ.get("TOPOCOLL_TEST_SEED", "20240"))
SMALL_P = 12            # every supported P up to here, in every run


def is_power_of_two(p):
    return p & (p - 1) == 0


def is_prime(p):
    return p > 1 and all(p % d for d in range(2, int(p ** 0.5) + 1))


# one seeded draw above SMALL_P of each kind (any supported P where a case
# supports none of that kind)
KINDS = (is_power_of_two, is_prime, lambda p: is_power_of_two(p - 1), lambda p: True)


def sample_ps(case, ps):
    """The P of ``ps`` that ``make test`` runs for ``case``: every P ≤ 12 and
    one seeded draw above 12 per kind of :data:`KINDS`."""
    rng = random.Random(f"{SEED}/{case_id(case)}")
    chosen = [p for p in ps if p <= SMALL_P]
    for kind in KINDS:
        rest = [p for p in ps if p > SMALL_P and p not in chosen]
        pool = [p for p in rest if kind(p)] or rest
        if pool:
            chosen.append(rng.choice(pool))
    return sorted(chosen)


def sweep(limit_of):
    """One ``(case, p)`` per supported P of every case, P ≤ ``limit_of(info)``;
    the P outside the sample marked ``exhaustive``."""
    out = []
    for case in CASES:
        limit = limit_of(case[0])
        ps = supported(*case, limit=limit)
        assert ps, f"{case_id(case)} supports no P in 1..{limit}"
        sample = set(sample_ps(case, ps))
        for p in ps:
            marks = () if p in sample else (pytest.mark.exhaustive,)
            out.append(pytest.param(case, p, marks=marks, id=f"{case_id(case)}-P{p}"))
    return out


@pytest.mark.parametrize("case, p", sweep(max_p))
def test_verifier_and_reference_agree(case, p):
    info, params = case
    sched = generate(info.collective, info.name, p, count=count_for(info, p), **params)
    strictest = verify(sched)       # the default: the strictest operator the schedule claims
    if not info.needs.commutative and not sched.needs.commutative and info.collective in REDUCTIONS:
        if strictest != "noncommutative":
            verify(sched, op="noncommutative")
        check_against_reference(sched, affine_inputs(p, sched.count, seed=p), affine)
        if p > SMALL_P:
            # exact for a non-commutative operator is exact for every associative
            # one: above SMALL_P the integer run below would prove nothing more
            return
    op = "max" if info.needs.idempotent else "sum"
    check_against_reference(sched, integer_inputs(p, sched.count, seed=p), op)


@pytest.mark.parametrize("case, p", sweep(lambda info: 40))
def test_array_view_matches_per_rank_view(case, p):
    info, params = case
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
    if info.needs.idempotent:
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




@functools.cache
def large_ps(index, limit):
    """The P in 131..``limit`` that ``SINGLE_BLOCK[index]`` supports: drawn
    from directly, so that every example verifies a schedule."""
    info, params = SINGLE_BLOCK[index]
    ps = [p for p in range(MAX_P + 1, limit + 1) if info.supports(p, params)]
    assert ps, f"{case_id(SINGLE_BLOCK[index])} supports no P in {MAX_P + 1}..{limit}"
    return ps


def verify_large_p(index, data, limit):
    info, params = SINGLE_BLOCK[index]
    p = data.draw(st.sampled_from(large_ps(index, limit)), label="p")
    sched = generate(info.collective, info.name, p, **params)
    assert sched.p == p
    verify(sched)


@pytest.mark.parametrize("index", range(len(SINGLE_BLOCK)), ids=[case_id(c) for c in SINGLE_BLOCK])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_large_p_verifies(index, data):
    verify_large_p(index, data, limit=1024)


@pytest.mark.exhaustive
@pytest.mark.parametrize("index", range(len(SINGLE_BLOCK)), ids=[case_id(c) for c in SINGLE_BLOCK])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_large_p_verifies_up_to_4096(index, data):
    verify_large_p(index, data, limit=4096)
