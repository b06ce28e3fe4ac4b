"""The Python face of the Rust event engine (``src/engine``): a schedule's op
program and a routed network in, a :class:`Simulation` out.

Three models share one event loop (docs/simulator.md):

- ``loggops`` — LogGOPS as in LogGOPSim (Hoefler, Schneider & Lumsdaine,
  HPDC 2010): sender overhead ``o`` (α), per-byte CPU ``O``, NIC gap ``g`` and
  ``G``, eager/rendezvous threshold ``S``, k NIC ports, reductions at γ per
  byte on the receiver's CPU, plus link contention by first-come reservation
  of the routed links;
- ``flow`` — fluid flows on static routes sharing bandwidth max-min fairly
  (or SimGrid's CM02 weighting, ``sharing="cm02"``), rates recomputed when a
  flow starts or ends;
- ``congestion`` — the network-noise paper's model (§3): per round, count the
  flows on every link, charge each message the largest count on its route,
  take the longest path through the dependencies.

What holds an op back besides its data (``sync``): ``deps`` (default: the
executor's semantics), ``rounds`` (a rank finishes a round before it starts
the next: blocking ``MPI_Sendrecv`` loops, as MPI libraries run them) or
``barrier`` (synchronous rounds: the α-β-γ model's reading).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace

import numpy as np

from .. import _core
from ..errors import ScheduleError, SpecError
from ..inputs import TEXT_BYTES, read_bytes
from ..schedules.ir import Schedule
from ..schedules.pattern import Pattern
from .model import Estimate, Network, Platform, _positive, make_network
from ..topology.routing import PER_PACKET_TIES
from ..topology.torus import dimension_classes
from .packet import PacketOptions
from .wiring import AdaptiveTorus, DimensionOrder, HopClasses, PacketWiring, Ugal

__all__ = ["EngineConfig", "EngineOptions", "NetworkNoise", "OsNoise", "Simulation", "compile_program", "simulate", "MAX_OS_NOISE_S",
           "MAX_PORTS", "EVENT_MODELS", "SYNCS", "RENDEZVOUS", "MAX_ENVELOPE"]

EVENT_MODELS = ("loggops", "flow", "congestion", "packet")
SYNCS = ("deps", "rounds", "barrier")
#: most messages of one rank in flight a window may name (the engine counts in 32 bits)
MAX_WINDOW = 1 << 30
#: largest eager threshold, bytes (2^62: beyond any message)
MAX_EAGER = 1 << 62
#: what a send of at most the eager threshold does (:class:`EngineOptions`)
SMALL_SENDS = ("eager", "detached")
#: how a message above the eager threshold starts (:class:`EngineOptions`)
RENDEZVOUS = ("direct", "handshake")
#: most envelope bytes per message (a header; a few tens of bytes in MPI libraries)
MAX_ENVELOPE = 1 << 20
#: how the event loop reads the op program: ``auto`` streams it round by round above
#: :data:`STREAM_ABOVE` ops where the configuration allows (and runs the whole program where the
#: streamed loop cannot guarantee its result); ``always`` streams or refuses; ``never`` holds it whole
STREAMS = ("auto", "always", "never")
#: programs of more ops than this are streamed by ``stream="auto"``
STREAM_ABOVE = 2_000_000
_PS = 1e12
_NONE = np.uint32(0xFFFFFFFF)
#: largest OS-noise period, detour length, or trace start and duration, s (about 11.6 days): 10^18 ps, an
#: eighteenth of the engine's 64-bit picosecond clock, so detours repeated over a run cannot overflow it
MAX_OS_NOISE_S = 1e6
#: longest single time of a run's configuration (α, o_r, g, L, router delay, eject handling), s: 10^6 s
#: (about 11.6 days) is 10^18 ps, an eighteenth of the engine's clock (src/bindings/config.rs checks the
#: same bound as it converts)
MAX_TIME_S = 1e6
#: the engine's clock counts picoseconds in 64 bits (2^64 ps, about 213 days). A run is refused before
#: it starts when an upper bound of its simulated time (:class:`RunBound`: every op, byte and route
#: latency one after the other) passes CLOCK_BUDGET_PS = 2^60 ps (about 13 days), a sixteenth of the
#: clock: the margin covers what the bound leaves out (network and OS noise stretching the run). The
#: engine stops a run whose clock passes 2^62 ps all the same (src/engine/core.rs, CLOCK_LIMIT)
CLOCK_BUDGET_PS = 1 << 60
#: most packets of one packet-model run: Σ ⌈bytes / packet_bytes⌉ over its messages, estimated before it
#: starts (1-byte packets once ran on without end: at the model's ~10^7 packet hops per CPU second,
#: 2^32 packets of a few hops are already most of an hour)
MAX_PACKETS = 1 << 32
#: route lengths sampled for :class:`RunBound` (from rank 0's and the last rank's endpoints)
HOPS_SAMPLE = 64
#: most NIC ports per endpoint (k-port LogGOPS), far above real adapters' 1 to 4. The engine keeps one
#: free-time per port of every endpoint and scans an endpoint's ports per message: 64 ports are 512 B per
#: endpoint, 2.5 GB at 5 million endpoints (a billion ports on 4 endpoints asked for 32 GB)
MAX_PORTS = 64


def _ps(seconds: float) -> int:
    return int(round(seconds * _PS)) if seconds > 0 else 0


def check_times(config: "EngineConfig", platform: Platform) -> None:
    """Every time of the run's configuration finite and at most :data:`MAX_TIME_S` (one line naming
    it), before any is converted to ps (a profile's α of 10^308 s once ended in an OverflowError)."""
    o, pk = config.options, config.options.packet
    for name, value in (("alpha", platform.alpha), ("o_recv", o.o_recv), ("g", o.g), ("L", o.L),
                        ("router_delay", pk.router_delay), ("eject_handling", pk.eject_handling)):
        if not (math.isfinite(value) and value <= MAX_TIME_S):
            raise SpecError(f"simulate: {name}={value!r} s, expected a finite time in 0..{MAX_TIME_S:g} s "
                            "(MAX_TIME_S: the engine counts picoseconds in 64 bits)")


@dataclass(frozen=True)
class EngineOptions:
    """LogGOPS and protocol parameters beyond the :class:`Platform` (SI units).

    Attributes
    ----------
    sync : str
        ``deps``, ``rounds`` or ``barrier`` (module doc).
    o_recv : float
        Receiver CPU overhead per message, s (the sender's is ``Platform.alpha``).
    o_per_byte : float
        ``O``: sender CPU time per byte, s/B.
    g : float
        ``g``: gap between messages on one NIC port, s.
    G : float
        ``G``: NIC time per byte, s/B (0: the routed links alone limit).
    L : float
        Extra latency per message between hosts on top of the links'
        latencies, s (``loggops`` and ``flow``; ``congestion`` and
        ``packet`` price the wire by the links alone).
    eager : int
        ``S``: largest eager message, bytes (larger ones use rendezvous). The
        default, 65,535 B, is SMPI's rule: its sends of fewer than
        ``smpi/send-is-detached-thresh`` = 65,536 bytes are detached
        (SimGrid 3.32, ``src/smpi/mpi/smpi_request.cpp`` line 542,
        ``size_ < smpi_cfg_detached_send_thresh()``; the default 65536 in
        ``src/smpi/internals/smpi_config.cpp`` line 95–97).
    small_sends : str
        What a send of at most ``eager`` bytes does: ``eager`` (its data
        enters the network when it is posted; MPI's eager protocol) or
        ``detached`` (it completes when posted, but its data moves only once
        the receive is posted too: SimGrid's detached communications, which
        SMPI uses below ``smpi/send-is-detached-thresh``).
    envelope_bytes : int
        Bytes every message puts on the wire beyond its payload, 0 ..
        :data:`MAX_ENVELOPE` (SMPI's MPI envelope is 16 B: SimGrid 3.32,
        ``smpi_request.cpp`` line 617, ``payload_size_ = size_ + 16``); the
        handshake's control messages carry this much. Application bytes and
        the achieved bandwidth count the payload only.
    rendezvous : str
        How a message above ``eager`` starts: ``direct`` (its data leaves
        once its send and its receive are posted: SMPI's) or ``handshake``
        (a control message to the receiver when the send is posted, one back
        once the receive is posted, then the data: the RTS/CTS rendezvous of
        MPICH and Open MPI; not with the ``congestion`` model).
    ports : int
        NIC ports per endpoint, ``1 .. MAX_PORTS`` (k-port model; ``loggops`` only).
    nic_bandwidth : float
        Injection and ejection limit per endpoint, B/s, 0 = none (``flow``).
    sharing : str
        ``maxmin`` (default) or ``cm02`` (``flow``).
    copy_bandwidth : float
        Bytes copied per second by a local copy, 0 = free.
    window : int
        At most this many messages of one rank in the network at once, 0 = no
        limit (throttling, the all-to-all paper's §3 on BG/L injection).
    packet : PacketOptions
        Packets, virtual channels, buffers and routers of the ``packet``
        model (:mod:`.packet`).
    """

    sync: str = "deps"
    o_recv: float = 0.0
    o_per_byte: float = 0.0
    g: float = 0.0
    G: float = 0.0
    L: float = 0.0
    eager: int = 65535
    small_sends: str = "eager"
    envelope_bytes: int = 0
    rendezvous: str = "direct"
    ports: int = 1
    nic_bandwidth: float = 0.0
    sharing: str = "maxmin"
    copy_bandwidth: float = 0.0
    window: int = 0
    packet: PacketOptions = PacketOptions()

    def __post_init__(self):
        if self.sync not in SYNCS:
            raise SpecError(f"sync={self.sync!r}, expected one of {', '.join(SYNCS)}")
        if self.small_sends not in SMALL_SENDS:
            raise SpecError(f"small_sends={self.small_sends!r}, expected one of {', '.join(SMALL_SENDS)}")
        if self.rendezvous not in RENDEZVOUS:
            raise SpecError(f"rendezvous={self.rendezvous!r}, expected one of {', '.join(RENDEZVOUS)}")
        if isinstance(self.envelope_bytes, bool) or not isinstance(self.envelope_bytes, (int, np.integer)) \
                or not 0 <= self.envelope_bytes <= MAX_ENVELOPE:
            raise SpecError(f"EngineOptions: envelope_bytes={self.envelope_bytes!r}, expected 0..{MAX_ENVELOPE} "
                            "bytes (MAX_ENVELOPE)")
        if self.sharing not in ("maxmin", "cm02"):
            raise SpecError(f"sharing={self.sharing!r}, expected maxmin or cm02")
        for name in ("o_recv", "o_per_byte", "g", "G", "L", "nic_bandwidth", "copy_bandwidth"):
            _positive("EngineOptions", name, getattr(self, name), allow_zero=True)
        if isinstance(self.eager, bool) or not isinstance(self.eager, (int, np.integer)) \
                or not 0 <= self.eager <= MAX_EAGER:
            raise SpecError(f"EngineOptions: eager={self.eager!r}, expected 0..{MAX_EAGER} bytes")
        if isinstance(self.ports, bool) or not isinstance(self.ports, (int, np.integer)) \
                or not 1 <= self.ports <= MAX_PORTS:
            raise SpecError(f"EngineOptions: ports={self.ports!r}, expected an integer in 1..{MAX_PORTS} (MAX_PORTS)")
        if isinstance(self.window, bool) or not isinstance(self.window, (int, np.integer)) \
                or not 0 <= self.window <= MAX_WINDOW:
            raise SpecError(f"EngineOptions: window={self.window!r}, expected an integer in 0..{MAX_WINDOW} "
                            "(0: no limit)")
        if not isinstance(self.packet, PacketOptions):
            raise SpecError(f"EngineOptions: packet={self.packet!r}, expected a PacketOptions")


@dataclass(frozen=True)
class NetworkNoise:
    """Background traffic (network-noise paper §2–3).

    ``ratio`` is the perturbation ratio: the background endpoints are
    ``ratio / (1 - ratio)`` times as many as the application's ranks
    (ratio 0.5: as many; the paper's Fig. 10), at least 2, capped by the
    endpoints the application leaves free, and drawn at random among them per
    run. In
    ``congestion`` they form one random permutation per round; in
    ``loggops``/``flow`` each streams ``bytes``-byte messages to random peers
    until the application finishes.
    """

    ratio: float
    bytes: int = 1 << 20
    seed: int = 0

    def __post_init__(self):
        r = _positive("NetworkNoise", "ratio", self.ratio, allow_zero=True)
        if r >= 1:
            raise SpecError(f"NetworkNoise: ratio={self.ratio!r}, expected 0 <= ratio < 1")
        if isinstance(self.bytes, bool) or not isinstance(self.bytes, (int, np.integer)) \
                or not 0 < self.bytes <= MAX_EAGER:
            raise SpecError(f"NetworkNoise: bytes={self.bytes!r}, expected an integer in 1..{MAX_EAGER}")

    def endpoints(self, network: Network, seed: int) -> np.ndarray:
        """The background endpoints of one run (seeded)."""
        free = np.ones(network.topology.n_endpoints, dtype=bool)
        free[network.order] = False
        free = np.flatnonzero(free)
        want = min(len(free), int(round(len(network.order) * self.ratio / (1.0 - self.ratio))))
        if self.ratio > 0:
            if len(free) < 2:
                raise SpecError(
                    f"network noise ratio {self.ratio:g}: {network.topology.spec} leaves {len(free)} endpoint(s) "
                    f"for background traffic ({network.topology.n_endpoints} endpoints, {len(network.order)} "
                    "ranks), expected at least 2: a network larger than the application")
            want = max(want, 2)   # background traffic needs a sender and a receiver
        rng = np.random.default_rng(seed)
        return np.sort(rng.choice(free, size=want, replace=False)).astype(np.uint32) if want else \
            np.zeros(0, np.uint32)


@dataclass(frozen=True)
class OsNoise:
    """CPU detours per rank (``loggops`` and ``flow``).

    ``kind``: ``periodic`` (every ``period`` s for ``length`` s, each rank at a
    seeded phase), ``random`` (Poisson arrivals at mean gap ``period``) or
    ``trace`` (``start``/``length`` arrays in s, e.g. from a Netgauge trace;
    repeated with the trace's span, each rank at a seeded offset).
    """

    kind: str
    period: float = 0.0
    length: float = 0.0
    seed: int = 0
    start: tuple = ()
    lengths: tuple = ()

    def __post_init__(self):
        if self.kind not in ("periodic", "random", "trace"):
            raise SpecError(f"OS noise kind {self.kind!r}, expected periodic, random or trace")
        if self.kind != "trace":
            _positive("OsNoise", "period", self.period)
            _positive("OsNoise", "length", self.length, allow_zero=True)
            for name in ("period", "length"):
                if getattr(self, name) > MAX_OS_NOISE_S:
                    raise SpecError(f"OsNoise: {name}={getattr(self, name)!r} s, expected at most "
                                    f"MAX_OS_NOISE_S = {MAX_OS_NOISE_S:g} s")
            if self.length >= self.period and self.kind == "periodic":
                raise SpecError(f"OsNoise: length={self.length!r} >= period={self.period!r}, expected a "
                                "detour shorter than its period")
        else:
            for name in ("start", "lengths"):
                values = np.asarray(getattr(self, name), dtype=float)
                bad = ~(np.isfinite(values) & (values >= 0) & (values <= MAX_OS_NOISE_S))
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise SpecError(f"OsNoise: {name}[{i}]={float(values[i])!r} s, expected 0..MAX_OS_NOISE_S = "
                                    f"{MAX_OS_NOISE_S:g} s")
            if len(self.start) != len(self.lengths):
                raise SpecError(f"OsNoise: {len(self.start)} starts and {len(self.lengths)} lengths, expected one "
                                "length per start")

    @classmethod
    def from_netgauge(cls, path, seed: int = 0) -> "OsNoise":
        """Read a Netgauge noise trace: one ``start<TAB>duration`` line per
        detour, in ns (``#`` comments and blank lines skipped)."""
        starts, lens = [], []
        data = read_bytes(path, limit=TEXT_BYTES, what="a Netgauge noise trace (start<TAB>duration in ns)",
                          text=True, error=SpecError)
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError as e:
            raise SpecError(f"{path}: not a text file (byte {e.start} is {data[e.start:e.start + 1]!r}), expected a "
                            "Netgauge noise trace (start<TAB>duration lines in ns)") from None
        most_ns = MAX_OS_NOISE_S * 1e9
        for lineno, line in enumerate(lines, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            try:
                s, d = float(parts[0]), float(parts[1])
                if not (math.isfinite(s) and math.isfinite(d)) or s < 0 or d < 0:
                    raise ValueError
            except (ValueError, IndexError):
                raise SpecError(f"{path}:{lineno}: {text[:80]!r}, expected 'start<TAB>duration' in ns "
                                "(two numbers >= 0)") from None
            if s > most_ns or d > most_ns:
                raise SpecError(f"{path}:{lineno}: {text[:80]!r}, expected start and duration at most {most_ns:.0e} "
                                f"ns (MAX_OS_NOISE_S = {MAX_OS_NOISE_S:g} s)")
            starts.append(s * 1e-9)
            lens.append(d * 1e-9)
        if not starts:
            raise SpecError(f"{path}: no detours, expected 'start<TAB>duration' lines in ns")
        order = np.argsort(starts, kind="stable")
        return cls("trace", seed=seed, start=tuple(np.asarray(starts)[order]),
                   lengths=tuple(np.asarray(lens)[order]))


def compile_program(schedule: Schedule):
    """The schedule's op program as the engine's ``EngineProgram`` (one pass
    over the streamed chunks; matching and validation happen in Rust).
    Refused in one line, before any work, where it would not fit in the
    available memory (:func:`check_memory`)."""
    check_memory(schedule, streamed=False)
    cols = {k: [] for k in ("rank", "kind", "peer", "tag", "nbytes", "dep_idx")}
    dep_ptrs, round_ptr, base, dep_base = [np.zeros(1, np.uint64)], [0], 0, 0
    for ch in schedule.program():
        for k in ("rank", "kind", "peer", "tag", "nbytes", "dep_idx"):
            cols[k].append(getattr(ch, k))
        dep_ptrs.append(ch.dep_ptr[1:].astype(np.uint64) + dep_base)
        dep_base += int(ch.dep_ptr[-1])
        base += len(ch)
        round_ptr.append(base)

    def cat(name, dtype):
        return np.ascontiguousarray(np.concatenate(cols[name]) if cols[name] else np.zeros(0), dtype=dtype)

    peer = np.concatenate(cols["peer"]) if cols["peer"] else np.zeros(0, np.int64)
    peer = np.where(peer < 0, _NONE, peer).astype(np.uint32)
    try:
        return _core.EngineProgram(
            schedule.p, cat("rank", np.uint32), cat("kind", np.uint8), peer, cat("tag", np.int64),
            cat("nbytes", np.uint64), np.concatenate(dep_ptrs).astype(np.uint64), cat("dep_idx", np.uint32),
            np.asarray(round_ptr, dtype=np.uint64))
    except ValueError as e:      # the core's one-line reason (unmatched sends, sizes): named with the schedule
        raise ScheduleError(f"{schedule.label()}: {e}") from None


@dataclass
class Simulation:
    """One simulated run.

    Attributes
    ----------
    time : float
        Completion time of the collective, s (last op of any rank).
    model : str
    rank_done : ndarray
        Completion time of each rank, s.
    link_bytes : ndarray
        Bytes each directed link carried (``congestion``: flows per link over
        all rounds), background traffic included.
    bytes_total : int
        Application bytes sent.
    messages, background_messages, events : int
    seed : int or None
        Seed of the background traffic (None without network noise).
    network : Network
    congestion : ndarray or None
        ``congestion`` model: largest flow count on each message's route
        (None on the lockstep path, which keeps no per-message state).
    max_congestion : float or None
        ``congestion`` model: the largest of them.
    lockstep : bool
        Whether the lockstep path (:mod:`.lockstep`) computed it.
    trace : dict or None
        With ``trace=True``: per-op ``start``/``end`` (s) and the program
        columns ``rank``, ``kind``, ``peer``, ``nbytes``; per message
        ``send``/``recv`` op ids and ``inject``/``arrive`` times.
    packet_hops, max_buffer_packets : int
        ``packet`` model: link traversals of all packets, and the most
        packets one (link, VC) input buffer ever held (0 for other models).
    buffer_max, buffer_mean : ndarray or None
        ``packet`` model: per (link, VC) input buffer (index ``link·vcs +
        vc``) the most packets it held and its time-averaged occupancy.
    streamed : bool
        Whether the event loop read the program round by round
        (``EngineConfig.stream``); then ``congestion`` is None unless traced
        (only ``max_congestion`` is kept) and ``peak_ops`` / ``peak_messages``
        are the most ops and messages it held at once.
    """

    time: float
    model: str
    rank_done: np.ndarray
    link_bytes: np.ndarray
    bytes_total: int
    messages: int
    background_messages: int
    events: int
    seed: int | None
    network: Network
    options: EngineOptions
    congestion: np.ndarray | None = None
    max_congestion: float | None = None
    lockstep: bool = False
    link_bandwidth: np.ndarray | None = field(default=None, repr=False)
    os_stolen: float = 0.0
    trace: dict | None = field(default=None, repr=False)
    packet_hops: int = 0
    max_buffer_packets: int = 0
    buffer_max: np.ndarray | None = field(default=None, repr=False)
    buffer_mean: np.ndarray | None = field(default=None, repr=False)
    #: whether the event loop read the program round by round (:data:`STREAMS`), and then the most ops and
    #: messages it held at once
    streamed: bool = False
    peak_ops: int | None = None
    peak_messages: int | None = None

    def fullest_buffers(self, top: int = 5) -> list[tuple[str, int, int, float]]:
        """``packet`` model: the ``top`` buffers by mean occupancy, ``("src→dst",
        vc, most packets held, mean packets)``; empty for other models."""
        if self.buffer_mean is None:
            return []
        vcs = self.options.packet.vcs
        order = np.argsort(self.buffer_mean, kind="stable")[::-1][:top]
        return [(self.network.link_name(int(b) // vcs), int(b) % vcs, int(self.buffer_max[b]),
                 float(self.buffer_mean[b])) for b in order if self.buffer_max[b] > 0]

    def hot_links(self, top: int = 5) -> list[tuple[str, float]]:
        """The ``top`` busiest links, ``("src→dst", bytes)``."""
        order = np.argsort(self.link_bytes, kind="stable")[::-1][:top]
        return [(self.network.link_name(int(l)), float(self.link_bytes[l])) for l in order
                if self.link_bytes[l] > 0]

    @property
    def injection_bound(self) -> float:
        """Every rank's link into the network at full speed, B/s (links are
        sorted by source node, so an endpoint's first link is its own); with
        several ranks per host, the ranks' shared-memory links plus the
        hosts' NIC links (a message leaves through one or the other)."""
        topo = self.network.topology
        bw = topo.bandwidth if self.link_bandwidth is None else self.link_bandwidth
        own = float(np.asarray(bw)[topo.indptr[self.network.order]].sum())
        if topo.family == "nodes":   # and the hosts' NIC links (a host hub's first link is its first fabric link)
            hosts = np.unique(np.asarray(self.network.order) // topo.params["nodes"].ppn)
            own += float(np.asarray(bw)[topo.indptr[topo.n_endpoints + hosts]].sum())
        return own

    @property
    def bandwidth(self) -> float:
        """Achieved bandwidth: application bytes sent / time, B/s."""
        return self.bytes_total / self.time if self.time > 0 else math.inf

    def as_dict(self) -> dict:
        return {"model": self.model, "time_s": self.time, "rank_done_s": self.rank_done.tolist(),
                "bytes": self.bytes_total, "messages": self.messages,
                "background_messages": self.background_messages, "events": self.events,
                "bandwidth_Bps": self.bandwidth, "injection_bound_Bps": self.injection_bound,
                "seed": self.seed, "sync": self.options.sync, "network": self.network.label,
                "hot_links": [{"link": n, "load": b} for n, b in self.hot_links()],
                **({"max_congestion": self.max_congestion} if self.max_congestion is not None else {}),
                **({"packet_hops": self.packet_hops, "fullest_buffers": [
                    {"link": n, "vc": vc, "max_packets": most, "mean_packets": mean}
                    for n, vc, most, mean in self.fullest_buffers()]} if self.buffer_mean is not None else {}),
                **({"os_noise_stolen_s": self.os_stolen} if self.os_stolen else {}),
                **({"nic": {"model": self.options.packet.nic, **({"arbiter": self.options.packet.ib_arbiter,
                                                                  "seed": self.options.packet.ib_seed,
                                                                  "qps": self.options.packet.ib_qps}
                                                                 if self.options.packet.nic == "ib" else {})}}
                   if self.model == "packet" else {})}


@dataclass(frozen=True)
class RunBound:
    """An upper bound of a run's simulated time from its totals, in ps: every op's CPU time, every byte
    at the largest CPU cost per byte, every byte sent over the longest route at the slowest link's
    bandwidth (with the packet model's headers), every message's route latencies and every packet's
    router delays, one after the other. No model runs anything in less parallel than that, so a run
    within :data:`CLOCK_BUDGET_PS` cannot wrap the engine's clock.

    Attributes (ps): ``per_op``, ``per_byte`` (CPU, every op's bytes), ``per_sent_byte``,
    ``per_message``, ``per_packet``; ``hops`` the route length taken, ``slowest`` B/s, and
    ``packet_bytes`` (0 but for the packet model).
    """

    per_op: float
    per_byte: float
    per_sent_byte: float
    per_message: float
    per_packet: float
    hops: int
    slowest: float
    packet_bytes: int = 0

    @classmethod
    def of(cls, config: "EngineConfig", platform: Platform, net: Network, bandwidth: np.ndarray,
           latency: np.ndarray) -> "RunBound":
        o, pk = config.options, config.options.packet
        hops = _longest_route(net)
        slowest = float(np.min(bandwidth)) if len(bandwidth) else math.inf
        per_link_byte = _PS / slowest
        packet = config.model == "packet"
        headers = 1 + pk.header_bytes / pk.packet_bytes if packet else 1.0
        return cls(
            per_op=float(_ps(platform.alpha) + _ps(o.o_recv) + _ps(o.g) + _ps(o.L)),
            per_byte=(o.o_per_byte + o.G) * _PS + _PS / platform.reduce_bandwidth
            + (_PS / o.copy_bandwidth if o.copy_bandwidth else 0.0),
            per_sent_byte=hops * per_link_byte * headers,
            per_message=hops * float(np.max(latency)) if len(latency) else 0.0,
            per_packet=(hops * _ps(pk.router_delay) + _ps(pk.eject_handling)) if packet else 0.0,
            hops=hops, slowest=slowest, packet_bytes=pk.packet_bytes if packet else 0)

    def check(self, label: str, *, ops: int, messages: int, all_bytes: int, sent_bytes: int) -> None:
        """Refuse, in one line, totals whose packets pass :data:`MAX_PACKETS` or whose bound passes
        :data:`CLOCK_BUDGET_PS` (totals so far of a streamed run: it stops where they do)."""
        packets = 0
        if self.packet_bytes:
            packets = sent_bytes // self.packet_bytes + messages     # ≥ Σ ⌈bytes / packet_bytes⌉
            if packets > MAX_PACKETS:
                raise SpecError(f"simulate {label}: about {packets:,} packets ({sent_bytes:,} B in {messages:,} "
                                f"messages at packet_bytes={self.packet_bytes}), expected at most {MAX_PACKETS:,} "
                                "(MAX_PACKETS): larger packets (--packet-bytes) or a smaller run")
        bound = (ops * self.per_op + all_bytes * self.per_byte + sent_bytes * self.per_sent_byte
                 + messages * self.per_message + packets * self.per_packet)
        if bound > CLOCK_BUDGET_PS:
            raise SpecError(f"simulate {label}: simulated time could reach {bound / _PS:.4g} s ({ops:,} ops, "
                            f"{sent_bytes:,} B sent over routes of up to {self.hops} links, the slowest at "
                            f"{self.slowest:.4g} B/s), expected at most {CLOCK_BUDGET_PS / _PS:.4g} s "
                            "(CLOCK_BUDGET_PS: the engine counts picoseconds in 64 bits)")


def _longest_route(net: Network) -> int:
    """Links on the longest route, from a sample: rank 0's and the last rank's endpoints to
    :data:`HOPS_SAMPLE` ranks spread over the order, doubled for the routes not seen (per-packet
    routings, which have no static routes: every node once)."""
    from ..topology.routing import route
    topo, order = net.topology, np.asarray(net.order, dtype=np.int64)
    if net.router.per_packet or len(order) < 2:
        return max(1, min(topo.n_nodes, 4096)) if len(order) > 1 else 1
    picks = order[np.linspace(0, len(order) - 1, min(HOPS_SAMPLE, len(order))).astype(np.int64)]
    src = np.concatenate([np.full(len(picks), order[0]), np.full(len(picks), order[-1])])
    dst = np.concatenate([picks, picks])
    keep = src != dst
    if not keep.any():
        return 1
    indptr = route(net.router, src[keep], dst[keep])[0]
    return max(1, 2 * int(np.diff(indptr).max()))


def platform_network(platform: Platform, p: int) -> tuple[Network, np.ndarray, np.ndarray]:
    """The platform's network with link bandwidths (B/s) and latencies (ps);
    without one, an ideal crossbar at the platform's bandwidth and no latency
    (the α-β-γ model's machine)."""
    net = platform.network
    if net is None:
        net = make_network(f"crossbar:{max(p, 2)}", p, order="identity")
        net = Network(net.router, net.order, f"ideal crossbar ({max(p, 2)} endpoints, "
                                             f"{platform.bandwidth / 1e9:g} GB/s links, no latency)")
        n = net.topology.n_links
        return net, np.full(n, platform.bandwidth), np.zeros(n, np.uint64)
    if len(net.order) != p:
        raise SpecError(f"simulate: the network places {len(net.order)} ranks, the schedule has p={p}")
    topo = net.topology
    lat = np.round(np.asarray(topo.latency, dtype=np.float64) * _PS).astype(np.uint64)
    return net, np.ascontiguousarray(topo.bandwidth, dtype=np.float64), lat


@dataclass(frozen=True)
class EngineConfig:
    """Everything an engine run takes besides its source and platform, in SI
    units: the model, its options, network and OS noise, tracing.

    :meth:`core` hands it to the engine as it is (``topocoll._core.EngineConfig``
    reads these dataclasses attribute by attribute, turns each named choice
    into a Rust enum and converts every unit, once: ``src/bindings/config.rs``).

    Examples
    --------
    >>> EngineConfig("flow", EngineOptions(sync="rounds")).model
    'flow'
    >>> EngineConfig("packets")
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: EngineConfig: model 'packets', expected one of loggops, flow, congestion, packet
    """

    model: str = "loggops"
    options: EngineOptions = EngineOptions()
    noise: NetworkNoise | None = None
    os_noise: OsNoise | None = None
    trace: bool = False
    #: how the event loop reads the op program (:data:`STREAMS`)
    stream: str = "auto"

    def __post_init__(self):
        if self.model not in EVENT_MODELS:
            raise SpecError(f"EngineConfig: model {self.model!r}, expected one of {', '.join(EVENT_MODELS)}")
        if self.stream not in STREAMS:
            raise SpecError(f"EngineConfig: stream={self.stream!r}, expected one of {', '.join(STREAMS)}")
        if self.os_noise is not None and self.model == "congestion":
            raise SpecError("OS noise needs an event-driven model with CPU time, expected --model loggops or flow")
        if not isinstance(self.options, EngineOptions):
            raise SpecError(f"EngineConfig: options={self.options!r}, expected an EngineOptions")

    def costs(self, platform: Platform) -> dict:
        """CPU and protocol costs in the engine's units (ps, ps per byte)."""
        o = self.options
        return dict(o_send=_ps(platform.alpha), o_recv=_ps(o.o_recv), o_per_byte=o.o_per_byte * _PS,
                    gamma=_PS / platform.reduce_bandwidth, copy=(_PS / o.copy_bandwidth if o.copy_bandwidth else 0.0),
                    eager=int(o.eager))

    def core(self, platform: Platform, network: Network, background: np.ndarray | None = None):
        """The engine's typed input for one run on ``network`` (``background``:
        the noise's endpoints of this run, from :meth:`NetworkNoise.endpoints`)."""
        bg = None if background is None or not len(background) else np.ascontiguousarray(background, np.uint32)
        wiring = self._packet(network) if self.model == "packet" else None
        try:
            return _core.EngineConfig(self, platform, wiring=wiring, background=bg)
        except ValueError as e:
            raise SpecError(str(e)) from None

    def _packet(self, network: Network) -> PacketWiring:
        """The packet model's parameters in the engine's units, with the
        network's torus dimensions and datelines (deadlock-free dimension
        order on rings, :func:`~topocoll.topology.torus.dimension_classes`);
        with Blue Gene/L's endpoint, the torus geometry it places packets by."""
        wiring = self._packet_routes(network)
        pk, topo = self.options.packet, network.topology
        if pk.nic != "bgl":
            return wiring
        if topo.family != "torus":
            raise SpecError(f"PacketOptions: nic='bgl' on {topo.spec}, expected a torus or mesh (Blue Gene/L's "
                            "endpoint places packets by torus direction)")
        geometry = AdaptiveTorus(tuple(int(k) for k in topo.params["k"]),
                                 tuple(bool(w) for w in topo.params["wrap"]),
                                 np.ascontiguousarray(topo.src, dtype=np.uint32))
        return replace(wiring, nic_torus=geometry)

    def _packet_routes(self, network: Network) -> PacketWiring:
        """The packet model's links and routing scheme."""
        pk, topo = self.options.packet, network.topology
        pk.check_state(topo.n_links)
        link_dst = np.ascontiguousarray(topo.dst, dtype=np.uint32)
        if topo.family == "nodes" and network.router.name in ("adaptive", "dor-bubble", "ugal"):
            raise SpecError(f"packet model with routing {network.router.name} on {topo.spec}: chosen packet by "
                            "packet on the fabric alone, expected a static routing on a network with nodes "
                            "(dor, minimal, valiant, ...)")
        if network.router.name in ("adaptive", "dor-bubble") and topo.family == "torus":
            return PacketWiring(link_dst, _adaptive_torus(topo, pk, network.router))
        fabric = topo.params["fabric"] if topo.family == "nodes" else topo
        if fabric.family == "dragonfly" and network.router.name in _DRAGONFLY_CLASSES:
            scheme = _dragonfly_hops(fabric, network.router, pk)
            if fabric is not topo:   # the nodes' links are endpoint links (kind 0), the fabric's keep theirs
                from ..topology.nodes import fabric_link_ids
                kind = np.zeros(topo.n_links, np.uint8)
                kind[fabric_link_ids(topo)] = scheme.hop_kind
                scheme = replace(scheme, hop_kind=kind)
            return PacketWiring(link_dst, scheme)
        if network.router.multipath:   # it would silently take the first path of every split route
            raise SpecError(f"packet model with routing {network.router.name}: a message split over several "
                            "paths, expected a routing with one path per message (on tori: dor, shortest, or "
                            "adaptive, which the packet model routes packet by packet)")
        link_dim, dateline = dimension_classes(topo)
        if dateline.any() and pk.vcs < 2:
            raise SpecError(f"packet model on {topo.spec}: vcs={pk.vcs}, expected at least 2 on a torus (the "
                            "dateline's second virtual channel keeps dimension-order routing deadlock free), or "
                            "routing dor-bubble (dimension order on one VC with bubble flow control, Blue Gene/L's "
                            "deterministic routing)")
        return PacketWiring(link_dst, DimensionOrder(np.ascontiguousarray(link_dim, np.uint8),
                                                     np.ascontiguousarray(dateline, bool)))


#: VC classes by hop a dragonfly routing needs (``src/engine/ugal.rs``): minimal
#: local-global-local 2; UGAL's Valiant through a group (l g l g l) 3; the
#: static Valiant through a random router (l g l l g l) 4
_DRAGONFLY_CLASSES = {"minimal": 2, "ugal": 3, "valiant": 4}


def _dragonfly_hops(topo, router, pk) -> HopClasses | Ugal:
    """VCs by hop class on a dragonfly (deadlock free: a class never falls
    along a route and within one only local → global waits), and UGAL-L's
    geometry for ``routing ugal`` (Kim et al. 2008 §4.2)."""
    name = router.name
    classes = _DRAGONFLY_CLASSES[name]
    if pk.vcs < classes:
        raise SpecError(f"packet model with routing {name} on {topo.spec}: vcs={pk.vcs}, expected at least "
                        f"{classes} (one VC class per hop phase keeps a dragonfly deadlock free)")
    n, a = topo.n_endpoints, topo.params["a"]
    src, dst = np.asarray(topo.src, np.int64), np.asarray(topo.dst, np.int64)
    endpoint = (src < n) | (dst < n)
    same_group = (src - n) // a == (dst - n) // a
    kind = np.where(endpoint, 0, np.where(same_group, 1, 2)).astype(np.uint8)
    if name == "ugal":
        P = topo.params
        return Ugal(kind, classes, (int(P["a"]), int(P["p"]), int(P["h"]), int(P["g"])),
                    int(router.options.get("seed", 0)), np.ascontiguousarray(topo.src, dtype=np.uint32))
    return HopClasses(kind, classes)


def _adaptive_torus(topo, pk, router) -> AdaptiveTorus:
    """Routing packet by packet on a torus or mesh (``src/engine/adaptive.rs``; docs/simulator.md,
    "Adaptive routing"): ``adaptive`` is Blue Gene/L's minimal adaptive routing (all-to-all paper §3.1),
    JSQ over the dynamic VCs 1..vcs−1 and a dimension-order escape VC 0 with bubble flow control;
    ``dor-bubble`` is that escape VC alone on one VC, BG/L's deterministic routing ("for deterministic
    routing the packets have to be routed on the bubble normal VC", §2). ``tie=random`` draws the escape
    route's direction on a k/2 tie per packet from ``seed``."""
    name = router.name
    rings = any(w and k > 2 for k, w in zip(topo.params["k"], topo.params["wrap"]))
    if name == "adaptive" and pk.vcs < 2:
        raise SpecError(f"packet model with adaptive routing on {topo.spec}: vcs={pk.vcs}, expected at least 2 "
                        "(VC 0 is the dimension-order escape channel, the others are dynamic); with one VC, "
                        "routing dor-bubble is that escape channel alone")
    if name == "dor-bubble" and pk.vcs != 1:
        raise SpecError(f"packet model with routing dor-bubble on {topo.spec}: vcs={pk.vcs}, expected 1 (Blue "
                        "Gene/L's deterministic routing uses its bubble VC alone, all-to-all paper §2)")
    if rings and pk.buffer_packets < 2:
        raise SpecError(f"packet model with routing {name} on {topo.spec}: buffer_packets={pk.buffer_packets}, "
                        "expected at least 2 (the escape channel's bubble keeps one packet slot free in every ring)")
    tie = router.options.get("tie", "positive")
    if tie not in PER_PACKET_TIES:
        raise SpecError(f"packet model with routing {name}: tie={tie!r}, expected {' or '.join(PER_PACKET_TIES)} "
                        "(the escape channel's k/2 tie, decided per packet)")
    return AdaptiveTorus(tuple(int(k) for k in topo.params["k"]), tuple(bool(w) for w in topo.params["wrap"]),
                         np.ascontiguousarray(topo.src, dtype=np.uint32),
                         channels="escape-only" if name == "dor-bubble" else "adaptive",
                         tie_seed=int(router.options.get("seed", 0)) if tie == "random" else None)


def simulate(source, platform: Platform = Platform(), config: EngineConfig | None = None, *,
             model: str | None = None, options: EngineOptions | None = None, noise: NetworkNoise | None = None,
             os_noise: OsNoise | None = None, trace: bool | None = None, program=None) -> Simulation:
    """Simulate ``source`` on ``platform`` with one event-driven model.

    Parameters
    ----------
    source : Schedule or GoalProgram
        Anything with ``p``, ``label()`` and ``program()`` (the streamed op program).
    platform : Platform
        α is the sender's CPU overhead ``o``; γ the reduction cost per byte; the
        network (or an ideal crossbar at ``platform.bandwidth``) carries the
        bytes.
    config : EngineConfig
        The model, its options, network and OS noise, tracing. The keywords
        ``model``, ``options``, ``noise``, ``os_noise``, ``trace`` are a
        shorthand that builds one (not both).
    program : EngineProgram, optional
        ``compile_program(source)``, to reuse across runs (never streamed).

    Raises
    ------
    SpecError
        Bad configuration; a run whose :func:`memory_estimate` exceeds the
        machine's available memory (before any work); ``stream="always"``
        where streaming cannot reproduce the whole program's run exactly.

    Notes
    -----
    Programs above :data:`STREAM_ABOVE` ops (``stream="auto"``) or with
    ``stream="always"`` are streamed round by round
    (``src/engine/stream.rs``, docs/simulator.md "The streamed program"):
    bit for bit the whole program's result, memory bounded by the rounds in
    flight; where the streamed loop cannot guarantee that, ``"auto"`` runs
    the whole program.
    """
    shorthand = dict(model=model, options=options, noise=noise, os_noise=os_noise, trace=trace)
    given = {k: v for k, v in shorthand.items() if v is not None}
    if config is None:
        config = EngineConfig(**given)
    elif given:
        raise SpecError(f"simulate: config and {', '.join(given)} given, expected one of them")
    model, options, noise, os_noise, trace = (config.model, config.options, config.noise, config.os_noise,
                                              config.trace)
    check_times(config, platform)
    net, bandwidth, latency = platform_network(platform, source.p)
    if model != "packet":
        net.router.require_static(f"the {model} model")
    costs = config.costs(platform)
    bound = RunBound.of(config, platform, net, bandwidth, latency)
    background = noise.endpoints(net, noise.seed) if noise is not None and noise.ratio > 0 else None
    order = np.ascontiguousarray(net.order, dtype=np.uint32)
    common = dict(network=net, options=options, seed=noise.seed if noise is not None else None,
                  link_bandwidth=bandwidth)
    shapes = _lockstep(source, model, options, costs, trace, os_noise) if program is None else None
    if shapes is not None:
        sent = int(shapes.nbytes[shapes.message].astype(np.int64).sum()) * source.p
        bound.check(source.label(), ops=2 * len(shapes.nbytes) * source.p, messages=int(shapes.message.sum())
                    * source.p, all_bytes=int(shapes.nbytes.astype(np.int64).sum()) * source.p, sent_bytes=sent)
        bg = {} if background is None else dict(bg_endpoints=background, bg_seed=noise.seed)
        try:
            out = _core.engine_lockstep(
                net.router.engine, bandwidth, latency, order, shapes.xor, shapes.message, shapes.send_off,
                shapes.nbytes, shapes.send_at, shapes.recv_at, shapes.local_end, shapes.post,
                eager=costs["eager"], barrier=options.sync == "barrier", **bg)
        except ValueError as e:
            raise SpecError(f"simulate {source.label()}: {e}") from None
        return Simulation(
            time=out["time_ps"] / _PS, model=model, rank_done=out["rank_done_ps"] / _PS,
            link_bytes=out["link_bytes"],
            bytes_total=int(shapes.nbytes[shapes.message].astype(np.int64).sum()) * source.p,
            messages=int(out["app_messages"]), background_messages=0, events=0,
            max_congestion=float(out["max_congestion"]), lockstep=True, **common)
    core = config.core(platform, net, background)
    if program is None and (config.stream == "always" or
                            (config.stream == "auto" and estimated_ops(source) > STREAM_ABOVE)):
        check_memory(source, streamed=True)
        sent = [0]
        try:
            out, late, (_, _, peak_ops, peak_msgs) = _core.engine_run_streamed(
                round_columns(source, sent, bound=bound), source.p, net.router.engine, bandwidth, latency, order,
                core)
        except SpecError:          # the rounds' own refusal (RunBound): already names the run
            raise
        except ValueError as e:
            raise SpecError(f"simulate {source.label()}: {e}") from None
        if out is not None:
            return _simulation(source, config, out, sent[0], common, streamed=(int(peak_ops), int(peak_msgs)))
        if config.stream == "always":
            raise SpecError(f"simulate {source.label()}: stream='always' cannot stream it exactly ({late}); "
                            "expected stream='auto' or 'never'")
    prog = compile_program(source) if program is None else program
    bound.check(source.label(), ops=prog.n_ops, messages=prog.n_messages, all_bytes=prog.bytes_all,
                sent_bytes=prog.bytes_sent)
    try:
        out = _core.engine_run(prog, net.router.engine, bandwidth, latency, order, core)
    except ValueError as e:
        raise SpecError(f"simulate {source.label()}: {e}") from None
    return _simulation(source, config, out, int(prog.bytes_sent), common)


def _simulation(source, config: EngineConfig, out, bytes_total: int, common: dict,
                streamed: tuple[int, int] | None = None) -> Simulation:
    """The :class:`Simulation` of one engine run (whole or streamed: the same
    outcome type; ``streamed`` holds the most ops and messages the window held)."""
    sim = Simulation(
        time=out.time_ps / _PS, model=config.model, rank_done=out.rank_done_ps / _PS,
        link_bytes=out.link_bytes, bytes_total=bytes_total, messages=int(out.app_messages),
        background_messages=int(out.bg_messages), events=int(out.events), congestion=out.congestion,
        max_congestion=None if out.max_congestion is None else float(out.max_congestion),
        os_stolen=out.os_stolen_ps / _PS, packet_hops=int(out.packet_hops),
        max_buffer_packets=int(out.max_buffer_packets), buffer_max=out.buffer_max, buffer_mean=out.buffer_mean,
        streamed=streamed is not None, peak_ops=None if streamed is None else streamed[0],
        peak_messages=None if streamed is None else streamed[1], **common)
    if config.trace:
        sim.trace = _trace_columns(source, out)
    return sim


def round_columns(source, sent: list | None = None, bound: RunBound | None = None):
    """The op program of ``source`` as the streamed engine reads it: per
    round, ``(rank u32, kind u8, peer u32, tag i64, nbytes u64, dep_ptr u64,
    dep_idx u64)``, ``dep_ptr`` from 0 in the round and ``dep_idx`` global op
    ids (the chunks' own columns, converted). ``sent[0]`` accumulates the
    bytes of the sends; ``bound`` checks the totals so far before each round
    is handed over (the run ends with its SpecError where they pass it)."""
    ops = messages = all_bytes = sent_bytes = 0
    for ch in source.program():
        peer = np.where(ch.peer < 0, _NONE, ch.peer).astype(np.uint32)
        sends = ch.kind == 0
        round_sent = int(ch.nbytes[sends].sum())
        if sent is not None:
            sent[0] += round_sent
        if bound is not None:
            ops, messages = ops + len(ch), messages + int(sends.sum())
            all_bytes, sent_bytes = all_bytes + int(ch.nbytes.sum()), sent_bytes + round_sent
            bound.check(source.label(), ops=ops, messages=messages, all_bytes=all_bytes, sent_bytes=sent_bytes)
        yield (ch.rank.astype(np.uint32), ch.kind.astype(np.uint8), peer, ch.tag.astype(np.int64),
               ch.nbytes.astype(np.uint64), ch.dep_ptr.astype(np.uint64), ch.dep_idx.astype(np.uint64))


#: bytes the whole-program event loop holds per op (the chunks' columns while compiling, the engine's
#: columns, matching and successors, per-op state). Measured: shift all-to-all at P = 2,048 on
#: table1:20736, 8.39 M ops, peak RSS 1,418 MiB (35 MiB of it the interpreter): 165 B per op
WHOLE_OP_BYTES = 180
#: bytes the streamed loop holds per op of its window (op and message state, the round's columns in
#: Python and Rust). Measured: shift all-to-all at P = 4,096, sync=rounds, a window of 407,629 ops,
#: peak RSS 109 MiB: 190 B per op. Its window is at least the two rounds around the frontier
STREAM_OP_BYTES = 200
#: bytes per rank of either loop (CPU queues, completion times, order)
RANK_BYTES = 256


def available_memory() -> int:
    """Bytes this process may still allocate: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else the free physical pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def memory_estimate(source, streamed: bool) -> tuple[int, str]:
    """Bytes an event-loop run of ``source`` will hold, counted without
    building its program, and how: the whole program at
    :data:`WHOLE_OP_BYTES` per op, or (streamed) at least its two largest
    rounds at :data:`STREAM_OP_BYTES` per op; plus :data:`RANK_BYTES` per rank."""
    ranks = source.p * RANK_BYTES
    if streamed:
        ops = 2 * largest_round_ops(source)
        return ranks + ops * STREAM_OP_BYTES, f"at least {ops:,} ops of its two largest rounds held at once"
    ops = estimated_ops(source)
    return ranks + ops * WHOLE_OP_BYTES, f"{ops:,} ops held whole"


def check_memory(source, streamed: bool) -> None:
    """Refuse, before any work, a run whose :func:`memory_estimate` exceeds
    :func:`available_memory`, in one line."""
    need, how = memory_estimate(source, streamed)
    have = available_memory()
    if need > have:
        gib = 1 << 30
        hint = ("" if streamed else "; stream it (stream='auto' or 'always', sync=rounds or barrier keep "
                "the window small)")
        raise SpecError(f"simulate {source.label()}: needs about {need / gib:.1f} GiB ({how}), "
                        f"{have / gib:.1f} GiB available, expected an estimate within the available memory{hint}")


def largest_round_ops(source) -> int:
    """Ops of ``source``'s largest round (:meth:`Pattern.round_sizes`; for
    rank-wise patterns, whose ranks differ, the mean round)."""
    pattern: Pattern | None = getattr(source, "pattern", None)
    if pattern is not None:
        return max(pattern.round_sizes(), default=0)
    return estimated_ops(source)


def estimated_ops(source) -> int:
    """Ops in ``source``'s program, counted without building it
    (:meth:`Pattern.op_count`: exact for circulant and array patterns, P ×
    rank 0's ops for rank-wise ones) or a GOAL program's length."""
    pattern: Pattern | None = getattr(source, "pattern", None)
    if pattern is not None:
        return pattern.op_count()
    return len(source) if hasattr(source, "__len__") else 0


#: CPU seconds per op of the event loop, by model (whole program; streamed runs add
#: :data:`STREAM_OP_S` for producing the rounds in Python). Measured by ``benchmarks/bench_core.py``
#: (BENCHMARKS.md "Event loop: one loop over two op stores"): loggops 0.15 s for the 2.1 M ops of a
#: shift all-to-all at P = 1,024; congestion 2 ms for 22 k ops; packet 22 ms for 49 k ops of 4 KiB
#: messages (2 packets each; per packet it is the packet model's hop rate that counts)
OP_S = {"loggops": 7e-8, "congestion": 1e-7, "packet": 4.5e-7}
#: the flow model's CPU seconds per op and concurrent flow: rates are recomputed over the flows that
#: share links, so a run costs about ops × flows in flight. Measured: pairwise all-to-all of 4 KiB,
#: P = 256, sync=rounds (256 flows at once): 0.28 s for 131 k ops; shift all-to-all, P = 128, every
#: message posted at once (16 k flows): 11 s CPU for 33 k ops
FLOW_OP_FLOW_S = 6e-9
#: extra CPU seconds per op of a streamed run (the rounds produced in Python): 0.43 − 0.15 s per 2.1 M ops
STREAM_OP_S = 1.3e-7


def expected_cpu_seconds(source, config: "EngineConfig") -> float:
    """CPU seconds a :func:`simulate` run of ``source`` is expected to take,
    from the measured rates above and the op count (:meth:`Pattern.op_count`),
    without building the program. For ``flow``, the flows in flight are taken
    as the messages of the largest round (all of them under ``sync=deps``
    for a pattern whose rounds all start at once is not seen: an
    underestimate there)."""
    ops = estimated_ops(source)
    streamed = config.stream == "always" or (config.stream == "auto" and ops > STREAM_ABOVE)
    if config.model == "flow":
        per_op = FLOW_OP_FLOW_S * max(1, largest_round_ops(source) // 2)
    else:
        per_op = OP_S[config.model]
    return ops * (per_op + (STREAM_OP_S if streamed else 0.0))


def _lockstep(schedule, model, options, kw, trace, os_noise):
    """Round shapes for the lockstep path, or None (see :mod:`.lockstep`)."""
    if model != "congestion" or options.sync == "deps" or options.small_sends != "eager" or trace \
            or os_noise is not None or options.envelope_bytes:
        return None
    from .lockstep import lockstep_shapes
    return lockstep_shapes(schedule, o_send=kw["o_send"], o_per_byte=kw["o_per_byte"], gamma=kw["gamma"],
                           copy=kw["copy"], o_recv=kw["o_recv"], eager=kw["eager"])


def lockstep_applies(schedule: Schedule, model: str, options: EngineOptions) -> bool:
    """Whether :func:`simulate` takes the lockstep path (no op program)."""
    kw = dict(o_send=0, o_per_byte=0.0, gamma=0.0, copy=0.0, o_recv=0, eager=int(options.eager))
    return _lockstep(schedule, model, options, kw, False, None) is not None


def _trace_columns(schedule, out) -> dict:
    chunks = list(schedule.program())
    cols = {k: (np.concatenate([getattr(ch, k) for ch in chunks]) if chunks else np.zeros(0, np.int64))
            for k in ("rank", "kind", "peer", "nbytes")}
    cols["round"] = np.concatenate([np.full(len(ch), ch.round) for ch in chunks]) if chunks else np.zeros(0)
    return {**cols, "start": out.op_start_ps / _PS, "end": out.op_end_ps / _PS,
            "send": out.msg_send.astype(np.int64), "recv": out.msg_recv.astype(np.int64),
            "inject": out.msg_inject_ps / _PS, "arrive": out.msg_arrive_ps / _PS}



class EventModel:
    """An event-driven model behind the :class:`~.model.Model` seam.

    Examples
    --------
    >>> from topocoll.schedules import generate
    >>> ring = generate("allreduce", "ring", 4, count=4, itemsize=8)
    >>> est = EventModel("loggops").estimate(ring, Platform(alpha=1e-6, bandwidth=1e9,
    ...                                                     reduce_bandwidth=1e9))
    >>> round(est.time * 1e6, 3)    # the α-β-γ model's 6·α + 48·β + 24·γ
    6.072
    """

    def __init__(self, kind: str, options: EngineOptions = EngineOptions(), *,
                 noise: NetworkNoise | None = None, os_noise: OsNoise | None = None):
        if kind not in EVENT_MODELS:
            raise SpecError(f"model {kind!r}, expected one of {', '.join(EVENT_MODELS)}")
        self.kind, self.options, self.noise, self.os_noise = kind, options, noise, os_noise
        self.config = EngineConfig(kind, options, noise, os_noise)
        self.name = kind

    def estimate(self, schedule: Schedule, platform: Platform) -> Estimate:
        sim = simulate(schedule, platform, self.config)
        hot = sim.hot_links(1)
        return Estimate(sim.time, self.name, congestion=sim.max_congestion,
                        hot_link=hot[0][0] if hot else None, detail=sim)
