"""`topocoll compare --jobs N --stream`: candidates on worker processes, each
result on stderr as it finishes, stdout's tables unchanged."""

import io

import pytest

from topocoll import cli
from topocoll.cli import main

ARGV = ["compare", "allreduce", "-P", "12", "--sizes", "8,1M", "--op", "max"]


@pytest.mark.parametrize("jobs, fragment", [
    ("0", "argument --jobs: 0 is not positive, expected an integer in 1..256 (worker processes)"),
    ("257", "argument --jobs: 257 is out of range, expected an integer in 1..256"),
    ("two", "argument --jobs: 'two' is not an integer"),
])
def test_bad_jobs_are_one_line_errors(jobs, fragment, capsys):
    assert main([*ARGV, "--jobs", jobs]) == 2
    err = capsys.readouterr().err
    assert err.startswith("topocoll: error: ") and err.count("\n") == 1 and fragment in err, err


def test_jobs_and_stream_keep_stdout_and_stream_every_result(capsys, monkeypatch):
    assert main([*ARGV, "--jobs", "1"]) == 0
    serial = capsys.readouterr()
    assert serial.err == ""                           # not a terminal, no --stream: stderr stays quiet
    rank_module = __import__("importlib").import_module("topocoll.tune.rank")
    monkeypatch.setattr(rank_module, "SERIAL_BELOW", 0)    # past the threshold: worker processes
    assert main([*ARGV, "--jobs", "2", "--stream"]) == 0
    streamed = capsys.readouterr()
    assert streamed.out == serial.out
    lines = streamed.err.splitlines()
    rows = [line for line in serial.out.splitlines() if line[:1].isdigit()]
    assert len(lines) >= len(rows) and all(line.startswith("[") for line in lines)
    assert sorted(int(line[1:line.index("/")]) for line in lines) == list(range(1, len(lines) + 1))
    assert any(line.endswith("µs") and "rabenseifner" in line for line in lines)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_progress_bar_and_the_lines(capsys, monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_DELAY", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main([*ARGV, "--jobs", "1"]) == 0
    shown = terminal.getvalue()
    assert "compare allreduce P=12" in shown and "[1/" in shown and "rabenseifner" in shown
    assert capsys.readouterr().out.startswith("allreduce on P=12, α-β-γ model")
