"""The typed registry: one OperatorNeeds, one supports predicate, bounded
parameters, closed-form costs equal to the counted ones, and Schedule.params
that round-trip through generate."""

import math
import random
import time

import numpy as np
import pytest

from topocoll.errors import SpecError, TopocollError
from topocoll.schedules import OperatorNeeds, catalogue, generate, lookup, report
from topocoll.schedules.registry import MAX_P, algorithm, mpi_schedule, needs_text, operator_allows
from topocoll.schedules.sizes import MAX_BYTES, from_bytes, message_bytes, schedule_args

CATALOGUE = catalogue()
ENTRIES = list(CATALOGUE.values())
CASES = [(info, params) for info in ENTRIES for params in info.sweep]


def entry_id(info):
    return f"{info.collective}/{info.name}"


def case_id(case):
    info, params = case
    shown = ",".join(f"{k}={v}" for k, v in params.items())
    return entry_id(info) + (f"[{shown}]" if shown else "")


def count_for(info, p, extra=1):
    return 3 * p if info.collective == "alltoall" else 3 * p + extra


# ---- OperatorNeeds: one description -------------------------------------------

@pytest.mark.parametrize("info", ENTRIES, ids=entry_id)
def test_needs_is_one_operator_needs_and_bounds_every_schedule(info):
    assert isinstance(info.needs, OperatorNeeds)
    assert needs_text(info.needs) in ("associative", "commutative", "commutative, idempotent")
    for p in (1, 2, 3, 4, 5, 8, 9, 12, 16):
        if not info.supports(p, info.compare):
            continue
        sched = info.generate(p, **info.compare)
        # with its default parameters a schedule never needs more than the entry claims
        assert operator_allows(sched.needs, commutative=info.needs.commutative,
                               idempotent=info.needs.idempotent), (p, sched.needs)


REDUCING = [(info, params) for info, params in CASES
            if info.collective in ("allreduce", "reduce_scatter", "reduce", "barrier")]
#: the four operator classes, as the verifier names them: (commutative, idempotent)
OPERATOR_CLASSES = {"sum": (True, False), "max": (True, True), "noncommutative": (False, False),
                    "noncommutative_idempotent": (False, True)}


@pytest.mark.parametrize("case", REDUCING, ids=case_id)
def test_a_schedules_needs_are_exactly_what_the_verifier_proves(case):
    """The MPI layer refuses by ``schedule.needs`` alone: a need too strong
    refuses a correct call, too weak runs a wrong one. So for every operator
    class the symbolic proof and ``needs`` must agree (P = 1..12, 16, 27)."""
    from topocoll.errors import VerificationError
    from topocoll.verify import verify

    info, params = case
    wrong = []
    for p in [*range(1, 13), 16, 27]:
        if not info.supports(p, params):
            continue
        sched = info.generate(p, count=2 * p + 1, **params)
        for op, (commutative, idempotent) in OPERATOR_CLASSES.items():
            try:
                verify(sched, op=op)
                proved = True
            except VerificationError:
                proved = False
            if proved != operator_allows(sched.needs, commutative=commutative, idempotent=idempotent):
                wrong.append((p, op, "proved" if proved else "refuted", sched.needs))
    assert not wrong, wrong[:4]


def test_operator_allows():
    assert operator_allows(OperatorNeeds(), commutative=False, idempotent=False)
    assert not operator_allows(OperatorNeeds(commutative=True), commutative=False, idempotent=False)
    assert not operator_allows(OperatorNeeds(True, True), commutative=True, idempotent=False)
    assert operator_allows(OperatorNeeds(True, True), commutative=True, idempotent=True)


def test_former_encodings_are_refused_at_registration():
    with pytest.raises(TypeError, match="noncommutative= is no longer accepted.*needs="):
        algorithm(collective="allreduce", name="x", needs="associative", noncommutative=True)
    with pytest.raises(TypeError, match="needs='nonsense'"):
        algorithm(collective="allreduce", name="x", needs="nonsense")
    with pytest.raises(TypeError, match="parameter 'frobs' has no spec"):
        algorithm(collective="allreduce", name="x", needs="associative", params={"frobs": 1})
    assert ("allreduce", "x") not in catalogue()


# ---- supports(p, params): the one predicate ----------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_supports_agrees_with_generate(case):
    info, params = case
    for p in range(1, 25):
        if info.supports(p, params):
            generate(info.collective, info.name, p, count=count_for(info, p), **params)
        else:
            with pytest.raises(TopocollError):
                generate(info.collective, info.name, p, count=count_for(info, p), **params)


@pytest.mark.parametrize("p", [0, -1, MAX_P + 1, 10**23, True, 2.0, "8", None])
def test_p_is_bounded_before_generating(p):
    info = lookup("allreduce", "ring")
    assert not info.supports(p, {})
    with pytest.raises(SpecError, match=r"^allreduce/ring: P=.*expected"):
        generate("allreduce", "ring", p)


@pytest.mark.parametrize("collective, name, p, params, fragment", [
    ("allreduce", "nway_dissemination", 8, {"n": 10**9}, r"n=1000000000, expected an integer in 1\.\.7"),
    ("allreduce", "nway_dissemination_unadapted", 8, {"n": 10**9}, r"n=1000000000, expected an integer in 1\.\.7"),
    ("barrier", "dissemination", 8, {"n": 10**9}, r"n=1000000000, expected an integer in 1\.\.7"),
    ("allreduce", "bruck", 8, {"n": 0}, r"n=0, expected an integer in 1\.\.7"),
    ("alltoall", "bruck", 6, {"k": 10**9}, r"k=1000000000, expected an integer in 1\.\.6"),
    ("alltoall", "randomized", 6, {"packets": 10**8}, r"packets=100000000, expected an integer in 1\.\.2796202"),
    ("alltoall", "randomized", 6, {"packets": 2, "burst": 3}, r"burst=3, expected an integer in 1\.\.2"),
    ("alltoall", "randomized", 6, {"seed": -1}, r"seed=-1, expected an integer in 0\.\."),
    ("alltoall", "virtual_mesh", 6, {"d": 10**6}, r"d=1000000, expected an integer in 1\.\.20"),
    ("alltoall", "two_phase_schedule", 6, {"shape": "1x2x3x1"}, r"expected 1 to 3 sizes"),
    ("alltoall", "two_phase_schedule", 6, {"mapping": list(range(7))}, r"mapping has 7 entries, expected p=6"),
    ("reduce", "binomial", 4, {"root": 4}, r"root=4, expected a rank in 0\.\.3"),
    ("reduce", "binomial", 4, {"order": "sideways"}, r"order='sideways', expected one of 'rank', 'relative'"),
    ("reduce_scatter", "radix_k", 12, {"k": [2] * 40}, r"k has 40 radices, expected at most 4"),
    ("reduce_scatter", "direct_send", 4, {"depth_order": [0, 1, 2, 99]}, r"depth_order entry=99"),
    ("allreduce", "ring", 4, {"count": 10**30}, r"count=1000000000000000000000000000000, expected at most"),
    ("allreduce", "ring", 4, {"count": 2**39, "itemsize": 8}, r"expected a vector of at most 1099511627776 bytes"),
    ("allreduce", "ring", 4, {"count": -5}, r"count=-5, expected a whole number >= 1"),
    ("allreduce", "ring", 4, {"count": math.nan}, r"count=nan"),
    ("allreduce", "ring", 4, {"n": 2}, r"unknown parameter 'n', expected one of count, itemsize"),
])
def test_huge_or_bad_parameters_fail_at_once(collective, name, p, params, fragment):
    start = time.perf_counter()
    with pytest.raises(SpecError, match=fragment) as err:
        generate(collective, name, p, **params)
    assert time.perf_counter() - start < 1.0     # checked before generating
    assert "\n" not in str(err.value)
    assert not lookup(collective, name).supports(p, params)


def test_two_phase_shapes_of_one_and_two_dimensions():
    # the default mapping follows the shape's dimension count
    for shape, mapping in (("3x2", "xy"), (6, "x"), ("6x", "x"), ([6], "x"), ("3x2x1", "xyz")):
        s = generate("alltoall", "two_phase_schedule", 6, shape=shape)
        assert s.params["mapping"] == mapping, shape
        assert s.params["shape"] in ("3x2", "6", "3x2x1")
    s = generate("alltoall", "two_phase_schedule", 6, shape="3x2", mapping="yx")
    assert s.params["mapping"] == "yx"


# ---- Schedule.params round-trips through generate ------------------------------------

def assert_same_schedule(a, b):
    assert (a.collective, a.algorithm, a.p, a.count, a.itemsize) == (b.collective, b.algorithm, b.p, b.count,
                                                                     b.itemsize)
    assert a.params == b.params and a.needs == b.needs and a.root == b.root
    assert a.depth_order == b.depth_order
    assert np.array_equal(a.bounds, b.bounds)
    assert a.ops == b.ops


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_params_round_trip_through_generate(case):
    info, params = case
    tried = 0
    for p in (1, 2, 3, 5, 6, 8, 12, 16):
        if not info.supports(p, params):
            continue
        count = count_for(info, p, extra=2)
        sched = generate(info.collective, info.name, p, count=count, **params)
        again = generate(info.collective, info.name, p, count=count, **sched.params)
        assert_same_schedule(sched, again)
        tried += 1
    assert tried


@pytest.mark.parametrize("collective, name, p, params", [
    ("alltoall", "two_phase_schedule", 6, {"shape": "3x2"}),
    ("alltoall", "two_phase_schedule", 6, {"shape": "6"}),
    ("alltoall", "two_phase_schedule", 8, {"mapping": [7, 6, 5, 4, 3, 2, 1, 0]}),
    ("alltoall", "two_phase_schedule", 12, {"shape": "2x3x2M", "linear": "y"}),
    ("alltoall", "virtual_mesh", 12, {"dims": "4x3"}),
    ("alltoall", "randomized", 5, {"seed": 9, "packets": 2}),
    ("reduce_scatter", "radix_k", 12, {"k": [3, 4]}),
    ("reduce_scatter", "radix_k", 12, {"k": "primes", "gather_root": 5}),
    ("allreduce", "nway_dissemination", 13, {"n": "auto"}),
    ("reduce", "binomial", 6, {"root": 3, "order": "relative"}),
])
def test_given_params_round_trip(collective, name, p, params):
    count = 2 * p
    sched = generate(collective, name, p, count=count, **params)
    assert_same_schedule(sched, generate(collective, name, p, count=count, **sched.params))


def test_custom_depth_order_round_trips():
    sched = generate("reduce_scatter", "radix_k", 4, depth_order=[3, 1, 2, 0])
    assert_same_schedule(sched, generate("reduce_scatter", "radix_k", 4, **sched.params))


# ---- cost: closed forms equal the counted terms -----------------------------------------

COST_PS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 27, 32)
#: entries whose formula is the paper's but not this schedule's: always counted
COUNTED_ONLY = {("reduce_scatter", "two_three_swap"), ("reduce_scatter", "parallel_pipeline")} | {
    (c, "synthesized") for c in ("allgather", "reduce_scatter", "allreduce", "alltoall", "bcast")}  # made per network


@pytest.mark.parametrize("info", ENTRIES, ids=entry_id)
def test_closed_forms_equal_counted_terms(info):
    form = info.closed_form
    assert form is not None and form.formula, "every entry states its cost"
    applied = 0
    for params in info.sweep + (info.compare,):
        for p in COST_PS:
            if not info.supports(p, params):
                continue
            for nbytes, itemsize in ((48 * p, 8), (48 * p + 24, 8), (40, 1), (7, 1)):
                try:
                    args = from_bytes(info.collective, p, nbytes, itemsize=itemsize)
                    checked = info.check(p, params)
                    closed = form.terms(p, {**info.params, **checked}, args["count"], args["itemsize"])
                    counted = info.counted_cost(p, params, nbytes, itemsize=itemsize)
                except TopocollError:
                    continue      # e.g. all-to-all count not a multiple of p·packets
                if closed is not None:
                    applied += 1
                    assert closed == counted, (p, params, nbytes, str(closed), str(counted))
                    assert info.cost(p, params, nbytes, itemsize=itemsize) == closed
    if (info.collective, info.name) in COUNTED_ONLY:
        assert applied == 0
    else:
        assert applied > 0, "the closed form never applied"


@pytest.mark.parametrize("collective, name, p", [
    ("allreduce", "ring", 700), ("allreduce", "binomial", 4097), ("allreduce", "bruck", 3000),
    ("alltoall", "shift", 600), ("reduce_scatter", "radix_k", 512),
])
def test_closed_forms_at_larger_p(collective, name, p):
    info = lookup(collective, name)
    nbytes = 64 * p
    assert info.cost(p, {}, nbytes) == info.counted_cost(p, {}, nbytes)


def test_closed_form_is_fast_at_the_papers_sizes():
    start = time.perf_counter()
    terms = lookup("allreduce", "ring").cost(34816, {}, 4 << 20)
    assert terms.alpha == 2 * 34815
    assert time.perf_counter() - start < 0.5


# ---- message sizes: MPI's convention ---------------------------------------------------

def test_message_size_convention():
    assert schedule_args("alltoall", 4, 1024, np.float64) == {"count": 4096, "itemsize": 8}
    assert schedule_args("allgather", 4, 10, 4) == {"count": 40, "itemsize": 4}
    assert schedule_args("allreduce", 4, 10, 4) == {"count": 10, "itemsize": 4}
    assert schedule_args("barrier", 4, 0) == {"count": 1, "itemsize": 0}
    assert from_bytes("alltoall", 144, 4096) == {"count": 144 * 4096, "itemsize": 1}
    for collective in ("alltoall", "allgather", "allreduce", "reduce_scatter", "bcast", "reduce"):
        args = from_bytes(collective, 6, 48, itemsize=8)
        assert message_bytes(collective, 6, args["count"], args["itemsize"]) == 48
    with pytest.raises(SpecError, match="not a multiple of itemsize=8"):
        from_bytes("allreduce", 4, 12, itemsize=8)
    with pytest.raises(SpecError, match="expected a vector of at most"):
        from_bytes("alltoall", 4096, MAX_BYTES // 1024, itemsize=8)
    with pytest.raises(SpecError, match="collective 'nosuch'"):
        from_bytes("nosuch", 4, 8)


def test_mpi_schedule_moves_what_mpi_moves():
    # MPI_Alltoall(sendcount=3, MPI_INT) on 4 ranks: 12 B to each destination
    sched = mpi_schedule("alltoall", "shift", 4, 3, np.int32)
    assert report(sched).max_bytes_per_rank == 3 * 12
    # MPI_Allgather(sendcount=5, MPI_DOUBLE): every rank receives 3 contributions of 40 B
    sched = mpi_schedule("allgather", "ring", 4, 5, np.float64)
    assert report(sched).bytes_total == 4 * 3 * 40
    sched = mpi_schedule("allreduce", "ring", 4, 8, 8)
    assert sched.count * sched.itemsize == 64


def test_compare_defaults_live_in_the_registry():
    assert lookup("allreduce", "nway_dissemination").compare == {"n": "auto"}
    rng = random.Random(3)
    for p in rng.sample(range(2, 200), 8):
        assert lookup("allreduce", "nway_dissemination").supports(p, {"n": "auto"})
