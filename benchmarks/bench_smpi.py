"""SimGrid's SMPI and topocoll's event-driven simulator on the same collectives.

Each case runs one MPI collective twice, on the same machine described twice:

- **SMPI** (SimGrid 3.32 from Debian's ``libsimgrid-dev``, which ships
  ``smpicc``, ``smpirun`` and the replay program ``smpireplaymain``; there is
  no ``simgrid`` package in bookworm): the C program
  ``benchmarks/smpi/collective.c`` compiled with ``smpicc``, run with
  ``smpirun`` on a generated SimGrid platform (XML version 4.1), the
  algorithm forced with ``--cfg=smpi/allreduce:NAME`` or
  ``--cfg=smpi/alltoall:NAME`` (*application mode*). All ranks enter the
  collective at the same simulated instant; rank 0 prints the slowest
  rank's time. Then in *trace-replay mode*: a time-independent trace of
  the call recorded once (``smpirun -trace-ti``), cut to the collective, and
  replayed with each algorithm (``smpirun -replay``); the speed-ups are
  against the replay, SimGrid's cheapest way to the same simulated times.
- **topocoll**: ``generate(...)`` of the matching schedule, ``make_network``
  of the matching spec, ``simulate(..., model="flow",
  options=EngineOptions(sharing="cm02", ...))``, plus the ``loggops`` and
  ``static`` models, in a child process per case.

Both sides model the network only: SMPI's per-message software overheads
(``smpi/os``, ``smpi/or``, ``smpi/ois``) are 0, topocoll's α is 0, the
reduction is free on both sides (SMPI does not time the operator inside a
collective; topocoll's reduce bandwidth is 10^18 B/s). SimGrid is installed
with ``apt-get install -y libsimgrid-dev`` when ``smpirun`` is missing;
without it the section says so in one line. Walls: SMPI (both modes),
topocoll's ``simulate`` call in-process and the whole ``topocoll simulate``
command.

Reproduce: ``.venv/bin/python benchmarks/run.py --only smpi``
(or ``.venv/bin/python benchmarks/bench_smpi.py [--out FILE] [--only TEXT]``).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from peak_rss import run_child

HERE = Path(__file__).resolve().parent
COMMAND = ".venv/bin/python benchmarks/run.py --only smpi"
SOURCE = HERE / "smpi" / "collective.c"
APT_PACKAGES = ("libsimgrid-dev",)   # smpicc, smpirun, smpireplaymain (Debian has no `simgrid` package)

BANDWIDTH = 2e9        # B/s on every link: SimGrid "2GBps" = 2e9 B/s = topocoll "2GB/s"
LATENCY = 1e-6         # s on every link
REDUCE_BANDWIDTH = 1e18   # topocoll: reductions free, as inside SMPI's collectives
#: SMPI sends of fewer bytes than this are detached (``MPI_Send`` returns
#: before the receiver posts); topocoll's ``eager`` is the largest eager
#: message, so one byte less
SMPI_EAGER_BELOW = 65536
#: SMPI sends of fewer bytes than this enter the network at once, before the
#: receive is posted (SimGrid's default is 0: none), as topocoll's eager
#: sends do. At 0, sends wait for their receive (a rendezvous in time) and the
#: ring allreduce of 64 KiB on the torus took 3,139.6 µs instead of 1,239.6 µs
SMPI_ASYNC_SMALL_BELOW = SMPI_EAGER_BELOW
SMPI_OPTIONS = (
    "--cfg=network/model:CM02",              # plain CM02: latency/bandwidth factors 1, weight-S 0
    "--cfg=network/crosstraffic:0",          # no 5 % reverse-path load per flow (topocoll has none)
    "--cfg=network/TCP-gamma:0",             # no TCP window bound on a flow's rate
    "--cfg=smpi/host-speed:1Gf",
    "--cfg=smpi/simulate-computation:0",     # the program's own CPU time is not simulated
    "--cfg=smpi/os:0:0:0",                   # no software overhead per MPI_Send ...
    "--cfg=smpi/or:0:0:0",                   # ... per MPI_Recv ...
    "--cfg=smpi/ois:0:0:0",                  # ... per MPI_Isend
    "--cfg=smpi/wtime:0",                    # MPI_Wtime costs no simulated time
    f"--cfg=smpi/async-small-thresh:{SMPI_ASYNC_SMALL_BELOW}",
    f"--cfg=smpi/send-is-detached-thresh:{SMPI_EAGER_BELOW}",
    "--log=root.thres:warning",
)
SMPI_TIMEOUT_S = 300   # the torus `ring` all-to-all: 36 s alone, over 120 s on a loaded machine
#: the all-at-once all-to-all at 512 ranks: SimGrid's solver may take minutes
ALL_AT_ONCE_TIMEOUT_S = 60
TOPOCOLL_TIMEOUT_S = 900   # the 512-rank `direct` row runs about a minute alone, several on a loaded machine
TOPOCOLL_MEMORY = 8 << 30

KIB, MIB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class Machine:
    """One machine, as a topocoll spec and as a SimGrid ``<cluster>``."""

    name: str
    spec: str
    hosts: int
    cluster: str      # extra attributes of the <cluster> element
    routing: str | None = None   # topocoll's routing engine (None: the family's default)

    def platform_xml(self) -> str:
        return (
            "<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f'  <cluster id="{self.name.replace(" ", "_")}" prefix="node-" suffix="" radical="0-{self.hosts - 1}" '
            f'speed="1Gf" bw="{BANDWIDTH / 1e9:g}GBps" lat="{LATENCY * 1e6:g}us"{self.cluster}\n'
            '           sharing_policy="SPLITDUPLEX" loopback_bw="1000GBps" loopback_lat="0us"/>\n'
            "</platform>\n")


_OPTS = f"@bw={BANDWIDTH / 1e9:g}GB/s,lat={LATENCY * 1e6:g}us"
FAT_TREE = Machine("fat tree", f"kary:12,2{_OPTS}", 144,
                   ' topology="FAT_TREE" topo_parameters="2;12,12;1,12;1,1"')
CROSSBAR = Machine("crossbar", f"crossbar:144{_OPTS}", 144, "")
# the torus routes as SimGrid's TorusZone does (`tie=simgrid`; checked pair by pair in `route_check`)
TORUS = Machine("torus", f"torus:8x8x8{_OPTS}", 512, ' topology="TORUS" topo_parameters="8,8,8"',
                routing="dor:tie=simgrid")
MACHINES = (FAT_TREE, CROSSBAR, TORUS)


@dataclass(frozen=True)
class Case:
    collective: str
    algorithm: str        # topocoll's generator
    smpi: str             # SMPI's algorithm
    sync: str             # topocoll EngineOptions.sync
    machine: Machine
    p: int
    nbytes: int           # MPI convention: whole vector (allreduce), per destination (alltoall)

    @property
    def timeout_s(self) -> int:
        return ALL_AT_ONCE_TIMEOUT_S if self.smpi == "basic_linear" and self.p >= 512 else SMPI_TIMEOUT_S


#: (topocoll generator, SMPI algorithm, topocoll sync)
ALLREDUCE = (("ring", "lr", "rounds"), ("pairwise_exchange", "rdb", "rounds"), ("rabenseifner", "rab_rdb", "rounds"))
ALLTOALL = (("pairwise_exchange", "pair", "rounds"), ("shift", "ring", "rounds"), ("direct", "basic_linear", "deps"))
ALLREDUCE_BYTES = (64 * KIB, 4 * MIB)
ALLTOALL_BYTES = 4 * KIB


def cases() -> list[Case]:
    """Allreduce at P = 128 on the 144-host machines (a power of two, and a
    divisor of both sizes, so ``lr`` needs no remainder step) and 512 on the
    torus; all-to-all at 128 for the XOR pairing (P = 2^k), at every host
    otherwise."""
    out = []
    for m in MACHINES:
        p2 = 128 if m.hosts == 144 else m.hosts
        for nbytes in ALLREDUCE_BYTES:
            for alg, smpi, sync in ALLREDUCE:
                out.append(Case("allreduce", alg, smpi, sync, m, p2, nbytes))
        for alg, smpi, sync in ALLTOALL:
            out.append(Case("alltoall", alg, smpi, sync, m, p2 if smpi == "pair" else m.hosts, ALLTOALL_BYTES))
    return out


# ----------------------------------------------------------------- SMPI side

def _apt_install() -> str | None:
    """Install SimGrid from Debian; None on success, else why not (one line)."""
    if not shutil.which("apt-get"):
        return "no apt-get on this machine"
    if os.geteuid() != 0:
        return "apt-get needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", *APT_PACKAGES]
    last = ""
    for cmd in (install, ["apt-get", "update"], install):
        print(f"[bench] smpi: {' '.join(cmd)}", file=sys.stderr, flush=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(cmd)}` took over 900 s"
        if proc.returncode == 0 and cmd is install:
            return None
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
    return f"`{' '.join(install)}` failed: {last}"


def ensure_simgrid() -> str | None:
    """None when ``smpirun`` and ``smpicc`` are on PATH (installing them if
    needed), else why they are not."""
    if shutil.which("smpirun") and shutil.which("smpicc"):
        return None
    why = _apt_install()
    if why is None and not (shutil.which("smpirun") and shutil.which("smpicc")):
        why = f"{' '.join(APT_PACKAGES)} installed, but smpirun or smpicc is not on PATH"
    return why


def simgrid_version() -> str:
    text = subprocess.run(["smpirun", "-version"], capture_output=True, text=True).stdout.strip()
    package = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libsimgrid-dev"],
                             capture_output=True, text=True).stdout.strip() if shutil.which("dpkg-query") else ""
    return text + (f" (Debian package libsimgrid-dev {package})" if package else "")


def _smpirun(cmd: list[str], tmp: Path, timeout_s: int) -> tuple[str, str, float, str | None]:
    """(stdout, stderr, wall s, why it failed or None) of one ``smpirun``.

    ``smpirun`` is a shell script that starts ``smpimain`` in the background;
    on a timeout the whole process group is killed, not only the script
    (``subprocess.run(timeout=...)`` would leave ``smpimain`` running). Its
    temporary files (a copy of the program per rank) go to ``$TMPDIR``:
    smpirun 3.32's ``-tmpdir`` drops its value."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "", "", time.perf_counter() - start, f"did not finish in {timeout_s} s"
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        last = (err.strip().splitlines() or out.strip().splitlines() or [""])[-1]
        return out, err, wall, f"smpirun exit {proc.returncode}: {last}"
    return out, err, wall, None


def _platform_args(case: Case, tmp: Path) -> list[str]:
    m = case.machine
    return ["-np", str(case.p), "-platform", str(tmp / f"{m.name.replace(' ', '_')}.xml"),
            "-hostfile", str(tmp / f"hosts{m.hosts}")]


def _algorithm(case: Case, name: str | None = None) -> tuple[str, ...]:
    return () if case.collective == "pingpong" else (f"--cfg=smpi/{case.collective}:{name or case.smpi}",)


def run_smpi(case: Case, exe: Path, tmp: Path, extra: tuple = ()) -> tuple[float | None, float, str | None]:
    """Application mode: (simulated time s or None, wall s, why no time);
    ``extra`` options come after :data:`SMPI_OPTIONS` and override them."""
    cmd = ["smpirun", *_platform_args(case, tmp), *SMPI_OPTIONS, *extra, *_algorithm(case), str(exe),
           case.collective, str(case.nbytes)]
    out, _, wall, why = _smpirun(cmd, tmp, case.timeout_s)
    found = re.search(r"^time_s (\S+)", out, flags=re.M)
    if why is None and not found:
        why = "smpirun printed no time_s"
    return (float(found.group(1)) if why is None else None), wall, why


#: SMPI's algorithm for *recording* each collective's time-independent trace.
#: The trace holds the MPI call (``<rank> alltoall 4096 4096 6 6``), not the
#: point-to-point messages of the algorithm that ran it (the tracing sits at
#: the MPI interface), so one recording serves every algorithm of a row's
#: (machine, collective, P, size); ``cross_checks`` compares two recordings
#: made with different algorithms
RECORD_ALGORITHM = {"allreduce": "rdb", "alltoall": "bruck"}
RECORD_TIMEOUT_S = 300
#: the all-at-once all-to-all at 512 ranks: replay runs SimGrid's solver on
#: 261,632 concurrent flows, as the application run does
ALL_AT_ONCE_REPLAY_TIMEOUT_S = 600


def trace_key(case: Case) -> tuple:
    return case.machine.name, case.collective, case.p, case.nbytes


def record_trace(case: Case, exe: Path, tmp: Path, algorithm: str | None = None) -> tuple[Path | None, float, str | None]:
    """Record the time-independent trace of ``case``'s collective once
    (``smpirun -trace-ti``, the same platform and options as the application
    runs, the algorithm :data:`RECORD_ALGORITHM`) and keep from each rank's
    trace its ``init``, the collective and ``finalize`` — the barrier,
    reductions and broadcast around the call, which set up the common start
    instant and collect the timings, and the ``compute`` entries between
    calls (the program's own CPU time, which the application runs do not
    simulate: ``smpi/simulate-computation:0``) are dropped, so a replay
    starts every rank's collective at simulated time 0 and ends when the
    slowest rank's ends. Returns (index file of the kept traces, recording
    wall s, why there is none)."""
    algorithm = algorithm or RECORD_ALGORITHM[case.collective]
    name = "-".join(str(x) for x in (*trace_key(case), algorithm)).replace(" ", "_")
    raw, kept = tmp / f"ti-{name}", tmp / f"replay-{name}"
    raw.mkdir(exist_ok=True)
    kept.mkdir(exist_ok=True)
    cmd = ["smpirun", *_platform_args(case, tmp), "-trace-ti", "-trace-file", str(raw / "index.txt"), *SMPI_OPTIONS,
           *_algorithm(case, algorithm), str(exe), case.collective, str(case.nbytes)]
    _, _, wall, why = _smpirun(cmd, raw, RECORD_TIMEOUT_S)
    if why is not None:
        return None, wall, why
    # the index lists one trace file per rank, in rank order, relative to where smpirun ran
    ranks = [raw / line.strip() for line in (raw / "index.txt").read_text().splitlines() if line.strip()]
    if len(ranks) != case.p:
        return None, wall, f"the trace index lists {len(ranks)} files, expected {case.p}"
    listing = []
    for i, path in enumerate(ranks):
        lines = [ln for ln in path.read_text().splitlines()
                 if ln.split()[1:2] and ln.split()[1] in ("init", case.collective, "finalize")]
        if [ln.split()[1] for ln in lines] != ["init", case.collective, "finalize"]:
            return None, wall, f"rank {i}'s trace holds {[ln.split()[1] for ln in lines]}, expected one {case.collective}"
        out = kept / f"rank-{i}.txt"
        out.write_text("\n".join(lines) + "\n")
        listing.append(str(out))
    index = kept / "index.txt"
    index.write_text("\n".join(listing) + "\n")
    return index, wall, None


def run_replay(case: Case, index: Path, tmp: Path) -> tuple[float | None, float, str | None]:
    """Trace-replay mode (``smpirun -replay INDEX``, SimGrid's own replay
    program ``smpireplaymain``): (simulated time s or None, wall s, why no
    time). The replay runs ``case.smpi`` under :data:`SMPI_OPTIONS`; its
    time is the clock when the last rank finishes (logged by
    ``smpi_replay`` as "Simulation time", printed here with 12 decimals)."""
    timeout = ALL_AT_ONCE_REPLAY_TIMEOUT_S if case.timeout_s == ALL_AT_ONCE_TIMEOUT_S else case.timeout_s
    cmd = ["smpirun", *_platform_args(case, tmp), "-replay", str(index), *SMPI_OPTIONS,
           "--log=smpi_replay.thres:info", "--log=smpi_replay.fmt:[%.12r]%m%n", *_algorithm(case)]
    out, err, wall, why = _smpirun(cmd, tmp, timeout)
    found = re.search(r"^\[(\S+)\]Simulation time", out + err, flags=re.M)
    if why is None and not found:
        why = "smpirun -replay printed no simulation time"
    return (float(found.group(1)) if why is None else None), wall, why


# ------------------------------------------------------------- topocoll side

#: walls are the best of this many runs (fewer when a run takes over
#: :data:`REPEAT_BELOW_S`), for SMPI's replay, topocoll in-process and the CLI alike
REPEATS = 3
REPEAT_BELOW_S = 2.0

CHILD = r"""
import json, sys, time
from topocoll.errors import TopocollError
from topocoll.schedules import generate
from topocoll.schedules.sizes import from_bytes
from topocoll.sim import Platform, make_network, model_named
from topocoll.sim.engine import EngineOptions, simulate
coll, alg, p, nbytes, spec, routing, sync, eager, reduce_bw, repeats, repeat_below = json.loads(sys.argv[1])
options = EngineOptions(sync=sync, sharing="cm02", eager=eager)


def fresh():
    # a new schedule and network for every run: nothing compiled by an earlier run is reused
    sched = generate(coll, alg, p, **from_bytes(coll, p, nbytes))
    net = make_network(spec, p, routing=routing, order="routing")
    return sched, Platform(alpha=0.0, reduce_bandwidth=reduce_bw, network=net)


sched, platform = fresh()
out = {"label": sched.label(), "network": platform.network.label}
for model in ("flow", "loggops"):
    walls = []
    for i in range(repeats if model == "flow" else 1):
        if i:
            sched, platform = fresh()
        start = time.perf_counter()
        try:
            out[model] = simulate(sched, platform, model=model, options=options).time
        except TopocollError as e:
            out[model + "_error"] = str(e)
            break
        walls.append(time.perf_counter() - start)
        if walls[-1] > repeat_below:
            break
    out[model + "_wall"] = min(walls, default=None)
start = time.perf_counter()
out["static"] = model_named("static").estimate(sched, platform).time
out["static_wall"] = time.perf_counter() - start
print(json.dumps(out))
"""


def run_topocoll(case: Case, repeats: int = 1) -> tuple[dict | None, str | None]:
    return run_child(CHILD, [case.collective, case.algorithm, case.p, case.nbytes, case.machine.spec,
                             case.machine.routing, case.sync, SMPI_EAGER_BELOW - 1, REDUCE_BANDWIDTH,
                             repeats, REPEAT_BELOW_S],
                     timeout_s=TOPOCOLL_TIMEOUT_S, memory_bytes=TOPOCOLL_MEMORY)


def cli_command(case: Case) -> list[str]:
    """The row's flow run as one ``topocoll simulate`` command."""
    routing = ["--routing", case.machine.routing] if case.machine.routing else []
    return ["topocoll", "simulate", case.collective, case.algorithm, "-P", str(case.p), "--size", str(case.nbytes),
            "--topology", case.machine.spec, *routing, "--order", "routing", "--model", "flow", "--sharing", "cm02",
            f"--eager={SMPI_EAGER_BELOW - 1}", "--sync", case.sync, "--alpha", "0",
            f"--reduce-bandwidth={REDUCE_BANDWIDTH:g}", "--json"]


def run_cli(case: Case) -> tuple[float | None, float | None, str | None]:
    """(simulated time s, wall s of the whole process: interpreter start,
    imports, the run, the JSON printed; best of :data:`REPEATS`, why none)."""
    exe = Path(sys.executable).with_name("topocoll")
    cmd = [str(exe), *cli_command(case)[1:]]
    walls, found = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TOPOCOLL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, None, f"over {TOPOCOLL_TIMEOUT_S} s"
        walls.append(time.perf_counter() - start)
        if proc.returncode != 0:
            return None, None, (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        found = re.search(r'"time_s": (\S+),', proc.stdout)
        if walls[-1] > REPEAT_BELOW_S:
            break
    if not found:
        return None, min(walls), "printed no time_s"
    return float(found.group(1)), min(walls), None


# ----------------------------------------------------------------- the table

def _size(nbytes: int) -> str:
    return f"{nbytes // MIB} MiB" if nbytes % MIB == 0 else f"{nbytes // KIB} KiB"


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f} µs"


def cross_checks(exe: Path, tmp: Path) -> list[str]:
    """Small runs that explain the table's differences, one note each."""
    notes = []
    same = Case("alltoall", "pairwise_exchange", "pair", "rounds", CROSSBAR, 128, ALLTOALL_BYTES)
    recorded = [record_trace(same, exe, tmp, algorithm) for algorithm in ("pair", RECORD_ALGORITHM["alltoall"])]
    if all(index is not None for index, _, _ in recorded):
        texts = [[Path(line).read_text() for line in index.read_text().split()] for index, _, _ in recorded]
        verdict = "identical" if texts[0] == texts[1] else "**different**"
        notes.append(f"Traces: the cut time-independent traces of the crossbar all-to-all (P = 128, 4 KiB) recorded "
                     f"with SMPI's `pair` and with `{RECORD_ALGORITHM['alltoall']}` are {verdict} (rank 0's: "
                     f"{' / '.join(texts[0][0].strip().splitlines())}).")
    else:
        notes.append(f"Traces: {next(why for index, _, why in recorded if index is None)}.")
    ping = Case("pingpong", "-", "-", "deps", CROSSBAR, 2, 1)
    t, _, err = run_smpi(ping, exe, tmp)
    if t is not None:
        on_wire = (t - 2 * LATENCY) * BANDWIDTH
        notes.append(
            f"SMPI puts about {on_wire - 1:.0f} B more than the payload on the wire per message: 1 B from rank 0 to "
            f"rank 1 on the crossbar takes {t * 1e6:.4f} µs in SMPI, where two 1-µs links and 1 B at 2 GB/s make "
            f"{(2 * LATENCY + 1 / BANDWIDTH) * 1e6:.4f} µs (SimGrid's `res_network` debug log shows 4,112-B "
            "network actions for 4-KiB messages). topocoll sends the payload alone: 8 ns per message here, the "
            "few-µs differences of the crossbar rows.")
    else:
        notes.append(f"SMPI one-byte ping: {err}.")

    pair = Case("alltoall", "pairwise_exchange", "pair", "rounds", FAT_TREE, 128, ALLTOALL_BYTES)
    lazy, _, err_lazy = run_smpi(pair, exe, tmp)
    full, _, err_full = run_smpi(pair, exe, tmp, ("--cfg=network/optim:Full",))
    r, err = run_topocoll(replace(pair, nbytes=ALLTOALL_BYTES + 16))
    if None not in (lazy, full) and r and r.get("flow") is not None:
        notes.append(
            f"SimGrid's default lazy solver (`network/optim:Lazy`) and its exact one (`network/optim:Full`) differ "
            f"on the fat-tree `pair` all-to-all (P = 128, 4 KiB): {_us(lazy)} and {_us(full)}; topocoll's flow "
            f"model with SMPI's 16-B envelope added (4,112-B messages) gives {_us(r['flow'])} "
            f"(ratio to Full {r['flow'] / full:.3f}). Traced with Lazy, the run first departs from topocoll's "
            "131.5 µs after the start, when two flows end their latency phase on a leaf→spine link already "
            "carrying two flows at 1 GB/s: those two keep 1 GB/s and the newcomers get 0.67 GB/s each, "
            "3.3 GB/s on a 2 GB/s link; "
            "topocoll gives all four 0.5 GB/s. The table uses SimGrid's default (Lazy); Full is slower on the "
            "large cases (28 s against 10 s for the 512-rank torus `pair` row, measured once while writing "
            "this benchmark).")
    else:
        notes.append(f"Lazy/Full check: {err_lazy or err_full or err or 'no flow time'}.")

    ring8 = Case("alltoall", "shift", "ring", "rounds", TORUS, 8, ALLTOALL_BYTES)
    eager, _, err_eager = run_smpi(ring8, exe, tmp)
    waiting, _, err_waiting = run_smpi(ring8, exe, tmp, ("--cfg=smpi/async-small-thresh:0",))
    r, err = run_topocoll(ring8)
    if None not in (eager, waiting) and r and r.get("flow") is not None:
        notes.append(
            "Torus routes: the torus rows route with `dor:tie=simgrid`, SimGrid's `TorusZone` rule (a tie on a "
            "ring of 8 goes + except from coordinate 4 to 0, which goes −; `tie=\"positive\"` sends 4 → 0 the + "
            "way). "
            f"On the 8 ranks of the torus's first x ring, the `ring`/`shift` all-to-all of 4 KiB takes {_us(eager)} "
            f"in SMPI and {_us(r['flow'])} in topocoll; with `smpi/async-small-thresh:0` (sends wait for their "
            f"receive, so no rank runs ahead) SMPI gives {_us(waiting)}. Eager run-ahead (torus rows) and the lazy "
            "solver (fat-tree `pair` row) are what we found behind the rows off by more than 1 %, each checked on a "
            "case small enough to trace.")
    else:
        notes.append(f"Torus tie check: {err_eager or err_waiting or err or 'no flow time'}.")
    return notes


#: torus shapes whose every route topocoll's ``dor:tie=simgrid`` must share with SimGrid (the last is TORUS's)
ROUTE_SHAPES = ((8,), (4, 4), (3, 4, 5), (8, 8), (2, 3, 4), (4, 6, 8), (8, 8, 8))


def route_check() -> str:
    """One note: topocoll's ``dor:tie=simgrid`` routes against those SimGrid's
    Python bindings print (``smpi/torus_routes.py``; Debian ``python3-simgrid``,
    installed here when ``/usr/bin/python3`` cannot import it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("torus_routes", HERE / "smpi" / "torus_routes.py")
    torus_routes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(torus_routes)
    why = torus_routes.simgrid_available()
    if why is not None and shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "python3-simgrid"]
        for cmd in (install, ["apt-get", "update"], install):
            print(f"[bench] smpi: {' '.join(cmd)}", file=sys.stderr, flush=True)
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900).returncode == 0
            if done and cmd is install:
                break
        why = torus_routes.simgrid_available()
    if why is not None:
        return f"Torus routes against SimGrid's: not checked ({why})."
    shapes = [list(s) for s in ROUTE_SHAPES]
    start = time.perf_counter()
    try:
        same = torus_routes.compare(shapes, "dor:tie=simgrid")
        positive = torus_routes.compare([shapes[-1]], "dor:tie=positive")
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return f"Torus routes against SimGrid's: {e}."
    wall = time.perf_counter() - start
    names = ", ".join("×".join(map(str, s)) for s in ROUTE_SHAPES)
    verdict = ("identical hop by hop" if same["mismatches"] == 0 else
               f"different on {same['mismatches']:,} pairs (first: {same['first']})")
    return (f"Torus routes: topocoll's `dor:tie=simgrid` and SimGrid {same['version']}'s `TorusZone` (`Host.route_to` "
            f"from Debian's `python3-simgrid`, a `<cluster topology=\"TORUS\">` with the table's attributes) are "
            f"{verdict} on {len(ROUTE_SHAPES)} shapes ({names}), {same['pairs']:,} ordered pairs; the default "
            f"`tie=positive` differs on {positive['mismatches']:,} of the {positive['pairs']:,} pairs of the 8×8×8 "
            f"torus (the check took {wall:.1f} s).")


HEADING = "## SMPI (SimGrid) and topocoll's simulator side by side"


#: the speed targets of issue 26: on every row whose SMPI replay takes at
#: least TARGET_FROM_S, topocoll's flow run in-process ≥ 50× faster, the whole
#: ``topocoll simulate`` process ≥ 10× faster
TARGET_FROM_S, TARGET_IN_PROCESS, TARGET_PROCESS = 0.5, 50.0, 10.0


def _best(run, repeats: int = REPEATS):
    """Best wall of up to ``repeats`` calls of ``run() -> (time, wall, why)``
    (one call when it takes over :data:`REPEAT_BELOW_S` or fails)."""
    best = None
    for _ in range(repeats):
        got = run()
        if best is None or (got[2] is None and got[1] < best[1]):
            best = got
        if got[2] is not None or got[1] > REPEAT_BELOW_S:
            break
    return best


def _x(num: float | None, den: float | None) -> str:
    return f"{num / den:,.1f}×" if num and den else "-"


def _load() -> str:
    """This machine's load averages (``/proc/loadavg``) and cores, as printed under the walls."""
    try:
        one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return "unknown"
    return f"{one}, {five}, {fifteen} (1, 5, 15 min) on {os.cpu_count()} cores"


def _target_summary(targets: list) -> str:
    if not targets:
        return f"No row's SMPI replay took {TARGET_FROM_S:g} s or more."
    n = len(targets)
    in_ok = [t for t in targets if t[1]]
    proc_ok = [t for t in targets if t[2]]
    worst_in = min(targets, key=lambda t: t[3])
    worst_proc = min(targets, key=lambda t: t[4])
    return (f"Rows whose replay took ≥ {TARGET_FROM_S:g} s: {n}. In-process ≥ {TARGET_IN_PROCESS:g}× on "
            f"{len(in_ok)} of them (least {worst_in[3]:,.1f}×: {worst_in[0]}); process ≥ {TARGET_PROCESS:g}× on "
            f"{len(proc_ok)} (least {worst_proc[4]:,.1f}×: {worst_proc[0]}).")


def run(only: str | None = None) -> str:
    """The section; ``only``: just the rows whose tag contains it (no cross-checks)."""
    why = ensure_simgrid()
    if why is not None:
        return f"{HEADING}\n\nSkipped: SimGrid's SMPI is not available ({why}).\n"
    version = simgrid_version()
    rows = [
        "| case | machine | P | size | SMPI time (application) | SMPI time (replay) | topocoll flow (cm02) "
        "| ratio flow / SMPI | loggops | static |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    speed = [
        "| case | machine | P | size | SMPI application wall (s) | SMPI replay wall (s) "
        "| topocoll flow in-process wall (s) | replay ÷ in-process | `topocoll simulate` process wall (s) "
        "| replay ÷ process | targets (≥ 50× in-process, ≥ 10× process) |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    notes, differ, targets = [], [], []
    smpi_total = replay_total = record_total = topo_total = cli_total = 0.0
    traces: dict[tuple, tuple[Path | None, str | None]] = {}
    with tempfile.TemporaryDirectory(prefix="topocoll-smpi-") as name:
        tmp = Path(name)
        exe = tmp / "collective"
        build = subprocess.run(["smpicc", "-O2", "-o", str(exe), str(SOURCE)], capture_output=True, text=True, cwd=tmp)
        if build.returncode != 0:
            last = (build.stderr.strip().splitlines() or [""])[-1]
            return f"{HEADING}\n\nSkipped: `smpicc {SOURCE.relative_to(HERE.parent)}` failed: {last}\n"
        for m in MACHINES:
            (tmp / f"{m.name.replace(' ', '_')}.xml").write_text(m.platform_xml())
            (tmp / f"hosts{m.hosts}").write_text("".join(f"node-{i}\n" for i in range(m.hosts)))
        for case in cases():
            tag = (f"{case.collective} {case.algorithm}/{case.smpi} on {case.machine.name}, P={case.p}, "
                   f"{_size(case.nbytes)}")
            if only and only not in tag:
                continue
            print(f"[bench] smpi: {tag}", file=sys.stderr, flush=True)
            smpi_time, smpi_wall, smpi_err = run_smpi(case, exe, tmp)
            smpi_total += smpi_wall
            key = trace_key(case)
            if key not in traces:
                index, wall, rec_err = record_trace(case, exe, tmp)
                record_total += wall
                traces[key] = (index, rec_err)
            index, rec_err = traces[key]
            if index is not None:
                replay_time, replay_wall, replay_err = _best(lambda: run_replay(case, index, tmp))
                replay_total += replay_wall
            else:
                replay_time, replay_wall, replay_err = None, None, f"no trace ({rec_err})"
            r, err = run_topocoll(case, REPEATS)
            if err:
                notes.append(f"topocoll, {tag}: failed: {err}.")
                r = {}
            flow, flow_wall = r.get("flow"), r.get("flow_wall")
            topo_total += sum(r.get(k) or 0.0 for k in ("flow_wall", "loggops_wall", "static_wall"))
            cli_time, cli_wall, cli_err = run_cli(case)
            cli_total += cli_wall or 0.0
            for what, e in (("topocoll flow", r.get("flow_error")), ("topocoll loggops", r.get("loggops_error")),
                            ("SMPI", smpi_err), ("SMPI replay", replay_err), ("`topocoll simulate`", cli_err)):
                if e:
                    notes.append(f"{what}, {tag}: {e}.")
            if cli_time is not None and flow is not None and cli_time != flow:
                notes.append(f"`topocoll simulate`, {tag}: {_us(cli_time)}, in-process {_us(flow)}.")
            if smpi_time is not None and replay_time is not None and _us(smpi_time) != _us(replay_time):
                differ.append(f"{tag}: application {_us(smpi_time)}, replay {_us(replay_time)}")
            ratio = f"{flow / smpi_time:.3f}" if flow is not None and smpi_time else "-"
            label = (f"| {case.collective} `{case.algorithm}` ↔ SMPI `{case.smpi}` | {case.machine.name} | {case.p} | "
                     f"{_size(case.nbytes)} |")
            rows.append(
                f"{label} {_us(smpi_time) if smpi_err is None else smpi_err} | "
                f"{_us(replay_time) if replay_err is None else replay_err} | "
                f"{_us(flow) if flow is not None else 'not run'} | {ratio} | "
                f"{_us(r.get('loggops'))} | {_us(r.get('static'))} |")
            if replay_err is None and replay_wall >= TARGET_FROM_S and flow_wall and cli_wall:
                met = (replay_wall / flow_wall >= TARGET_IN_PROCESS, replay_wall / cli_wall >= TARGET_PROCESS)
                targets.append((tag, *met, replay_wall / flow_wall, replay_wall / cli_wall))
                verdict = ", ".join("met" if ok else "**missed**" for ok in met)
            elif replay_err is None:
                verdict = f"replay under {TARGET_FROM_S:g} s"
            else:
                verdict = "-"
            replay_shown = f"{replay_wall:.2f}" if replay_err is None else (
                f"over {replay_wall:.0f}" if replay_wall else "-")
            speed.append(
                f"{label} {smpi_wall:.2f}{'' if smpi_err is None else ' (no time)'} | {replay_shown} | "
                f"{f'{flow_wall:.3f}' if flow_wall else '-'} | "
                f"{_x(replay_wall, flow_wall) if replay_err is None else '-'} | "
                f"{f'{cli_wall:.2f}' if cli_wall else '-'} | "
                f"{_x(replay_wall, cli_wall) if replay_err is None else '-'} | {verdict} |")
        if only:
            return "\n".join([HEADING, "", f"Rows matching {only!r} only.", "", *rows, "", *speed, "",
                              _target_summary(targets), "", f"Load: {_load()}.", "",
                              *(f"- {n}" for n in notes), *(f"- replay ≠ application: {d}" for d in differ)]) + "\n"
        print("[bench] smpi: cross-checks", file=sys.stderr, flush=True)
        checks = cross_checks(exe, tmp)
        checks.append(route_check())
    platforms = "; ".join(
        f"{m.name}: `{m.spec}` ↔ `<cluster{m.cluster} .../>` ({m.hosts} hosts)" for m in MACHINES)
    return "\n".join([
        HEADING,
        "",
        f"Command: `{COMMAND}`. {version}; SMPI program `benchmarks/smpi/collective.c` (smpicc -O2). "
        f"Every link {BANDWIDTH / 1e9:g} GB/s (SimGrid `bw=\"2GBps\"` = topocoll `bw=2GB/s` = 2·10⁹ B/s) and "
        f"{LATENCY * 1e6:g} µs, hosts 1 Gf, `sharing_policy=\"SPLITDUPLEX\"` (full-duplex links, as topocoll's "
        "directed links), loopback free (1000 GBps, 0 µs: SMPI's `rdb`, `lr`, `pair` and `ring` send to "
        f"themselves). Machines: {platforms}. Rank i runs on host i on both sides (topocoll `order=\"routing\"` "
        "is the identity on these three); routing is d-mod-k on the fat tree and dimension order x, y, z on the "
        "torus on both sides.",
        "",
        "SMPI options: " + " ".join(f"`{o}`" for o in SMPI_OPTIONS) + ", plus `--cfg=smpi/allreduce:NAME` or "
        "`--cfg=smpi/alltoall:NAME`. SMPI time: the slowest rank's `MPI_Wtime` difference around one call, all "
        "ranks entering at the same simulated instant (after a barrier, each rank sleeps until the latest "
        "clock + 1 ms).",
        "",
        "topocoll: `simulate(generate(collective, algorithm, P, **from_bytes(collective, P, size)), "
        f"Platform(alpha=0, reduce_bandwidth={REDUCE_BANDWIDTH:.0e}, network=make_network(spec, P, "
        "order=\"routing\")), model=\"flow\", options=EngineOptions(sharing=\"cm02\", "
        f"eager={SMPI_EAGER_BELOW - 1}, sync=...))` with `sync=\"rounds\"` for the round-by-round algorithms "
        "(SMPI's `MPI_Sendrecv` loops) and `sync=\"deps\"` for `direct` ↔ `basic_linear` (every message posted "
        "at once); `loggops` with the same options (o = g = G = 0: link reservation only) and the `static` "
        "model (`model_named(\"static\").estimate`). Both sides model the network only: α = 0 and SMPI's "
        "`smpi/os`, `smpi/or`, `smpi/ois` = 0; reductions free on both sides. Size: the MPI count in bytes "
        "(allreduce: the vector; all-to-all: per destination). Ratio: topocoll flow time / SMPI time "
        "(application mode).",
        "",
        "SMPI in two modes. *Application*: `smpirun` runs the compiled program (real buffers from "
        "`SMPI_SHARED_MALLOC`, SMPI's collective code, the reductions executed, not timed). *Trace replay*: the "
        "program is run once more with `smpirun -trace-ti` (time-independent trace, one file per rank; "
        f"recorded with `{RECORD_ALGORITHM['allreduce']}`/`{RECORD_ALGORITHM['alltoall']}`, once per machine, "
        "collective, P and size: the trace holds the MPI call, not the algorithm's messages), each rank's trace "
        "is cut to `init`, the collective and `finalize`, and `smpirun -replay INDEX` (SimGrid's "
        "`smpireplaymain`) replays it with the row's algorithm and the same options: SimGrid's cheapest way to "
        "the same simulated time, no program, no buffers. Replay time: the clock when the last rank ends "
        "(`smpi_replay`'s \"Simulation time\", logged with 12 decimals).",
        "",
        *rows,
        "",
        (f"Replay and application times agree to the printed 0.1 µs on {len(rows) - 2 - len(differ)} of "
         f"{len(rows) - 2} rows" + ("." if not differ else "; they differ on: " + "; ".join(differ) + ".")),
        "",
        "**Speed.** Walls in seconds, each the best of up to "
        f"{REPEATS} runs (one when a run takes over {REPEAT_BELOW_S:g} s), on this machine under the load "
        "printed below. SMPI application: the whole `smpirun` of the program (start-up included, one run). "
        "SMPI replay: the whole `smpirun -replay` (start-up and platform parsing included; the recording, once "
        "per trace, is not counted). topocoll in-process: the `simulate(model=\"flow\")` call (the op program "
        "compiled inside it, on a fresh schedule and network each run). `topocoll simulate` process: the whole "
        "CLI process, interpreter start-up and imports included, the same run as one command, e.g. "
        f"`{' '.join(cli_command(cases()[0]))}`. Targets (issue 26): on rows whose replay takes at least "
        f"{TARGET_FROM_S:g} s, in-process ≥ {TARGET_IN_PROCESS:g}× and process ≥ {TARGET_PROCESS:g}× faster than "
        "the replay.",
        "",
        *speed,
        "",
        _target_summary(targets),
        "",
        f"Total wall: SMPI application {smpi_total:.1f} s, recording {record_total:.1f} s, replay "
        f"{replay_total:.1f} s; topocoll in-process {topo_total:.1f} s (all three models), `topocoll simulate` "
        f"{cli_total:.1f} s. Load: {_load()}.",
        "",
        *(f"- {n}" for n in notes),
        *([""] if notes else []),
        "**Algorithms.** `lr` ↔ `ring`: the same ring (send to rank + 1, receive from rank − 1; reduce-scatter "
        "then allgather of n/P blocks); `lr` first copies a block to itself, and sends the remainder of a count "
        "P does not divide through the default allreduce (avoided here: P divides the size). `rdb` ↔ "
        "`pairwise_exchange`: XOR partners 1, 2, 4, … exchanging the whole vector (MPICH's recursive doubling); "
        "for P ≠ 2^k SMPI folds the first 2(P − 2^⌊log2 P⌋) ranks in pairs, topocoll's `leftover=neighbours` "
        "differs (not measured: P = 2^k here). `rab_rdb` ↔ `rabenseifner`: recursive halving at distances 1, 2, "
        "4, … (n/2 at distance 1) then recursive doubling back, the same distances and sizes at P = 2^k. "
        "`pair` ↔ alltoall `pairwise_exchange` and `ring` ↔ `shift`: the same partners (rank XOR i; rank ± i), "
        "SMPI with an extra step i = 0 to itself (free here). `basic_linear` ↔ `direct`: SMPI posts P − 1 "
        "receives, then P − 1 sends (to rank − 1, rank − 2, …) and waits for all; topocoll's `direct` under "
        "`sync=\"deps\"` releases every send at t = 0 — in a fluid model the order of simultaneous starts does "
        "not matter. The `static` model reads `direct` as P barrier-separated incast rounds (tens of ms), "
        "`loggops` reserves links first come, first served (about twice the fluid time).",
        "",
        "**Models.** Both sides: CM02 (a latency phase, then a bandwidth phase; a saturated link shared in "
        "inverse proportion to the flows' route latencies), no cross-traffic. SimGrid's TCP window is off "
        "(`network/TCP-gamma:0`); topocoll keeps γ = 4 MiB, whose bound γ/(2·L) ≥ 1.7·10¹¹ B/s for the longest "
        "route here (L = 12 µs) never binds. Eager: SMPI sends under 64 KiB are detached and start at once "
        "(`smpi/send-is-detached-thresh`, `smpi/async-small-thresh`), as topocoll's `eager=65535`; larger ones "
        "start when the receive is posted on both sides.",
        "",
        *(f"- {n}" for n in checks),
        "",
        "**Changes against the previous run of this section (c8cdd7a).** SMPI also runs in trace-replay mode, "
        "and the speed columns compare against the replay, not the application run: the application walls "
        "include the program's real buffers and reductions (the 4 MiB allreduce rows) and its start-up barrier "
        "and timing reductions, the replay runs the collective alone. The topocoll flow times are bit for bit "
        "those of c8cdd7a (the flow model's filling changed only in how it finds the same rates: issue 26 item "
        "4); the walls are new measurements (best of 3, under the load printed with them). Where replay and "
        "application times differ (the line under the first table), the rows are eager all-to-alls whose ranks "
        "run ahead (the torus note below), the runs most sensitive to the order of simultaneous events; the "
        "cause of the difference was not traced.",
        "",
    ]) + "\n"


# ------------------------------------------------- presets against SMPI's defaults

#: SMPI with its own thresholds: the table's options less the two that override them (SimGrid 3.32's
#: defaults: smpi/async-small-thresh 0, smpi/send-is-detached-thresh 65536, smpi_config.cpp lines 92-97)
SMPI_DEFAULT_OPTIONS = tuple(o for o in SMPI_OPTIONS if "small-thresh" not in o and "detached-thresh" not in o)

#: the topocoll configurations compared with SMPI's defaults: (column, EngineOptions fields or a preset name)
PRESET_COLUMNS = (
    ("--preset smpi", "smpi"),
    ("plain flow (no preset)", {}),
    ("cm02 + detached, no envelope", {"sharing": "cm02", "small_sends": "detached"}),
)

PRESET_CHILD = r"""
import json, sys
from topocoll.schedules import generate
from topocoll.schedules.sizes import from_bytes
from topocoll.sim import Platform, make_network
from topocoll.sim.engine import EngineOptions, simulate
from topocoll.sim.presets import apply_preset
coll, alg, p, nbytes, spec, routing, sync, columns, reduce_bw = json.loads(sys.argv[1])
sched = generate(coll, alg, p, **from_bytes(coll, p, nbytes))
platform = Platform(alpha=0.0, reduce_bandwidth=reduce_bw, network=make_network(spec, p, routing=routing,
                                                                                   order="routing"))
out = {}
for name, how in columns:
    base = EngineOptions(sync=sync)
    options = apply_preset(base, how) if isinstance(how, str) else EngineOptions(sync=sync, **how)
    out[name] = simulate(sched, platform, model="flow", options=options).time
print(json.dumps(out))
"""


def run_presets(only: str | None = None) -> str:
    """SMPI with its default thresholds (application mode) against the flow
    model under :data:`PRESET_COLUMNS`; the error of each, per case."""
    why = ensure_simgrid()
    heading = "## SMPI with its defaults against `--preset smpi` (issue 28)"
    if why is not None:
        return f"{heading}\n\nSkipped: SimGrid's SMPI is not available ({why}).\n"
    head = "| case | machine | P | size | SMPI time | " + " | ".join(
        f"{c} | error" for c, _ in PRESET_COLUMNS) + " |"
    rows = [head, "|---|---|---:|---|---:|" + "---:|---:|" * len(PRESET_COLUMNS)]
    within = {c: [0, 0] for c, _ in PRESET_COLUMNS}
    worst = {c: (0.0, "") for c, _ in PRESET_COLUMNS}
    notes = []
    with tempfile.TemporaryDirectory(prefix="topocoll-smpi-") as name:
        tmp = Path(name)
        exe = tmp / "collective"
        build = subprocess.run(["smpicc", "-O2", "-o", str(exe), str(SOURCE)], capture_output=True, text=True, cwd=tmp)
        if build.returncode != 0:
            return f"{heading}\n\nSkipped: smpicc failed.\n"
        for m in MACHINES:
            (tmp / f"{m.name.replace(' ', '_')}.xml").write_text(m.platform_xml())
            (tmp / f"hosts{m.hosts}").write_text("".join(f"node-{i}\n" for i in range(m.hosts)))
        for case in cases():
            tag = (f"{case.collective} {case.algorithm}/{case.smpi} on {case.machine.name}, P={case.p}, "
                   f"{_size(case.nbytes)}")
            if only and only not in tag:
                continue
            print(f"[bench] smpi presets: {tag}", file=sys.stderr, flush=True)
            cmd = ["smpirun", *_platform_args(case, tmp), *SMPI_DEFAULT_OPTIONS, *_algorithm(case), str(exe),
                   case.collective, str(case.nbytes)]
            out, _, _, err = _smpirun(cmd, tmp, case.timeout_s)
            found = re.search(r"^time_s (\S+)", out, flags=re.M)
            smpi = float(found.group(1)) if err is None and found else None
            r, terr = run_child(PRESET_CHILD, [case.collective, case.algorithm, case.p, case.nbytes, case.machine.spec,
                                               case.machine.routing, case.sync, list(PRESET_COLUMNS),
                                               REDUCE_BANDWIDTH], timeout_s=TOPOCOLL_TIMEOUT_S,
                               memory_bytes=TOPOCOLL_MEMORY)
            if terr:
                notes.append(f"topocoll, {tag}: {terr}")
                r = {}
            cells = []
            for c, _ in PRESET_COLUMNS:
                t = r.get(c)
                if t is None or smpi is None:
                    cells.append(f"{_us(t)} | -")
                    continue
                e = (t - smpi) / smpi
                within[c][0] += abs(e) <= 0.01
                within[c][1] += 1
                if abs(e) >= abs(worst[c][0]):
                    worst[c] = (e, tag)
                cells.append(f"{_us(t)} | {e * 100:+.3f} %")
            smpi_cell = _us(smpi) if smpi is not None else (err or "no time_s")
            rows.append(f"| {case.collective} `{case.algorithm}` ↔ SMPI `{case.smpi}` | {case.machine.name} | "
                        f"{case.p} | {_size(case.nbytes)} | {smpi_cell} | " + " | ".join(cells) + " |")
    summary = [f"- {c}: within 1 % on {n} of {total} cases; largest error {worst[c][0] * 100:+.3f} % "
               f"({worst[c][1]})" for c, (n, total) in within.items()]
    return "\n".join([
        heading, "",
        f"Command: `.venv/bin/python benchmarks/bench_smpi.py --preset-check`. SMPI in application mode with its "
        "default thresholds (the table above's options less `smpi/async-small-thresh` and "
        "`smpi/send-is-detached-thresh`: " + " ".join(f"`{o}`" for o in SMPI_DEFAULT_OPTIONS) + "); the same "
        "machines, cases and α = 0 as above. topocoll: the flow model with `EngineOptions(sync=...)` under each "
        "column's options (`--preset smpi`: `topocoll.sim.presets.PRESETS['smpi']`). Error: topocoll / SMPI − 1.",
        "", *rows, "", *summary, "", *(f"- {n}" for n in notes)]) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the section to FILE instead of printing it")
    parser.add_argument("--only", metavar="TEXT", help="only the rows whose tag contains TEXT (as printed on stderr, "
                        "e.g. 'alltoall direct/basic_linear on torus'), without the cross-checks")
    parser.add_argument("--preset-check", action="store_true",
                        help="instead: SMPI with its default thresholds against the flow model's presets "
                             "(application mode only)")
    args = parser.parse_args(argv)
    text = run_presets(args.only) if args.preset_check else run(args.only)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
