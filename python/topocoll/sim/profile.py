"""A machine profile: the calibrated cost parameters of one machine, as JSON,
and what the simulator's models need from them.

``topocoll calibrate`` (:mod:`topocoll.mpi.calibrate`) measures the profile
with MPI, or reads it from a cluster's OSU results (``--from-osu``);
``topocoll simulate``, ``compare`` and ``tune --profile FILE`` and the
library load it, and ``topocoll calibrate --spec FILE``
(:meth:`MachineProfile.network_spec`) prints the ``SPEC+ppn=K`` network to
run it on. One profile feeds two models, which read "α" differently:

- the α-β-γ model (Chan et al., "Collective communication: theory, practice,
  and experience", CCPE 2007) charges a message ``α + m·β``: α is the whole
  start-up latency and β the seconds per byte, both fitted to ping-pong
  times; :meth:`MachineProfile.platform` with ``model="alpha-beta-gamma"``;
- the event-driven models (LogGOPS: Alexandrov, Ionescu, Schauser & Scheiman,
  "LogGP: incorporating long messages into the LogP model", SPAA 1995;
  Hoefler, Schneider & Lumsdaine, "LogGOPSim", HPDC 2010) split the same
  latency into the sender's CPU overhead ``o`` (``Platform.alpha`` of the
  event engine), the receiver's ``o_r``, the NIC gap ``g``, the gap per byte
  ``G`` and the wire latency ``L``; :meth:`MachineProfile.platform` with an
  event model, and :meth:`MachineProfile.engine_options`.

A profile describes two layers (``layer=``): MPI as mpi4py reaches it (the
Netgauge-style LogGP measurements), and topocoll's plan executor on top of it
(an exchange run as a schedule by :func:`topocoll.mpi.plan`), whose Python
adds time per message and per call. The executor layer is the
default: it is what runs schedules here.

A profile may also carry costs per **level** (``levels``: ``intra`` for two
ranks on one node, ``inter`` for two nodes), as ``topocoll calibrate
--from-osu`` writes them from a cluster's OSU Micro-Benchmarks results
(:class:`LevelCosts`). The profile's top-level α, β, G, g and L are the
``inter`` level's: the NIC's and the wire's, which the event models charge
to messages between hosts only. On a network with several ranks per host
(``SPEC+ppn=N``, :mod:`topocoll.topology.nodes`) a message between two
ranks of one host never reaches the NIC: it pays the CPU overheads
``o_send``/``o_recv`` and the node's shared-memory path, whose latency and
copy bandwidth come from the ``intra`` level when the spec does not give
them (:meth:`MachineProfile.node_options`; :meth:`MachineProfile.network_spec`
writes them into the spec with the links' bandwidth), and the NIC's gap ``g`` is then
the whole NIC's, ``1 / message_rate`` (:meth:`MachineProfile.loggops` with
``shared_nic=True``).

Format versions: ``topocoll-machine-profile/1`` (no levels) is still read;
profiles are written as ``topocoll-machine-profile/2``.

All numbers are SI: seconds, bytes, bytes per second.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..errors import ParseError, SpecError
from ..inputs import read_json
from ..outputs import write_text
from ..topology.network import parse_latency
from ..topology.nodes import DISTRIBUTIONS, MAX_PPN
from ..topology.spec import parse_topology
from .engine import EVENT_MODELS, EngineOptions
from .model import Platform

__all__ = ["MachineProfile", "LevelCosts", "NetworkSpec", "spec_value", "load_profile", "save_profile",
           "PROFILE_FORMAT", "PROFILE_FORMATS",
           "LAYERS", "LEVELS"]

#: written into every profile
PROFILE_FORMAT = "topocoll-machine-profile/2"
#: the formats read: /1 (before levels) and /2; a file with another value is refused
PROFILE_FORMATS = ("topocoll-machine-profile/1", PROFILE_FORMAT)
#: the levels a profile can describe: two ranks on one node, or on two nodes
LEVELS = ("intra", "inter")

#: what a profile can describe: topocoll's plan executor over MPI, or MPI alone
LAYERS = ("executor", "mpi")
#: the number fields, with the unit the error messages name
_NUMBERS = {
    "alpha": "s", "beta": "s/B", "fit_residual": "", "stream_bandwidth": "B/s",
    "reduce_bandwidth": "B/s", "over_bandwidth": "B/s", "copy_bandwidth": "B/s",
    "o_send": "s", "o_recv": "s", "o_per_byte": "s/B", "g": "s", "G": "s/B", "L": "s",
    "executor_alpha": "s", "executor_beta": "s/B", "executor_call": "s",
}
#: of those, the ones that are a rate or a per-byte cost and must be > 0
_STRICT = ("beta", "stream_bandwidth", "reduce_bandwidth", "over_bandwidth", "copy_bandwidth")
#: a level's number fields (0: not measured), with their units
_LEVEL_NUMBERS = {"alpha": "s", "beta": "s/B", "fit_residual": "", "stream_bandwidth": "B/s",
                  "bidirectional_bandwidth": "B/s", "message_rate": "1/s", "message_rate_bandwidth": "B/s"}


@dataclass(frozen=True)
class LevelCosts:
    """Costs between two ranks at one level (SI units; 0: not measured).

    Attributes
    ----------
    alpha, beta : float
        ``t(m) = α + m·β`` fitted to one-way ping-pong times (``osu_latency``).
    fit_residual : float
        Root-mean-square relative residual of that fit.
    stream_bandwidth : float
        One direction, a window of messages in flight (``osu_bw``), B/s.
    bidirectional_bandwidth : float
        Both directions at once, summed (``osu_bibw``), B/s.
    message_rate : float
        Messages per second of ``message_rate_pairs`` pairs together, small
        messages (``osu_mbw_mr``): the NIC's (inter) or the node's (intra)
        message rate.
    message_rate_pairs : int
        How many pairs ``osu_mbw_mr`` ran (0: not measured).
    message_rate_bandwidth : float
        ``osu_mbw_mr``'s largest aggregate bandwidth, B/s: what
        ``message_rate_pairs`` pairs share (e.g. one NIC).
    eager : int or None
        Eager/rendezvous threshold where the ping-pong curve breaks, bytes.
    pingpong : list of [bytes, seconds]
        The points the α-β fit used.
    source : list of str
        The files read.
    """

    alpha: float = 0.0
    beta: float = 0.0
    fit_residual: float = 0.0
    stream_bandwidth: float = 0.0
    bidirectional_bandwidth: float = 0.0
    message_rate: float = 0.0
    message_rate_pairs: int = 0
    message_rate_bandwidth: float = 0.0
    eager: int | None = None
    pingpong: list = field(default_factory=list)
    source: list = field(default_factory=list)

    def __post_init__(self):
        for name, unit in _LEVEL_NUMBERS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise SpecError(f"LevelCosts: {name}={value!r}, expected a finite number >= 0 "
                                f"({unit})".replace(" ()", ""))
        pairs = self.message_rate_pairs
        if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 0:
            raise SpecError(f"LevelCosts: message_rate_pairs={pairs!r}, expected a whole number >= 0")
        if self.eager is not None and (isinstance(self.eager, bool) or not isinstance(self.eager, int)
                                       or self.eager < 0):
            raise SpecError(f"LevelCosts: eager={self.eager!r}, expected bytes >= 0 or null")
        for name in ("pingpong", "source"):
            if not isinstance(getattr(self, name), list):
                raise SpecError(f"LevelCosts: {name} is a {type(getattr(self, name)).__name__}, expected a list")

    def describe(self) -> str:
        """One line for reports."""
        parts = []
        if self.beta:
            parts.append(f"α = {self.alpha * 1e6:.3g} µs, β = 1/({1 / self.beta / 1e9:.3g} GB/s)")
        if self.stream_bandwidth:
            parts.append(f"streaming {self.stream_bandwidth / 1e9:.3g} GB/s")
        if self.bidirectional_bandwidth:
            parts.append(f"both ways {self.bidirectional_bandwidth / 1e9:.3g} GB/s")
        if self.message_rate:
            parts.append(f"{self.message_rate / 1e6:.3g} M messages/s ({self.message_rate_pairs} pairs)")
        return ", ".join(parts) or "nothing measured"


@dataclass(frozen=True)
class MachineProfile:
    """Calibrated costs of one machine (SI units).

    Attributes
    ----------
    alpha, beta : float
        α (s) and β (s/B) of ``t(m) = α + m·β``, the least-squares fit to
        half ping-pong round trips.
    fit_residual : float
        Root-mean-square relative residual of that fit (0.05: 5 %).
    stream_bandwidth : float
        Bytes per second of a window of back-to-back nonblocking sends.
    reduce_bandwidth : float
        Reduction throughput, bytes of one operand per second (``np.add`` on
        float64); γ = 1 / reduce_bandwidth.
    over_bandwidth : float
        Throughput of the over operator (:func:`topocoll.imaging.over`,
        float32 RGBA), bytes of one image per second.
    copy_bandwidth : float
        Local copy throughput, B/s.
    o_send, o_recv : float
        LogGP send and receive overheads, s.
    o_per_byte : float
        ``O``: sender CPU per byte beyond ``o_send``, s/B.
    g, G, L : float
        LogGP gap per message (s), gap per byte (s/B) and latency (s).
    executor_alpha, executor_beta : float
        ``t(m) = executor_alpha + m·executor_beta`` per round of topocoll's
        plan executor (:func:`topocoll.mpi.plan`) running an exchange
        schedule (both ranks send ``m`` bytes to each other at once, as in
        the rounds of most collectives): α and β as the executor sees them,
        its Python and the two directions sharing the memory system
        included (0: not measured).
    executor_call : float
        The executor's cost per collective call (``start`` + ``wait``), s.
    eager : int or None
        Eager/rendezvous threshold in bytes where a break of the ping-pong
        curve showed one, else None (the engine's default then applies).
    pingpong : list of [bytes, seconds]
        The half round-trip medians the fit used.
    meta : dict
        library, host, date, procs, seed, command, repetitions, ...
    levels : dict of str to LevelCosts
        Costs per level (``intra``, ``inter``; module doc), empty for a
        profile of one machine from ``topocoll calibrate``.
    """

    alpha: float
    beta: float
    reduce_bandwidth: float
    fit_residual: float = 0.0
    stream_bandwidth: float = 0.0
    over_bandwidth: float = 0.0
    copy_bandwidth: float = 0.0
    o_send: float = 0.0
    o_recv: float = 0.0
    o_per_byte: float = 0.0
    g: float = 0.0
    G: float = 0.0
    L: float = 0.0
    executor_alpha: float = 0.0
    executor_beta: float = 0.0
    executor_call: float = 0.0
    eager: int | None = None
    pingpong: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    levels: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.levels, dict):
            raise SpecError(f"MachineProfile: levels is a {type(self.levels).__name__}, expected an object "
                            f"keyed by {' / '.join(LEVELS)}")
        for name, costs in self.levels.items():
            if name not in LEVELS:
                raise SpecError(f"MachineProfile: level {name!r}, expected one of {', '.join(LEVELS)}")
            if not isinstance(costs, LevelCosts):
                raise SpecError(f"MachineProfile: level {name!r} is a {type(costs).__name__}, expected LevelCosts")
        for name in _NUMBERS:
            value = getattr(self, name)
            if name not in ("alpha", "beta", "reduce_bandwidth") and value == 0:
                continue   # optional measurement left out
            _check_number("MachineProfile", name, value, strict=name in _STRICT)
        if self.eager is not None and (isinstance(self.eager, bool) or not isinstance(self.eager, int)
                                       or self.eager < 0):
            raise SpecError(f"MachineProfile: eager={self.eager!r}, expected bytes >= 0 or null")

    @property
    def gamma(self) -> float:
        """Seconds per byte reduced."""
        return 1.0 / self.reduce_bandwidth

    def _layer(self, layer: str) -> str:
        if layer not in LAYERS:
            raise SpecError(f"MachineProfile: layer={layer!r}, expected one of {', '.join(LAYERS)}")
        # a profile without the executor's own ping-pong describes MPI alone
        return layer if self.executor_beta > 0 else "mpi"

    def node_options(self) -> dict:
        """The node-spec options (:mod:`topocoll.topology.nodes`) the
        ``intra`` level gives, each only where it was measured:

        - ``lat`` = its α (the one-way shared-memory latency: OSU's ping-pong
          between two ranks of a node, whose CPU overheads the profile leaves
          at 0) and ``bw`` = 1/β (one rank's copy bandwidth), from an
          intra-node ``osu_latency``;
        - without one, ``bw`` = one pair's streaming bandwidth (``osu_bw``,
          IMB ``Uniband`` of one pair);
        - ``mem`` = what several pairs within the node moved together
          (``osu_mbw_mr`` or IMB ``Uniband`` of more than one pair): the node
          model's memory path is what they share. It is a lower bound when
          they did not saturate it (their sum below pairs × ``bw``): more
          pairs might move more.
        """
        intra = self.levels.get("intra")
        if intra is None:
            return {}
        out = {}
        if intra.beta > 0:
            out.update(lat=intra.alpha, bw=1.0 / intra.beta)
        elif intra.stream_bandwidth > 0:
            out["bw"] = intra.stream_bandwidth
        if intra.message_rate_pairs > 1 and intra.message_rate_bandwidth > 0:
            out["mem"] = intra.message_rate_bandwidth
        return out

    def network_level(self) -> LevelCosts | None:
        """The level the network parameters come from (``meta.network_level``, default ``inter``),
        None for a profile without levels."""
        return self.levels.get(self.meta.get("network_level", "inter")) if self.levels else None

    def nic_bandwidth(self) -> float:
        """The NIC's bandwidth one way, B/s: the largest of what OSU measured through it — one
        stream (``osu_bw``), half of both directions at once (``osu_bibw``), many pairs together
        (``osu_mbw_mr``) — else 1/β of the ping-pong fit (the top-level values for a profile
        without levels)."""
        level = self.network_level()
        if level is None:
            return max(self.stream_bandwidth, 1.0 / self.beta)
        best = max(level.stream_bandwidth, level.bidirectional_bandwidth / 2, level.message_rate_bandwidth)
        return best if best > 0 else 1.0 / (level.beta or self.beta)

    def network_spec(self, *, topology: str | None = None, nodes: int = 2, ppn: int = 1,
                     memory_bandwidth: float | None = None, distribution: str = "block",
                     nic_bandwidth: float | None = None) -> "NetworkSpec":
        """The ``SPEC+ppn=K`` network (:mod:`topocoll.topology.nodes`) that goes with this profile,
        for ``--topology`` beside ``--profile`` (``topocoll calibrate --spec``).

        The profile carries the per-message costs (LogGOPS ``o``, ``g``, ``G``, ``L``:
        :meth:`loggops`); the spec carries what the profile cannot: the links' bandwidth and the node.

        - fabric: ``topology`` (default ``crossbar:NODES``, one switch) with ``bw=`` the NIC's
          bandwidth (``nic_bandwidth``, default :meth:`nic_bandwidth`: every link as fast as the NIC,
          a non-blocking fabric) and ``lat=0us``: the profile's ``L`` already holds the whole wire
          latency OSU measured — every event model charges it to a message between hosts, ``flow``
          included — and a link latency would count it twice. ``@`` options the spec gives win.
        - node (``ppn`` > 1; with one rank per node the spec is the fabric alone): ``ppn``, ``dist``
          (when not block), ``lat`` = α and ``bw`` = 1/β of the ``intra`` level (:meth:`node_options`;
          left out without one: the node's defaults then apply, and a note says so), ``mem`` =
          ``memory_bandwidth`` (not in OSU output; default: the node's).

        Raises
        ------
        SpecError
            A ``topology`` with its own ``+ppn=``, ``nodes`` or ``ppn`` out of range, or a spec that
            does not parse (the result is parsed before it is returned).

        Examples
        --------
        >>> MachineProfile(alpha=1e-6, beta=1e-10, reduce_bandwidth=4e9).network_spec(nodes=4, ppn=2).spec
        'crossbar:4@bw=10GB/s,lat=0us+ppn=2'
        """
        notes = []
        for name, value, hi in (("nodes", nodes, 1 << 20), ("ppn", ppn, MAX_PPN)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
                raise SpecError(f"network_spec: {name}={value!r}, expected a whole number in 1..{hi}")
        if distribution not in DISTRIBUTIONS:
            raise SpecError(f"network_spec: distribution={distribution!r}, expected one of {', '.join(DISTRIBUTIONS)}")
        fabric = topology if topology is not None else f"crossbar:{nodes}"
        if "+ppn=" in fabric:
            raise SpecError(f"network_spec: topology {fabric!r} has +ppn= already, expected the fabric alone "
                            "(the node part is made here from the profile)")
        body, at, given_text = fabric.partition("@")
        given = [item for item in given_text.split(",") if item.strip()] if at else []
        keys = {item.partition("=")[0].strip() for item in given}
        if nic_bandwidth is not None:
            if isinstance(nic_bandwidth, bool) or not isinstance(nic_bandwidth, (int, float)) \
                    or not math.isfinite(nic_bandwidth) or nic_bandwidth <= 0:
                raise SpecError(f"network_spec: nic_bandwidth={nic_bandwidth!r}, expected a finite number > 0 (B/s)")
        values = {"bw": self.nic_bandwidth() if nic_bandwidth is None else nic_bandwidth, "lat": 0.0}
        added = [f"{key}={spec_value(key, value)}" for key, value in values.items() if key not in keys]
        own_latency = [item for item in given if item.partition("=")[0].strip().endswith("lat")
                       and parse_latency(item.partition("=")[2]) > 0]
        if own_latency:
            notes.append(f"the topology's own latency ({', '.join(own_latency)}) adds to the profile's L, which "
                         "already holds the wire latency OSU measured")
        fabric = body + ("@" + ",".join(given + added) if given or added else "")
        node = {"ppn": ppn}
        if distribution != "block":
            node["dist"] = distribution
        intra = self.node_options()
        if ppn > 1 and not intra:
            notes.append("the profile has no intra-node level (osu_latency with both ranks on one node): the node's "
                         "lat and bw are topocoll's defaults, not measurements")
        elif ppn > 1 and "lat" not in intra:
            notes.append("no intra-node ping-pong (osu_latency, IMB PingPong on one node): the node's lat is "
                         "topocoll's default, not a measurement")
        node.update(intra if ppn > 1 else {})
        if memory_bandwidth is not None:
            if ppn == 1:
                raise SpecError(f"network_spec: memory_bandwidth={memory_bandwidth:g} B/s with ppn=1, expected it "
                                "only with several ranks per node (one rank per node has no node model)")
            node["mem"] = memory_bandwidth
        elif ppn > 1 and "mem" in intra:
            level = self.levels["intra"]
            notes.append(f"the node's mem= is what {level.message_rate_pairs} pairs within a node moved together "
                         f"({level.message_rate_bandwidth / 1e9:.3g} GB/s, the intra-node osu_mbw_mr or IMB Uniband)"
                         + ("; that is close to pairs × bw, so they may not have filled it: a lower bound"
                            if "bw" in intra and level.message_rate_bandwidth >= 0.9 * level.message_rate_pairs
                            * intra["bw"] else ""))
        elif ppn > 1:
            notes.append("the node's memory bandwidth (mem=) is not in OSU output: give it with --mem (STREAM), "
                         "else topocoll's default applies")
        text = f"{fabric}+" + ",".join(f"{key}={spec_value(key, value)}" for key, value in node.items()) \
            if ppn > 1 else fabric
        parse_topology(text)        # what is printed parses (a bad --topology is refused here, in one line)
        return NetworkSpec(spec=text, nic_bandwidth=values["bw"], node={k: v for k, v in node.items()}, notes=notes)

    def nic_gap(self, shared_nic: bool) -> float:
        """LogGP ``g`` as the engine uses it: one endpoint's NIC lane gap
        (``g``: pairs / message rate, one pair's) or, with ``shared_nic``
        (several ranks per host share its NIC), the NIC's own gap between any
        two of its messages, 1 / message rate of the network level's
        ``osu_mbw_mr`` (``g`` when it has none)."""
        level = self.network_level()
        if shared_nic and level is not None and level.message_rate > 0:
            return 1.0 / level.message_rate
        return self.g

    def loggops(self, layer: str = "executor", shared_nic: bool = False, model: str = "loggops") -> dict:
        """The LogGOPS parameters the event engine gets: ``o_send``,
        ``o_recv``, ``g``, ``L`` (s) and ``G`` (s/B).

        - ``g`` and ``L``: LogGP keeps ``g`` out of a lone message's latency
          (``o_s + L + o_r``) and lets a stream leave every ``max(o, g)``
          (Alexandrov et al. 1995, §2); the ``loggops`` model also keeps a
          lone message ``g`` on its NIC lane before it leaves, so it gets
          ``L − g`` (at least 0): a small message then costs
          ``o_s + max(g, L) + o_r``. The ``flow`` model has no NIC lane (no
          ``g``), so ``model="flow"`` gets ``L`` whole.
        - ``layer="mpi"``: the raw LogGP overheads, ``G`` (``β`` if no ``G``).
        - ``layer="executor"`` (default): what topocoll's plan executor adds
          to a message — its time per exchange round at the smallest size,
          ``executor_alpha``, less what the engine charges MPI for a small
          message — is split evenly between the two overheads (its Python
          runs on both sides), so the engine reproduces the executor's
          exchange (the engine's links are full duplex: an exchange round
          costs it one message); ``G`` is ``executor_beta``.
        - ``O`` (``o_per_byte``) is recorded but not passed: on shared memory
          the sender's copy is the transfer that ``G`` already charges.
        """
        o_send, o_recv, per_byte = self.o_send, self.o_recv, (self.G or self.beta)
        if self._layer(layer) == "executor":
            extra = max(0.0, self.executor_alpha - (o_send + max(self.g, self.L) + o_recv))
            o_send, o_recv, per_byte = o_send + extra / 2, o_recv + extra / 2, self.executor_beta
        g = self.nic_gap(shared_nic)
        wire = self.L if model == "flow" else max(0.0, self.L - g)
        return dict(o_send=o_send, o_recv=o_recv, g=g, L=wire, G=per_byte)

    def call_overhead(self, layer: str = "executor") -> float:
        """Seconds a collective call costs beyond its messages and operations
        (the executor's ``start`` + ``wait``; 0 for ``layer="mpi"``). The
        engine has no per-call term: add it to a simulated time."""
        return self.executor_call if self._layer(layer) == "executor" else 0.0

    def platform(self, *, model: str = "loggops", network=None, layer: str = "executor") -> Platform:
        """The :class:`Platform` of ``model`` on this machine.

        For the event models (``loggops``, ``flow``, ``congestion``) α is the
        sender overhead ``o`` and the crossbar's link bandwidth ``1/G``
        (:meth:`loggops`), because ``L``, ``o_r`` and ``g`` carry the rest of
        the latency (:meth:`engine_options`); for the α-β-γ and static models
        α is the whole start-up latency and the bandwidth ``1/β`` of the
        layer's ping-pong fit.
        """
        if model in EVENT_MODELS:
            costs = self.loggops(layer)
            return Platform(alpha=costs["o_send"], bandwidth=1.0 / costs["G"],
                            reduce_bandwidth=self.reduce_bandwidth, network=network)
        alpha, beta = self.alpha, self.beta
        if self._layer(layer) == "executor":
            alpha, beta = self.executor_alpha, self.executor_beta
        return Platform(alpha=alpha, bandwidth=1.0 / beta, reduce_bandwidth=self.reduce_bandwidth, network=network)

    def engine_options(self, layer: str = "executor", shared_nic: bool = False, model: str = "loggops",
                       **overrides) -> EngineOptions:
        """The LogGOPS :class:`EngineOptions` of this machine for ``model`` (:meth:`loggops`);
        ``overrides`` (e.g. ``sync="rounds"``) replace single fields."""
        costs = self.loggops(layer, shared_nic, model)
        values = dict(o_recv=costs["o_recv"], g=costs["g"], G=costs["G"], L=costs["L"],
                      copy_bandwidth=self.copy_bandwidth)
        if self.eager is not None:
            values["eager"] = self.eager
        values.update(overrides)
        return EngineOptions(**values)

    def level(self, name: str) -> LevelCosts | None:
        """The costs of level ``name`` (``intra`` or ``inter``), None when the
        profile has none."""
        if name not in LEVELS:
            raise SpecError(f"MachineProfile: level {name!r}, expected one of {', '.join(LEVELS)}")
        return self.levels.get(name)

    def as_dict(self) -> dict:
        return {"format": PROFILE_FORMAT, **asdict(self)}

    def describe(self) -> str:
        """One line for reports."""
        text = (f"α = {self.alpha * 1e6:.3g} µs, β = 1/({1 / self.beta / 1e9:.3g} GB/s), "
                f"γ = 1/({self.reduce_bandwidth / 1e9:.3g} GB/s); LogGP o_s = {self.o_send * 1e6:.3g} µs, "
                f"o_r = {self.o_recv * 1e6:.3g} µs, g = {self.g * 1e6:.3g} µs, "
                f"G = 1/({(1 / self.G / 1e9) if self.G else math.inf:.3g} GB/s), L = {self.L * 1e6:.3g} µs")
        for name in LEVELS:
            if name in self.levels:
                text += f"; {name}: {self.levels[name].describe()}"
        return text


@dataclass(frozen=True)
class NetworkSpec:
    """:meth:`MachineProfile.network_spec`'s answer: the spec, the NIC bandwidth it gave the
    links (B/s), the node part's values (SI) and what the profile could not say."""

    spec: str
    nic_bandwidth: float
    node: dict
    notes: list

    def as_dict(self) -> dict:
        return asdict(self)


def spec_value(key: str, value) -> str:
    """A value of a topology spec's option as the spec parser reads it: ``lat`` in µs, ``bw`` and
    ``mem`` in GB/s (10^9 B/s), six significant digits (``parse_latency``, ``parse_bandwidth``)."""
    if key == "lat":
        return f"{value * 1e6:.6g}us"
    if key in ("bw", "mem"):
        return f"{value / 1e9:.6g}GB/s"
    return str(value)


def _check_number(where: str, name: str, value, *, strict: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (strict and value == 0):
        expected = "a finite number > 0" if strict else "a finite number >= 0"
        raise SpecError(f"{where}: {name}={value!r}, expected {expected} ({_NUMBERS[name]})".replace(" ()", ""))
    return float(value)


def save_profile(profile: MachineProfile, path) -> Path:
    """Write ``profile`` as JSON to ``path``; SpecError if it cannot be written."""
    return write_text(path, json.dumps(profile.as_dict(), indent=1) + "\n", option="profile")


def load_profile(path) -> MachineProfile:
    """Read a profile written by :func:`save_profile` (``topocoll calibrate``).

    Raises
    ------
    ParseError
        One line naming the file and the field: unreadable, not JSON, another
        format, a missing or unknown field, or a value out of range.
    """
    path = Path(path)
    data = read_json(path, what="a machine profile from `topocoll calibrate`")
    if not isinstance(data, dict):
        raise ParseError(f"{path}: a JSON {type(data).__name__}, expected an object (a machine profile)")
    if data.get("format") not in PROFILE_FORMATS:
        raise ParseError(f"{path}: field 'format' is {data.get('format')!r}, expected "
                         f"{' or '.join(map(repr, PROFILE_FORMATS))}")
    known = {f.name for f in fields(MachineProfile)}
    unknown = sorted(set(data) - known - {"format"})
    if unknown:
        raise ParseError(f"{path}: unknown field {unknown[0]!r}, expected only {', '.join(sorted(known))}")
    for name in ("alpha", "beta", "reduce_bandwidth"):
        if name not in data:
            raise ParseError(f"{path}: field {name!r} is missing, expected a number in {_NUMBERS[name]}")
    for name, expected in (("pingpong", list), ("meta", dict), ("levels", dict)):
        if name in data and not isinstance(data[name], expected):
            raise ParseError(f"{path}: field {name!r} is a {type(data[name]).__name__}, expected a "
                             f"{expected.__name__}")
    if "levels" in data and data["format"] == PROFILE_FORMATS[0]:
        raise ParseError(f"{path}: field 'levels' in a {PROFILE_FORMATS[0]!r} profile, expected levels only "
                         f"from {PROFILE_FORMAT!r} on")
    values = {k: v for k, v in data.items() if k != "format"}
    values["levels"] = {name: _load_level(path, name, costs) for name, costs in data.get("levels", {}).items()}
    try:
        return MachineProfile(**values)
    except SpecError as e:
        # "MachineProfile: alpha=-1, expected ..." names the field; say which file
        raise ParseError(f"{path}: field {str(e).removeprefix('MachineProfile: ')}") from None


def _load_level(path: Path, name: str, data) -> LevelCosts:
    """One entry of a profile's ``levels``, with errors naming ``levels.NAME.FIELD``."""
    if name not in LEVELS:
        raise ParseError(f"{path}: field 'levels' has level {name!r}, expected only {', '.join(LEVELS)}")
    if not isinstance(data, dict):
        raise ParseError(f"{path}: field 'levels.{name}' is a {type(data).__name__}, expected an object")
    known = {f.name for f in fields(LevelCosts)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ParseError(f"{path}: unknown field 'levels.{name}.{unknown[0]}', expected only "
                         f"{', '.join(sorted(known))}")
    try:
        return LevelCosts(**data)
    except SpecError as e:
        raise ParseError(f"{path}: field levels.{name}.{str(e).removeprefix('LevelCosts: ')}") from None
