"""Check a cluster profile against the collectives it was measured with:
``topocoll calibrate --check PROFILE``.

A profile written by ``topocoll calibrate --from-osu`` keeps the
``osu_allreduce`` / ``osu_alltoall`` tables it was given (``meta.collectives``,
with their ``p`` and ``ppn``) but fits nothing to them. :func:`check` predicts
each of those measurements from the profile's point-to-point costs alone:
for every size, the algorithm the named MPI library would pick at that P and
size (:func:`topocoll.tune.libdefaults.library_default`), simulated with an
event model on the profile's network — ``N = ceil(p / ppn)`` hosts of ``ppn``
ranks, their NIC shared (``SPEC+ppn=K``, :mod:`topocoll.topology.nodes`) —
and reports measured, predicted and their ratio (predicted / measured: below 1
the model is too fast).

The network, when not given: ``crossbar:N@bw=B,lat=0us+ppn=K`` — one switch,
every link as fast as the NIC (``B`` the largest one-way bandwidth OSU saw
through it: ``osu_bw``, half of ``osu_bibw``, ``osu_mbw_mr``), no link
latency (the profile's ``L`` already holds the whole ``osu_latency``, and both
event models charge it to a message between hosts), the node's ``lat`` and
``bw`` from the intra-node level where the profile has one
(:meth:`~topocoll.sim.profile.MachineProfile.node_options`; topocoll's node
defaults otherwise, which :attr:`OsuCheck.notes` says): it is
:meth:`~topocoll.sim.profile.MachineProfile.network_spec`, what ``calibrate --spec``
prints.

Mechanisms the profile leaves out can be switched on one at a time
(``mechanisms=``), each from a point-to-point benchmark or a published figure,
never from the collective it then predicts (:data:`MECHANISMS`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import SpecError
from ..schedules.registry import lookup
from ..schedules.sizes import from_bytes
from ..sim.engine import EngineConfig, simulate
from ..sim.model import make_network
from ..sim.presets import apply_preset
from ..sim.profile import MachineProfile, load_profile
from ..tune.libdefaults import LIBRARIES as EMULATED, LibraryChoice, check_library, library_default

__all__ = ["OsuCheck", "CheckPoint", "check", "default_network", "format_check", "MODELS", "MECHANISMS",
           "WITHIN", "OSU_ITEMSIZE", "LIBRARIES", "openmpi40_default", "add_check_arguments", "cmd_check"]

#: Open MPI before 4.1 (3.x and 4.0.x, the ``alaska`` cluster's 4.0.3): the fixed rules of
#: ``coll_tuned_decision_fixed.c`` that 4.1 replaced by the tuning-based ones of
#: :mod:`topocoll.tune.libdefaults`; allreduce and alltoall only (what OSU's collectives here need).
#: Belongs in :mod:`topocoll.tune.libdefaults` beside 5.0 once the tuner can take a library without
#: its other collectives.
OMPI40 = "openmpi-4.0"
OMPI40_SOURCE = ("Open MPI 3.x/4.0.x ompi/mca/coll/tuned/coll_tuned_decision_fixed.c (the fixed rules before 4.1; "
                 "SimGrid's smpi_ompi_selector.cpp mirrors them), ompi_coll_tuned_{}_intra_dec_fixed; MCA defaults "
                 "coll_tuned_alltoall_small_msg = 200, coll_tuned_alltoall_intermediate_msg = 3000 "
                 "(coll_tuned_component.c)")
#: the libraries a check can emulate: libdefaults' and Open MPI 4.0
LIBRARIES = {**EMULATED, OMPI40: "Open MPI 3.x/4.0.x (coll/tuned fixed decision rules before 4.1)"}

#: the event models a check runs (the packet model is too slow for 64 ranks × 20 sizes here)
MODELS = ("loggops", "flow")
#: a prediction "holds" within this factor either way (issue 28's target)
WITHIN = 1.5
#: bytes per element of osu_allreduce: OMB 5.x reduces MPI_FLOAT (``c/mpi/collective/osu_allreduce.c``:
#: ``MPI_Allreduce(sendbuf, recvbuf, size, MPI_FLOAT, MPI_SUM, ...)`` with ``size`` in floats and the
#: printed size ``size * sizeof(float)``); it decides Open MPI's and MPICH's short-vector switches
OSU_ITEMSIZE = 4
#: the collectives a profile keeps, OSU benchmark → topocoll collective
COLLECTIVES = {"osu_allreduce": "allreduce", "osu_alltoall": "alltoall", "osu_allgather": "allgather"}

#: mechanisms a check can add, each with its source (module doc)
MECHANISMS = {
    "overhead": (
        "per-message CPU time on each side, o_send = o_recv = pairs / message rate of the network level's "
        "osu_mbw_mr (one core's share of the messages its pairs pushed through: a sender posts a message "
        "at most every max(o, g), LogGP, Alexandrov et al. SPAA 1995 §2), taken out of L so a lone message "
        "still costs osu_latency's α"),
    "both-ways": (
        "the NIC's bandwidth per direction is half of osu_bibw (both directions busy at once, as in an "
        "all-to-all or a ring), not the largest one-way figure: the links' bw= and G = 2 / osu_bibw"),
    "rendezvous": (
        "messages above 12288 B wait for an RTS/CTS handshake (the `mpi` preset, topocoll.sim.presets: "
        "Open MPI's btl_eager_limit = 12 KiB, MVAPICH2's MV2_IBA_EAGER_THRESHOLD; UCX computes its own "
        "threshold at run time, UCX_RNDV_THRESH=auto in ucp_context.c, not published for this cluster), "
        "unless the profile's ping-pong showed its own break"),
}


@dataclass(frozen=True)
class CheckPoint:
    """One measured size and its prediction (SI units).

    ``predicted`` and ``ratio`` are None where the library's algorithm has no
    topocoll model (``choice`` says why)."""

    benchmark: str
    p: int
    ppn: int | None
    size: int
    measured: float
    predicted: float | None
    choice: str

    @property
    def ratio(self) -> float | None:
        """predicted / measured (below 1: the model is too fast)."""
        return None if self.predicted is None else self.predicted / self.measured

    def as_dict(self) -> dict:
        return dict(benchmark=self.benchmark, p=self.p, ppn=self.ppn, size=self.size, measured_s=self.measured,
                    predicted_s=self.predicted, ratio=self.ratio, choice=self.choice)


def _summary(points) -> dict:
    """Median ratio and the fraction within :data:`WITHIN` of the points with a prediction."""
    ratios = [p.ratio for p in points if p.ratio is not None]
    if not ratios:
        return dict(points=0, median_ratio=None, within=None, within_count=0, unmodelled=len(points))
    inside = sum(1 / WITHIN <= r <= WITHIN for r in ratios)
    return dict(points=len(ratios), median_ratio=statistics.median(ratios), within=inside / len(ratios),
                within_count=inside, unmodelled=len(points) - len(ratios), min_ratio=min(ratios),
                max_ratio=max(ratios))


@dataclass(frozen=True)
class OsuCheck:
    """The result of :func:`check`: every point, the summaries, how it was made."""

    points: tuple
    library: str
    model: str
    mechanisms: tuple
    networks: dict          # benchmark → the network spec it ran on
    notes: tuple = ()
    profile: str = ""

    def summary(self, benchmark: str | None = None) -> dict:
        """``points``, ``median_ratio``, ``within`` (fraction in [1/1.5, 1.5]), ``within_count``,
        ``unmodelled``, ``min_ratio``, ``max_ratio``: over all points or one benchmark's."""
        return _summary([p for p in self.points if benchmark is None or p.benchmark == benchmark])

    def benchmarks(self) -> list:
        return list(dict.fromkeys(p.benchmark for p in self.points))

    def as_dict(self) -> dict:
        return dict(profile=self.profile, library=self.library, model=self.model, mechanisms=list(self.mechanisms),
                    networks=self.networks, notes=list(self.notes), points=[p.as_dict() for p in self.points],
                    summary={b: self.summary(b) for b in self.benchmarks()} | {"all": self.summary()})


def openmpi40_default(collective: str, p: int, size: int, *, itemsize: int = 1) -> LibraryChoice:
    """Open MPI 4.0.x's fixed choice for ``allreduce`` (``size`` the whole vector, commutative operator)
    or ``alltoall`` (``size`` bytes per peer) on ``p >= 2`` ranks (:data:`OMPI40_SOURCE`).

    - allreduce: ``size < 10000`` recursive doubling; else (commutative, ``count > p``) the ring when
      ``p · 1 MiB >= size``, else the ring in 1 MiB segments; else nonoverlapping (reduce + bcast).
    - alltoall: ``p == 2`` two_procs; ``size < 200`` and ``p > 12`` Bruck; ``size < 3000`` basic linear;
      else pairwise.
    - allgather (``size`` bytes per rank): ``p == 2`` two_procs; ``p · size < 50000`` recursive doubling on
      a power of two, else Bruck (not modelled: topocoll has no allgather Bruck); else neighbor exchange on
      even ``p``, the ring on odd.

    Examples
    --------
    >>> openmpi40_default("allreduce", 64, 65536, itemsize=4).text()
    'ring → ring'
    >>> openmpi40_default("alltoall", 64, 128).algorithm
    'bruck'
    >>> [openmpi40_default("allgather", 64, m).algorithm for m in (512, 1024)]
    ['recursivedoubling', 'neighborexchange']
    """
    if collective not in COLLECTIVES.values() or p < 2:
        raise SpecError(f"{OMPI40}: {collective} on p={p}, expected allreduce, alltoall or allgather on p >= 2")
    source = OMPI40_SOURCE.format(collective)
    if collective == "allgather":
        return _openmpi40_allgather(p, size, source)
    if collective == "allreduce":
        count = size // itemsize
        if size < 10000:
            return LibraryChoice(OMPI40, collective, p, size, True, "recursivedoubling", None, {},
                                 "pairwise_exchange", {"leftover": "neighbours"}, "exact", source)
        if count > p:
            if p * (1 << 20) >= size:
                return LibraryChoice(OMPI40, collective, p, size, True, "ring", None, {}, "ring", {}, "exact", source)
            return LibraryChoice(OMPI40, collective, p, size, True, "ring_segmented", None, {"segsize": 1 << 20},
                                 "ring", {}, "approximate: topocoll's ring does not cut blocks into 1 MiB segments",
                                 source)
        return LibraryChoice(OMPI40, collective, p, size, True, "nonoverlapping", None, {}, "binomial", {},
                             "approximate: Open MPI's reduce then bcast, topocoll's binomial reduce then bcast", source)
    if p == 2:
        return LibraryChoice(OMPI40, collective, p, size, True, "two_procs", None, {}, "shift", {},
                             "exact: two processes exchange once", source)
    if size < 200 and p > 12:
        return LibraryChoice(OMPI40, collective, p, size, True, "bruck", None, {}, "bruck", {"k": 1},
                             "exact: radix-2 Bruck", source)
    if size < 3000:
        return LibraryChoice(OMPI40, collective, p, size, True, "basic_linear", None, {}, "shift", {},
                             "approximate: every isend posted at once; topocoll's shift sends in that order as "
                             "P−1 rounds", source)
    return LibraryChoice(OMPI40, collective, p, size, True, "pairwise", None, {}, "shift", {},
                         "exact: step i sends to rank+i and receives from rank−i", source)


def _openmpi40_allgather(p: int, size: int, source: str) -> LibraryChoice:
    """``ompi_coll_tuned_allgather_intra_dec_fixed`` (3.x/4.0.x): ``total_dsize = dsize · scount · P``."""
    def choice(name, schedule, fidelity):
        return LibraryChoice(OMPI40, "allgather", p, size, True, name, None, {}, schedule, {}, fidelity, source)
    if p == 2:
        return choice("two_procs", "ring", "exact: two processes exchange once")
    if size * p < 50000:
        if p & (p - 1) == 0:
            return choice("recursivedoubling", "recursive_doubling", "exact")
        return choice("bruck", None, "cannot be modelled: topocoll has no allgather Bruck")
    if p % 2:
        return choice("ring", "ring", "exact")
    return choice("neighborexchange", "neighbor_exchange", "exact")


def _choice(library: str, collective: str, p: int, size: int, itemsize: int) -> LibraryChoice:
    if library == OMPI40:
        return openmpi40_default(collective, p, size, itemsize=itemsize)
    return library_default(library, collective, p, size, itemsize=itemsize)


def _library(library) -> str:
    if isinstance(library, str) and library.strip().lower() in (OMPI40, "openmpi-4", "openmpi-4.0.x"):
        return OMPI40
    try:
        return check_library(library)
    except SpecError:
        raise SpecError(f"check: library {library!r}, expected one of {', '.join(LIBRARIES)} (MPI library and "
                        "version whose default choice is emulated)") from None


def default_network(profile: MachineProfile, p: int, ppn: int | None, *, nic: float | None = None) -> tuple[str, list]:
    """``crossbar:N@bw=NIC,lat=0us[+ppn=K,lat=..,bw=..]`` for ``p`` ranks, ``ppn`` per host, and the notes
    on what it assumes: :meth:`MachineProfile.network_spec` (``calibrate --spec``, the rule's one home) with
    ``N = ceil(p / ppn)`` hosts; ``nic`` (B/s) the NIC's bandwidth (default
    :meth:`MachineProfile.nic_bandwidth`); the node's ``mem`` given when the profile was made
    (``meta.network``, ``calibrate --from-osu ... --mem``) is kept."""
    ppn = ppn or 1
    # a memory bandwidth given when the profile was made (`calibrate --from-osu ... --mem BW`) is kept
    mem = ((profile.meta.get("network") or {}).get("node") or {}).get("mem") if ppn > 1 else None
    made = profile.network_spec(nodes=-(-p // ppn), ppn=ppn, nic_bandwidth=nic,
                                memory_bandwidth=float(mem) if isinstance(mem, (int, float)) else None)
    return made.spec, list(made.notes)


def _with_mechanisms(profile: MachineProfile, mechanisms) -> tuple[MachineProfile, float]:
    """The profile with ``mechanisms`` applied, and the NIC's bandwidth per direction (B/s)."""
    level = profile.network_level()
    nic = profile.nic_bandwidth()
    if "both-ways" in mechanisms:
        if level is None or not level.bidirectional_bandwidth > 0:
            raise SpecError("check: mechanism 'both-ways' needs the network level's osu_bibw, expected a profile "
                            "from calibrate --from-osu with an osu_bibw file")
        nic = level.bidirectional_bandwidth / 2
        profile = replace(profile, G=1.0 / nic)
    if "overhead" not in mechanisms:
        return profile, nic
    if level is None or not level.message_rate > 0 or not level.message_rate_pairs:
        raise SpecError("check: mechanism 'overhead' needs the network level's osu_mbw_mr (pairs and message "
                        "rate), expected a profile from calibrate --from-osu with an osu_mbw_mr file")
    o = level.message_rate_pairs / level.message_rate
    if 2 * o > profile.L:
        raise SpecError(f"check: mechanism 'overhead' gives o = {o * 1e6:.3g} µs per side, more than half the "
                        f"profile's L = {profile.L * 1e6:.3g} µs, expected a lone message to keep its latency")
    levels = dict(profile.levels)
    intra = levels.get("intra")
    if intra is not None and intra.beta > 0:
        # the intra-node osu_latency's α holds the same two overheads: the node's lat keeps the rest,
        # so a lone message within a node still costs what OSU measured there
        levels["intra"] = replace(intra, alpha=max(0.0, intra.alpha - 2 * o))
    return replace(profile, o_send=o, o_recv=o, L=profile.L - 2 * o, levels=levels), nic


def _check_mechanisms(mechanisms) -> tuple:
    if isinstance(mechanisms, str):
        mechanisms = [mechanisms]
    # "overhead,rendezvous" and repeated names alike
    names = [part for m in mechanisms for part in (m.split(",") if isinstance(m, str) else [m])]
    out = []
    for m in names:
        m = m.strip() if isinstance(m, str) else m
        if m not in MECHANISMS:
            raise SpecError(f"check: mechanism {m!r}, expected one of {', '.join(MECHANISMS)}")
        if m not in out:
            out.append(m)
    return tuple(out)


def check(profile, *, library: str = "openmpi-5.0", model: str = "loggops", network: str | None = None,
          mechanisms=(), itemsize: int = OSU_ITEMSIZE) -> OsuCheck:
    """Predict every collective measurement the profile keeps and compare.

    Parameters
    ----------
    profile : MachineProfile or path
        From ``topocoll calibrate --from-osu`` with ``p=N[,ppn=K]:FILE`` collectives.
    library : str
        Whose default algorithm to simulate: ``openmpi-5.0``, ``mpich-5.0`` (or an alias) or
        ``openmpi-4.0`` (:func:`openmpi40_default`).
    model : str
        ``loggops`` or ``flow``.
    network : str, optional
        A topology spec for every collective (its ``+ppn=`` must match theirs); default
        :func:`default_network`.
    mechanisms : sequence of str or comma-separated str
        From :data:`MECHANISMS`.
    itemsize : int
        Bytes per element of osu_allreduce (:data:`OSU_ITEMSIZE`).

    Returns
    -------
    OsuCheck

    Raises
    ------
    SpecError
        One line: an unknown library, model or mechanism; a profile with no kept collective, or one
        without ``p``; a network that does not parse.

    Examples
    --------
    Two nodes, one rank each, α = 2 µs, 1 GB/s: an 8-byte all-to-all is one message each way at once,
    α + 8 B · β, against 4 µs measured:

    >>> prof = MachineProfile(alpha=2e-6, beta=1e-9, reduce_bandwidth=4e9, L=2e-6, G=1e-9, meta=dict(
    ...     collectives=[dict(benchmark="osu_alltoall", p=2, ppn=None, points=[[8, 4e-6]])]))
    >>> point = check(prof).points[0]
    >>> round(point.predicted * 1e6, 3), round(point.ratio, 3), point.choice
    (2.008, 0.502, 'pairwise (2) → shift')
    """
    source = ""
    if not isinstance(profile, MachineProfile):
        source = str(profile)
        profile = load_profile(Path(profile))
    library = _library(library)
    if model not in MODELS:
        raise SpecError(f"check: model {model!r}, expected one of {', '.join(MODELS)}")
    mechanisms = _check_mechanisms(mechanisms)
    kept = profile.meta.get("collectives") or []
    if not kept:
        raise SpecError(f"check: {source or 'the profile'} keeps no collective measurement, expected a profile from "
                        "calibrate --from-osu with p=N[,ppn=K]:FILE of osu_allreduce, osu_alltoall or osu_allgather")
    costs, nic = _with_mechanisms(profile, mechanisms)
    points, networks, notes = [], {}, []
    for entry in kept:
        benchmark, p, ppn = entry.get("benchmark"), entry.get("p"), entry.get("ppn")
        if benchmark not in COLLECTIVES or isinstance(p, bool) or not isinstance(p, int) or p < 2:
            raise SpecError(f"check: kept collective {benchmark!r} on p={p!r}, expected osu_allreduce or "
                            "osu_alltoall on p >= 2 ranks")
        if ppn is not None and (isinstance(ppn, bool) or not isinstance(ppn, int) or not 1 <= ppn <= p):
            raise SpecError(f"check: kept {benchmark} with ppn={ppn!r}, expected a whole number of ranks per "
                            f"node in 1..p={p}, or null")
        collective = COLLECTIVES[benchmark]
        if network is None:
            spec, why = default_network(costs, p, ppn, nic=nic)
            notes += [n for n in why if n not in notes]
        else:
            spec = network
        networks[benchmark] = spec
        level = profile.network_level()
        if "overhead" in mechanisms and ppn and level is not None and level.message_rate_pairs != ppn:
            why = (f"overhead: osu_mbw_mr ran {level.message_rate_pairs} pairs, the collectives {ppn} ranks per node: "
                   f"o is the per-message cost with {level.message_rate_pairs} cores of a node sending (a run of "
                   f"{ppn} pairs matches the collectives' layout)")
            notes += [why] if why not in notes else []
        shared = bool(ppn and ppn > 1)
        platform = costs.platform(model=model, network=make_network(spec, p), layer="mpi")
        options = costs.engine_options(layer="mpi", shared_nic=shared, model=model)
        if "rendezvous" in mechanisms:
            options = apply_preset(options, "mpi", keep=("eager",) if profile.eager is not None else ())
        config = EngineConfig(model, options)
        item = itemsize if collective == "allreduce" else 1
        for size, measured in _points(entry, source):
            choice = _choice(library, collective, p, int(size), item)
            predicted = None
            if choice.modelled and size % item == 0:
                info = lookup(collective, choice.schedule)
                params = {**from_bytes(collective, p, int(size), itemsize=item), **choice.schedule_params}
                predicted = simulate(info.program_schedule(p, params), platform, config).time
            points.append(CheckPoint(benchmark, p, ppn, int(size), float(measured), predicted, choice.text()))
    return OsuCheck(tuple(points), library, model, mechanisms, networks, tuple(notes), source)


def _points(entry: dict, source: str) -> list:
    """The ``[[bytes, seconds], ...]`` of one kept collective, checked (a hand-edited profile fails in
    one line, not in the simulator)."""
    points = entry.get("points")
    where = f"check: {source or 'the profile'}: {entry.get('benchmark')} points"
    if not isinstance(points, list) or not points:
        raise SpecError(f"{where} {points!r:.60}, expected a non-empty list of [bytes, seconds]")
    for point in points:
        ok = isinstance(point, list) and len(point) == 2
        size, measured = point if ok else (None, None)
        if not (ok and isinstance(size, int) and not isinstance(size, bool) and 1 <= size <= (1 << 40)
                and isinstance(measured, (int, float)) and not isinstance(measured, bool)
                and 0 < measured < float("inf")):
            raise SpecError(f"{where}: {point!r:.60}, expected [bytes 1..2^40, seconds > 0]")
    return points


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.2f}"


def format_check(result: OsuCheck) -> str:
    """The report ``calibrate --check`` prints: one OSU-style table per benchmark, its summary, the
    model and library line."""
    lines = [f"# check: {LIBRARIES[result.library]} defaults emulated, {result.model} model, mechanisms: "
             f"{', '.join(result.mechanisms) or 'none'}" + (f"; profile {result.profile}" if result.profile else ""),
             "# ratio = predicted / measured (below 1: the model is too fast); within "
             f"{WITHIN:g}x: {1 / WITHIN:.2f} <= ratio <= {WITHIN:g}"]
    for benchmark in result.benchmarks():
        rows = [p for p in result.points if p.benchmark == benchmark]
        head = rows[0]
        lines += ["", f"# {benchmark}, {head.p} ranks" + (f", {head.ppn} per node" if head.ppn else "")
                  + f", network {result.networks[benchmark]}",
                  f"{'# Size':<10}{'Measured(us)':>16}{'Predicted(us)':>16}{'Ratio':>8}  Algorithm"]
        for p in rows:
            ratio = "-" if p.ratio is None else f"{p.ratio:.2f}"
            lines.append(f"{p.size:<10}{_us(p.measured):>16}{_us(p.predicted):>16}{ratio:>8}  {p.choice}")
        lines.append(_summary_line(benchmark, result.summary(benchmark)))
    lines += ["", _summary_line("all", result.summary())]
    lines += [f"# note: {n}" for n in result.notes]
    return "\n".join(lines)


def _summary_line(name: str, s: dict) -> str:
    if not s["points"]:
        return f"# summary {name}: no point has a topocoll model of the library's algorithm"
    text = (f"# summary {name}: median ratio {s['median_ratio']:.2f} (range {s['min_ratio']:.2f}–"
            f"{s['max_ratio']:.2f}), {s['within_count']} of {s['points']} within {WITHIN:g}x "
            f"({s['within'] * 100:.0f} %)")
    if s["unmodelled"]:
        text += f"; {s['unmodelled']} sizes not modelled"
    return text


# ---- command line: the --check hook of `topocoll calibrate` -------------------------------

def add_check_arguments(p) -> None:
    """``--check PROFILE [--library L] [--model M] [--mechanism NAME]`` on calibrate's parser."""
    g = p.add_argument_group("checking a profile against its collectives (--check PROFILE: measures nothing)")
    g.add_argument("--check", dest="check_profile", metavar="PROFILE",
                   help="predict the osu_allreduce / osu_alltoall / osu_allgather tables a --from-osu profile keeps from its "
                        "point-to-point costs and print measured, predicted and their ratio per size")
    g.add_argument("--library", dest="check_library", default=None, metavar="LIB",
                   help=f"with --check: whose default algorithms ({', '.join(LIBRARIES)}; default openmpi-5.0)")
    g.add_argument("--model", dest="check_model", choices=MODELS, default=None,
                   help="with --check: the event model (default loggops)")
    g.add_argument("--mechanism", dest="check_mechanisms", action="append", default=None,
                   metavar="NAME", help=f"with --check, repeatable: add one of {', '.join(MECHANISMS)} "
                                        "(docs/calibration.md)")


#: check's own options: flag, argparse dest
_CHECK_ONLY = (("--library", "check_library"), ("--model", "check_model"), ("--mechanism", "check_mechanisms"))


def refuse_check_options(args) -> None:
    """Options of ``--check`` given without it: one-line SpecError."""
    for flag, dest in _CHECK_ONLY:
        if getattr(args, dest, None) is not None:
            raise SpecError(f"{flag} without --check, expected it only with --check PROFILE")


def cmd_check(args) -> int:
    """``calibrate --check PROFILE``: run :func:`check` and print :func:`format_check`."""
    given = [flag for flag, on in (("-o", getattr(args, "output", None)), ("--from-osu", getattr(args, "from_osu", None)),
                                   ("--local", getattr(args, "local", None)), ("--quick", getattr(args, "quick", False)),
                                   ("--reps", getattr(args, "reps", None)),
                                   ("--seed", getattr(args, "seed", None) is not None)) if on]
    if given:
        raise SpecError(f"{given[0]} with --check, expected --check PROFILE [--library L] [--model M] "
                        "[--mechanism NAME] (it reads a profile and writes nothing)")
    result = check(args.check_profile, library=args.check_library or "openmpi-5.0",
                   model=args.check_model or "loggops", mechanisms=args.check_mechanisms or ())
    print(format_check(result))
    return 0


