"""The ``topocoll`` command's entry point and its verb table, importing nothing.

``topocoll --help`` is answered here from :data:`VERBS` and :data:`EXTENSIONS`
without importing argparse or the rest of :mod:`topocoll.cli`: argparse with
the ``re`` and ``enum`` it imports costs about as much as starting Python
itself, and the issue's target is ``topocoll --help`` ≤ 1.5× ``python -c pass``.
Every other command line goes to :func:`topocoll.cli.main`, whose top-level
parser prints the same text (:func:`top_help`), so the two cannot differ.
"""

import os
import sys

__all__ = ["DESCRIPTION", "VERBS", "EXTENSIONS", "main", "top_help"]

PROG = "topocoll"
DESCRIPTION = ("Collective communication algorithms as explicit schedules: verified symbolically, "
               "simulated on modelled networks, executed over MPI.")

#: the verbs :mod:`topocoll.cli` defines itself: {verb: the one line ``topocoll --help`` shows}
VERBS = {
    "algorithms": "list every algorithm with its rounds, P, operators, cost and paper",
    "verify": "prove a schedule correct (exit 1 with a diagnosis if not)",
    "show": "print a schedule round by round with each rank's partial results",
    "compare": "rank the algorithms of a collective by a model",
    "demo": "the main job on an embedded default (144-node DDR fat tree) and its HTML report",
}

#: verbs other areas own, by module: (module, its function registering them on
#: the subparsers, {verb: the one line ``topocoll --help`` shows}). The module is
#: imported only when one of its verbs parses or prints its help; its
#: ``add_*_parser`` then gets the listed parsers (tests check the lines match).
EXTENSIONS = (
    ("topocoll.topology.cli", "add_topo_parser",
     {"topo": "a network's counts, diameter, bisection and effective bisection bandwidth, link loads"}),
    ("topocoll.sim.cli", "add_simulate_parser",
     {"goal": "write a schedule in LogGOPSim's GOAL text format",
      "simulate": "simulate a schedule on a modelled network (loggops, flow, congestion, packet; or synthetic "
                  "traffic)"}),
    ("topocoll.composite", "add_composite_parser",
     {"composite": "composite test images with a compositing schedule and check the picture"}),
    ("topocoll.mpi.bench_cli", "add_bench_parser",
     {"bench": "time topocoll's algorithms beside the MPI library's collective (under mpiexec)"}),
    ("topocoll.mpi.calibrate", "add_calibrate_parser",
     {"calibrate": "measure α, β, γ and LogGP parameters with MPI (or read OSU results) and write a machine profile"}),
    ("topocoll.tune.cli", "add_tune_parser",
     {"tune": "the best algorithm per (P, size) on a network, the MPI libraries' defaults, tuning files"}),
    ("topocoll.reproduce.cli", "add_reproduce_parser",
     {"reproduce": "reproduce the papers' results in simulation: pages, CSV, plots"}),
    ("topocoll.synth.cli", "add_synthesize_parser",
     {"synthesize": "a schedule made for a network's routes (allgather, reduce_scatter, allreduce, bcast, "
                    "alltoall), ranked beside the fixed algorithms"}),
)

_OPTIONS = (("-h, --help", "show this help message and exit"),
            ("--version", "print topocoll's version and exit"))


def _columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` finds it
    (``$COLUMNS``, else stdout's terminal, else 80), without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap on spaces (``textwrap`` would import ``re``)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


def _entries(rows, width: int) -> list[str]:
    """argparse's layout of a list of (name, help): names indented 2, help in
    a column after the longest name (a name too long starts its help below)."""
    column = min(max(len(name) for name, _ in rows) + 4, 24)
    help_width = max(width - column, 11)
    out = []
    for name, text in rows:
        lines = _wrap(text, help_width)
        head = f"  {name}"
        if len(head) + 2 <= column:
            out.append(head.ljust(column) + lines[0])
            lines = lines[1:]
        else:
            out.append(head)
        out += [" " * column + line for line in lines]
    return out


def top_help(width: int | None = None) -> str:
    """The text of ``topocoll --help`` for a terminal ``width`` columns wide
    (default: this one's), ending in a newline."""
    width = max((_columns() if width is None else width) - 2, 11)
    verbs = list(VERBS.items()) + [item for _, _, listed in EXTENSIONS for item in listed.items()]
    lines = [f"usage: {PROG} [-h] [--version] VERB ...", "", *_wrap(DESCRIPTION, width), "",
             "verbs (`topocoll VERB --help` for its options):", *_entries(verbs, width), "",
             "options:", *_entries(_OPTIONS, width)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    """The ``topocoll`` command: ``--help`` here, the rest in :func:`topocoll.cli.main`."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["--help"], ["-h"]):
        try:
            sys.stdout.write(top_help())
            sys.stdout.flush()
        except BrokenPipeError:
            pass
        return 0
    from .cli import main as cli_main
    return cli_main(argv)
