"""Commands expected to run longer than topocoll.progress.SAY_FIRST_S say so first, on stderr, with
the size of the work and a time estimate from measured rates; quick ones print nothing more.
The threshold is lowered here so that the "large" inputs run in about a second, and the machine is
taken as idle (estimates scale with the load average) so that the test does not depend on it."""

import os

import pytest

from topocoll import progress
from topocoll.cli import main


@pytest.fixture
def threshold(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))

    def lower(seconds):
        monkeypatch.setattr(progress, "SAY_FIRST_S", seconds)
    return lower


def test_export_simgrid_says_its_size_and_time_first(tmp_path, capsys, threshold):
    threshold(0.001)
    assert main(["topo", "torus:4x4x4", "--export-simgrid", str(tmp_path / "big.xml")]) == 0
    err = capsys.readouterr().err
    assert "topocoll: --export-simgrid torus:4x4x4: 64 hosts, 4,032 routes over " in err
    assert "expected about" in err
    line = next(line for line in err.splitlines() if "--export-simgrid" in line)
    assert " MB" in line

    assert main(["topo", "kary:2,2", "--export-simgrid", str(tmp_path / "small.xml")]) == 0
    assert "expected about" not in capsys.readouterr().err


def test_tune_says_its_evaluations_and_time_first(capsys, threshold):
    threshold(0.1)
    assert main(["tune", "alltoall", "-P", "16", "--sizes", "8..1M", "--topology", "kary:4,2", "--jobs", "1",
                 "--libraries", ""]) == 0
    err = capsys.readouterr().err
    assert "topocoll: tune: " in err and " evaluations of " in err and " on 1 process: expected about " in err

    assert main(["tune", "allreduce", "-P", "4", "--sizes", "8", "--jobs", "1"]) == 0
    assert "expected about" not in capsys.readouterr().err


def test_the_default_threshold_is_half_a_minute():
    assert progress.SAY_FIRST_S == 30.0
    assert not progress.say_first("nothing", 29.0)
    assert progress.duration_text(42) == "42 s" and progress.duration_text(185) == "3.1 min"


def test_estimates_follow_the_load(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert progress.wall_seconds(10, 1) == 10 and progress.wall_seconds(10, 2) == 5
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    assert progress.wall_seconds(10, 2) == pytest.approx(10 / (2 * 2 / 10))


def test_compare_says_its_evaluations_and_time_first(capsys, threshold):
    threshold(0.02)
    assert main(["compare", "alltoall", "-P", "32", "--sizes", "4K", "--topology", "kary:8,2", "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert "topocoll: compare alltoall P=32: " in err and " messages, static contention model, 1 process: " \
        "expected about " in err

    assert main(["compare", "allreduce", "-P", "4", "--sizes", "8", "--jobs", "1"]) == 0
    assert "expected about" not in capsys.readouterr().err


def test_simulate_says_first_when_the_engine_rates_promise_a_long_run(capsys, monkeypatch):
    """``simulate`` prints the size and the expected time first where the
    engine's measured rates (sim/engine.py ``OP_S``, ``FLOW_OP_FLOW_S``)
    give more than SAY_FIRST_S; a short run prints nothing first."""
    import topocoll.progress as progress
    from topocoll.cli import main
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    args = ["simulate", "alltoall", "shift", "-P", "16", "--size", "4K", "--model", "loggops"]
    assert main(args) == 0
    assert "expected about" not in capsys.readouterr().err
    monkeypatch.setattr(progress, "SAY_FIRST_S", 1e-7)
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "topocoll: simulate alltoall/shift(p=16" in err and "loggops model, 496 ops: expected about" in err, err
