"""Fuzz every verb with bad arguments: exit 2, one line on stderr, never a traceback.

Each case is a small valid command with one or more parts replaced by a bad
value drawn, seeded, from huge, negative, zero, non-finite and garbage
numbers, unknown names and unwritable paths. The commands run in this
process through ``topocoll.cli.main`` (fast); two run as real subprocesses.
The seed is printed with any failure (``FUZZ_SEED``).
"""

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import time

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


# ---- issue 16: inputs that used to end in a traceback, a Rust abort, or a silent guess ----------------

DATA = "tests/data/topology"


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """Files the cases below read: noise traces and GOAL programs that must be refused."""
    d = tmp_path_factory.mktemp("issue16")
    files = {
        "binary.trace": bytes(range(256)) * 4,
        "overflow.trace": b"0\t5\n100\t99999999999999999999999999\n",
        "unmatched_send.goal": b"num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\n}\n",
        "unmatched_recv.goal": b"num_ranks 2\nrank 0 {\n}\nrank 1 {\nl1: recv 8b from 0 tag 4\n}\n",
        "sizes.goal": b"num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\nl1: recv 16b from 0 tag 0\n}\n",
        "huge.goal": b"num_ranks 2\nrank 0 {\nl1: send 18446744073709551616b to 1\n}\n"
                     b"rank 1 {\nl1: recv 18446744073709551616b from 0\n}\n",
        "huge_calc.goal": b"num_ranks 1\nrank 0 {\nl1: calc 99999999999999999999999\n}\n",
        "huge_tag.goal": b"num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 9999999999999\n}\n"
                         b"rank 1 {\nl1: recv 8b from 0 tag 9999999999999\n}\n",
        "digits.goal": b"num_ranks 2\nrank 0 {\nl1: send " + b"9" * 5000 + b"b to 1\n}\nrank 1 {\n}\n",
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


SIM = ["simulate", "allreduce", "ring", "-P", "4", "--size", "1K"]

ISSUE16 = [   # (argv with {dir} for the files above, a fragment the one line must hold)
    (SIM + ["--os-noise", "trace:{dir}/binary.trace"], "not a text file"),
    (SIM + ["--os-noise", "trace:{dir}/overflow.trace"], "overflow.trace:2: "),
    (SIM + ["--os-noise", "periodic:1e30,1e-5"], "MAX_OS_NOISE_S"),
    (["simulate", "goal", "{dir}/unmatched_send.goal"], "unmatched_send.goal:3: 'l1: send 8b to 1 tag 0' has no "
                                                         "matching receive: channel 0→1 tag 0 has 1 sends but 0 "
                                                         "receives, expected equal numbers"),
    (["simulate", "goal", "{dir}/unmatched_recv.goal"], "has 0 sends but 1 receives, expected equal numbers"),
    (["simulate", "goal", "{dir}/sizes.goal"], "sizes.goal:6: 'l1: recv 16b from 0 tag 0': send op 0 (8 B, line 3 "
                                               "of rank 0) matches receive op 1 (16 B, rank 1), expected equal sizes"),
    (["simulate", "goal", "{dir}/huge.goal"], "expected a size in 0..1099511627776 bytes (MAX_GOAL_BYTES, 1 TiB)"),
    (["simulate", "goal", "{dir}/huge_calc.goal"], "MAX_GOAL_BYTES"),
    (["simulate", "goal", "{dir}/huge_tag.goal"], "MAX_GOAL_TAG"),
    (["simulate", "goal", "{dir}/digits.goal"], "at most 30 digits"),
    (SIM + ["--ports", "1000000000"], "argument --ports: 1000000000 is out of range, expected an integer in 1..64"),
    (SIM + ["--ports", "0"], "expected an integer in 1..64"),
    (SIM + ["--window", "1000000000000"], "argument --window: 1000000000000 is out of range, expected an integer in "
                                          "0..1073741824"),
    (SIM + ["--eager", "1" + "0" * 20], "argument --eager: 100000000000000000000 is out of range"),
    (SIM + ["--runs", "1000000000", "--noise", "0.5"], "argument --runs: 1000000000 is out of range, expected an "
                                                       "integer in 1..10000"),
    (SIM + ["--noise-bytes", "1" + "0" * 20], "argument --noise-bytes: 100000000000000000000 is out of range"),
    (SIM + ["--ports", "2", "--model", "flow"], "--ports 2 with the flow model, expected --ports only with "
                                                "--model loggops"),
    (SIM + ["--ports", "2", "--model", "congestion"], "--ports 2 with the congestion model"),
    (["compare", "allreduce", "-P", "4", "--sizes", "8", "--ports", "2"], "--ports 2 with the alpha-beta-gamma model"),
    (["compare", "allreduce", "-P", "4", "--sizes", "8", "--ports", "2", "--topology", "crossbar:4"],
     "--ports 2 with the static model"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1,,2"], "--size '1,,2': item 2 of 3 is empty"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "8,"], "--size '8,': item 2 of 2 is empty"),
    (["compare", "allreduce", "-P", "4", "--sizes", "8,,64K"], "--sizes '8,,64K': item 2 of 3 is empty"),
    (["goal", "allreduce", "ring", "-P", "4", "--size", "8,16"], "expected one size"),
    (SIM + ["--model", "flow", "--nic-bandwidth", "0"], "leave --nic-bandwidth out for no injection limit"),
    (["topo", f"ibnet:{DATA}/X5.topofile", "--order", f"slurm:{DATA}/X5.topology.conf"],
     f"host 'sl390lin22' is not an endpoint of ibnet:{DATA}/X5.topofile; its 89 endpoints are named by node GUID "
     f"(e.g. 'H-003048c707b60000'), expected host names: give them with a map of 'NODE-ID HOSTNAME' lines, "
     f"ibnet:{DATA}/X5.topofile@map=FILE"),
    (["bench", "allreduce", "--np", "100000"], "argument --np: 100000 is out of range, expected an integer in 1..64"),
    (["bench", "allreduce", "--np", "0"], "argument --np: 0 is not positive"),
]


@pytest.mark.parametrize("argv, fragment", ISSUE16,
                         ids=[" ".join(a).replace("{dir}/", "").replace(DATA + "/", "")[-60:] for a, _ in ISSUE16])
def test_issue16_inputs_fail_in_one_line(argv, fragment, bad_files, monkeypatch):
    from topocoll.mpi import bench_cli

    def no_launch(*args, **kwargs):
        raise AssertionError(f"launched {args[0] if args else kwargs}")
    monkeypatch.setattr(bench_cli.subprocess, "Popen", no_launch)      # bench must refuse before mpiexec
    for name in bench_cli.RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    argv = [a.replace("{dir}", str(bad_files)) for a in argv]
    code, out, err = run_in_process(argv)
    assert code == 2 and out == "", (argv, code, out, err)
    assert err.startswith("topocoll: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert fragment in err, err


def test_the_same_options_pass_where_they_apply(bad_files):
    """The values next to the refused ones run: the messages above are not over-broad."""
    for argv in (SIM + ["--ports", "64"], SIM + ["--model", "flow", "--nic-bandwidth", "1e9"],
                 ["topo", f"ibnet:{DATA}/X5.topofile@map={DATA}/X5.map", "--order",
                  f"slurm:{DATA}/X5.topology.conf"]):
        code, _, err = run_in_process(argv)
        assert code == 0 and err == "", (argv, err)


def test_version_prints_the_package_version():
    import importlib.metadata

    code, out, err = run_in_process(["--version"])
    assert (code, err) == (0, "")
    assert out == f"topocoll {importlib.metadata.version('topocoll')}\n"


# ---- bench --np: Ctrl-C / SIGTERM end every process the launcher started ----------------------------

def _tree(pid):
    """Every process below ``pid`` (an implementation apart from bench_cli's, read from /proc)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            parent[int(name)] = int(stat[stat.rfind(b")") + 2:].split()[1])
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for child in (c for c, pp in parent.items() if pp == p and c not in found):
            found.add(child)
            todo.append(child)
    return found


def _running(pids):
    """Those of ``pids`` that still run (zombies, ended but not yet reaped, do not)."""
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    out.add(pid)
        except OSError:
            pass
    return out


def _interrupt_and_check(proc, started, signum, status):
    """Send ``signum`` to ``proc`` once ``started()`` holds; every process below it must end with it.
    Whatever is left (a failing run) is killed here, so a failure leaks no process."""
    tree = set()
    try:
        deadline = time.monotonic() + 60
        while not started() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        tree = _tree(proc.pid)
        assert started() and tree, "the launcher never started its processes"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
        deadline = time.monotonic() + 5
        while _running(tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(tree), f"left running after {signal.Signals(signum).name}: {sorted(_running(tree))}"
        assert proc.returncode == status, err
        name = signal.Signals(signum).name
        assert err.strip().splitlines()[-1].startswith(f"topocoll: interrupted ({name}): ended"), err
    finally:
        for pid in _running(tree | {proc.pid}):
            os.kill(pid, signal.SIGKILL)
        proc.wait()


LAUNCHER_SCRIPT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)   # even where the test runner ignores SIGINT
from topocoll.mpi.bench_cli import run_launcher
# a launcher that, like Hydra, puts what it starts in sessions of its own
child = "import os, sys, time; os.setsid(); print(os.getpid(), flush=True); time.sleep(120)"
sys.exit(run_launcher(["sh", "-c", f'{sys.executable} -c "{child}" & {sys.executable} -c "{child}" & wait'],
                      grace=1.0))
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process tree from /proc")
def test_run_launcher_on_ctrl_c_ends_processes_in_their_own_sessions():
    """Ctrl-C (SIGINT; SIGTERM is the test below, with a real mpiexec) ends what the launcher started,
    even in sessions of their own, which the launcher's process group does not hold."""
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER_SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []

    def started():     # both children printed their pid, after their setsid
        while len(seen) < 2:
            seen.append(proc.stdout.readline())
        return True
    _interrupt_and_check(proc, started, signal.SIGINT, 130)


MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


@pytest.mark.skipif(not (os.path.isdir("/proc") and os.access(MPIEXEC, os.X_OK)), reason="needs mpiexec and /proc")
def test_bench_np_sigterm_ends_mpiexec_and_every_rank():
    """The real thing: `topocoll bench --np 2`, SIGTERM once both ranks run; nothing it started survives
    (before issue 16, mpiexec, its proxy and both ranks ran on, orphaned)."""
    proc = subprocess.Popen([sys.executable, "-m", "topocoll", "bench", "barrier", "--np", "2", "--iterations",
                             "1000000000", "--repetitions", "1000"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)

    def started():     # mpiexec, its proxy and both ranks (python -m topocoll bench)
        ranks = 0
        for pid in _tree(proc.pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    ranks += f.read().split(b"\0")[1:4] == [b"-m", b"topocoll", b"bench"]
            except OSError:
                pass
        return ranks == 2
    _interrupt_and_check(proc, started, signal.SIGTERM, 143)


# ---- closed parsers, results in range, files whole ---------------------------------------------------
# Each input below once ended in a traceback, ran out of memory or time, or gave a wrong result with
# exit 0; now each is one line naming the bad value and what was expected, exit 2.

_PLATFORM = '<?xml version="1.0"?><platform version="4.1"><zone id="w" routing="Full">{}</zone></platform>'
_CLUSTER = '<cluster id="c" prefix="h" suffix="" radical="0-3" speed="1Gf" bw="{bw}" lat="{lat}" {extra}/>'


@pytest.fixture(scope="module")
def closed_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("closed")
    files = {
        "deep.xml": ('<?xml version="1.0"?><platform version="4.1">' + '<zone id="z" routing="Full">' * 2000
                     + "</zone>" * 2000 + "</platform>").encode(),
        # 399 bytes that declare a fat tree of 8·10^12 links (one level, 10^12 parallel cables per host)
        "fat.xml": _PLATFORM.format(_CLUSTER.format(bw="1GBps", lat="1us", extra='topology="FAT_TREE" '
                                                    'topo_parameters="1;4;1;999999999999"')).encode(),
        "bw0.xml": _PLATFORM.format(_CLUSTER.format(bw="0Bps", lat="1us", extra="")).encode(),
        "latinf.xml": _PLATFORM.format(_CLUSTER.format(bw="1GBps", lat="1e400s", extra="")).encode(),
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "window.osu": b"# OSU MPI Multiple Bandwidth / Message Rate Test v7.3\n# [ pairs: 1 ] [ window size: abc ]\n"
                      b"# Size                  MB/s        Messages/s\n1                       2.0          2000000\n",
        "huge.osu": b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n99999999999999999999999   1.5\n",
        "latency.osu": b"# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n1   1.5\n2  1.6\n4 1.7\n1024 3.0\n",
        "huge.rtr": b"c0-0c0s0a0l00(99999999999999999999999:0:0) green -> c0-0c0s6a0l10(0:0:6)\n",
        "latin1.hosts": b"node\xff\xfe1\n",
        "slots.hosts": b"node1 slots=99999999999999999999\n",
        "range.conf": b"SwitchName=s1 Nodes=n[1-999999999]\n",
        "digits.conf": b"SwitchName=s1 Nodes=n[1-" + b"9" * 5000 + b"]\n",
        "radical.xml": _PLATFORM.format(_CLUSTER.format(bw="1GBps", lat="1us", extra="").replace(
            'radical="0-3"', 'radical="0-' + "1" * 5000 + '"')).encode(),
        "nodes.xml": _PLATFORM.format(_CLUSTER.format(bw="1GBps", lat="1us", extra='topology="DRAGONFLY" '
                                                      'topo_parameters="1,1;1,1;2,1;2,1"')).encode(),
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


CLOSED = [   # (argv with {dir}, a fragment the one line must hold)
    (["topo", "simgrid:{dir}/deep.xml"], "deep.xml:1: <zone> nested 65 elements deep, expected at most 64"),
    (["topo", "simgrid:{dir}/fat.xml"], "has 7,999,999,999,992 links, expected at most 20,000,000"),
    (["topo", "simgrid:{dir}/bw0.xml"], "bandwidth '0Bps' is 0.0 B/s, expected a finite bandwidth > 0"),
    (["topo", "simgrid:{dir}/latinf.xml"], "time '1e400s' is inf s, expected a finite time in 0..1 s"),
    (["topo", "simgrid:/dev/zero"], "/dev/zero: not a text file (byte 0 is NUL), expected a SimGrid platform"),
    (["topo", "rtr:/dev/zero"], "/dev/zero: not a text file (byte 0 is NUL), expected an rtr --interconnect dump"),
    (["topo", "rtr:{dir}/huge.rtr"], "group 99999999999999999999999, expected 0..65535"),
    (["topo", "kary:4,2", "--order", "hostfile:{dir}/latin1.hosts"],
     "latin1.hosts:1: not UTF-8 text (byte 4 is 0xff), expected a hostfile"),
    (["topo", "crossbar:4", "--order", "hostfile:{dir}/slots.hosts"],
     "slots.hosts:1: 99999999999999999999 slots, expected at most 1,000,000 (MAX_SLOTS)"),
    (["topo", "crossbar:4", "--order", "slurm:{dir}/range.conf"],
     "range.conf:1: 'n[1-999999999]' names more than 1,000,000 hosts, expected at most 1,000,000 (MAX_HOSTLIST)"),
    (["topo", "crossbar:4", "--order", "slurm:{dir}/digits.conf"], "expected N or N-M (numbers of at most 9 digits)"),
    (["topo", "simgrid:{dir}/radical.xml"], "expected ranges such as '0-31' or '0-3,8,10-11'"),
    (["topo", "simgrid:{dir}/nodes.xml"], "DRAGONFLY nodes '2,1', expected one integer"),
    (["topo", "kary:4,2+ppn=2+ppn=3"], "+ppn= given 2 times, expected it once"),
    (["topo", "kary:4,2@bw=1GB/s,bw=2GB/s"], "option bw= given twice, expected each option once"),
    (SIM + ["--profile", "{dir}/deep.json"], "deep.json: JSON nested 100000 levels deep, expected a machine profile"),
    (SIM + ["--profile", "/dev/zero"], "/dev/zero: not a text file (byte 0 is NUL), expected a machine profile"),
    (["calibrate", "--from-osu", "inter:{dir}/window.osu", "-o", "{dir}/p.json"],
     "window.osu:2: window size 'abc', expected a whole number 1..999999999"),
    (["calibrate", "--from-osu", "inter:{dir}/huge.osu", "-o", "{dir}/p.json"],
     "huge.osu:3: size '99999999999999999999999', expected a whole number of bytes in 0..1099511627776"),
    (["calibrate", "--from-osu", "inter:{dir}/latency.osu", "-o", "{dir}/./latency.osu"],
     "is also an input (--from-osu inter:"),
    # 1.6·10^8 s of simulated time once printed as 0.2 s; 3·10^7 s of L as 7 µs
    (["simulate", "allreduce", "ring", "-P", "4", "--bandwidth", "10", "--size", "1G"],
     "simulated time could reach 2.577e+09 s"),
    (SIM + ["--latency", "3e7"], "simulate: L=30000000.0 s, expected a finite time in 0..1e+06 s"),
    (SIM + ["--alpha", "1e308"], "simulate: alpha=1e+308 s, expected a finite time in 0..1e+06 s"),
    # LogGOPS flags a model does not use were ignored with exit 0
    (SIM + ["--model", "flow", "--gap", "1e-6"], "--gap 1e-06 with the flow model, expected --gap only with "
                                                  "--model loggops"),
    (SIM + ["--model", "flow", "--gap-per-byte", "1e-9"], "--gap-per-byte 1e-09 with the flow model"),
    (SIM + ["--model", "congestion", "--latency", "1e-6"], "--latency 1e-06 with the congestion model, expected "
                                                          "--latency only with --model loggops or --model flow"),
    (SIM + ["--model", "packet", "--latency", "1e-6"], "--latency 1e-06 with the packet model"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1G", "--model", "packet", "--packet-bytes", "1"],
     "about 6,442,450,968 packets (6,442,450,944 B in 24 messages at packet_bytes=1), expected at most "
     "4,294,967,296 (MAX_PACKETS)"),
    (["tune", "allreduce", "-P", "8", "--json", "{dir}/t.json", "--csv", "{dir}/./t.json"],
     "--json and --csv both write"),
    (["tune", "allreduce,alltoall", "-P", "1..64,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37",
      "--json", "{dir}/t.json", "--plot", "{dir}/t.png"], "--plot: 50 panels (collectives × P), expected at most 48"),
    (["topo", "crossbar:1100", "--draw", "{dir}/d.svg", "--export-simgrid", "{dir}/d.xml"],
     "--export-simgrid: crossbar:1100 has 1100 endpoints, expected at most 1024"),
    (["topo", "simgrid:{dir}/bw0.xml", "--export-simgrid", "{dir}/bw0.xml"], "is also an input (spec simgrid:"),
    (SIM + ["--trace", "{dir}/x.json", "--matrix", "{dir}/x.json"], "--trace and --matrix both write"),
]


@pytest.mark.parametrize("argv, fragment", CLOSED, ids=[" ".join(a).replace("{dir}/", "")[-60:] for a, _ in CLOSED])
def test_closed_inputs_fail_in_one_line_and_write_nothing(argv, fragment, closed_files):
    before = {p.name: p.read_bytes() for p in closed_files.iterdir()}
    argv = [a.replace("{dir}", str(closed_files)) for a in argv]
    code, out, err = run_in_process(argv)
    assert code == 2 and out == "", (argv, code, out, err)
    assert err.startswith("topocoll: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert fragment in err, err
    # nothing written, nothing overwritten (an input named as an output is left as it was)
    assert {p.name: p.read_bytes() for p in closed_files.iterdir()} == before


def test_the_closed_checks_are_not_over_broad(closed_files, tmp_path):
    """Next to each refusal, the value that is fine runs: zero latency, a 1 s latency, one +ppn, a
    an OSU file written to another path, default packets, L of 10^4 s."""
    (tmp_path / "lat0.xml").write_text(_PLATFORM.format(_CLUSTER.format(bw="1GBps", lat="0", extra="")))
    for argv in (["topo", f"simgrid:{tmp_path}/lat0.xml"], ["topo", "kary:4,2+ppn=2"],
                 ["calibrate", "--from-osu", f"inter:{closed_files}/latency.osu", "-o", f"{tmp_path}/p.json"],
                 ["simulate", "allreduce", "ring", "-P", "4", "--size", "1M", "--model", "packet",
                  "--topology", "crossbar:4"],
                 SIM + ["--latency", "1e4"]):
        code, _, err = run_in_process(argv)
        assert code == 0, (argv, err)
    assert json.loads((tmp_path / "p.json").read_text())["format"]


def test_the_engine_edge_converts_no_time_beyond_its_clock():
    """The Rust edge checks each time as it converts it to ps, behind the Python check above (a cast
    once saturated at 2^64 - 1 ps and the clock's sums wrapped: 3·10^7 s of L simulated as 7 µs)."""
    from topocoll.errors import SpecError
    from topocoll.sim import Platform, make_network
    from topocoll.sim.engine import EngineConfig, EngineOptions
    net = make_network("crossbar:4", 4)
    EngineConfig(options=EngineOptions(L=1e6)).core(Platform(alpha=1e6), net)       # the bound itself passes
    with pytest.raises(SpecError, match=r"^EngineOptions: L=30000000 s, expected a finite time in 0\.\.1e6 s"):
        EngineConfig(options=EngineOptions(L=3e7)).core(Platform(), net)
    with pytest.raises(SpecError, match=r"^Platform: alpha=30000000 s, expected a finite time in 0\.\.1e6 s"):
        EngineConfig().core(Platform(alpha=3e7), net)


def test_reads_are_bounded_before_parsing(tmp_path):
    from topocoll.errors import ParseError
    from topocoll.inputs import read_bytes, read_json
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(ParseError, match=r"big.txt: 2,000 bytes, expected a test file of at most 1000 bytes"):
        read_bytes(big, limit=1000, what="a test file")
    # a device without end is read in chunks and refused once past the limit (no size to ask first)
    with pytest.raises(ParseError, match=r"/dev/urandom: more than 1000 bytes"):
        read_bytes("/dev/urandom", limit=1000, what="a test file")
    (tmp_path / "ok.json").write_text('{"a": [[1, {"b": "[[[[[["}]]}')     # brackets in strings do not count
    assert read_json(tmp_path / "ok.json", what="x", depth=4) == {"a": [[1, {"b": "[[[[[["}]]}
    with pytest.raises(ParseError, match=r"nested 4 levels deep, expected x nested at most 3 deep"):
        read_json(tmp_path / "ok.json", what="x", depth=3)


def test_outputs_are_checked_together_and_written_whole(tmp_path, monkeypatch):
    from topocoll.errors import SpecError
    from topocoll.outputs import check_outputs, write_text
    from topocoll.viz.figure import new_figure, save
    (tmp_path / "in.txt").write_text("input\n")
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "in.txt")
    with pytest.raises(SpecError, match=r"--a and --b both write"):
        check_outputs([("--a", tmp_path / "x.json"), ("--b", f"{tmp_path}/../{tmp_path.name}/x.json")])
    with pytest.raises(SpecError, match=r"--out '.*link.txt' is also an input \(--in\)"):
        check_outputs([("--out", link)], [("--in", tmp_path / "in.txt")])
    with pytest.raises(SpecError, match=r"--a and --b all write to stdout"):
        check_outputs([("--a", "-"), ("--b", "-")], stdout=("--a", "--b"))
    # a save interrupted part-way (Ctrl-C while drawing) leaves the old file, and no temporary one
    target = tmp_path / "pic.svg"
    target.write_text("old picture\n")
    fig = new_figure(2, 2)

    def interrupted(out, **kwargs):
        out.write(b"<svg half")
        raise KeyboardInterrupt
    monkeypatch.setattr(fig, "savefig", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save(fig, target, "--draw")
    assert target.read_text() == "old picture\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "link.txt", "pic.svg"]
    write_text(target, "new\n")
    assert target.read_text() == "new\n" and len(list(tmp_path.iterdir())) == 3


INTERRUPTIBLE = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)   # even where the test runner ignores SIGINT
from topocoll.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_ends_a_long_engine_run_with_one_line():
    """The packet model with 1-byte packets (402 M packets: minutes) polls for Ctrl-C from the Rust
    event loop: SIGINT ends it within seconds, exit 130, one line."""
    argv = ["simulate", "allreduce", "ring", "-P", "4", "--size", "64M", "--model", "packet", "--packet-bytes",
            "1", "--topology", "crossbar:4"]
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4)       # start-up and building take about a second; then the engine runs
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - sent < 5, "the run went on after Ctrl-C"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and err == "topocoll: interrupted\n" and out == "", (proc.returncode, err)


VERBS_ALL = ["algorithms", "verify", "show", "compare", "demo", "topo", "goal", "simulate", "composite", "bench",
             "calibrate", "tune", "reproduce"]


@pytest.mark.parametrize("verb", VERBS_ALL)
def test_help_ends_with_two_examples_that_parse_and_names_nothing_internal(verb, monkeypatch):
    import re

    from topocoll.cli import build_parser
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_in_process([verb, "--help"])
    assert code == 0 and err == ""
    tail = out.rstrip("\n").splitlines()[-3:]
    assert tail[0] == "examples:" and all(line.startswith("  topocoll ") for line in tail[1:]), tail
    assert not re.search(r"\bissue \d|\bhelper-", out, re.I), out
    for line in tail[1:]:
        args = build_parser().parse_args(line.split()[1:])       # a valid command line of this verb
        assert args.verb == verb


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_algorithms_wrap_to_the_terminal(monkeypatch):
    """On a terminal the catalogue fits its width (once 742-character lines); into a pipe it keeps
    one line per algorithm for scripts."""
    for columns in (60, 100, 200):
        monkeypatch.setenv("COLUMNS", str(columns))        # what shutil.get_terminal_size reads first
        out = _Terminal()
        with contextlib.redirect_stdout(out):
            assert main(["algorithms"]) == 0
        lines = out.getvalue().splitlines()
        assert max(len(line) for line in lines) <= columns, columns
        assert any("radix_k" in line for line in lines)
    code, out, _ = run_in_process(["algorithms", "allreduce"])
    assert code == 0 and all(line.startswith(("allreduce ", "collective ", "---")) for line in out.splitlines())


def test_calibrate_summary_names_nothing_internal(closed_files, tmp_path):
    import re
    (tmp_path / "intra.osu").write_bytes((closed_files / "latency.osu").read_bytes())
    code, out, err = run_in_process(["calibrate", "--from-osu", f"inter:{closed_files}/latency.osu",
                                     f"intra:{tmp_path}/intra.osu", "-o", f"{tmp_path}/p.json"])
    assert code == 0 and "intra-node level: on SPEC+ppn=N networks" in out
    assert not re.search(r"\bissue \d|\bhelper-", out + err, re.I), out + err


def test_bisection_is_not_hidden_by_a_much_faster_link():
    """A SimGrid dragonfly whose routers are joined by 10^9 parallel links: the hosts' links (two of
    12.5 GB/s on each side of the halving) bound the bisection, as with one link; the max-flow's
    tolerance, relative to the fastest link, once called every host link full: 0 B/s, exit 0."""
    bisection = []
    for links in (1, 1_000_000_000):
        code, out, err = run_in_process(["topo", f"simgrid-dragonfly:1,1;1,1;4,{links};1", "--json"])
        assert code == 0, err
        bisection.append(json.loads(out)["bisection_bandwidth"])
    assert bisection[0] == bisection[1] == pytest.approx(25e9)
