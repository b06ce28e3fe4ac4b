"""Node-aware (hierarchical) schedules: the composition of an intra-node
phase, any algorithm among the leaders and an intra-node phase back.

Expected values come from elsewhere: the symbolic verifier and the serial
reference decide correctness; the leaders' algorithm generated on its own
gives the operator needs and the leader-to-leader message count; a
hierarchical schedule with one rank per node is the leaders' algorithm
itself, so every model must time the two alike.
"""

from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from topocoll.cli import main
from topocoll.errors import SpecError, VerificationError
from topocoll.schedules import catalogue, generate, lookup
from topocoll.schedules.hierarchical import placement
from topocoll.schedules.sizes import from_bytes
from topocoll.verify import affine, affine_inputs, check_against_reference, integer_inputs, verify
from topocoll.verify.testing import assert_views_equal

COLLECTIVES = ("allreduce", "reduce_scatter", "alltoall", "bcast")
REDUCTIONS = ("allreduce", "reduce_scatter")


def inter_choices(collective):
    """(name, params) of every other algorithm of ``collective``, one per parameter set of its sweep."""
    out = []
    for (coll, name), info in catalogue().items():
        if coll == collective and name != "hierarchical":
            for params in info.sweep:
                if not {"gather_root", "depth_order", "root"} & set(params):
                    out.append((name, params))
    return out


def inter_text(name, params):
    return name + "".join(f":{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in params.items())


def messages(sched):
    """(src, dst) of every send."""
    return [(r, op.peer) for r, ops in enumerate(sched.ops) for op in ops if op.kind == "send"]


def count_for(collective, p):
    return 3 * p if collective == "alltoall" else 3 * p + 1


def check(collective, p, params, inter, inter_params):
    """Verifier, serial reference, operator needs and message structure of one schedule."""
    sched = generate(collective, "hierarchical", p, count=count_for(collective, p), **params)
    place = placement("test", p, params.get("ppn", 4), params.get("leaders", 1), params.get("nodes"))
    groups = place.groups
    m = len(groups)
    group_of = {r: i for i, g in enumerate(groups) for r in g}
    extra = {"root": group_of[params.get("root", 0)]} if collective == "bcast" else {}
    alone = generate(collective, inter, m, count=m if collective in ("alltoall", "reduce_scatter") else 1,
                     **inter_params, **extra)
    # operator needs: the leaders' algorithm's, commutative too where a group is not an interval of ranks
    ordered = all(g[-1] - g[0] + 1 == len(g) for g in groups)
    assert sched.needs.commutative == (alone.needs.commutative or not ordered), sched.label()
    assert sched.needs.idempotent == alone.needs.idempotent
    verify(sched)                                    # the strictest operator it claims
    if collective in REDUCTIONS and not sched.needs.commutative:
        check_against_reference(sched, affine_inputs(p, sched.count, seed=p), affine)
    if not sched.needs.idempotent:
        check_against_reference(sched, integer_inputs(p, sched.count, seed=p), "sum")
    # messages: inside a group, or between two leaders; the leaders' algorithm's count of those
    heads = set(r for r, ops in enumerate(sched.ops)
                if any(op.kind in ("send", "recv") and group_of[op.peer] != group_of[r] for op in ops))
    across = [(s, d) for s, d in messages(sched) if group_of[s] != group_of[d]]
    assert all(s in heads and d in heads for s, d in across)
    assert len(heads) <= m and all(sum(1 for h in heads if group_of[h] == i) <= 1 for i in range(m))
    turns = place.largest if collective == "alltoall" else 1
    assert len(across) == turns * len(messages(alone)), sched.label()
    return sched


@st.composite
def cases(draw, collective, most_ppn=6, most_p=30):
    ppn = draw(st.integers(1, most_ppn), label="ppn")
    if collective == "alltoall":
        leaders = draw(st.sampled_from([d for d in range(1, ppn + 1) if ppn % d == 0]), label="leaders")
        p = ppn * draw(st.integers(1, max(1, most_p // ppn)), label="nodes")
    else:
        leaders = draw(st.integers(1, ppn), label="leaders")
        p = draw(st.integers(1, most_p), label="p")
    name, inter_params = draw(st.sampled_from(inter_choices(collective)), label="inter")
    params = {"ppn": ppn, "leaders": leaders, "inter": inter_text(name, inter_params)}
    if collective == "bcast":
        params["root"] = draw(st.integers(0, p - 1), label="root")
    return p, params, name, inter_params


@pytest.mark.parametrize("collective", COLLECTIVES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_composition_verifies_for_any_p_ppn_leaders_and_inter(collective, data):
    p, params, name, inter_params = data.draw(cases(collective))
    assume(lookup(collective, "hierarchical").supports(p, params))
    check(collective, p, params, name, inter_params)


@pytest.mark.exhaustive
@pytest.mark.parametrize("collective", COLLECTIVES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_composition_verifies_up_to_p_96(collective, data):
    p, params, name, inter_params = data.draw(cases(collective, most_ppn=16, most_p=96))
    assume(lookup(collective, "hierarchical").supports(p, params))
    check(collective, p, params, name, inter_params)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_node_map_that_interleaves_ranks_needs_a_commutative_operator(data):
    """Ranks placed by a node map: where nodes are not intervals of ranks the
    composition cannot keep rank order, says so, and the verifier agrees."""
    p = data.draw(st.integers(2, 16), label="p")
    ppn = data.draw(st.integers(1, 4), label="ppn")
    nodes = data.draw(st.permutations([r // ppn for r in range(p)]), label="nodes")
    collective = data.draw(st.sampled_from(REDUCTIONS), label="collective")
    inter = "rabenseifner" if collective == "allreduce" else "direct_send"
    sched = check(collective, p, {"ppn": ppn, "nodes": list(nodes), "inter": inter}, inter, {})
    if sched.needs.commutative:
        with pytest.raises(VerificationError, match="non-adjacent|order"):
            verify(sched, op="noncommutative")
    else:
        assert verify(sched, op="noncommutative") == "noncommutative"


def test_partial_last_node_works_where_groups_may_differ():
    """P = 13 on 4 ranks per node: the last node holds one rank."""
    assert placement("x", 13, 4).groups[-1] == (12,)
    check("allreduce", 13, {"ppn": 4, "inter": "rabenseifner"}, "rabenseifner", {})
    check("reduce_scatter", 13, {"ppn": 4, "inter": "direct_send"}, "direct_send", {})
    check("bcast", 13, {"ppn": 4, "root": 12}, "binomial", {})


@pytest.mark.parametrize("collective, p, params, message", [
    ("alltoall", 10, {"ppn": 4}, "groups of 2 and 4 ranks (P=10, ppn=4, leaders=1), expected equal groups"),
    ("allreduce", 8, {"ppn": 0}, "ppn=0, expected an integer in 1..4096"),
    ("allreduce", 8, {"ppn": 2, "leaders": 3}, "leaders=3, expected an integer in 1..2 (at most ppn=2)"),
    ("allreduce", 8, {"inter": "nope"}, "inter='nope', expected an algorithm of allreduce: binomial, bruck,"),
    ("allreduce", 8, {"inter": "radix_k"}, "inter='radix_k', expected an algorithm of allreduce"),
    ("allreduce", 8, {"inter": "bruck:n=9"}, "inter=bruck on 2 leaders: allreduce/bruck: n=9"),
    ("allreduce", 8, {"inter": "hierarchical"}, "expected an algorithm other than hierarchical"),
    ("allreduce", 8, {"inter": "bruck:n"}, "'n' is not a new param=value"),
    ("allreduce", 8, {"inter": 3}, "inter=3, expected an algorithm name"),
    ("allreduce", 8, {"nodes": [0] * 8}, "nodes puts 8 ranks on node 0, expected at most ppn=4"),
    ("reduce_scatter", 12, {"ppn": 4, "inter": "binary_swap"}, "inter=binary_swap does not exist for 3 leaders"),
    ("reduce_scatter", 12, {"inter": "radix_k:depth_order=0"}, "'depth_order' is set by the composition"),
    ("bcast", 8, {"root": 8}, "root=8, expected a rank in 0..7"),
])
def test_bad_parameters_are_one_line(collective, p, params, message):
    with pytest.raises(SpecError) as err:
        generate(collective, "hierarchical", p, **params)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_inter_parameters_as_the_cli_splits_them():
    """``--param inter=radix_k:k=2,3`` reaches the generator as a list (the CLI
    splits on commas); the label shows the canonical text."""
    s = generate("reduce_scatter", "hierarchical", 12, ppn=2, inter=["radix_k:k=2", 3])
    assert s.params["inter"] == "radix_k:k=2,3"
    assert verify(s) == "noncommutative"
    assert generate("allreduce", "hierarchical", 9, ppn=3, inter={"algorithm": "bruck", "n": 2}).params["inter"] \
        == "bruck:n=2"


def test_one_rank_per_node_is_the_leaders_algorithm():
    """ppn = 1: every rank leads a group of one, so the composition is the
    leaders' algorithm with the same messages, round by round (block names
    may differ: a reduce-scatter leaves block r on rank r whatever block the
    leaders' algorithm leaves there)."""
    for collective, inter in (("allreduce", "rabenseifner"), ("reduce_scatter", "radix_k"), ("bcast", "binomial"),
                              ("alltoall", "bruck")):
        a = generate(collective, "hierarchical", 12, ppn=1, inter=inter, count=36, itemsize=8)
        b = generate(collective, inter, 12, count=36, itemsize=8)
        rows = [sorted(zip(r.src.tolist(), r.dst.tolist(), r.nbytes.tolist())) for r in a.rounds()]
        assert rows == [sorted(zip(r.src.tolist(), r.dst.tolist(), r.nbytes.tolist())) for r in b.rounds()]


@pytest.mark.parametrize("collective, params", [
    ("allreduce", {"ppn": 4, "leaders": 2, "inter": "ring"}),
    ("reduce_scatter", {"ppn": 3, "inter": "radix_k"}),
    ("alltoall", {"ppn": 2, "inter": "bruck"}),
    ("bcast", {"ppn": 3, "root": 7}),
])
def test_op_program_equals_the_per_rank_ops(collective, params):
    assert_views_equal(generate(collective, "hierarchical", 18, count=count_for(collective, 18), **params))


@pytest.mark.parametrize("model", ["loggops", "flow", "congestion", "packet"])
def test_every_model_times_it_and_one_rank_per_node_times_as_the_leaders_algorithm(capsys, model):
    def time_of(*argv):
        assert main(["simulate", "allreduce", *argv, "-P", "16", "--size", "64K", "--model", model]) == 0
        out = capsys.readouterr().out
        return next(line for line in out.splitlines() if line.startswith("time "))

    node_aware = time_of("hierarchical", "--param", "ppn=4", "--param", "inter=rabenseifner")
    flat = time_of("hierarchical", "--param", "ppn=1", "--param", "inter=rabenseifner")
    assert flat == time_of("rabenseifner")
    assert node_aware != flat
    capsys.readouterr()


def test_message_counts():
    """Allreduce, 4 nodes of 4 ranks: 3 messages up and 3 down per node, plus
    the leaders' Rabenseifner on 4 ranks (2 rounds of halving, 2 of doubling)."""
    s = generate("allreduce", "hierarchical", 16, ppn=4, inter="rabenseifner")
    per_pair = Counter(messages(s))
    assert sum(per_pair.values()) == 4 * 6 + 4 * 4


@pytest.mark.parametrize("collective, p, params", [
    ("allreduce", 13, {"ppn": 4, "inter": "bruck:n=2"}),
    ("allreduce", 17, {"ppn": 6, "leaders": 3, "inter": "ring"}),
    ("bcast", 11, {"ppn": 3, "root": 7}),
    ("reduce_scatter", 24, {"ppn": 4, "leaders": 2, "inter": "radix_k:k=2,6"}),
    ("alltoall", 18, {"ppn": 3, "inter": "virtual_mesh"}),
    ("alltoall", 16, {"ppn": 4, "leaders": 2, "inter": "bruck:k=2"}),
])
def test_closed_form_equals_the_counted_cost(collective, p, params):
    """The α-β-γ cost of the three phases (added: their rounds are disjoint)
    equals the one counted from the schedule's rounds."""
    info = lookup(collective, "hierarchical")
    full = {**info.params, **info.check(p, params)}
    for nbytes in (48 * p, 7 * p):
        args = from_bytes(collective, p, nbytes, itemsize=1)
        closed = info.closed_form.terms(p, full, args["count"], 1)
        assert closed is not None and closed == info.counted_cost(p, params, nbytes, itemsize=1), (nbytes, str(closed))


def test_same_result_on_every_rank_is_the_leaders_algorithms():
    """Every rank gets its leader's result, copied: ranks agree bit for bit
    exactly where the leaders' algorithm does on the leaders (Bruck: not
    from 3 leaders on), so there is no rule by P alone and callers analyse
    the schedule."""
    from topocoll.verify.uniform import catalogue_identical, identical_results

    assert catalogue_identical("allreduce", "hierarchical", 16, "sum", "float32") is None
    for inter, m in (("bruck", 2), ("bruck", 4), ("rabenseifner", 4), ("ring", 5)):
        composed = generate("allreduce", "hierarchical", 3 * m, ppn=3, inter=inter, count=6 * m)
        alone = generate("allreduce", inter, m, count=6 * m)
        assert identical_results(composed, "sum", "float32") == identical_results(alone, "sum", "float32")
    assert not identical_results(generate("allreduce", "hierarchical", 12, ppn=3, inter="bruck"), "sum", "float32")
