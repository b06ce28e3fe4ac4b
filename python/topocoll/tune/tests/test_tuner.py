"""tune(): the search finds what exhaustive search finds, never loses to a fixed algorithm,
explains its winner, and refuses bad input with one line."""

import itertools

import pytest

from topocoll.errors import SpecError
from topocoll.schedules.registry import catalogue, lookup, operator_allows
from topocoll.sim import AlphaBetaGamma, Platform, StaticContention, make_network
from topocoll.tune import rank
from topocoll.tune import tuner as tuner_module
from topocoll.tune.tuner import candidates, tune

PLATFORM = Platform(alpha=1e-6, bandwidth=2e9, reduce_bandwidth=4e9)


def _ordered_factorisations(p):
    """Every ordered k-vector of radices >= 2 with product p (brute force, independent of the tuner)."""
    out = []

    def walk(rest, prefix):
        if rest == 1:
            out.append(prefix)
        for f in range(2, rest + 1):
            if rest % f == 0:
                walk(rest // f, prefix + [f])

    walk(p, [])
    return out


def _exhaustive(collective, p, size, itemsize=8):
    """The best α-β-γ time over every algorithm and every parameter value a brute force lists."""
    best = None
    for info in catalogue().values():
        if info.collective != collective:
            continue
        spaces = [dict(info.compare)]
        if "n" in info.params:
            spaces += [{"n": n} for n in range(1, p)]
        if "k" in info.params and isinstance(info.params["k"], int):
            spaces += [{"k": k} for k in range(1, p)]
        if "k" in info.params and isinstance(info.params["k"], str):
            spaces += [{"k": ks} for ks in _ordered_factorisations(p)]
        if "leftover" in info.params:
            spaces += [{"leftover": "last"}]
        if "shape" in info.params:
            for a, b in itertools.product(range(1, p + 1), repeat=2):
                if p % (a * b) == 0:
                    for axis in "xyz":
                        spaces.append({"shape": f"{a}x{b}x{p // (a * b)}", "linear": axis})
        if "dims" in info.params:
            for a in range(2, p):
                if p % a == 0:
                    spaces.append({"dims": f"{a}x{p // a}", "d": 2})
        for params in spaces:
            if not info.supports(p, params):
                continue
            try:
                sched = info.generate(p, **params, count=size // itemsize * (p if collective == "alltoall" else 1),
                                      itemsize=itemsize)
            except Exception:       # noqa: BLE001 - a parameter set the generator refuses takes no part
                continue
            if not operator_allows(sched.needs, commutative=True, idempotent=False):
                continue
            t = AlphaBetaGamma().estimate(sched, PLATFORM).time
            best = t if best is None else min(best, t)
    return best


@pytest.mark.parametrize("collective, p", [("reduce_scatter", 12), ("reduce_scatter", 16), ("allreduce", 12),
                                           ("alltoall", 12)])
def test_small_cases_reach_the_exhaustive_optimum(collective, p):
    sizes = [64 * p, 1 << 20]
    table = tune([collective], [p], sizes, keep=3)
    for size in sizes:
        assert table.point(collective, p, size).best.time == pytest.approx(_exhaustive(collective, p, size),
                                                                           rel=1e-12), size


def test_never_slower_than_any_fixed_algorithm_on_a_fat_tree():
    sizes = [8, 64 << 10, 4 << 20]
    table = tune(["allreduce"], [16], sizes, topology="kary:4,2", orders=["routing"])
    net = Platform(alpha=1e-6, reduce_bandwidth=4e9, network=make_network("kary:4,2", 16, order="routing"))
    fixed = rank("allreduce", 16, sizes, model=StaticContention(), platform=net, itemsize=8, workers=1)
    for row in fixed:           # rank() is the independent path: each algorithm with its compare parameters
        assert table.point("allreduce", 16, row.size).best.time <= row.time * (1 + 1e-12), row


def test_the_radix_k_vectors_are_pruned_by_the_cost_model_not_enumerated():
    base, extra, _ = candidates("reduce_scatter", 240, [8 << 20], keep=2)
    vectors = [params["k"] for info, params in extra if info.name == "radix_k"]
    assert 0 < len(vectors) <= 2 * 2            # best 2, each ascending and descending
    assert len(_ordered_factorisations(240)) > 300
    assert all(eval("*".join(map(str, k))) == 240 for k in vectors)


def test_the_table_folds_into_ranges_and_reports_runner_up_and_gain():
    table = tune(["allreduce"], [8, 64], [8, 4096, 1 << 20])
    blocks = table.rules("allreduce")
    assert [(b.lo, b.hi) for b in blocks] == [(1, 63), (64, None)]
    for block in blocks:
        assert block.rules[0].lo == 0 and block.rules[-1].hi is None
        assert all(a.hi + 1 == b.lo for a, b in zip(block.rules, block.rules[1:]))
    pt = table.point("allreduce", 64, 1 << 20)
    assert pt.runner_up.algorithm != pt.best.algorithm and pt.margin >= 0
    lib = pt.libraries["openmpi-5.0"]
    assert lib.choice.algorithm == "rabenseifner"        # Open MPI 5.0: P < 128, size >= 256 KiB -> 6
    assert pt.gain("openmpi-5.0") == pytest.approx(lib.time / pt.best.time)
    text = table.text()
    assert "gain vs openmpi-5.0" in text and "allreduce decision rules" in text
    rows = table.to_csv().splitlines()
    assert len(rows) == 1 + 2 * 3


def test_explain_names_rounds_bytes_and_the_hottest_link():
    table = tune(["allreduce"], [16], [4 << 20], topology="kary:4,2", orders=["routing"])
    text = table.explain("allreduce", 16, 4 << 20)
    assert "winner" in text and "runner-up" in text and "rounds" in text and "→" in text
    assert "wins by" in text
    with pytest.raises(SpecError, match="no grid point allreduce P=15"):
        table.explain("allreduce", 15, 4 << 20)


def test_budget_skips_only_the_extra_values():
    table = tune(["reduce_scatter"], [64], [1 << 20], budget=1e-9)
    assert table.skipped > 0
    algorithms = {c.algorithm for c in table.point("reduce_scatter", 64, 1 << 20).choices}
    assert {"ring", "radix_k", "binary_swap"} <= algorithms


@pytest.mark.parametrize("kwargs, message", [
    ({"collectives": []}, "no collective"),
    ({"collectives": ["barrier"]}, "cannot be tuned"),
    ({"collectives": ["allreduc"]}, "collective 'allreduc'"),
    ({"procs": []}, "no P"),
    ({"sizes": []}, "no message size"),
    ({"sizes": [12]}, "not a whole number of 8-byte elements"),
    ({"procs": [200], "topology": "kary:12,2"}, "P=200 on kary:12,2, expected at most its 144 endpoints"),
    ({"libraries": ["openmpi-4.1"]}, "library 'openmpi-4.1'"),
    ({"orders": ["identity"]}, "node orders given without a topology"),
    ({"budget": -1}, "budget=-1"),
])
def test_bad_input_is_one_line(kwargs, message):
    args = {"collectives": ["allreduce"], "procs": [8], "sizes": [8]}
    args.update(kwargs)
    with pytest.raises(SpecError, match=message) as info:
        tune(args.pop("collectives"), args.pop("procs"), args.pop("sizes"), **args)
    assert "\n" not in str(info.value)


def test_an_operator_that_excludes_every_candidate_is_refused(monkeypatch):
    ring = lookup("allreduce", "ring")                    # needs a commutative operator
    monkeypatch.setattr(tuner_module, "candidates", lambda *a, **k: ([(ring, {})], [], []))
    with pytest.raises(SpecError, match="no allreduce algorithm is correct for a non-commutative operator"):
        tune(["allreduce"], [8], [64], commutative=False, libraries=[])


def test_printed_rules_hold_for_every_p_they_state_for_a_sum():
    """The decision rules (text and --json) never extend a winner to a P where it does not
    exist or where a sum (commutative, not idempotent) would be wrong: each stated rule is
    generated and verified at the ends and the middle of its P range (an open range at 2P)."""
    from topocoll.schedules import generate
    from topocoll.verify import verify
    table = tune(["allreduce"], [16, 64, 144], [8, 1 << 20])
    exact, loose = table.rules("allreduce", exact=True), table.rules("allreduce")
    assert len(exact) > len(loose)              # butterfly_virtual at 16 and 64 holds there only
    for block in exact:
        hi = block.hi if block.hi is not None else 2 * block.lo
        for q in sorted({block.lo, (block.lo + hi) // 2, hi} - {1}):
            for rule in block.rules:
                sched = generate("allreduce", rule.choice.algorithm, q, count=q, **rule.choice.params)
                assert verify(sched, "sum") == "sum", (q, rule.choice.label())
    stated = table.to_json()["rules"]["allreduce"]
    assert [(b["p_min"], b["p_max"]) for b in stated] == [(b.lo, b.hi) for b in exact]
    assert "P 16 " in table.text()
