"""The command line: output, exit codes, and one-line errors (never a traceback)."""

import subprocess
import sys

import pytest

from topocoll.cli import main


def run(*argv):
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", *argv], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_help_lists_every_verb():
    code, out, _ = run("--help")
    assert code == 0
    for verb in ("algorithms", "verify", "show", "compare", "demo"):
        assert verb in out


def test_algorithms_table(capsys):
    assert main(["algorithms", "allreduce"]) == 0
    out = capsys.readouterr().out
    assert "binomial" in out and "End et al." in out
    assert "bcast" not in out


def test_verify_ok_and_failure_exit_codes(capsys):
    assert main(["verify", "allreduce", "binomial", "-P", "9"]) == 0
    assert "OK allreduce/binomial(p=9)" in capsys.readouterr().out
    assert main(["verify", "reduce", "binomial", "-P", "6", "--param", "root=3", "--param", "order=relative",
                 "--op", "noncommutative"]) == 1
    assert "FAILED" in capsys.readouterr().out


@pytest.mark.parametrize("argv, fragment", [
    (["verify", "allreduce", "nosuch", "-P", "4"], "algorithm 'nosuch' for allreduce, expected one of"),
    (["verify", "allgatherx", "ring", "-P", "4"], "collective 'allgatherx', expected one of"),
    (["verify", "allreduce", "binomial", "-P", "-3"], "-3 is not positive"),
    (["verify", "allreduce", "binomial", "-P", "4", "--param", "n"], "expected NAME=VALUE"),
    (["verify", "reduce", "binomial", "-P", "4", "--param", "root=9"], "root=9, expected a rank in 0..3"),
    (["compare", "allreduce", "-P", "4", "--sizes", "-5"], "message size '-5'"),
    (["verify", "allreduce", "binomial"], "verify needs COLLECTIVE ALGORITHM -P N"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_exit_2(argv, fragment):
    code, out, err = run(*argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("topocoll: error: "), err
    assert fragment in err
    assert "Traceback" not in err


def test_show_prints_rounds_and_partial_results(capsys):
    assert main(["show", "allreduce", "binomial", "-P", "4"]) == 0
    out = capsys.readouterr().out
    assert "round 1" in out and "1 → 0" in out
    assert "rank   0: x0..x3" in out
