"""``topocoll bench``: topocoll's algorithms beside the MPI library's own
collective, under ``mpiexec``. Everything is a library call first
(:func:`topocoll.mpi.bench.bench`, :func:`~topocoll.mpi.bench.bench_composite`,
and ``topocoll.mpi.noise_bench.run_from_args`` for ``--perturb``); this module
parses, agrees across ranks, and prints on rank 0.

Every rank parses the same command line, so every rank takes the same
decision; a bad argument is one line ``topocoll: error: ...`` printed by rank 0
only (exit 2), and no rank waits for another.

``--np N`` (and ``topocoll calibrate``) start the launcher themselves through
:func:`run_launcher`: in a session of its own, and on Ctrl-C, SIGTERM or
SIGHUP the launcher and every process below it are ended before the command
returns (MPICH's Hydra puts its proxy and every rank in sessions of their own,
so a process group alone does not reach them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..argtypes import bounded_int
from ..errors import SpecError
from ..text import human_bytes as _bytes
from ..text import table as _table

__all__ = ["add_bench_parser", "cmd_bench", "run_launcher", "stop_launcher", "descendants", "MAX_NP"]

EXIT_FAILED, EXIT_USAGE = 1, 2
#: most ranks ``--np`` starts. They all run on this machine (the launcher is given no host file), each a
#: Python interpreter with NumPy and mpi4py (about 50 MB before its buffers): 64 are about 3 GB of the
#: 24 GiB a development machine has, and already 32 ranks per core on its 2 cores, where MPICH's polling
#: ranks time the scheduler more than the algorithms. Larger runs belong under the site's mpiexec or srun.
MAX_NP = 64
#: seconds the launcher has to end its ranks after SIGTERM, and then the ranks left after their own SIGTERM,
#: before SIGKILL
LAUNCHER_GRACE_S = 3.0
#: the ``--np`` value type
_NP = bounded_int(1, MAX_NP, what="ranks to start on this machine")
#: environment variables a launcher sets on each rank (MPICH/Hydra, Open MPI, PMIx)
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def launcher_rank() -> int | None:
    """This process's rank as the launcher announced it (read before MPI is
    initialised), or None when not started by ``mpiexec``."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def _quiet_on_other_ranks(parser: argparse.ArgumentParser) -> None:
    """argparse errors of ``bench`` print on rank 0 only: other ranks exit 2 silently.

    Unknown options are reported by this parser too (argparse would leave them
    to the top-level parser, which prints on every rank)."""
    report, parse_known = parser.error, parser.parse_known_args

    def error(message):
        if (launcher_rank() or 0) != 0:
            sys.exit(EXIT_USAGE)
        report(message)

    def parse_known_args(args=None, namespace=None):
        namespace, extras = parse_known(args, namespace)
        if extras:
            error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras
    parser.error, parser.parse_known_args = error, parse_known_args


# ---- argument values: checked after MPI starts, so that the ranks agree ------------------------

def _typed(option: str, parse, text):
    try:
        return parse(text)
    except argparse.ArgumentTypeError as exc:
        raise SpecError(f"argument {option}: {exc}") from None


def _options(args) -> dict:
    """The checked values of ``args`` (raises :class:`SpecError` on the first bad one)."""
    from ..argtypes import bounded_int, finite_float, parse_params, parse_size, parse_sizes, positive_int, seed
    from ..outputs import check_outputs

    out = dict(collective=args.collective, algorithms=args.algorithm or None, params=parse_params(args.param))
    for name in ("iterations", "warmup", "repetitions"):
        text = getattr(args, name)
        out[name] = None if text is None else _typed(f"--{name}", positive_int, text)
    out["seed"] = _typed("--seed", seed, args.seed)
    out["osu"] = bool(getattr(args, "osu", False))
    if out["osu"] and args.collective == "composite":
        raise SpecError("--osu given for composite, expected a collective (OSU has no compositing test)")
    out["np"] = None if args.np is None else _typed("--np", _NP, args.np)
    if args.collective == "composite":
        if args.sizes is not None:
            raise SpecError("--sizes given for composite, expected --width and --height")
        out["width"] = _typed("--width", bounded_int(1, 1 << 16, what="pixels"), args.width or "4096")
        out["height"] = _typed("--height", bounded_int(1, 1 << 16, what="pixels"), args.height or "2048")
        out["pattern"] = args.pattern or "checker"
    else:
        given = [opt for opt, value in (("--width", args.width), ("--height", args.height),
                                        ("--pattern", args.pattern)) if value is not None]
        if given:
            raise SpecError(f"{given[0]} given for {args.collective}, expected it only with composite")
        out["sizes"] = parse_sizes(args.sizes or "8,1K,64K,1M")
    check_outputs([(f"--{option}", getattr(args, option)) for option in ("csv", "json", "plot")], stdout=("--json",))
    for option in ("csv", "json", "plot"):
        out[f"{option}_path"] = getattr(args, option)
    if args.perturb is not None:
        ratio = _typed("--perturb", finite_float(unit="ratio"), args.perturb)
        if not ratio < 1:
            raise SpecError(f"argument --perturb: {args.perturb!r} is out of range, expected a ratio in [0, 1)")
        out["perturb"] = ratio
        out["perturb_size"] = parse_size(args.perturb_size or "1M")
    elif args.plot is not None or args.perturb_size is not None:
        raise SpecError(f"{'--plot' if args.plot is not None else '--perturb-size'} given without --perturb, "
                        "expected it only with the network-noise benchmark (--perturb RATIO)")
    return out


# ---- printing ----------------------------------------------------------------------------------

def _num(x: float) -> str:
    return f"{x:.2f}" if x < 1e4 else f"{x:.4g}"


def _print_result(result) -> None:
    from .bench import LIBRARY_CALLS

    composite = result.collective == "composite"
    print(f"topocoll bench: {result.collective} on P={result.p}, {result.library}")
    print(f"timing: OSU loop (avg/min/max over ranks of each rank's mean) and ReproMPI window repetitions "
          f"(median, q1-q3 of the slowest rank; window {result.window_s * 1e6:.0f} µs; clocks: "
          f"{result.clock_method}); seed {result.seed}")
    baseline = result.rows[0].baseline if result.rows else LIBRARY_CALLS.get(result.collective, "")
    if composite:
        print(f"checked before timing: every result, {baseline}'s included, against a serial over-composition "
              "in float64")
    else:
        print(f"checked before timing: each algorithm's result against the serial reference and {baseline}'s")
    if result.p == 1:
        print("hint: one rank; run `mpiexec -n P topocoll bench ...` (or --np P) to benchmark P ranks")
    sizes = list(dict.fromkeys(r.size_bytes for r in result.rows))
    for size in sizes:
        rows = [r for r in result.rows if r.size_bytes == size]
        head = ("algorithm", "params", "iters", "avg µs", "min µs", "max µs", "median µs", "q1-q3 µs", "valid",
                f"ratio to {rows[0].baseline}")
        if composite:
            head += ("frames/s",)
        table = [head]
        for r in rows:
            shown = ", ".join(f"{k}={v}" for k, v in r.params.items()) or "-"
            line = (r.algorithm, shown, str(r.iterations), _num(r.avg_us), _num(r.min_us), _num(r.max_us),
                    _num(r.median_us), f"{_num(r.q1_us)}-{_num(r.q3_us)}", f"{r.valid_repetitions}/{r.repetitions}",
                    f"{r.ratio:.3g}×")
            if composite:
                line += (f"{r.fps:.3g}",)
            table.append(line)
        if composite:
            width, height, pattern = result.image
            print(f"\n{width}x{height} {pattern} images, {_bytes(size)} per frame (16 B/pixel):")
        elif result.collective == "barrier":
            print("\nno message (barrier):")
        else:
            from ..schedules.sizes import CONVENTION
            print(f"\nmessage size {_bytes(size)} ({CONVENTION[result.collective]}):")
        print(_table(table))


#: OSU's test names (osu_util's headers), by collective
_OSU_NAMES = {"allreduce": "Allreduce", "reduce": "Reduce", "bcast": "Broadcast", "barrier": "Barrier",
              "allgather": "Allgather", "alltoall": "All-to-All Personalized Exchange",
              "reduce_scatter": "Reduce_scatter"}


def osu_text(result) -> str:
    """The result as the OSU Micro-Benchmarks print it (``osu_allreduce -f``: size left-aligned in 10
    columns, then average, minimum and maximum latency in µs and the iterations, each right-aligned in
    18 columns with 2 decimals; ``osu_util.c``'s ``print_stats`` layout), one block per algorithm with
    its name in the title line, so plotting scripts written for OSU read it unchanged."""
    lines = []
    for algorithm in dict.fromkeys(r.algorithm for r in result.rows):
        rows = [r for r in result.rows if r.algorithm == algorithm]
        shown = ", ".join(f"{k}={v}" for k, v in rows[0].params.items())
        what = _OSU_NAMES.get(result.collective, result.collective)
        lines += [f"# OSU MPI {what} Latency Test (topocoll bench: {algorithm}{f' ({shown})' if shown else ''}, "
                  f"P={result.p}, {result.library})",
                  f"{'# Size':<10}{'Avg Latency(us)':>18}{'Min Latency(us)':>18}{'Max Latency(us)':>18}"
                  f"{'Iterations':>12}"]
        for r in rows:
            lines.append(f"{r.size_bytes:<10d}{r.avg_us:>18.2f}{r.min_us:>18.2f}{r.max_us:>18.2f}"
                         f"{r.iterations:>12d}")
        lines.append("")
    return "\n".join(lines)


# ---- the verb ----------------------------------------------------------------------------------

def _relaunch(np_: int) -> int:
    """``--np N`` without a launcher: run this command line again under the venv's mpiexec."""
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
    if mpiexec is None:
        raise SpecError(f"--np {np_}: no mpiexec next to {sys.executable} or on PATH, expected the mpich wheel")
    argv, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg == "--np":
            skip = True
        elif not arg.startswith("--np="):
            argv.append(arg)
    if "bench" not in argv:
        raise SpecError("--np: cannot find the bench command line to relaunch, expected `topocoll bench ...`")
    return run_launcher([mpiexec, "-n", str(np_), sys.executable, "-m", "topocoll", *argv])


# ---- the launcher and what it starts -----------------------------------------------------------

class _Stopped(Exception):
    """A signal that ends the command arrived while the launcher ran."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _process_table() -> dict[int, tuple[int, int, int, int, str]]:
    """``pid -> (parent, process group, session, start time, state)`` of every
    process, from ``/proc`` (Linux); empty where there is none."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue                          # ended meanwhile
        fields = stat[stat.rfind(b")") + 2:].split()   # after "pid (comm) ": state, ppid, pgrp, session, ...
        try:
            table[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]), fields[0].decode())
        except (IndexError, ValueError):
            continue
    return table


def descendants(pid: int) -> dict[int, int]:
    """Every process below ``pid``, or in the process group or session it
    leads: ``{pid: start time}`` (the start time tells a reused pid apart)."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for p, (parent, *_rest) in table.items():
        children.setdefault(parent, []).append(p)
    found = {p: row[3] for p, row in table.items() if p != pid and pid in (row[1], row[2])}
    todo = [pid, *found]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child != pid:
                found[child] = table[child][3]
                todo.append(child)
    return found


def _alive(processes: dict[int, int]) -> dict[int, int]:
    """Those of ``processes`` still running (same pid and start time, not a zombie)."""
    table = _process_table()
    return {p: start for p, start in processes.items()
            if p in table and table[p][3] == start and table[p][4] != "Z"}


def _signal_each(processes: dict[int, int], signum: int) -> None:
    for pid in _alive(processes):
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def stop_launcher(proc: subprocess.Popen, *, grace: float = LAUNCHER_GRACE_S) -> int:
    """End ``proc`` (a launcher :func:`run_launcher` started in its own
    session) and every process it started; return how many it had started.

    SIGTERM to the launcher's process group first (Hydra and Open MPI's
    mpirun then end their ranks and clean up); after ``grace`` seconds, or
    once the launcher has ended, SIGTERM to whatever it started that still
    runs (those in sessions of their own included, found before anything
    ended, as orphans lose their parent), then SIGKILL after ``grace`` more."""
    tree = descendants(proc.pid)
    if proc.poll() is None:                   # not reaped: its pid still names its group
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        tree.update(descendants(proc.pid))
        proc.kill()
        proc.wait()
    for signum in (signal.SIGTERM, signal.SIGKILL):
        _signal_each(tree, signum)
        deadline = time.monotonic() + grace
        while _alive(tree) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not _alive(tree):
            break
    return len(tree)


def run_launcher(command: list[str], *, env: dict | None = None, grace: float = LAUNCHER_GRACE_S) -> int:
    """Run an MPI launcher (``mpiexec -n N ...``) to its end and return its exit status.

    It starts in a session of its own, so a Ctrl-C at the terminal reaches this
    process alone; on Ctrl-C (SIGINT), SIGTERM or SIGHUP, :func:`stop_launcher`
    ends the launcher and every process it started, one line says so on
    standard error, and the status is 128 + the signal's number (130 for
    Ctrl-C), as a shell reports it."""
    handled = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {}

    def stopped(signum, frame):
        raise _Stopped(signum)

    if threading.current_thread() is threading.main_thread():    # signal handlers: main thread only
        previous = {s: signal.signal(s, stopped) for s in handled}
    proc = None
    try:
        proc = subprocess.Popen(command, env=env, start_new_session=True)
        return proc.wait()
    except (KeyboardInterrupt, _Stopped) as exc:
        signum = exc.signum if isinstance(exc, _Stopped) else signal.SIGINT
        if proc is None:                      # nothing started
            print(f"topocoll: interrupted ({signal.Signals(signum).name})", file=sys.stderr, flush=True)
            return 128 + signum
        # a second Ctrl-C or SIGTERM waits for the cleanup (the handlers are restored below)
        quiet = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, *handled)} if previous else {}
        try:
            count = stop_launcher(proc, grace=grace)
        finally:
            if quiet:
                signal.signal(signal.SIGINT, quiet[signal.SIGINT])
        print(f"topocoll: interrupted ({signal.Signals(signum).name}): ended {Path(command[0]).name} and the "
              f"{count} process(es) it started", file=sys.stderr, flush=True)
        return 128 + signum
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def cmd_bench(args) -> int:
    if args.np is not None and launcher_rank() is None:
        return _relaunch(_typed("--np", _NP, args.np))
    from mpi4py import MPI

    from .abort import run_or_abort
    from .bench import BenchError, ResultMismatch, agreed

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        opts = agreed(comm, _options, args)
        if opts["np"] is not None:
            raise BenchError(f"--np {opts['np']} under mpiexec ({comm.Get_size()} ranks), expected --np only "
                             "without mpiexec (it starts one)")
        if "perturb" in opts:
            return _perturb(args, opts)
        status = run_or_abort(_agreed_errors_returned, opts, comm)
        if isinstance(status, BenchError):
            raise status
        return status
    except ResultMismatch as exc:
        if rank == 0:
            print(f"topocoll: error: {exc}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    except BenchError:
        if rank == 0:
            raise              # topocoll.cli prints the one line
        return EXIT_USAGE


def _agreed_errors_returned(opts, comm):
    """``_run``, with errors every rank raised alike returned instead of raised:
    they end the command normally; anything else aborts the job (run_or_abort)."""
    from .bench import BenchError

    try:
        return _run(opts, comm)
    except BenchError as exc:
        return exc


def _perturb(args, opts) -> int:
    """The network-noise benchmark (:func:`topocoll.mpi.noise_bench.run_from_args`), with the checked
    values on ``args``; its argument errors are raised on every rank alike."""
    from .bench import BenchError
    from .noise_bench import run_from_args

    args.algorithm, args.params, args.sizes = opts["algorithms"], opts["params"], opts.get("sizes")
    args.perturb, args.perturb_size = opts["perturb"], opts["perturb_size"]
    args.iterations, args.repetitions, args.seed = opts["iterations"], opts["repetitions"], opts["seed"]
    try:
        return run_from_args(args)
    except SpecError as exc:
        raise BenchError(str(exc)) from None


def _run(opts, comm) -> int:
    from .bench import bench, bench_composite, write_csv, write_json

    rank = comm.Get_rank()

    def progress(line):
        if sys.stderr.isatty():
            print(f"[bench] {line}", file=sys.stderr, flush=True)

    common = dict(algorithms=opts["algorithms"], params=opts["params"], iterations=opts["iterations"],
                  warmup=opts["warmup"], repetitions=opts["repetitions"], seed=opts["seed"], comm=comm,
                  progress=progress)
    if opts["collective"] == "composite":
        result = bench_composite(opts["width"], opts["height"], pattern=opts.get("pattern", "checker"), **common)
    else:
        result = bench(opts["collective"], opts["sizes"], **common)
    if rank == 0:
        if opts.get("json_path") == "-":
            pass                        # --json alone: the JSON on stdout, instead of the text
        elif opts.get("osu"):
            print(osu_text(result), end="")
        else:
            _print_result(result)
        if opts.get("csv_path"):
            write_csv(result, opts["csv_path"])
        if opts.get("json_path"):
            write_json(result, opts["json_path"])
    return 0


def add_bench_parser(subparsers) -> None:
    """Register ``topocoll bench`` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "bench", help="time topocoll's algorithms beside the MPI library's collective (under mpiexec)",
        description=("OSU-style latency (avg/min/max over ranks) and ReproMPI-style window-synchronised "
                     "repetitions (median, quartiles) of every algorithm of a collective beside the MPI "
                     "library's own (MPI_Allreduce, MPI_Alltoall, ...), each result checked first. "
                     "`bench composite` reports compositing frames per second against "
                     "MPI_Reduce_scatter_block with a non-commutative over operator; --perturb runs the "
                     "network-noise benchmark. Run it as `mpiexec -n P topocoll bench ...`."))
    p.add_argument("collective", help="allreduce, reduce, reduce_scatter, bcast, barrier, allgather, alltoall, "
                                      "or composite")
    p.add_argument("--algorithm", action="append", metavar="NAME",
                   help="only this algorithm (repeatable; default: every one that exists for P)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="generator parameter, repeatable (e.g. n=2, root=1); algorithms without it are left out")
    p.add_argument("--sizes", help="message sizes in bytes, MPI's convention: per destination for alltoall, "
                                   "per rank for allgather, the whole vector otherwise (default 8,1K,64K,1M; "
                                   "reductions sum float64: multiples of 8)")
    p.add_argument("--width", help="composite: image width in pixels (default 4096)")
    p.add_argument("--height", help="composite: image height in pixels (default 2048)")
    p.add_argument("--pattern",
                   help="composite: test images, checker (radix-k §4), random or sphere (default checker)")
    p.add_argument("--iterations", metavar="N",
                   help="timed iterations per size, OSU's -i (default 100, 20 above 8 KiB; 10 frames)")
    p.add_argument("--warmup", metavar="N", help="untimed iterations first, OSU's -x (default 10, 2 above 8 KiB)")
    p.add_argument("--repetitions", metavar="N",
                   help="window-synchronised repetitions, ReproMPI's nrep (default 30; 10 frames)")
    p.add_argument("--seed", default="0", help="seed of the inputs the results are checked on (default 0)")
    p.add_argument("--osu", action="store_true",
                   help="print as the OSU Micro-Benchmarks do (# Size  Avg Latency(us) ...), one block per "
                        "algorithm, so OSU plotting scripts read it")
    p.add_argument("--csv", metavar="FILE", help="write every row as CSV")
    from ..outputs import add_json_argument
    add_json_argument(p, "the result")
    p.add_argument("--np", metavar="N", help=f"without mpiexec: start N ranks (1..{MAX_NP}) on this machine under "
                                            "the venv's mpiexec; Ctrl-C ends them all")
    p.add_argument("--perturb", metavar="RATIO",
                   help="network-noise benchmark: fraction in [0, 1) of ranks that perturb with large messages")
    p.add_argument("--perturb-size", metavar="BYTES", help="perturbation message size (default 1M)")
    p.add_argument("--plot", metavar="PNG", help="with --perturb: notched box plots of the slowdowns")
    p.set_defaults(func=cmd_bench)
    _quiet_on_other_ranks(p)
