"""The command line: output, exit codes, and one-line errors (never a traceback)."""

import os
import subprocess
import sys

import pytest

from topocoll.cli import main
from topocoll.entry import EXTENSIONS, VERBS


def run(*argv):
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", *argv], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_help_lists_every_verb():
    code, out, _ = run("--help")
    assert code == 0
    for verb in ("algorithms", "verify", "show", "compare", "demo"):
        assert verb in out


def test_help_imports_only_the_parser():
    """`topocoll --help` (start-up): no plotting, MPI, NumPy or engine import; verbs import what they
    use when they run."""
    code = ("import contextlib, io, sys\n"
            "from topocoll.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['--help']) == 0\n"
            "heavy = ('matplotlib', 'mpi4py', 'scipy', 'networkx', 'hypothesis', 'numpy', 'topocoll._core',\n"
            "         'topocoll.mpi', 'topocoll.viz', 'topocoll.tune', 'topocoll.sim')\n"
            "print(' '.join(m for m in heavy if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"imported by --help: {proc.stdout.strip()}"


def test_top_help_needs_no_argparse():
    """`topocoll --help` (the console script, `python -m topocoll`) prints the verb table from
    topocoll.entry without importing argparse or topocoll.cli; the full parser prints the same text."""
    code = ("import contextlib, io, sys\n"
            "from topocoll.entry import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    assert main(['--help']) == 0\n"
            "print(' '.join(m for m in ('argparse', 're', 'topocoll.cli') if m in sys.modules))\n"
            "print(out.getvalue(), end='')\n")
    env = {**os.environ, "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    imported, fast = proc.stdout.split("\n", 1)
    assert imported == "", f"imported by the entry's --help: {imported}"
    full = subprocess.run([sys.executable, "-m", "topocoll.cli", "--help"], capture_output=True, text=True, env=env)
    assert full.stdout == fast
    for verb in (*VERBS, *(v for _, _, listed in EXTENSIONS for v in listed)):
        assert f"  {verb} " in fast


def test_top_help_wraps_to_the_terminal():
    from topocoll.entry import top_help
    for width in (40, 80, 200):
        lines = top_help(width).splitlines()
        words = [line for line in lines if line.startswith("  ") and not line.lstrip().startswith("-")]
        assert all(len(line) <= width - 2 for line in words), width
    assert "algorithms  list every algorithm" in top_help(80)


def test_listed_verbs_match_their_modules():
    """cli.EXTENSIONS lists each area's verbs (filled in on first use) with the help line its
    add_*_parser gives them."""
    import argparse
    import importlib

    from topocoll.cli import EXTENSIONS

    class Recorder:
        def __init__(self):
            self.sub, self.lines = argparse.ArgumentParser().add_subparsers(), {}

        def add_parser(self, name, **kwargs):
            self.lines[name] = kwargs.get("help")
            return self.sub.add_parser(name, **kwargs)

    for module, register, verbs in EXTENSIONS:
        recorder = Recorder()
        getattr(importlib.import_module(module), register)(recorder)
        assert recorder.lines == verbs, module


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


# ---- issue 8: every defect found gives one line and exit 2 -------------------------------------

def one_line_error(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, (argv, captured.out, captured.err)
    assert captured.err.startswith("topocoll: error: ") and captured.err.count("\n") == 1, captured.err
    return captured.err


@pytest.mark.parametrize("argv, fragment", [
    (["compare", "nosuch", "-P", "8"], "collective 'nosuch', expected one of allgather, allreduce"),
    (["algorithms", "nosuch"], "collective 'nosuch', expected one of"),
    (["compare", "allreduce", "-P", "8", "--alpha", "-1"], "argument --alpha: '-1' is out of range"),
    (["compare", "allreduce", "-P", "8", "--bandwidth", "nan"], "argument --bandwidth: 'nan' is out of range"),
    (["compare", "allreduce", "-P", "8", "--bandwidth", "0"], "expected a finite number > 0"),
    (["compare", "allreduce", "-P", "8", "--reduce-bandwidth", "0"], "argument --reduce-bandwidth"),
    (["compare", "allreduce", "-P", "8", "--sizes", "1e30"], "message size '1e30', expected at most"),
    (["compare", "allreduce", "-P", "8", "--sizes", "inf"], "message size 'inf', expected bytes"),
    (["compare", "allreduce", "-P", "8", "--sizes", "nan"], "message size 'nan', expected bytes"),
    (["compare", "allreduce", "-P", "8", "--sizes", "1" * 40], "expected at most 1099511627776 bytes"),
    (["compare", "allreduce", "-P", "8", "--sizes", ","], "--sizes ',', expected sizes"),
    (["verify", "allreduce", "ring", "-P", "99999999999999999999999"], "P=99999999999999999999999, expected 1.."),
    (["verify", "allreduce", "ring", "-P", "1000000000"], "P=1000000000, expected 1..1048576"),
    (["verify", "allreduce", "ring", "-P", "1000000"], "expected at most 4194304 for a per-rank view"),
    (["verify", "allreduce", "ring", "-P", "4", "--param", "count=" + "1" + "0" * 30], "count=1000000000"),
    (["verify", "allreduce", "nway_dissemination", "-P", "8", "--param", "n=1000000000"], "expected an integer in 1..7"),
    (["verify", "allreduce", "nway_dissemination_unadapted", "-P", "8", "--param", "n=1000000000"], "1..7"),
    (["verify", "barrier", "dissemination", "-P", "8", "--param", "n=1000000000"], "1..7"),
    (["verify", "alltoall", "bruck", "-P", "6", "--param", "k=1000000000"], "k=1000000000, expected"),
    (["verify", "alltoall", "randomized", "-P", "6", "--param", "packets=100000000"], "packets=100000000"),
    (["verify", "alltoall", "two_phase_schedule", "-P", "6", "--param", "shape=4x2"], "expected p=6"),
    (["verify", "--all", "--max-procs", "100000"], "argument --max-procs: 100000 is out of range"),
    (["verify", "--all", "allreduce"], "verify --all takes no COLLECTIVE"),
    (["show", "allreduce", "ring", "-P", "1000000"], "for a per-rank view"),
    (["compare", "allreduce", "-P", "16", "--topology", "kary:4,2", "--bandwidth", "1e9"],
     "--bandwidth 1e+09 with --topology kary:4,2, expected one of them"),
    (["compare", "allreduce", "-P", "16", "--routing", "d-mod-k"], "--routing given without --topology"),
    (["compare", "allreduce", "-P", "8", "--op", "frob"], "op='frob', expected one of"),
    (["demo", "-P", "100000"], "argument -P/--procs: 100000 is out of range"),
])
def test_issue_8_defects_are_one_line_exit_2(argv, fragment, capsys):
    assert fragment in one_line_error(argv, capsys)


def test_bad_draw_path_fails_before_any_work(capsys):
    err = one_line_error(["topo", "kary:4,2", "--pattern", "random", "--draw", "/nonexistent/dir/x.svg"], capsys)
    assert "--draw '/nonexistent/dir/x.svg': directory '/nonexistent/dir' does not exist" in err


def test_huge_composite_images_are_refused(capsys):
    err = one_line_error(["composite", "-P", "4", "--algorithm", "direct_send", "--width", "100000",
                          "--height", "100000"], capsys)
    assert "--width: 100000 is out of range" in err
    err = one_line_error(["composite", "-P", "4", "--algorithm", "direct_send", "--width", "60000",
                          "--height", "60000"], capsys)
    assert "expected at most 1073741824 (1 GiB)" in err


def test_two_phase_schedule_in_one_and_two_dimensions(capsys):
    for shape, mapping in (("3x2", "mapping=xy"), ("6", "mapping=x"), ("6x", "mapping=x")):
        assert main(["verify", "alltoall", "two_phase_schedule", "-P", "6", "--param", f"shape={shape}"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("OK alltoall/two_phase_schedule(p=6") and mapping in out, out


def test_compare_alltoall_uses_bytes_per_destination(capsys):
    # the issue's case: an empty table with exit 0 before the MPI convention
    assert main(["compare", "alltoall", "--sizes", "4K", "-P", "144"]) == 0
    out = capsys.readouterr().out
    assert "message size 4 KiB (per destination)" in out
    rows = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(rows) >= 5 and rows[0].split()[1] == "shift"
    assert "572 KiB" in rows[0]           # 143 destinations × 4 KiB sent by each rank


def test_compare_ranks_with_registry_defaults(capsys):
    assert main(["compare", "allreduce", "-P", "13", "--sizes", "8"]) == 0
    out = capsys.readouterr().out
    assert "nway_dissemination  n=2" in out          # n="auto" from the registry: smallest usable n at 13
    assert main(["compare", "allreduce", "-P", "8", "--sizes", "8", "--op", "max"]) == 0
    assert "butterfly_virtual" in capsys.readouterr().out


def test_compare_on_a_network(capsys):
    assert main(["compare", "allreduce", "-P", "16", "--sizes", "64K", "--topology", "kary:4,2",
                 "--order", "random", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "static contention model" in out and "(seed 3)" in out and "hottest link" in out


def test_algorithms_shows_needs_supports_and_costs(capsys):
    assert main(["algorithms", "allreduce"]) == 0
    out = capsys.readouterr().out
    assert "commutative, idempotent" in out and "(n, P) with an adaption" in out
    assert "2(P − 1)α" in out


def test_no_module_imports_the_cli():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1] / "python" / "topocoll"
    # library modules only: tests (python/topocoll/*/tests) may drive the CLI as a user does
    offenders = [str(path) for path in root.rglob("*.py") if path.name not in ("cli.py", "__main__.py", "entry.py")
                 and "tests" not in path.relative_to(root).parts
                 and re.search(r"from \.+cli import|import topocoll\.cli|from topocoll\.cli import|"
                               r"from \.\. import cli|from \. import cli", path.read_text())]
    assert not offenders, offenders
