"""``topocoll bench``: the statistics and clock arithmetic without MPI, and a
few real ``mpiexec -n 2`` runs with tiny sizes that check the output's
structure (every algorithm beside the library's collective, finite ratios,
results checked, the library named), the one-line errors, and that a wrong
result is caught. No timing is asserted: this machine is shared and
oversubscribed; timing lives in ``benchmarks/bench_mpi.py``."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.mpi import bench
from topocoll.mpi.bench_cli import launcher_rank

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
ENV = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
for _name in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
    ENV.pop(_name, None)     # the children are started by mpiexec, not inherited from a launcher
TINY = ["--iterations", "2", "--warmup", "1", "--repetitions", "3"]


def mpirun(n, *args, timeout=60, script=None):
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    command = [sys.executable, script] if script else [sys.executable, "-m", "topocoll", "bench"]
    return subprocess.run([MPIEXEC, "-n", str(n), *command, *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


# ---- pure helpers ---------------------------------------------------------------------------------

def test_quartiles_and_osu_summary():
    assert bench.quartiles([7.0]) == (7.0, 7.0, 7.0)
    assert bench.quartiles([1, 2, 3, 4, 5, 6, 7, 8, 9]) == (3.0, 5.0, 7.0)
    assert bench.osu_summary([1.0, 2.0, 6.0]) == (3.0, 1.0, 6.0)
    with pytest.raises(SpecError, match="no samples"):
        bench.quartiles([])


def test_clock_offset_trusts_the_shortest_round_trip():
    # true offset +2.0; the slow round trip (RTT 4) would say 3.5, the fast one (RTT 0.2) says 2.0
    samples = [(0.0, 5.5, 4.0), (10.0, 12.1, 10.2)]
    assert bench.clock_offset(samples) == pytest.approx(2.0)
    assert bench.clock_offset(samples[::-1]) == pytest.approx(2.0)


def test_window_covers_the_slow_synchronisations_but_not_outliers():
    assert bench.window_length([1e-6] * 10) == bench.MIN_WINDOW
    assert bench.window_length([1e-4] * 10) == pytest.approx(4e-4)
    assert bench.window_length([1e-4] * 9 + [1.0]) == pytest.approx(4e-4)   # one slow round: upper quartile
    assert bench.window_length([]) == bench.MIN_WINDOW


def test_repetition_time_is_the_latest_finish_and_late_starts_are_invalid():
    starts = [10.0, 20.0, 30.0]
    ends = [[10.5, 20.2, 30.1], [10.1, 20.9, 30.3]]
    late = [[False, False, True], [False, False, False]]
    times, valid = bench.repetition_times(starts, ends, late)
    assert times.tolist() == pytest.approx([0.5, 0.9, 0.3])
    assert valid.tolist() == [True, True, False]


def test_output_mismatch_names_the_block_and_what_it_differs_from():
    out = np.arange(6.0)
    bounds = [0, 3, 6]
    assert bench.output_mismatch(out, bounds, {0: np.arange(3.0), 1: np.arange(3.0, 6.0)}) is None
    assert "block 1 differs from the serial reference" in bench.output_mismatch(out, bounds, {1: np.zeros(3)})
    library = out.copy()
    library[4] = -1
    text = bench.output_mismatch(out, bounds, {1: np.arange(3.0, 6.0)}, library, library_name="MPI_Allreduce")
    assert text == "block 1 differs from MPI_Allreduce (elements 3..6)"
    # with a tolerance: relative to the reference's largest magnitude
    assert bench.output_mismatch(out + 1e-9, bounds, {1: np.arange(3.0, 6.0)}, tolerance=1e-6) is None
    assert bench.output_mismatch(out + 1e-3, bounds, {1: np.arange(3.0, 6.0)}, tolerance=1e-6) is not None


def test_ratios_and_frames_per_second_are_relative_to_the_library_row_of_the_same_size():
    def row(algorithm, size, median, avg):
        return bench.Row(library="L", p=2, collective="composite", algorithm=algorithm, params={}, size_bytes=size,
                         iterations=1, warmup=0, avg_us=avg, min_us=avg, max_us=avg, repetitions=1,
                         valid_repetitions=1, median_us=median, q1_us=median, q3_us=median, baseline="MPI_X")
    rows = bench._with_ratios([row("MPI_X", 8, 10.0, 20.0), row("a", 8, 5.0, 40.0), row("MPI_X", 16, 4.0, 4.0),
                               row("a", 16, 8.0, 2.0)], fps=True)
    assert [(r.ratio, r.ratio_avg) for r in rows] == [(1.0, 1.0), (0.5, 2.0), (1.0, 1.0), (2.0, 0.5)]
    assert rows[1].fps == pytest.approx(2e5)
    assert bench.ratio(1.0, 0.0) == math.inf


def test_csv_and_json_carry_every_field(tmp_path):
    row = bench.Row(library="MPICH", p=2, collective="allreduce", algorithm="ring", params={"n": 2}, size_bytes=8,
                    iterations=3, warmup=1, avg_us=2.0, min_us=1.0, max_us=3.0, repetitions=5, valid_repetitions=4,
                    median_us=2.5, q1_us=2.0, q3_us=3.0, baseline="MPI_Allreduce", ratio=1.5, ratio_avg=1.25)
    result = bench.BenchResult(library="MPICH", mpi_version="MPICH Version: 5", p=2, collective="allreduce", seed=3,
                               clock_method="m", window_s=1e-4, rows=[row])
    bench.write_csv(result, tmp_path / "r.csv")
    bench.write_json(result, tmp_path / "r.json")
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0].split(",") == list(bench.CSV_FIELDS)
    assert "ring,n=2,8," in lines[1]
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["rows"][0]["ratio"] == 1.5 and data["seed"] == 3 and data["library"] == "MPICH"


def test_default_counts_follow_osu_above_8_kib():
    assert bench.default_counts(8192, None, None, None) == (bench.ITERATIONS[0], bench.WARMUP[0], bench.REPETITIONS)
    assert bench.default_counts(8193, None, None, None)[:2] == (bench.ITERATIONS[1], bench.WARMUP[1])


def test_algorithm_selection():
    names = [n for n, _ in bench.select_algorithms("allreduce", 2)]
    assert "ring" in names and "butterfly_virtual" not in names     # the benchmark sums: not idempotent
    assert [n for n, _ in bench.select_algorithms("composite", 4)] == [
        "binary_swap", "direct_send", "parallel_pipeline", "radix_k", "shift_based", "two_three_swap"]
    assert bench.select_algorithms("allreduce", 8, params={"n": 2}) == [("bruck", {"n": 2}),
                                                                        ("nway_dissemination", {"n": 2})]
    with pytest.raises(SpecError, match=r"binary_swap: not available for P=3, expected P: 2\^k only"):
        bench.select_algorithms("reduce_scatter", 3, algorithms=["binary_swap"])
    with pytest.raises(SpecError, match="count"):
        bench.select_algorithms("allreduce", 2, params={"count": 4})
    with pytest.raises(SpecError, match="expected one of"):
        bench.select_algorithms("allreduces", 2)


def test_mpi_layout_compares_with_the_library_only_where_blocks_sit_where_mpi_puts_them():
    from types import SimpleNamespace

    from topocoll.schedules import generate

    assert bench._mpi_layout(generate("alltoall", "shift", 3, count=12))
    assert bench._mpi_layout(generate("alltoall", "randomized", 3, count=12, packets=3, seed=0, burst=1))
    assert bench._mpi_layout(generate("allreduce", "ring", 3, count=7))
    # packets straddling MPI's per-destination chunks [0, 4, 8, 12]
    straddling = SimpleNamespace(collective="alltoall", p=3, nblocks=6, count=12,
                                 bounds=np.array([0, 3, 5, 6, 8, 10, 12]))
    assert not bench._mpi_layout(straddling)


def test_over_user_function_keeps_rank_order():
    front = np.array([[0.5, 0.0, 0.0, 0.5]], np.float32)
    back = np.array([[0.0, 0.0, 1.0, 1.0]], np.float32)
    inout = back.copy()
    bench.over_user_function(front, inout)          # MPI: invec (lower rank) over inoutvec
    assert inout.tolist() == [[0.5, 0.0, 0.5, 1.0]]
    inout = front.copy()
    bench.over_user_function(back, inout)
    assert inout.tolist() == [[0.0, 0.0, 1.0, 1.0]]


def test_launcher_rank_reads_the_launchers_variables(monkeypatch):
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert launcher_rank() is None
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    assert launcher_rank() == 3


# ---- real runs under mpiexec ----------------------------------------------------------------------

@pytest.mark.mpi
def test_every_algorithm_beside_the_library_with_finite_ratios(tmp_path):
    out, table = tmp_path / "r.json", tmp_path / "r.csv"
    proc = mpirun(2, "allreduce", "--sizes", "8,1K", *TINY, "--json", str(out), "--csv", str(table))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["p"] == 2 and data["library"].startswith("MPICH") and data["collective"] == "allreduce"
    expected = {"MPI_Allreduce"} | {n for n, _ in bench.select_algorithms("allreduce", 2)}
    for size in (8, 1024):
        rows = [r for r in data["rows"] if r["size_bytes"] == size]
        assert {r["algorithm"] for r in rows} == expected and len(rows) == len(expected)
        assert rows[0]["algorithm"] == "MPI_Allreduce" and rows[0]["ratio"] == 1.0
    for r in data["rows"]:
        assert r["checked"] and r["library"] == data["library"] and r["baseline"] == "MPI_Allreduce"
        assert r["iterations"] == 2 and r["repetitions"] == 3
        for key in ("ratio", "ratio_avg", "avg_us", "median_us"):
            assert math.isfinite(r[key]) and r[key] > 0, (key, r)
        assert r["min_us"] <= r["avg_us"] <= r["max_us"] and r["q1_us"] <= r["median_us"] <= r["q3_us"]
    assert len(table.read_text().splitlines()) == 1 + len(data["rows"])
    assert data["library"] in proc.stdout and "checked before timing" in proc.stdout
    assert "seed 0" in proc.stdout
    assert proc.stdout.count("topocoll bench:") == 1            # rank 0 prints, the other rank does not


@pytest.mark.mpi
def test_json_alone_prints_the_json_on_stdout_instead_of_the_text(tmp_path):
    """``--json`` without FILE (topocoll.outputs.add_json_argument): stdout is one JSON document, the
    same fields a ``--json FILE`` run writes, and its rows hold the sizes asked for."""
    proc = mpirun(2, "allreduce", "--sizes", "8,1K", *TINY, "--algorithm", "ring", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert {r["size_bytes"] for r in data["rows"]} == {8, 1024} and data["p"] == 2
    out = tmp_path / "r.json"
    proc = mpirun(2, "allreduce", "--sizes", "8", *TINY, "--algorithm", "ring", "--json", str(out))
    assert proc.returncode == 0 and "topocoll bench:" in proc.stdout
    assert set(json.loads(out.read_text())) == set(data)


@pytest.mark.mpi
def test_osu_output_reads_like_osu_allreduce(tmp_path):
    """`--osu`: the OSU Micro-Benchmarks' layout (osu_util.c print_stats with -f: size in 10 left-aligned
    columns, avg/min/max in 18 right-aligned columns with 2 decimals, iterations in 12), parsed here
    the way OSU plotting scripts do (skip '#' lines, split on whitespace)."""
    out = tmp_path / "r.json"
    proc = mpirun(2, "allreduce", "--sizes", "8,1K", *TINY, "--osu", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    blocks = [b for b in proc.stdout.split("\n\n") if b.strip()]
    data = json.loads(out.read_text())
    assert len(blocks) == len({r["algorithm"] for r in data["rows"]})
    for block in blocks:
        lines = block.strip("\n").splitlines()
        assert lines[0].startswith("# OSU MPI Allreduce Latency Test (topocoll bench: ")
        assert lines[1] == "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations"
        algorithm = lines[0].split("topocoll bench: ")[1].split(",")[0].split(" (")[0]
        rows = {r["size_bytes"]: r for r in data["rows"] if r["algorithm"] == algorithm}
        for line in lines[2:]:
            size, avg, lo, hi, iters = line.split()
            assert len(line) == 10 + 18 * 3 + 12 and line[:10].rstrip() == size
            r = rows[int(size)]
            assert float(avg) == round(r["avg_us"], 2) and float(lo) == round(r["min_us"], 2)
            assert float(hi) == round(r["max_us"], 2) and int(iters) == r["iterations"]


@pytest.mark.mpi
def test_composite_reports_frames_per_second(tmp_path):
    out = tmp_path / "c.json"
    proc = mpirun(2, "composite", "--width", "48", "--height", "20", *TINY, "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    names = {r["algorithm"] for r in data["rows"]}
    assert names == {"MPI_Reduce_scatter_block"} | {n for n, _ in bench.select_algorithms("composite", 2)}
    assert all(r["fps"] > 0 and math.isfinite(r["fps"]) and r["size_bytes"] == 48 * 20 * 16 for r in data["rows"])
    assert "frames/s" in proc.stdout


@pytest.mark.mpi
@pytest.mark.parametrize("args, message", [
    (["allreduce", "--algorithm", "nope"], "algorithm 'nope' for allreduce, expected one of"),
    (["allreduce", "--sizes", "0"], "message size '0', expected a positive whole number of bytes"),
])
def test_bad_argument_is_one_line_on_rank_0_exit_2(args, message):
    proc = mpirun(2, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and lines[0].startswith("topocoll: error: ") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


WRONG = """
import numpy as np
from mpi4py import MPI
from topocoll.__main__ import main
from topocoll.mpi import bench

make_plan, over = bench.make_plan, bench.over_user_function


class Corrupt:
    # rank 1's result is off by one after every run
    def __init__(self, plan):
        self.plan = plan

    def run(self):
        self.plan.run()
        if MPI.COMM_WORLD.rank == 1:
            self.plan.recvbuf[0] += 1

    recvbuf = property(lambda self: self.plan.recvbuf)

    def free(self):
        self.plan.free()


def back_over_front(inbuf, inoutbuf, datatype=None):
    # the wrong order for a non-commutative MPI operator
    result = np.frombuffer(inbuf, np.float32).copy()
    over(inoutbuf, result)
    np.frombuffer(inoutbuf, np.float32)[:] = result


bench.make_plan = lambda *a, **k: Corrupt(make_plan(*a, **k))
first = main(["bench", "allreduce", "--algorithm", "ring", "--sizes", "16", "--iterations", "1"])
bench.make_plan, bench.over_user_function = make_plan, back_over_front
second = main(["bench", "composite", "--width", "8", "--height", "4", "--iterations", "1"])
if MPI.COMM_WORLD.rank == 0:
    print("codes", first, second, flush=True)
"""


@pytest.mark.mpi
def test_a_wrong_result_is_one_line_naming_algorithm_size_and_rank(tmp_path):
    script = tmp_path / "wrong.py"
    script.write_text(WRONG)
    proc = mpirun(2, script=str(script))
    assert "codes 1 1" in proc.stdout, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert errors == [
        "topocoll: error: allreduce/ring at 16 B: rank 1: block 0 differs from the serial reference (elements 0..1)",
        "topocoll: error: composite/MPI_Reduce_scatter_block at 8x4: rank 0: block 0 differs from the serial "
        "reference (elements 0..16)"], proc.stderr


@pytest.mark.mpi
def test_without_mpiexec_it_runs_on_one_rank():
    proc = subprocess.run([sys.executable, "-m", "topocoll", "bench", "barrier", *TINY], capture_output=True,
                          text=True, timeout=60, env=ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "barrier on P=1" in proc.stdout and "mpiexec -n P" in proc.stdout
    assert "MPI_Barrier" in proc.stdout and "dissemination" in proc.stdout
