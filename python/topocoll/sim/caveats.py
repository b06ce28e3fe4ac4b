"""What each model can be trusted for: the mechanisms it lacks, the algorithms those mechanisms decide.

An answer of ``compare``, ``tune`` or ``demo`` ("algorithm A is fastest") is
as good as the model behind it. Every model here leaves out some of what a
real network does; that matters only where the candidates being ranked
differ by a mechanism the model leaves out. Two tables say where:

- :data:`MECHANISMS`: the network behaviours at stake, each with what it is;
- :func:`lacks`: per model (and its settings), the mechanisms it does not
  express;
- :data:`DEPENDENCES`: per algorithm family, the mechanisms that decide its
  time on a network kind, with what a paper or a topocoll measurement saw
  and where (paper section, a ``topocoll reproduce`` page, a BENCHMARKS.md
  section).

:func:`caveats` returns, for (model settings, candidates, network kind), the
caveats that matter: a family's mechanism the model lacks, where the
candidates hold both members and non-members of the family (they *differ*
by it; a mechanism that slows every candidate alike does not reorder them).
For the α-β-γ model, link contention is a caveat whenever two or more
candidates are ranked: it has no network at all (radix-k paper §2.2,
assumption 5: "a fully connected network ... and zero link contention").

:func:`recheck_packet_options` is the one place that chooses the packet
model's NIC for a re-rank: ``nic="ib"`` (an InfiniBand HCA interleaving the
packets of its queue pairs) on InfiniBand-like fabrics (fat trees,
crossbars, imported IB maps), ``nic="bgl"`` (Blue Gene/L's injection FIFOs)
on tori and meshes, where :class:`~topocoll.sim.packet.PacketOptions` has a
``nic`` field (it is read with ``getattr``, so this module works with and
without it).

Nothing here is fitted: the factors quoted are the sources' own numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["MECHANISMS", "DEPENDENCES", "Mechanism", "Dependence", "Caveat", "lacks", "caveats",
           "topology_kind", "nic_for", "recheck_packet_options", "model_summary", "has_nic_field"]


@dataclass(frozen=True)
class Mechanism:
    """A network behaviour a model may leave out."""

    key: str
    name: str
    what: str


MECHANISMS = {m.key: m for m in (
    Mechanism("contention", "link contention",
              "messages that share a link share its bandwidth (needs a network: routes, node order)"),
    Mechanism("hol-blocking", "head-of-line blocking",
              "a packet at the head of an input-queued switch buffer that waits for a busy output blocks the "
              "packets behind it bound elsewhere"),
    Mechanism("finite-buffers", "finite buffers",
              "switch buffers hold a few packets and credits stop the sender when they are full, so a "
              "saturated link backs up into the network (tree saturation)"),
    Mechanism("qp-interleaving", "NIC queue-pair interleaving",
              "an InfiniBand HCA interleaves the packets of all its queue pairs, so the p − 1 messages of a "
              "many-to-one pattern are all in the network at once"),
    Mechanism("injection-fifos", "endpoint injection FIFOs",
              "a node injects through a few FIFOs and its cores keep only about four of six torus links busy "
              "(Blue Gene/L)"),
    Mechanism("adaptive-routing", "adaptive routing",
              "packets choose among minimal directions by queue state (BG/L's JSQ over dynamic VCs)"),
    Mechanism("router-pipeline", "router pipeline",
              "each switch adds its port-to-port delay (90–130 ns on InfiniBand EDR/HDR switches)"),
    Mechanism("compute-overlap", "overlap of compositing with arrivals",
              "a receiver reduces each message as it arrives while others are still in flight"),
)}

#: what each model is (one line) and where it is specified
MODEL_TEXT = {
    "alpha-beta-gamma": "α-β-γ (Chan et al. 2007): every round costs its busiest rank's messages·α + bytes·β + "
                        "reduced bytes·γ; no network",
    "static": "static contention: per round, the busiest link's bytes over its bandwidth along the static routes "
              "(all-to-all paper §3 eq. 3); rounds do not overlap",
    "loggops": "loggops: LogGOPS CPU and NIC costs, each message reserves the links of its route first come, "
               "first served",
    "congestion": "congestion: the network-noise paper's model (§3): per round, each message its route's most "
                  "shared link",
    "flow": "flow: fluid flows sharing every link max-min fairly (or CM02), no packets",
    "packet": "packet: packets through finite, credit-controlled input buffers of input-queued switches "
              "(virtual cut-through; docs/simulator.md \"The packet model\")",
}

_SHARED_EVENT_LACKS = ("hol-blocking", "finite-buffers", "qp-interleaving", "injection-fifos", "adaptive-routing",
                       "router-pipeline")


def has_nic_field() -> bool:
    """Whether this build's :class:`~topocoll.sim.packet.PacketOptions` has ``nic``."""
    from .packet import PacketOptions
    return getattr(PacketOptions(), "nic", None) is not None


def lacks(model: str, options=None, routing: str | None = None) -> tuple[str, ...]:
    """The mechanisms of :data:`MECHANISMS` that ``model`` (a name of
    :data:`topocoll.sim.MODELS`) does not express with ``options`` (an
    :class:`~topocoll.sim.engine.EngineOptions`, for the event models) on a
    network routed by ``routing``.

    Examples
    --------
    >>> "contention" in lacks("alpha-beta-gamma")
    True
    >>> "hol-blocking" in lacks("flow"), "hol-blocking" in lacks("packet")
    (True, False)
    """
    key = _model_key(model)
    if key == "alpha-beta-gamma":
        return ("contention",) + _SHARED_EVENT_LACKS + ("compute-overlap",)
    if key == "static":
        return _SHARED_EVENT_LACKS + ("compute-overlap",)
    if key in ("loggops", "congestion", "flow"):
        out = list(_SHARED_EVENT_LACKS)
        if key == "flow":
            # a fluid shares the injection link among all of a node's flows at every instant: the
            # queue pairs are interleaved (perfectly); what it lacks is the harm (HOL, finite buffers)
            out.remove("qp-interleaving")
        if key == "loggops" and options is not None and getattr(options, "ports", 1) > 1:
            out.remove("injection-fifos")      # k NIC ports: a node's concurrent injections are bounded
        return tuple(out)
    if key == "packet":
        out = ["qp-interleaving", "injection-fifos"]
        pk = getattr(options, "packet", None)
        nic = getattr(pk, "nic", None)
        fifos = getattr(pk, "injection_fifos", 0)
        if nic == "ib":
            out.remove("qp-interleaving")
        if nic == "bgl" or fifos > 0:
            out.remove("injection-fifos")
        if getattr(pk, "queues", "input") == "voq":
            out.append("hol-blocking")           # virtual output queues remove it by design
        if routing != "adaptive":
            out.append("adaptive-routing")
        return tuple(out)
    from ..errors import SpecError
    raise SpecError(f"caveats: model {model!r}, expected one of {', '.join(MODEL_TEXT)}")


def _model_key(model: str) -> str:
    return {"α-β-γ": "alpha-beta-gamma", "static contention": "static"}.get(model, model)


# ---- network kinds ---------------------------------------------------------------------------

#: network kinds and the NIC the packet model re-ranks with there
_IB_KINDS = ("fat-tree", "crossbar", "ib-map")
_TORUS_KINDS = ("torus", "torus-asymmetric", "mesh")


def topology_kind(topology) -> str:
    """``none`` (no network), ``crossbar``, ``fat-tree``, ``torus``,
    ``torus-asymmetric`` (a torus whose dimensions differ), ``mesh`` (some
    dimension without wrap-around links), ``dragonfly``, ``ib-map`` (an
    imported InfiniBand fabric) or ``graph``."""
    if topology is None:
        return "none"
    family = topology.family
    if family == "nodes":                 # SPEC+ppn=N: the fabric decides
        inner = topology.params.get("fabric")
        return topology_kind(inner) if inner is not None else "graph"
    if family == "crossbar" or (family == "xgft" and topology.n_switches == 1):
        return "crossbar"                 # one switch: crossbar:N is a one-level XGFT
    if family == "xgft":
        return "fat-tree"
    if family == "torus":
        dims = [int(k) for k in topology.params.get("k", ())]
        wraps = list(topology.params.get("wrap", ()))
        if not all(w for d, w in zip(dims, wraps) if d > 2):
            return "mesh"
        big = [d for d in dims if d > 1]
        return "torus-asymmetric" if len(set(big)) > 1 else "torus"
    if family == "dragonfly":
        return "dragonfly"
    if family == "ibnet":
        return "ib-map"
    return "graph"


def nic_for(kind: str) -> str | None:
    """The packet model's NIC for a re-rank on a network of ``kind``:
    ``ib`` on InfiniBand-like fabrics, ``bgl`` on tori and meshes, None
    elsewhere (the model's default)."""
    if kind in _IB_KINDS:
        return "ib"
    if kind in _TORUS_KINDS:
        return "bgl"
    return None


def recheck_packet_options(kind: str, base=None):
    """:class:`~topocoll.sim.packet.PacketOptions` for re-ranking on a
    network of ``kind``: ``base`` (default the defaults) with ``nic`` set by
    :func:`nic_for` where this build's options have that field."""
    from .packet import PacketOptions
    base = PacketOptions() if base is None else base
    nic = nic_for(kind)
    if nic is None or getattr(base, "nic", None) is None:
        return base
    return dataclasses.replace(base, nic=nic)


# ---- what decides which algorithm --------------------------------------------------------------

@dataclass(frozen=True)
class Dependence:
    """An algorithm family whose time a mechanism decides on some networks.

    ``members(collective, algorithm, params)`` says who belongs; ``kinds``
    the network kinds where it matters (None: any with a network);
    ``factor`` the largest slowdown a source reports for the family against
    the alternatives (the window :mod:`topocoll.tune.recheck` re-ranks in);
    ``mechanisms_by_kind`` replaces ``mechanisms`` on some kinds.
    """

    key: str
    name: str
    members: object
    mechanisms: tuple
    kinds: tuple | None
    effect: str
    source: str
    factor: float
    brief: str = ""
    cite: str = ""
    mechanisms_by_kind: tuple = ()
    brief_by_kind: tuple = ()           # ((kinds, brief, cite), ...): what a source saw on those kinds

    def brief_on(self, kind: str) -> tuple[str, str]:
        for kinds, brief, cite in self.brief_by_kind:
            if kind in kinds:
                return brief, cite
        return self.brief, self.cite

    def mechanisms_on(self, kind: str) -> tuple:
        for kinds, mechs in self.mechanisms_by_kind:
            if kind in kinds:
                return mechs
        return self.mechanisms

    def applies(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds


def _radix_above_two(params) -> bool:
    k = (params or {}).get("k")
    if isinstance(k, str) or k is None:
        return True                       # "eights": the paper's radix-8 vectors
    ks = [k] if isinstance(k, int) else list(k)
    return any(int(x) > 2 for x in ks)


def _many_to_one(collective, algorithm, params) -> bool:
    if collective == "reduce_scatter":
        return algorithm == "direct_send" or (algorithm == "radix_k" and _radix_above_two(params))
    return collective == "alltoall" and algorithm == "direct"


def _direct_alltoall(collective, algorithm, params) -> bool:
    return collective == "alltoall" and algorithm in ("direct", "randomized", "pairwise_exchange", "shift")


def _randomized(collective, algorithm, params) -> bool:
    return collective == "alltoall" and algorithm == "randomized"


def _radix_k(collective, algorithm, params) -> bool:
    return collective == "reduce_scatter" and algorithm == "radix_k" and _radix_above_two(params)


DEPENDENCES = (
    Dependence(
        "many-to-one", "incast", _many_to_one,
        ("hol-blocking", "finite-buffers", "qp-interleaving"), None,
        "many senders into one receiver at once: the ejection link saturates and blocks the switch buffers "
        "behind it; direct send ran 1.38–2.45× slower than shift-based on a DDR InfiniBand fat tree, 2.27× "
        "even on one 24-port crossbar switch",
        "shift-based paper §5.1–5.2 (Figs. 4, 5, 6, 9), §3 (\"Direct Send and Radix-k algorithms all suffer "
        "from hot spots\"); topocoll reproduce shift-based; BENCHMARKS.md \"Packet model against the "
        "compositing papers\"",
        2.45, "many senders into one receiver; direct send ran 1.38–2.45× slower than shift-based on an "
        "InfiniBand fat tree",
        "shift-based paper §5",
        mechanisms_by_kind=((_TORUS_KINDS, ("hol-blocking", "finite-buffers", "injection-fifos")),),
        brief_by_kind=((_TORUS_KINDS, "many senders into one receiver; large radices meet hot spots on BG/P's "
                        "mesh and torus, and the packet model with dimension-order routing runs radix-k [256] "
                        "3.9× slower than flow", "radix-k paper §4.3; BENCHMARKS.md \"Radix-k paper, Fig. 6\""),)),
    Dependence(
        "alltoall-asymmetric-torus", "direct all-to-all on an asymmetric torus", _direct_alltoall,
        ("finite-buffers", "hol-blocking"), ("torus-asymmetric", "mesh"),
        "packets queue behind those waiting for the longest dimension and fill the VC buffers: direct "
        "all-to-all reached 70–81 % of peak where the Two Phase Schedule reached 97–99 %",
        "all-to-all paper §3.2 (Table 2), §4 (Table 3); BENCHMARKS.md \"Packet model: speed and the all-to-all "
        "paper's % of peak\"",
        1.0 / 0.70, "direct all-to-all reached 70–81 % of peak, the Two Phase Schedule 97–99 %",
        "all-to-all paper §3.2, §4"),
    Dependence(
        "randomized-alltoall", "randomized all-to-all", _randomized,
        ("injection-fifos", "adaptive-routing"), _TORUS_KINDS,
        "randomization and adaptive routing keep every link busy (99 % of peak on symmetric tori, AR) only "
        "while a node's FIFOs inject into about four of its six links; with dimension-order routing the "
        "packet model gives 19–25 %",
        "all-to-all paper §2 (injection FIFOs, four links busy), §3.1 (Table 1); BENCHMARKS.md \"Packet model: "
        "speed and the all-to-all paper's % of peak\"",
        1.0 / 0.188, "99 % of peak needs adaptive routing and FIFOs feeding about four links a node",
        "all-to-all paper §2, §3.1"),
    Dependence(
        "radix-k-overlap", "compositing overlapped with arrivals", _radix_k,
        ("compute-overlap",), None,
        "radix-k composites each message as it arrives while the round's others are in flight; binary swap "
        "cannot overlap",
        "radix-k paper §3.3 (Fig. 3), §2.2 assumption 5 (the cost model assumes no overlap)",
        1.51, "radix-k composites messages as they arrive, binary swap cannot", "radix-k paper §3.3"),
)


@dataclass(frozen=True)
class Caveat:
    """One mechanism gap that matters for an answer."""

    family: str
    name: str
    mechanisms: tuple
    model: str
    affected: tuple
    text: str
    source: str
    factor: float = 1.0
    brief: str = ""

    def line(self, affected: tuple | None = None) -> str:
        """One readable line (the full text and source are in :meth:`as_dict`);
        ``affected`` names other affected algorithms (a summary over answers)."""
        text = self.brief or self.text
        if affected is not None and self.affected:
            text = text.replace(f" {', '.join(self.affected)} (", f" {', '.join(affected)} (", 1)
        return text

    def as_dict(self) -> dict:
        return {"family": self.family, "mechanisms": list(self.mechanisms), "model": self.model,
                "affected": list(self.affected), "text": self.text, "source": self.source}


#: how a model is named in a caveat's line
_SHOWN = {"alpha-beta-gamma": "α-β-γ"}


def _names(keys) -> str:
    names = [MECHANISMS[k].name for k in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def caveats(model: str, candidates, kind: str, *, options=None, routing: str | None = None,
            reduces: bool = True) -> list[Caveat]:
    """The caveats that matter for ranking ``candidates`` with ``model``.

    Parameters
    ----------
    model : str
        A model name (``flow``, ``packet``, ``alpha-beta-gamma``, ...).
    candidates : iterable of (collective, algorithm, params)
    kind : str
        :func:`topology_kind` of the network (``none`` without one).
    options : EngineOptions, optional
        The event model's options (the packet model's NIC, ports, ...).
    routing : str, optional
        The network's routing engine (``adaptive`` gives the packet model
        adaptive routing).
    reduces : bool
        Whether reductions cost time (γ > 0); overlapping them matters only then.

    Examples
    --------
    >>> cands = [("reduce_scatter", "direct_send", {}), ("reduce_scatter", "shift_based", {})]
    >>> [c.family for c in caveats("flow", cands, "fat-tree")]
    ['many-to-one']
    >>> caveats("flow", cands[1:], "fat-tree")
    []
    """
    cands = [(c, a, dict(p or {})) for c, a, p in candidates]
    key = _model_key(model)
    missing = set(lacks(key, options, routing))
    out: list[Caveat] = []
    if key == "alpha-beta-gamma" and len({(c, a, str(sorted(p.items()))) for c, a, p in cands}) >= 2:
        out.append(Caveat(
            "contention", "link contention", ("contention",), key, tuple(dict.fromkeys(a for _, a, _ in cands)),
            "α-β-γ has no network: it charges every message as if it had its links to itself, so algorithms "
            "whose messages share links (routes, node order, many-to-one) rank too well; give --topology",
            "radix-k paper §2.2 assumption 5; shift-based paper §2.1.3 (hot spots)", 1.0,
            "α-β-γ has no network: shared links, routes and node order are not seen; give --topology "
            "(radix-k paper §2.2)"))
    for dep in DEPENDENCES:
        if not dep.applies(kind) or (dep.key == "radix-k-overlap" and not reduces):
            continue
        lacking = tuple(m for m in dep.mechanisms_on(kind) if m in missing)
        if not lacking:
            continue
        members = [a for c, a, p in cands if dep.members(c, a, p)]
        others = [a for c, a, p in cands if not dep.members(c, a, p)]
        if not members or not others:
            continue
        affected = tuple(dict.fromkeys(members))
        text = (f"{MODEL_TEXT[key].split(':')[0]} lacks {_names(lacking)}, which "
                f"{'decides' if len(lacking) == 1 else 'decide'} {', '.join(affected)} ({dep.name}): {dep.effect}")
        verb = "decides" if len(lacking) == 1 else "decide"
        said, cite = dep.brief_on(kind)
        brief = f"{_SHOWN.get(key, key)} lacks {_names(lacking)}, which {verb} {', '.join(affected)} ({dep.name}): {said} ({cite})"
        out.append(Caveat(dep.key, dep.name, lacking, key, affected, text, dep.source, dep.factor, brief))
    return out


def model_summary(model: str, options=None) -> tuple[str, dict]:
    """``(text, settings)`` of a model: one line saying what it is, and the
    settings that differ from its defaults (the packet model: all of its
    :class:`~topocoll.sim.packet.PacketOptions`)."""
    key = _model_key(model)
    text = MODEL_TEXT.get(key, key)
    settings: dict = {}
    if options is not None and key in ("loggops", "congestion", "flow", "packet"):
        from .engine import EngineOptions
        default = EngineOptions()
        for f in dataclasses.fields(options):
            if f.name == "packet":
                continue
            value = getattr(options, f.name)
            if value != getattr(default, f.name):
                settings[f.name] = value
        if key == "packet":
            settings.update({f"packet.{f.name}": getattr(options.packet, f.name)
                             for f in dataclasses.fields(options.packet)})
    return text, settings


def settings_text(settings: dict) -> str:
    """``k=v, ...`` of :func:`model_summary`'s settings (``defaults`` when none)."""
    def value(v):
        return f"{v:g}" if isinstance(v, float) else str(v)
    return ", ".join(f"{k}={value(v)}" for k, v in settings.items()) or "defaults"
