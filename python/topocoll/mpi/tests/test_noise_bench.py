"""The network-noise benchmark (network-noise paper §2, Netgauge's scheme):
the seeded random split and perturbation pattern, the slowdown statistics
against NumPy by hand, the raw-sample files, argument checks, and one real
run under ``mpiexec -n 4`` (oversubscribed here: structure only, no timing
assertions)."""

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.mpi.noise_bench import (NoiseResult, NoiseSample, _check_args, exchange_partners, perturber_count,
                                      slowdown_summary, split_roles, write_csv)

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


# ---- the seeded split and the perturbation pattern ---------------------------

def test_the_split_depends_on_seed_and_repetition_only():
    a = [split_roles(16, 0.5, 3, rep) for rep in range(8)]
    b = [split_roles(16, 0.5, 3, rep) for rep in range(8)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))            # every rank draws the same
    assert len({x.tobytes() for x in a}) > 1                            # a new split per repetition
    assert not np.array_equal(split_roles(16, 0.5, 4, 0), a[0])         # and per seed


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 13, 64])
@pytest.mark.parametrize("ratio", [0.0, 0.01, 0.25, 0.5, 0.9, 0.999])
def test_the_split_keeps_an_application_rank_and_ratio_zero_perturbs_nothing(p, ratio):
    roles = split_roles(p, ratio, seed=9, repetition=2)
    assert roles.shape == (p,) and roles.dtype == bool
    assert roles.sum() == perturber_count(p, ratio)
    assert (~roles).sum() >= 1
    if ratio == 0.0:
        assert not roles.any()
    elif p >= 3:
        assert roles.sum() >= 2                                         # perturbers have a peer


def test_perturber_count_rounds_the_share_of_ranks():
    assert [perturber_count(10, r) for r in (0.0, 0.2, 0.34, 0.5, 0.75, 0.95)] == [0, 2, 3, 5, 8, 9]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 32])
def test_every_perturbation_send_has_exactly_one_matching_receive(n):
    rng = np.random.default_rng(5)
    for _ in range(20):
        dst, src = exchange_partners(n, rng)
        assert sorted(dst.tolist()) == list(range(n))
        assert all(src[dst[i]] == i for i in range(n))                 # i -> dst[i] is received there


# ---- statistics and raw samples ---------------------------------------------

def test_slowdown_summary_against_numpy_by_hand():
    values = np.random.default_rng(11).uniform(0.9, 2.5, size=29)
    s = slowdown_summary(values)
    q1, q3 = np.percentile(values, [25, 75])
    median = np.median(values)
    half = 1.57 * (q3 - q1) / math.sqrt(29)
    assert (s["median"], s["q1"], s["q3"], s["mean"]) == pytest.approx((median, q1, q3, values.mean()), rel=1e-12)
    assert s["notch"] == pytest.approx([median - half, median + half], rel=1e-12)
    assert (s["min"], s["max"], s["n"]) == (values.min(), values.max(), 29)
    assert slowdown_summary([]) is None


def _result():
    samples = (NoiseSample(0, 3, 2, 3e-5, 2e-5, 7), NoiseSample(1, 2, 3, math.nan, math.nan, 0),
               NoiseSample(2, 3, 2, 4e-5, 4e-5, 9))
    return NoiseResult("allreduce", "binomial", 8, 0.5, 42, 5, 65536, 2, {}, samples)


def test_unsupported_repetitions_are_kept_raw_but_left_out_of_the_summary():
    r = _result()
    assert [s.status for s in r.samples] == ["ok", "unsupported", "ok"]
    assert r.slowdowns.tolist() == pytest.approx([1.5, 1.0])
    assert r.summary()["n"] == 2 and r.summary()["median"] == pytest.approx(1.25)


def test_csv_and_json_hold_every_repetition(tmp_path):
    r = _result()
    with open(write_csv([r, r], tmp_path / "n.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and rows[0]["seed"] == "42" and rows[1]["status"] == "unsupported"
    assert float(rows[0]["slowdown"]) == pytest.approx(1.5)
    doc = json.loads(r.write_json(tmp_path / "n.json").read_text())   # strict JSON: NaN written as null
    (one,) = doc["results"]
    assert one["seed"] == 42 and one["repetitions"] == 3 and len(one["samples"]) == 3
    assert one["samples"][1]["slowdown"] is None and one["summary"]["n"] == 2


# ---- argument checks (no MPI) --------------------------------------------------

def _args(**over):
    base = dict(collective="allreduce", algorithm=None, sizes=[8], params={}, perturb=0.5, perturb_size=1 << 16,
                repetitions=3, plot=None, csv=None, json=None, seed=1, iterations=None)
    return SimpleNamespace(**{**base, **over})


@pytest.mark.parametrize("over, p, message", [
    ({}, 1, "needs at least 2 ranks"),
    ({"perturb": 1.0}, 4, "expected 0 <= ratio < 1"),
    ({"perturb": -0.1}, 4, "expected 0 <= ratio < 1"),
    ({"algorithm": ["nope"]}, 4, "algorithm 'nope' for allreduce"),
    ({"algorithm": ["bruck"], "params": {"k": 2}}, 4, "unknown parameter 'k'"),
    ({"collective": "gather"}, 4, "collective 'gather'"),
    ({"sizes": [0]}, 4, "message size=0"),
    ({"sizes": [12]}, 4, "not a multiple of itemsize=8"),         # reductions run on float64
    ({"repetitions": 0}, 4, "--repetitions=0"),
    ({"params": {"zz": 1}}, 4, "no allreduce algorithm takes it"),
    ({"plot": "/no/such/dir/x.png"}, 4, "does not exist"),
])
def test_bad_arguments_are_one_line_errors(over, p, message):
    with pytest.raises(SpecError, match=message) as info:
        _check_args(_args(**over), p, 0)
    assert "\n" not in str(info.value)


def test_ratio_zero_runs_on_one_rank():
    _check_args(_args(perturb=0.0), 1, 0)


def test_default_algorithms_are_the_library_and_those_taking_the_params():
    from topocoll.mpi.noise_bench import _algorithms

    assert _algorithms(_args()) == ["mpi", "binomial"]
    assert _algorithms(_args(params={"n": 2})) == ["mpi", "bruck", "nway_dissemination",
                                                   "nway_dissemination_unadapted"]
    assert _algorithms(_args(algorithm=["ring", "mpi", "ring"])) == ["ring", "mpi"]


# ---- one real run ---------------------------------------------------------------

SCRIPT = textwrap.dedent("""
    import sys
    from types import SimpleNamespace
    from topocoll.mpi.abort import run_or_abort
    from topocoll.mpi.noise_bench import run_from_args

    out = sys.argv[1]
    args = SimpleNamespace(collective="allreduce", algorithm=["mpi", "binomial"], sizes=[64], params={},
                           perturb=0.5, perturb_size=1 << 16, repetitions=3, plot=out + "/noise.png",
                           csv=out + "/noise.csv", json=out + "/noise.json", seed=7, iterations=2)
    sys.exit(run_or_abort(run_from_args, args))
""")


@pytest.mark.mpi
def test_real_run_under_mpiexec_writes_every_repetition(tmp_path):
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    script = tmp_path / "noise.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    proc = subprocess.run([MPIEXEC, "-n", "4", sys.executable, str(script), str(tmp_path)],
                          capture_output=True, text=True, timeout=90, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "seed 7" in proc.stdout and "allreduce on P=4" in proc.stdout
    table = [line.split() for line in proc.stdout.splitlines() if line.startswith(("mpi ", "binomial "))]
    assert [row[:3] for row in table] == [["mpi", "64", "B"], ["binomial", "64", "B"]]

    doc = json.loads((tmp_path / "noise.json").read_text())
    assert [r["algorithm"] for r in doc["results"]] == ["mpi", "binomial"]
    for r in doc["results"]:
        assert (r["seed"], r["procs"], r["ratio"], r["repetitions"], r["size_bytes"]) == (7, 4, 0.5, 3, 64)
        assert len(r["samples"]) == 3 and r["summary"]["n"] == 3
        for rep, s in enumerate(r["samples"]):
            assert s["status"] == "ok" and s["repetition"] == rep
            assert (s["app_procs"], s["perturbers"]) == (2, 2)
            assert s["exchanges"] >= 1                           # the perturbers did exchange
            assert s["clean_s"] > 0 and s["perturbed_s"] > 0
            assert math.isfinite(s["slowdown"]) and s["slowdown"] > 0
            assert s["slowdown"] == pytest.approx(s["perturbed_s"] / s["clean_s"])
    with open(tmp_path / "noise.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 6
    from PIL import Image

    with Image.open(tmp_path / "noise.png") as img:
        # a matplotlib figure (viz/tests/test_boxplot.py checks its boxes); here: the file is a picture
        assert img.format == "PNG" and img.size[0] >= 300 and img.size[1] >= 200
