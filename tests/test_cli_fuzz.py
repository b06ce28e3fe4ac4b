"""Fuzz every verb with bad arguments: exit 2, one line on stderr, never a traceback.

Each case is a small valid command with one or more parts replaced by a bad
value drawn, seeded, from huge, negative, zero, non-finite and garbage
numbers, unknown names and unwritable paths. The commands run in this
process through ``topocoll.cli.main`` (fast); two run as real subprocesses.
The seed is printed with any failure (``FUZZ_SEED``).
"""

import contextlib
import io
import random
import subprocess
import sys

import pytest

from topocoll.cli import main

FUZZ_SEED = 8
CASES_PER_VERB = 200

HUGE = ["9" * 25, "1" + "0" * 30, "99999999999999999999999", "1e400", "-1e400", "1" * 400, str(2**64)]
NEGATIVE = ["-1", "-7", "-99999", "-0.5"]
NONFINITE = ["nan", "inf", "-inf", "NaN", "+inf"]
GARBAGE = ["", "@@", "abc", "1e", "0x1g", "1,,x", "∞", "½", "3..4", "None", "[]", "1/2", "--", "٣x"]
BAD_NUMBERS = HUGE + NEGATIVE + NONFINITE + GARBAGE
NAMES = ["nosuch", "allreduc", "ALLREDUCE", "ring2", "x" * 60, "all reduce", "é", "0"]
BAD_PATHS = ["/nonexistent/dir/x.svg", "/nonexistent/x.png", "/proc/no/such/out.png"]

# parameter names of the catalogue and values none of them accepts
PARAM_NAMES = ["n", "k", "root", "gather_root", "leftover", "order", "seed", "packets", "burst", "shape", "dims",
               "d", "linear", "mapping", "depth_order", "count", "itemsize"]
BAD_PARAM_VALUES = HUGE + ["-1", "-99999", "nan", "inf", "-inf", "@@", "1e", "∞", "-1,-2", "1,nan", "9" * 30 + ",2"]

SCHEDULES = [("allreduce", "ring"), ("allreduce", "nway_dissemination"), ("allreduce", "bruck"),
             ("barrier", "dissemination"), ("reduce", "binomial"), ("alltoall", "randomized"),
             ("alltoall", "two_phase_schedule"), ("alltoall", "virtual_mesh"), ("alltoall", "bruck"),
             ("reduce_scatter", "radix_k"), ("reduce_scatter", "direct_send")]


def _verify_or_show(rng, verb):
    collective, algorithm = rng.choice(SCHEDULES)
    argv = [verb, collective, algorithm, "-P", "6"]
    kind = rng.randrange(5)
    if kind == 0:
        argv[4] = rng.choice(BAD_NUMBERS + ["0", str(2**20 + 1)])
    elif kind == 1:
        argv += ["--param", f"{rng.choice(PARAM_NAMES)}={rng.choice(BAD_PARAM_VALUES)}"]
    elif kind == 2:
        argv[rng.choice((1, 2))] = rng.choice(NAMES)
    elif kind == 3:
        argv += ["--param", rng.choice(["n", "=2", "nosuch=3", "frob=1", " =1"])]
    else:
        argv += ["--op", rng.choice(NAMES + GARBAGE[1:])]
    return argv


def _compare(rng):
    argv = ["compare", rng.choice(["allreduce", "alltoall", "barrier", "reduce_scatter"]), "-P", "8",
            "--sizes", "8"]
    option, values = rng.choice([
        ("-P", BAD_NUMBERS + ["0", str(2**20 + 1)]),
        ("--sizes", BAD_NUMBERS + ["0", "1.5", "8,-1", "1e30", "4X", ",", "1e-300"]),
        ("--alpha", HUGE[3:5] + ["-1", "-1e-9"] + NONFINITE + GARBAGE),
        ("--bandwidth", ["0", "-2e9"] + NONFINITE + GARBAGE + ["1e400"]),
        ("--reduce-bandwidth", ["0", "-1"] + NONFINITE + GARBAGE),
        ("--op", NAMES + GARBAGE[1:]),
        ("--routing", ["d-mod-k", "@@"]),               # without --topology
        ("--order", ["random", "@@"]),
        ("--seed", ["-1", str(2**64)] + HUGE[:3] + GARBAGE[1:]),
        ("--topology", ["@@", "kary:0,2", "torus:0x2", "nosuch:1", "ibnet:/nonexistent/file", "kary:99999,99"]),
        ("collective", NAMES),
    ])
    value = rng.choice(values)
    if option == "collective":
        argv[1] = value
    elif option in ("-P", "--sizes"):
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def _algorithms(rng):
    return ["algorithms", rng.choice(NAMES + [g for g in GARBAGE if g not in ("", "--")])]


def _demo(rng):
    return ["demo", "-P", rng.choice(BAD_NUMBERS + ["0", "1025", str(2**20)])]


def _topo(rng):
    argv = ["topo", "kary:4,2"]
    option, values = rng.choice([
        ("spec", ["@@", "kary:", "kary:0,2", "kary:-4,2", "torus:0x4", "torus:axb", "mesh:", "crossbar:0",
                  "crossbar:-3", "dragonfly:0,0,0", "nosuch:3", "ibnet:/nonexistent/file", "xgft:2;0;0", ""]),
        ("--ranks", BAD_NUMBERS + ["0", str(2**21)]),
        ("--ebb", HUGE + ["-1"] + NONFINITE + GARBAGE[1:]),
        ("--seed", ["-1", str(2**64)] + HUGE[:3] + GARBAGE[1:]),
        ("--draw", BAD_PATHS),
        ("--pattern", ["@@", "shift:", "shift:x", "nosuch"]),
        ("--routing", ["@@", "nosuch", "random:seed=x"]),
        ("--order", ["@@", "nosuch", "blocked:0x0", "hostfile:/nonexistent/hosts"]),
    ])
    value = rng.choice(values)
    if option == "spec":
        argv[1] = value
    else:
        argv += [option, value]
    return argv


def _composite(rng):
    argv = ["composite", "-P", "4", "--algorithm", "direct_send", "--width", "8", "--height", "8"]
    option, values = rng.choice([
        ("-P", BAD_NUMBERS + ["0", "5000"]),
        ("--width", BAD_NUMBERS + ["0", "100000"]),
        ("--height", BAD_NUMBERS + ["0", "100000"]),
        ("--algorithm", NAMES),
        ("--k", ["@@", "0", "-4", "1e400", "2,2", "9" * 30]),
        ("--threads", BAD_NUMBERS + ["0"]),
        ("--seed", ["-1", str(2**64)] + HUGE[:3] + GARBAGE[1:]),
        ("--pattern", NAMES),
        ("--operator", NAMES),
        ("--order", ["/nonexistent/order.txt"]),
        ("--save", BAD_PATHS),
    ])
    value = rng.choice(values)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def cases():
    rng = random.Random(FUZZ_SEED)
    out = []
    for make in (lambda: _verify_or_show(rng, "verify"), lambda: _verify_or_show(rng, "show"),
                 lambda: _compare(rng), lambda: _algorithms(rng), lambda: _demo(rng), lambda: _topo(rng),
                 lambda: _composite(rng)):
        out += [make() for _ in range(CASES_PER_VERB)]
    out += [[rng.choice(NAMES)] for _ in range(10)]          # unknown verbs
    out += [["verify", "allreduce", "ring", "-P", "4", "--max-procs", v] for v in ("0", "-1", "@@", "9" * 30)]
    return out


def run_in_process(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_every_verb_rejects_bad_arguments_in_one_line():
    failures = []
    all_cases = cases()
    assert len(all_cases) >= 400
    for argv in all_cases:
        try:
            code, _, err = run_in_process(argv)
        except SystemExit as exc:          # argparse must never exit on its own
            failures.append(f"{argv}: SystemExit({exc.code})")
            continue
        except Exception as exc:           # anything but TopocollError is a bug: a traceback
            failures.append(f"{argv}: {type(exc).__name__}: {exc}")
            continue
        if code != 2 or not err.startswith("topocoll: error: ") or err.count("\n") != 1 or "Traceback" in err:
            failures.append(f"{argv}: exit {code}, stderr {err!r}")
    assert not failures, f"FUZZ_SEED={FUZZ_SEED}: {len(failures)} of {len(all_cases)} failed:\n" + "\n".join(
        failures[:20])


@pytest.mark.parametrize("argv", [
    ["verify", "allreduce", "ring", "-P", "99999999999999999999999"],
    ["compare", "allreduce", "-P", "8", "--sizes", "nan"],
])
def test_real_subprocess_exits_2_without_traceback(argv):
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", *argv], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("topocoll: error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and proc.stdout == ""
