"""rank() on worker processes: the same rows as in-process, each result handed
over as it finishes, small problems kept in-process."""

import importlib
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from topocoll.errors import SpecError
from topocoll.sim import Platform, StaticContention, make_network, model_named
from topocoll.tune import Evaluated, rank

rank_module = importlib.import_module("topocoll.tune.rank")    # `topocoll.tune.rank` is the function


@pytest.fixture
def pools(monkeypatch):
    """The pools rank() starts, recorded (a list of their worker counts)."""
    started = []

    class Recording(ProcessPoolExecutor):
        def __init__(self, workers, **kw):
            started.append(workers)
            super().__init__(workers, **kw)

    monkeypatch.setattr(rank_module, "ProcessPoolExecutor", Recording)
    return started


def same(rows_a, rows_b):
    key = lambda r: (r.size, r.position, r.algorithm, r.params, r.report, r.estimate.time, r.estimate.model,
                     r.estimate.terms, r.estimate.congestion, r.estimate.hot_link)
    return [key(r) for r in rows_a] == [key(r) for r in rows_b]


@pytest.mark.parametrize("case", ["alpha-beta-gamma", "static", "loggops"])
def test_workers_give_the_rows_of_one_process(case, pools):
    if case == "alpha-beta-gamma":
        call = dict(collective="allreduce", p=12, sizes=[8, 1 << 20], op="max")
    elif case == "static":
        call = dict(collective="allreduce", p=16, sizes=[64 << 10], model=StaticContention(),
                    platform=Platform(network=make_network("kary:4,2", 16)))
    else:     # an event model: its Simulation comes back without the network, which is attached again
        call = dict(collective="allreduce", p=8, sizes=[4096], model=model_named("loggops"))
    serial = rank(**call, workers=1, serial_below=0)
    assert pools == []
    parallel = rank(**call, workers=2, serial_below=0)
    assert pools == [2]
    assert same(serial, parallel)
    if case == "loggops":
        for s, q in zip(serial, parallel):
            assert q.estimate.detail.network.label == s.estimate.detail.network.label
            assert q.estimate.detail.hot_links() == s.estimate.detail.hot_links()


def test_on_result_gets_every_evaluation_as_it_finishes(pools):
    seen: list[Evaluated] = []
    rows = rank("allreduce", 6, [8, 4096], op="noncommutative", workers=2, serial_below=0, on_result=seen.append)
    assert pools == [2]
    total = seen[0].total
    assert sorted(e.done for e in seen) == list(range(1, total + 1)) and all(e.total == total for e in seen)
    assert len({(e.algorithm, e.size) for e in seen}) == total
    estimated = {(e.algorithm, e.size): e.time for e in seen if e.estimate is not None}
    assert estimated == {(r.algorithm, r.size): r.time for r in rows}
    left = [e for e in seen if e.estimate is None]
    assert left and all("not correct for op=noncommutative" in e.left_out for e in left)
    # in-process: the same evaluations, in the registry's order
    serial: list[Evaluated] = []
    rank("allreduce", 6, [8, 4096], op="noncommutative", workers=1, on_result=serial.append)
    assert [e.done for e in serial] == list(range(1, total + 1))
    assert {(e.algorithm, e.size, e.left_out) for e in serial} == {(e.algorithm, e.size, e.left_out) for e in seen}


def test_small_problems_stay_in_process(pools):
    rows = rank("allreduce", 16, [8], workers=2)          # a few thousand messages: below SERIAL_BELOW
    assert rows and pools == []


def test_an_exception_in_on_result_stops_the_workers(pools):
    def stop(ev):
        raise RuntimeError("enough")
    with pytest.raises(RuntimeError, match="enough"):
        rank("allreduce", 16, [8, 64], workers=2, serial_below=0, on_result=stop)
    assert pools == [2]


@pytest.mark.skipif(rank_module._start_method() != "fork", reason="forked workers see the monkeypatch")
def test_the_error_for_no_algorithm_is_the_same_from_workers(monkeypatch):
    monkeypatch.setattr(rank_module, "operator_allows", lambda needs, **kw: False)   # every candidate left out
    errors = []
    for workers in (1, 2):
        with pytest.raises(SpecError) as err:
            rank("allreduce", 6, [8, 64], workers=workers, serial_below=0)
        errors.append(str(err.value))
    assert errors[0] == errors[1] and "no allreduce algorithm runs on P=6 with 8 B messages" in errors[0]


@pytest.mark.parametrize("workers", [0, -1, 257, 2.0, True, "2"])
def test_bad_workers_are_one_line_errors(workers):
    with pytest.raises(SpecError) as err:
        rank("allreduce", 8, [8], workers=workers)
    assert f"workers={workers!r}, expected an integer in 1..256" in str(err.value) and "\n" not in str(err.value)


def test_a_spawned_worker_rebuilds_the_network_from_its_recipe():
    """Where workers are not forked the model and platform are pickled: the
    Rust routing engine is rebuilt from the topology, engine name and options."""
    platform = Platform(alpha=2e-6, network=make_network("torus:4x4", 16, routing="dor:tie=simgrid",
                                                         order="random", seed=2))
    shipped = pickle.loads(pickle.dumps(rank_module._Shipped(StaticContention(), platform)))
    again = shipped.platform
    assert again.alpha == 2e-6 and again.network.label == platform.network.label
    assert again.network.router.options == platform.network.router.options
    assert (again.network.order == platform.network.order).all()
    a = rank("alltoall", 16, [4096], model=StaticContention(), platform=platform, workers=1)
    b = rank("alltoall", 16, [4096], model=shipped.model, platform=again, workers=1)
    assert same(a, b)
