"""Tuning files: each read back the way its library (or topocoll.mpi) reads it selects, at every
tuned point, what the decision table chose."""

import json
import os

import pytest

from topocoll.errors import ParseError, SpecError
from topocoll.mpi.api import choose
from topocoll.tune import emit
from topocoll.tune.tuner import tune

COLLECTIVES = ["allreduce", "reduce_scatter", "alltoall", "bcast", "allgather"]


@pytest.fixture(scope="module", params=[True, False], ids=["commutative", "noncommutative"])
def table(request):
    return tune(COLLECTIVES, [2, 3, 8, 12, 16], [8, 256, 65536, 8 << 20], commutative=request.param)


def test_openmpi_rules_round_trip(table):
    text = emit.emit(table, "openmpi")
    assert text.startswith("rule-file-version-2\n")
    for (coll, p, size), point in table.points.items():
        pick = emit.library_pick(table, point, "openmpi-5.0")
        got = emit.match_openmpi(text, coll, p, size, commutative=table.commutative)
        if pick.number == 0:       # nothing tuned has an Open MPI equivalent: the fixed rules decide
            continue
        assert got == pick.number, (coll, p, size, pick)
    if not table.commutative:       # Open MPI cannot test commutativity: the file must not need it
        rules = emit.parse_openmpi_rules(text)
        named = {coll: {rule[1] for _, msgs in rules[emit.OMPI_IDS[coll]] for rule in msgs}
                 for coll in ("allreduce", "reduce_scatter")}
        assert not named["allreduce"] & {4, 5, 6} and not named["reduce_scatter"] & {2, 3, 4}, named


def test_mpich_json_round_trip_and_shape(table):
    tree = json.loads(emit.emit(table, "mpich"))
    default = emit.mpich_default_tree()
    assert set(tree) == set(default)            # a subtree for every collective the library knows

    def lists_end_in_any(node, path):
        keys = [k for k in node if not k.startswith(("algorithm=", "composition="))]
        if keys:
            last = keys[-1]
            assert last.endswith("=any") or last.split("=")[0] in ("comm_type", "is_commutative", "is_op_built_in",
                                                                   "is_sendbuf_inplace", "is_block_regular",
                                                                   "comm_hierarchy", "is_node_consecutive",
                                                                   "is_multi_threaded"), path + [last]
            assert not any("comm_size<" in k and "<=" not in k for k in keys if k.startswith("comm_size") and
                           k in tree.get(path[0], {}).get("comm_type=intra", {})), path
        for key, child in node.items():
            if not key.startswith("algorithm="):
                lists_end_in_any(child, path + [key])

    for coll in table.collectives:
        lists_end_in_any(tree[f"collective={coll}"], [f"collective={coll}"])
    for (coll, p, size), point in table.points.items():
        pick = emit.library_pick(table, point, "mpich-5.0")
        name, params = emit.match_mpich(tree, coll, p, size, commutative=table.commutative)
        assert name == pick.algorithm, (coll, p, size, pick)
        assert params == {k: str(v) for k, v in pick.params.items()}
        if table.commutative and coll == "allreduce":     # the guard: a user operator that does not commute
            assert emit.match_mpich(tree, coll, p, size, commutative=False)[0] == \
                "MPIR_Allreduce_intra_recursive_doubling"


def test_topocoll_json_drives_auto(table, tmp_path):
    path = tmp_path / "tuning.json"
    path.write_text(emit.emit(table, "topocoll"))
    for (coll, p, size), point in table.points.items():
        if coll == "allgather":            # topocoll.mpi has no allgather call
            continue
        want = emit.topocoll_pick(table, point)
        algorithm, params = choose(coll, p, size, commutative=table.commutative, tuning=str(path))
        assert (algorithm, params) == (want.algorithm, want.params), (coll, p, size)


def test_a_winner_no_library_has_is_replaced_by_the_best_one_it_has():
    table = tune(["alltoall"], [16], [4096])
    point = table.point("alltoall", 16, 4096)
    assert point.best.algorithm == "bruck" and point.best.params == {"k": 15}
    pick = emit.library_pick(table, point, "openmpi-5.0")       # Open MPI's bruck is radix 2 only
    assert pick.algorithm != "modified_bruck" or pick.choice.params in ({}, {"k": 1})
    assert pick.loss >= 1.0
    assert emit.library_pick(table, point, "mpich-5.0").params == {"k": 16}      # k_brucks: radix k + 1


def test_openmpi_reader_refuses_a_malformed_file():
    with pytest.raises(ParseError, match="not a decimal integer"):
        emit.parse_openmpi_rules("rule-file-version-2\n1\n2\n1\n0\n1\n0 03 0 0 0\n")
    with pytest.raises(ParseError, match="ends early"):
        emit.parse_openmpi_rules("1\n2\n1\n")


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "rules.conf"
    emit.write_atomic(target, "one\n")
    assert target.read_text() == "one\n"

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(emit.os, "replace", fail)
    with pytest.raises(SpecError, match="No space left on device"):
        emit.write_atomic(target, "two\n")
    assert target.read_text() == "one\n"
    assert sorted(os.listdir(tmp_path)) == ["rules.conf"]
    with pytest.raises(SpecError, match="does not exist"):
        emit.write_atomic(tmp_path / "missing" / "x.json", "{}")
