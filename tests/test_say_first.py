"""Commands expected to run longer than topocoll.progress.SAY_FIRST_S say so first, on stderr, with
the size of the work and a time estimate from measured rates; quick ones print nothing more.
The threshold is lowered here so that the "large" inputs run in about a second."""

import pytest

from topocoll import progress
from topocoll.cli import main


@pytest.fixture
def threshold(monkeypatch):
    def lower(seconds):
        monkeypatch.setattr(progress, "SAY_FIRST_S", seconds)
    return lower


def test_export_simgrid_says_its_size_and_time_first(tmp_path, capsys, threshold):
    threshold(0.01)
    assert main(["topo", "torus:4x4x4", "--export-simgrid", str(tmp_path / "big.xml")]) == 0
    err = capsys.readouterr().err
    assert "topocoll: --export-simgrid torus:4x4x4: 64 hosts, 4,032 routes over " in err
    assert "expected about" in err
    line = next(line for line in err.splitlines() if "--export-simgrid" in line)
    assert " MB" in line

    assert main(["topo", "kary:2,2", "--export-simgrid", str(tmp_path / "small.xml")]) == 0
    assert "expected about" not in capsys.readouterr().err


def test_tune_says_its_evaluations_and_time_first(capsys, threshold):
    threshold(0.5)
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
