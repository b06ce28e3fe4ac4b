"""``topocoll simulate``: one schedule (or a sweep over P and sizes) on a
modelled network with an event-driven model, and the pictures that explain
the result. Everything here is a library call first (:mod:`.engine`,
:mod:`.noise`, :mod:`.sweep`, :mod:`topocoll.viz`); this module parses and prints."""

from __future__ import annotations

import argparse
import sys

from ..argtypes import add_platform_arguments, add_ppn_argument, bounded_int, finite_float, parse_params, parse_sizes, positive_int, seed
from ..errors import SpecError
from ..outputs import (add_json_argument, check_output, check_outputs, input_files, json_output, write_json,
                       write_text)
from ..schedules.registry import lookup
from ..schedules.sizes import from_bytes
from ..text import table as _table
from .engine import (EVENT_MODELS, MAX_EAGER, MAX_ENVELOPE, MAX_PORTS, MAX_WINDOW, RENDEZVOUS, SMALL_SENDS, SYNCS,
                     EngineConfig, EngineOptions, NetworkNoise, OsNoise, simulate)
from .packet import PacketOptions
from .noise import MAX_RUNS, noise_runs
from .sweep import SimTask, build, platform_for, run_sweep


__all__ = ["add_simulate_parser", "cmd_simulate", "parse_os_noise", "engine_options", "platform_values",
           "profile_of", "check_model_options", "model_line", "apply_profile_to_nodes", "profile_engine_options",
           "shared_nic"]

#: the models that have NIC ports (``--ports``: LogGOPS's k ports; the packet
#: model's injection FIFOs per endpoint)
PORTS_MODELS = ("loggops", "packet")


def _int_list(text: str) -> list[int]:
    """``-P 16`` or ``-P 16,32,64``."""
    try:
        return [positive_int(part.strip()) for part in str(text).split(",")]
    except argparse.ArgumentTypeError as e:
        raise SpecError(f"-P {text!r}: {e}") from None


def parse_os_noise(text: str | None, seed_value: int) -> OsNoise | None:
    """``periodic:PERIOD,LENGTH`` / ``random:MEAN_GAP,LENGTH`` (seconds) or ``trace:FILE``."""
    if text is None:
        return None
    kind, _, rest = text.partition(":")
    if kind == "trace":
        return OsNoise.from_netgauge(rest, seed=seed_value)
    if kind in ("periodic", "random"):
        parts = rest.split(",")
        if len(parts) != 2:
            raise SpecError(f"--os-noise {text!r}, expected {kind}:PERIOD,LENGTH in seconds (e.g. {kind}:1e-3,1e-5)")
        try:
            period, length = float(parts[0]), float(parts[1])
        except ValueError:
            raise SpecError(f"--os-noise {text!r}, expected two numbers in seconds") from None
        return OsNoise(kind, period=period, length=length, seed=seed_value)
    raise SpecError(f"--os-noise {text!r}, expected periodic:PERIOD,LENGTH, random:GAP,LENGTH or trace:FILE")


#: LogGOPS flags and the models that use them: g and G are the loggops NIC lane's; L is charged by loggops
#: and flow (src/engine/flow.rs) to a message between hosts; congestion and packet price the wire themselves
_LOGGOPS_FLAGS = (("--gap", "gap", ("loggops",)), ("--gap-per-byte", "gap_per_byte", ("loggops",)),
                  ("--latency", "latency", ("loggops", "flow")))

#: engine flags a machine profile (``--profile``) can set: argparse dest, EngineOptions field, built-in default
#: (each default read from :class:`EngineOptions`, its one home)
_ENGINE_FLAGS = tuple((dest, name, EngineOptions.__dataclass_fields__[name].default)
                      for dest, name in (("eager", "eager"), ("o_recv", "o_recv"), ("gap", "g"),
                                         ("gap_per_byte", "G"), ("latency", "L")))


def _packet_int(name: str):
    """The argparse type of an integer packet option: its bounds and unit
    from :mod:`.packet` (their one home), the error in the same words."""
    from .packet import _BOUNDS, _UNITS
    return bounded_int(*_BOUNDS[name], what=_UNITS[name])


def _pipeline(text: str) -> tuple:
    """``R,V,S,T``: cycles of route computation, VC allocation, switch allocation, switch traversal."""
    try:
        parts = tuple(int(x) for x in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 4:
        import argparse
        raise argparse.ArgumentTypeError(f"{text!r}, expected 4 cycle counts R,V,S,T (e.g. 1,1,1,1)")
    return parts


def _on_off(text: str) -> bool:
    """``on``/``off`` (or 1/0, yes/no, true/false)."""
    t = text.lower()
    if t in ("on", "1", "yes", "true"):
        return True
    if t in ("off", "0", "no", "false"):
        return False
    import argparse
    raise argparse.ArgumentTypeError(f"{text!r}, expected on or off")


#: the packet model's flags: flag, PacketOptions field, type, help
_PACKET_FLAGS = (
    ("--packet-bytes", "packet_bytes", _packet_int("packet_bytes"), "payload bytes per packet (the MTU)"),
    ("--header-bytes", "header_bytes", _packet_int("header_bytes"), "header bytes per packet"),
    ("--vcs", "vcs", _packet_int("vcs"), "virtual channels per link"),
    ("--buffer-packets", "buffer_packets", _packet_int("buffer_packets"),
     "input buffer depth per virtual channel, in packets"),
    ("--router-delay", "router_delay", finite_float(unit="s"), "delay through a switch, s"),
    ("--allocator", "allocator", str, "switch allocation: round-robin or age"),
    ("--queues", "queues", str, "input (FIFO per VC: head-of-line blocking) or voq (virtual output queues)"),
    ("--injection-packets", "injection_packets", _packet_int("injection_packets"),
     "NIC injection FIFO depth in packets, 0 = no limit"),
    ("--eject-handling", "eject_handling", finite_float(unit="s"),
     "receiving NIC's time per packet, s (0 = consumed at link rate)"),
    ("--nic", "nic", str, "the endpoint: simple (messages in posting order, one after another), ib (an InfiniBand "
                          "HCA interleaving the packets of its queue pairs) or bgl (Blue Gene/L's injection FIFOs "
                          "filled by a core, messages interleaved packet by packet; tori only)"),
    ("--ib-qps", "ib_qps", _packet_int("ib_qps"), "--nic ib: queue pairs the HCA serves at once"),
    ("--ib-arbiter", "ib_arbiter", str, "--nic ib: the HCA's pick of the next packet's QP, random or round-robin"),
    ("--ib-seed", "ib_seed", seed, "--nic ib: seed of the HCA arbiters (printed with the result)"),
    ("--bgl-fifos", "bgl_fifos", _packet_int("bgl_fifos"), "BG/L injection FIFOs per node"),
    ("--bgl-fifo-packets", "bgl_fifo_packets", _packet_int("bgl_fifo_packets"), "packets per BG/L injection FIFO"),
    ("--bgl-burst", "bgl_burst", _packet_int("bgl_burst"),
     "packets of one message the BG/L core writes before moving to the next"),
    ("--bgl-placement", "bgl_placement", str,
     "which BG/L FIFO a packet enters: direction (its first direction's) or any (the next with room)"),
    ("--bgl-cpu-links", "bgl_cpu_links", finite_float(unit="links"),
     "the BG/L core's copy rate in and out of the FIFOs, in links' bandwidth (0 = free)"),
    ("--flit-bytes", "flit_bytes", _packet_int("flit_bytes"),
     "flit-level routers (BookSim's input-queued router) with flits of this many bytes; 0 = packet-granular"),
    ("--buffer-flits", "buffer_flits", _packet_int("buffer_flits"),
     "flit routers: flits per VC buffer (0 = --buffer-packets' worth)"),
    ("--switching", "switching", str, "flit routers: wormhole or cut-through"),
    ("--pipeline", "pipeline", _pipeline,
     "flit routers: cycles of route, VC allocation, switch allocation, traversal R,V,S,T"),
    ("--vc-allocator", "vc_allocator", str, "flit routers: islip, input-first or output-first"),
    ("--sw-allocator", "sw_allocator", str, "flit routers: islip, input-first or output-first"),
    ("--alloc-iters", "alloc_iters", _packet_int("alloc_iters"), "flit routers: allocator iterations"),
    ("--speculative", "speculative", _on_off, "flit routers: speculative switch allocation, on or off"),
    ("--wait-tail-credit", "wait_tail_credit", _on_off,
     "flit routers: reallocate a VC only once its tail credit is back, on or off"),
    ("--credit-delay", "credit_delay", _packet_int("credit_delay"), "flit routers: cycles to apply a credit"),
    ("--terminal-cycles", "terminal_cycles", _packet_int("terminal_cycles"),
     "flit routers: latency of the injection and ejection channels, cycles"),
)
#: Platform flags a profile can set, with their built-in defaults
_PLATFORM_DEFAULTS = {"alpha": 1e-6, "bandwidth": 2e9, "reduce_bandwidth": 4e9}


def profile_of(args):
    """The :class:`~topocoll.sim.profile.MachineProfile` of ``--profile``
    (loaded once; a bad file is a one-line ParseError), or None."""
    path = getattr(args, "profile", None)
    if path is None:
        return None
    if getattr(args, "_loaded_profile", (None, None))[0] != path:
        from .profile import load_profile
        args._loaded_profile = (path, load_profile(path))
    return args._loaded_profile[1]


#: protocol flags a preset sets: argparse dest, EngineOptions field (None on the command line: not given)
_PRESET_FLAGS = (("small_sends", "small_sends"), ("sharing", "sharing"), ("eager", "eager"),
                 ("envelope", "envelope_bytes"), ("rendezvous", "rendezvous"))


def engine_options(args) -> EngineOptions:
    """The engine options of the command line: an explicit flag, else the
    ``--preset``'s value (:mod:`.presets`), else the ``--profile``'s value
    (:meth:`MachineProfile.engine_options`), else the built-in default."""
    from .presets import apply_preset
    explicit = {field: getattr(args, dest) for dest, field, _ in _ENGINE_FLAGS if getattr(args, dest, None) is not None}
    common = dict(sync=args.sync, ports=args.ports or 1, nic_bandwidth=args.nic_bandwidth or 0.0, window=args.window,
                  packet=packet_options(args))
    given = {field: getattr(args, dest) for dest, field in _PRESET_FLAGS if getattr(args, dest, None) is not None}
    common.update({k: v for k, v in given.items() if k != "eager"})
    profile = profile_of(args)
    keep = tuple(given)
    if profile is not None:
        options = profile.engine_options(shared_nic=shared_nic(args), model=getattr(args, "model", None) or "loggops",
                                         **common, **explicit)
        if profile.eager is not None:   # the threshold measured on the machine wins over the preset's
            keep += ("eager",)
    else:
        defaults = {field: default for _, field, default in _ENGINE_FLAGS}
        options = EngineOptions(**common, **{**defaults, **explicit})
    return apply_preset(options, getattr(args, "preset", None), keep=keep)


def profile_engine_options(args) -> EngineOptions | None:
    """The event models' options from ``--profile`` for a verb without the engine flags (``tune``):
    the profile's LogGOPS costs (:meth:`MachineProfile.engine_options`, the NIC shared on a ``+ppn``
    network) with ``--preset`` applied over them, the profile's measured eager threshold kept; None
    without ``--profile``."""
    from .presets import apply_preset
    profile = profile_of(args)
    if profile is None:
        return None
    options = profile.engine_options(shared_nic=shared_nic(args), model=getattr(args, "model", None) or "loggops")
    return apply_preset(options, getattr(args, "preset", None), keep=("eager",) if profile.eager is not None else ())


def shared_nic(args) -> bool:
    """Whether ``--topology`` puts several ranks on a host (their NIC shared)."""
    topology = getattr(args, "topology", None) or ""
    if "+ppn=" not in topology:
        return False
    ppn = topology.rpartition("+ppn=")[2].partition(",")[0].partition("@")[0]
    return ppn.strip() != "1"


def apply_profile_to_nodes(args) -> None:
    """With ``--profile`` and a ``SPEC+ppn=N`` topology: the node options
    the spec leaves out that the profile's intra-node level gives (``lat``,
    ``bw``: :meth:`MachineProfile.node_options`) are added to
    ``args.topology``, so intra-node messages cost what OSU measured within
    a node (a spec's own values win)."""
    topology = getattr(args, "topology", None)
    if not topology or "+ppn=" not in topology or getattr(args, "profile", None) is None:
        return
    options = profile_of(args).node_options()
    fabric, _, rest = topology.rpartition("+ppn=")
    node_part, at, fabric_opts = rest.partition("@")
    given = {item.partition("=")[0].strip() for item in node_part.split(",")[1:]}
    from .profile import spec_value
    added = "".join(f",{key}={spec_value(key, value)}" for key, value in options.items() if key not in given)
    if added:
        args.topology = f"{fabric}+ppn={node_part}{added}{at}{fabric_opts}"


def model_line(args, model: str, options: EngineOptions) -> str:
    """The model and preset a prediction was made with (the first lines of
    ``simulate`` and ``compare``)."""
    from .presets import describe_preset
    nic = options.packet
    unpriced = ""
    if model not in ("loggops", "flow") and options.L > 0:
        # a --profile's L (--latency itself is refused with these models): said, never dropped silently
        unpriced = (f"; the profile's L = {options.L * 1e6:.3g} µs is not charged (the {model} model prices the "
                    "wire by the network's link latencies)")
    return (f"{model} model, {describe_preset(getattr(args, 'preset', None), options)}"
            + (f", {nic.describe_nic()}" if model == "packet" and nic.nic != "simple" else "") + unpriced)


def packet_options(args) -> PacketOptions:
    """The packet model's options of the command line (flags left out keep
    :class:`PacketOptions`' defaults)."""
    given = {dest: getattr(args, f"packet_{dest}") for _, dest, _, _ in _PACKET_FLAGS
             if getattr(args, f"packet_{dest}", None) is not None}
    if getattr(args, "ports", None) is not None and getattr(args, "model", None) == "packet":
        given["injection_fifos"] = args.ports
    return PacketOptions(**given)


def check_model_options(args, *, model: str) -> None:
    """Refuse an engine flag the chosen model ignores (so a run never
    silently differs from what was asked): ``--ports`` is LogGOPS's, the
    packet flags the packet model's."""
    if model != "packet":
        for flag, dest, _, _ in _PACKET_FLAGS:
            if getattr(args, f"packet_{dest}", None) is not None:
                raise SpecError(f"{flag} with the {model} model, expected {flag} only with --model packet")
    if getattr(args, "packet_nic", None) != "bgl":
        for flag, dest, _, _ in _PACKET_FLAGS:
            if dest.startswith("bgl_") and getattr(args, f"packet_{dest}", None) is not None:
                raise SpecError(f"{flag} without --nic bgl, expected {flag} only with --nic bgl")
    for flag, dest, models in _LOGGOPS_FLAGS:
        if getattr(args, dest, None) is not None and model not in models:
            raise SpecError(f"{flag} {getattr(args, dest):g} with the {model} model, expected {flag} only with "
                            f"{' or '.join('--model ' + m for m in models)} (the {model} model does not use it)")
    if getattr(args, "ports", None) is not None and model not in PORTS_MODELS:
        raise SpecError(f"--ports {args.ports} with the {model} model, expected --ports only with "
                        f"{' or '.join('--model ' + m for m in PORTS_MODELS)} (the {model} model has no NIC ports)")


def _nic_bandwidth(text: str) -> float:
    """``--nic-bandwidth``: B/s > 0; no limit is the option left out (0 would read as a limit of nothing)."""
    value = finite_float(strict=True, unit="B/s")
    try:
        return value(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e}; leave --nic-bandwidth out for no injection limit") from None


def platform_values(args, *, model: str) -> dict:
    """``alpha``, ``bandwidth`` and ``reduce_bandwidth`` for ``Platform``: an
    explicit flag, else the ``--profile``'s value for ``model`` (α is the
    sender overhead ``o`` for the event models, the fitted latency for the
    α-β-γ and static models: :meth:`MachineProfile.platform`), else the
    built-in default. Flags a parser lacks are left out."""
    profile = profile_of(args)
    from_profile = {}
    if profile is not None:
        plat = profile.platform(model=model)
        from_profile = {"alpha": plat.alpha, "bandwidth": plat.bandwidth, "reduce_bandwidth": plat.reduce_bandwidth}
    out = {}
    for name, default in _PLATFORM_DEFAULTS.items():
        if not hasattr(args, name):
            continue
        value = getattr(args, name)
        out[name] = value if value is not None else from_profile.get(name, default)
    return out


def add_engine_arguments(p, *, default_model="loggops") -> None:
    """Model options shared by ``simulate`` and ``compare``."""
    p.add_argument("--sync", choices=SYNCS, default="deps",
                   help="what holds an op back besides its data: deps (the executor's semantics, default), "
                        "rounds (blocking per-round exchanges, as MPI libraries run them), barrier "
                        "(synchronous rounds, the α-β-γ reading)")
    p.add_argument("--profile", metavar="FILE",
                   help="machine profile from `topocoll calibrate`: its α, bandwidth, reduction bandwidth and "
                        "LogGP o_r, g, G, L, eager threshold become the defaults; flags given explicitly win")
    from .presets import PRESETS
    p.add_argument("--preset", choices=tuple(PRESETS), default=None,
                   help="validated protocol defaults (topocoll.sim.presets; flags given explicitly win): smpi "
                        "(SimGrid's SMPI: cm02 sharing, detached sends below 65536 B, a 16-B envelope per message; "
                        "flow within 1 %% of SMPI on 26 of 26 cases of benchmarks/bench_smpi.py, largest error "
                        "0.02 %%) or mpi (MPI libraries over InfiniBand: eager up to 12 KiB, an RTS/CTS handshake "
                        "above; not yet validated). Default: none, the engine's defaults (eager sends up to 65535 B, "
                        "maxmin sharing, no envelope: flow within 1 %% of SMPI on 18 of 26; kept so that runs "
                        "without the option stay as they were). docs/validation.md")
    p.add_argument("--eager", type=bounded_int(0, MAX_EAGER, what="bytes"), default=None,
                   help="largest eager message in bytes (default 65535: SMPI's sends below 65536 B are detached; "
                        "or the preset's, or the profile's)")
    p.add_argument("--small-sends", choices=SMALL_SENDS, default=None,
                   help="sends up to --eager bytes: eager (data leaves when the send is posted, default) or "
                        "detached (the send completes at once, the data leaves once the receive is posted "
                        "too: SimGrid's detached sends, SMPI's default)")
    p.add_argument("--envelope", type=bounded_int(0, MAX_ENVELOPE, what="bytes"), default=None,
                   help="bytes each message puts on the wire beyond its payload (default 0; SMPI's is 16)")
    p.add_argument("--rendezvous", choices=RENDEZVOUS, default=None,
                   help="messages above --eager: direct (the data leaves once both sides are posted, default) "
                        "or handshake (a control round trip first, RTS/CTS as MPICH and Open MPI do)")
    p.add_argument("--ports", type=bounded_int(1, MAX_PORTS, what="NIC ports per endpoint"), default=None,
                   help=f"NIC ports per endpoint, 1..{MAX_PORTS}: loggops's k ports (default 1); the packet "
                        "model's injection FIFOs, each feeding one packet at a time into any link (default: "
                        "one per output link)")
    p.add_argument("--sharing", choices=("maxmin", "cm02"), default=None,
                   help="bandwidth sharing of the flow model: maxmin (default) or cm02 (SimGrid's)")
    p.add_argument("--nic-bandwidth", type=_nic_bandwidth, default=None,
                   help="injection/ejection limit per endpoint in B/s (> 0), flow model (default: no limit; "
                        "leave the option out for none)")
    p.add_argument("--o-recv", type=finite_float(unit="s"), default=None,
                   help="receiver overhead o_r in s (default 0, or the profile's)")
    p.add_argument("--gap", type=finite_float(unit="s"), default=None,
                   help="LogGOPS g in s, loggops model only (default 0, or the profile's)")
    p.add_argument("--gap-per-byte", type=finite_float(unit="s/B"), default=None,
                   help="LogGOPS G in s/B, loggops model only (default 0, or the profile's)")
    p.add_argument("--latency", type=finite_float(unit="s"), default=None,
                   help="LogGOPS L in s, on top of the links' latencies, for a message between hosts; loggops and "
                        "flow models (default 0, or the profile's)")
    p.add_argument("--window", type=bounded_int(0, MAX_WINDOW, what="messages in flight per rank, 0 = no limit"),
                   default=0,
                   help="throttling: at most this many messages of a rank in flight (default 0: no limit)")
    d = PacketOptions()
    g = p.add_argument_group("packet model (--model packet; defaults and their sources: docs/simulator.md)")
    for flag, dest, kind, text in _PACKET_FLAGS:
        default = getattr(d, dest)
        g.add_argument(flag, dest=f"packet_{dest}", type=kind, default=None,
                       help=f"{text} (default {default if not isinstance(default, float) else f'{default:g}'})")


def add_simulate_parser(sub) -> None:
    g = sub.add_parser(
        "goal", help="write a schedule in LogGOPSim's GOAL text format",
        description="Write one schedule as GOAL (LogGOPSim, Schedgen, ATLAHS); `topocoll simulate goal FILE` "
                    "reads one back.")
    g.add_argument("collective")
    g.add_argument("algorithm")
    g.add_argument("-P", "--procs", type=positive_int, required=True, help="number of ranks")
    g.add_argument("--size", required=True, help="message size in bytes (MPI's convention)")
    g.add_argument("--param", action="append", metavar="NAME=VALUE", help="generator parameter, repeatable")
    g.add_argument("-o", "--output", metavar="FILE", help="write here (default: standard output)")
    g.set_defaults(func=cmd_goal)

    p = sub.add_parser(
        "simulate", help="simulate a schedule on a modelled network (loggops, flow, congestion, packet; or synthetic traffic)",
        description="Simulate one collective algorithm (or a GOAL file: `simulate goal FILE`) on a network "
                    "with an event-driven model: time, per-rank completion, achieved bandwidth, hottest "
                    "links; noise ensembles; timelines and bandwidth matrices. -P and --size take lists "
                    "for a sweep.")
    p.add_argument("collective", help="a collective, or `goal` to read a GOAL file")
    p.add_argument("algorithm", help="an algorithm of the collective, or the GOAL file")
    p.add_argument("-P", "--procs", help="number of ranks, or a comma list for a sweep (not with goal)")
    p.add_argument("--size", help="message size in bytes (MPI's convention; K/M/G suffixes), or a comma list "
                                  "(not with goal)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="generator parameter, repeatable")
    p.add_argument("--load", metavar="L[,L...]", help="`simulate traffic PATTERN`: offered load(s) in (0, 1], "
                                                      "packets per endpoint per slot (docs/simulator.md)")
    p.add_argument("--model", choices=EVENT_MODELS, default="loggops", help="default loggops")
    p.add_argument("--topology", metavar="SPEC", help="network (default: an ideal crossbar at --bandwidth)")
    add_ppn_argument(p)
    p.add_argument("--routing", help="routing engine (default: the topology family's)")
    p.add_argument("--tie", choices=("positive", "source-parity", "random"), default=None,
                   help="`simulate traffic` on a torus: dimension order, a k/2 offset goes + (positive), + from "
                        "even coordinates (source-parity), or either by a coin per packet seeded by --seed (random)")
    p.add_argument("--order", default="routing", help="node order (default routing)")
    p.add_argument("--order-seed", type=seed, default=0, help="seed of a random node order (default 0)")
    p.add_argument("--rail", default=None, metavar="first|round-robin|N",
                   help="multi-rail hosts in hostfile:/slurm: orders (as `topocoll topo --rail`)")
    add_platform_arguments(p, alpha="sender overhead o per message in s (default 1e-6, or the profile's o_s)",
                           bandwidth="link bandwidth without --topology, B/s (default 2e9, or the profile's 1/G)",
                           reduce="reduction throughput, B/s (default 4e9, or the profile's)")
    add_engine_arguments(p)
    p.add_argument("--noise", type=finite_float(unit=""), default=None, metavar="RATIO",
                   help="network noise: perturbation ratio in [0, 1) (background endpoints = RATIO/(1-RATIO) "
                        "× P, drawn from the endpoints the application leaves free)")
    p.add_argument("--noise-bytes", type=bounded_int(1, MAX_EAGER, what="bytes per background message"),
                   default=1 << 20,
                   help="background message size in bytes, loggops/flow (default 1 MiB)")
    p.add_argument("--runs", type=bounded_int(1, MAX_RUNS, what="noise runs"), default=1,
                   help=f"noise runs with seeds SEED, SEED+1, ... (1..{MAX_RUNS})")
    p.add_argument("--seed", type=seed, default=0, help="seed of the noise (default 0)")
    p.add_argument("--os-noise", metavar="KIND",
                   help="OS noise: periodic:PERIOD,LENGTH, random:MEAN_GAP,LENGTH (s) or trace:FILE "
                        "(Netgauge: start<TAB>duration in ns)")
    p.add_argument("--trace", metavar="OUT.json", help="write a Perfetto/Chrome timeline")
    p.add_argument("--matrix", metavar="OUT.png", help="write the bandwidth matrix (shift-based paper §5)")
    p.add_argument("--draw", metavar="OUT.svg", help="write the link loads on the topology (small networks)")
    p.add_argument("--executor", choices=("serial", "process", "mpi"), default="serial",
                   help="where a sweep runs: serial (default), local processes, or MPI ranks "
                        "(under mpiexec, through mpi4py.futures)")
    p.add_argument("--workers", type=positive_int, default=None, help="processes of a sweep")
    add_json_argument(p, "the result")
    p.set_defaults(func=cmd_simulate)


def _progress(done: int, total: int) -> None:
    if not sys.stderr.isatty():
        return
    width = 30
    filled = int(width * done / total)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _task(args, p: int, size: int) -> SimTask:
    noise = None
    if args.noise is not None:
        noise = NetworkNoise(args.noise, bytes=args.noise_bytes, seed=args.seed)
    plat = platform_values(args, model=args.model)
    return SimTask(args.collective, args.algorithm, p, size, parse_params(args.param), args.topology,
                   args.routing, args.order, args.order_seed, args.model, args.rail, plat["alpha"],
                   plat["bandwidth"], plat["reduce_bandwidth"], engine_options(args), noise,
                   parse_os_noise(args.os_noise, args.seed))


def cmd_goal(args) -> int:
    from ..schedules.goal import to_goal
    sizes = parse_sizes(args.size, option="--size")
    if len(sizes) != 1:
        raise SpecError(f"--size {args.size!r}, expected one size (goal writes one schedule)")
    task = SimTask(args.collective, args.algorithm, args.procs, sizes[0], parse_params(args.param))
    # the text is held whole: the per-rank views' bound, before generating
    lookup(task.collective, task.algorithm).check_size(task.p, {**from_bytes(task.collective, task.p, task.size),
                                                                **task.params}, purpose="GOAL text held whole")
    check_output("-o", args.output)
    sched, _ = build(task)
    text = to_goal(sched)
    if args.output:
        write_text(args.output, text, option="-o")
        print(f"{sched.label()}: {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _goal_run(args) -> int:
    from ..schedules.goal import read_goal
    if args.procs or args.size or args.param:
        raise SpecError("simulate goal FILE takes its ranks and sizes from the file, expected no -P, --size, "
                        "--param")
    prog = read_goal(args.algorithm)
    platform = platform_for(prog.p, topology=args.topology, routing=args.routing, order=args.order,
                            order_seed=args.order_seed, rail=args.rail, **platform_values(args, model=args.model))
    noise = NetworkNoise(args.noise, bytes=args.noise_bytes, seed=args.seed) if args.noise is not None else None
    config = EngineConfig(args.model, engine_options(args), noise, parse_os_noise(args.os_noise, args.seed),
                          trace=bool(args.trace or args.matrix))
    sim = simulate(prog, platform, config)
    outputs = _write_pictures(args, sim, prog)
    if write_json(args, {"schedule": prog.label(), "platform": platform.describe(), **sim.as_dict(),
                         "outputs": outputs}):
        return 0
    print(f"{prog.label()} on {platform.describe()}\n{model_line(args, args.model, config.options)}, "
          f"sync={args.sync}: time {sim.time * 1e6:.3f} µs, {sim.messages} messages")
    for what, path in outputs.items():
        print(f"{what}: {path}")
    return 0


def _traffic_run(args) -> int:
    """``simulate traffic PATTERN --load L[,L...] --topology SPEC``: synthetic traffic through the packet
    model (:mod:`.traffic`); ``--param`` takes hot_fraction, hot_node, warmup, measure."""
    from .traffic import traffic
    if args.model not in ("loggops", "packet"):  # loggops: the flag's default, i.e. not given
        raise SpecError(f"simulate traffic with --model {args.model}, expected the packet model (no --model)")
    check_model_options(args, model="packet")
    given = [flag for flag, on in (("-P", args.procs), ("--size", args.size), ("--noise", args.noise is not None),
                                   ("--os-noise", args.os_noise), ("--trace", args.trace), ("--matrix", args.matrix),
                                   ("--draw", args.draw), ("--profile", args.profile)) if on]
    if given:
        raise SpecError(f"simulate traffic with {', '.join(given)}, expected only --load, --topology, --routing, "
                        "--tie, --seed, --param and packet flags")
    if not args.load or not args.topology:
        raise SpecError("simulate traffic PATTERN needs --load L[,L...] and --topology SPEC")
    try:
        loads = [float(x) for x in args.load.split(",")]
    except ValueError:
        raise SpecError(f"--load {args.load!r}, expected loads in (0, 1] separated by commas") from None
    params = parse_params(args.param)
    allowed = ("hot_fraction", "hot_node", "warmup", "measure", "latency_thres")
    if set(params) - set(allowed):
        raise SpecError(f"--param {', '.join(sorted(set(params) - set(allowed)))} with simulate traffic, "
                        f"expected {', '.join(allowed)}")
    rows = traffic(args.algorithm, loads, args.topology, packet_options(args), seed=args.seed, routing=args.routing,
                   tie=getattr(args, "tie", None), **params)
    if write_json(args, [{k: getattr(r, k) for k in r.__dataclass_fields__} for r in rows]):
        return 0
    model = "packet model" if not rows[0].cycle else f"flit routers (cycle {rows[0].cycle * 1e9:.4g} ns)"
    tie = getattr(args, "tie", None)
    ties = (f", ties {tie}" + (f" (seed {args.seed})" if tie == "random" else "")) if tie else ""
    limit = (f"; saturated also when the mean latency passes {rows[0].latency_threshold * 1e6:.4g} µs"
             if rows[0].latency_threshold else "")
    print(f"synthetic traffic {args.algorithm} on {args.topology}, {model}, seed {args.seed}{ties}, "
          f"slot {rows[0].slot * 1e6:.4g} µs (one packet on one injection link); rates in packets/endpoint/slot"
          f"{limit}")
    table = [("offered", "accepted", "mean latency", "p99 latency", "measured", "saturated by", "saturated")]
    table += [(f"{r.offered:g}", f"{r.accepted:.4f}", f"{r.mean_latency * 1e6:.3f} µs",
               f"{r.p99_latency * 1e6:.3f} µs", str(r.measured), r.saturated_by,
               "yes" if r.saturated else "no") for r in rows]
    print(_table(table))
    for r in rows:
        if r.drain_error:
            print(f"load {r.offered:g}: {r.drain_error}")
    return 0


def _say_first(sched, config, runs: int = 1) -> None:
    """One line on stderr first when the run is expected to take over
    :data:`topocoll.progress.SAY_FIRST_S` (the engine's measured rates,
    :func:`~topocoll.sim.engine.expected_cpu_seconds`; ``runs``: the noisy and
    the clean run)."""
    from ..progress import say_first, wall_seconds
    from .engine import estimated_ops, expected_cpu_seconds
    cpu = runs * expected_cpu_seconds(sched, config)
    say_first(f"simulate {sched.label()} with the {config.model} model, {estimated_ops(sched):,} ops",
              wall_seconds(cpu))


def _check_pictures(args) -> None:
    """--trace, --matrix, --draw checked before the run: writable, distinct, none an input, the
    pictures' suffixes known (a typo must not cost the run, nor a refusal leave some written)."""
    from ..viz.figure import check_path
    check_outputs([("--trace", args.trace), ("--matrix", args.matrix), ("--draw", args.draw), *json_output(args)],
                  input_files(args), stdout=("--json",))
    for option in ("--matrix", "--draw"):
        path = getattr(args, option[2:])
        if path:
            check_path(path, option)


def cmd_simulate(args) -> int:
    _check_pictures(args)
    if args.collective == "traffic":
        return _traffic_run(args)
    if getattr(args, "tie", None):
        raise SpecError(f"--tie with simulate {args.collective}, expected --tie only with simulate traffic "
                        "(elsewhere: --routing dor:tie=...)")
    if args.load is not None:
        raise SpecError(f"--load with simulate {args.collective}, expected --load only with simulate traffic")
    check_model_options(args, model=args.model)
    if args.collective == "goal":
        return _goal_run(args)
    if not args.procs or not args.size:
        raise SpecError("simulate COLLECTIVE ALGORITHM needs -P N and --size BYTES")
    procs, sizes = _int_list(args.procs), parse_sizes(args.size, option="--size")
    if args.topology is None and (args.routing or args.order != "routing" or args.rail):
        raise SpecError("--routing/--order/--rail given without --topology, expected them only with a network")
    if args.noise is not None and args.topology is None:
        raise SpecError("--noise needs a network with free endpoints, expected --topology SPEC")
    if args.runs > 1 and args.noise is None:
        raise SpecError(f"--runs {args.runs} without --noise, expected noise runs to repeat")
    tasks = [_task(args, p, s) for p in procs for s in sizes]
    if len(tasks) > 1:
        if args.trace or args.matrix or args.draw or args.runs > 1:
            raise SpecError("--trace, --matrix, --draw and --runs take one P and one size, expected no lists")
        rows = run_sweep(tasks, executor=args.executor, workers=args.workers, progress=_progress)
        if write_json(args, [{"schedule": r.label, "P": r.task.p, "size": r.task.size, "time_s": r.time,
                              "slowdown": r.slowdown, "bandwidth_Bps": r.bandwidth, "hot_link": r.hot_link,
                              "seed": r.seed} for r in rows]):
            return 0
        head = ("schedule", "P", "size", "time", "bandwidth", "hottest link")
        table = [head] + [(r.label, str(r.task.p), str(r.task.size), f"{r.time * 1e6:.2f} µs",
                           f"{r.bandwidth / 1e9:.3g} GB/s", r.hot_link or "-") for r in rows]
        print(f"{model_line(args, args.model, tasks[0].options)}, sync={args.sync}"
              + (f", noise ratio {args.noise} seed {args.seed}" if args.noise is not None else ""))
        print(_table(table))
        return 0
    task = tasks[0]
    want_trace = bool(args.trace or args.matrix)
    sched, platform = build(task, trace=want_trace)
    if task.noise is not None and args.runs > 1:
        runs = noise_runs(sched, platform, model=task.model, noise=task.noise, runs=args.runs,
                          options=task.options, progress=_progress)
        if write_json(args, {"schedule": sched.label(), **runs.as_dict()}):
            return 0
        q1, q3 = runs.quartiles
        lo, hi = runs.notch
        print(f"{sched.label()} on {platform.describe()}\n{model_line(args, task.model, task.options)}, "
              f"noise ratio {task.noise.ratio}, "
              f"{args.runs} runs, seeds {runs.seeds[0]}..{runs.seeds[-1]}")
        print(f"clean time {runs.clean * 1e6:.3f} µs; slowdown mean {runs.mean:.4f}, median {runs.median:.4f}, "
              f"quartiles [{q1:.4f}, {q3:.4f}], 95% notch [{lo:.4f}, {hi:.4f}], "
              f"range [{runs.slowdowns.min():.4f}, {runs.slowdowns.max():.4f}]")
        return 0
    config = task.config(trace=want_trace)
    _say_first(sched, config, runs=2 if task.noise is not None else 1)
    sim = simulate(sched, platform, config)
    clean = None
    if task.noise is not None:
        clean = simulate(sched, platform, task.config(noise=False))
    outputs = _write_pictures(args, sim, sched)
    if args.json is not None:
        out = {"schedule": sched.label(), "platform": platform.describe(), **sim.as_dict(),
               "preset": getattr(args, "preset", None), "outputs": outputs,
               **({"profile": args.profile, "executor_call_s": profile_of(args).call_overhead()}
                  if args.profile else {})}
        if clean is not None:
            out["clean_time_s"], out["slowdown"] = clean.time, sim.time / clean.time
        if sim.streamed:
            out["streamed"] = {"peak_ops": sim.peak_ops, "peak_messages": sim.peak_messages}
        if write_json(args, out):
            return 0
    print(f"{sched.label()} on {platform.describe()}")
    print(f"{model_line(args, task.model, task.options)}, sync={task.options.sync}" +
          (f", profile {args.profile}" if args.profile else "") +
          (f", network noise ratio {task.noise.ratio} (seed {task.noise.seed})" if task.noise else "") +
          (f", OS noise {args.os_noise} (seed {args.seed})" if task.os_noise else ""))
    print(f"time {sim.time * 1e6:.3f} µs" + (f" (clean {clean.time * 1e6:.3f} µs, slowdown "
                                            f"{sim.time / clean.time:.4f})" if clean else ""))
    if sim.streamed:
        print(f"streamed round by round: at most {sim.peak_ops:,} ops and {sim.peak_messages:,} messages "
              "held at once")
    profile = profile_of(args)
    if profile is not None and profile.call_overhead():
        print(f"plus {profile.call_overhead() * 1e6:.3f} µs per call of topocoll's plan executor "
              "(the profile's executor_call; not in the time above)")
    done = sim.rank_done
    print(f"ranks finish between {done.min() * 1e6:.3f} and {done.max() * 1e6:.3f} µs "
          f"(first: rank {int(done.argmin())}, last: rank {int(done.argmax())})")
    bound = sim.injection_bound
    print(f"achieved {sim.bandwidth / 1e9:.4g} GB/s of application bytes ({sim.bytes_total} B in "
          f"{sim.messages} messages)" + (f"; injection bound {bound / 1e9:.4g} GB/s" if bound else ""))
    if sim.background_messages:
        print(f"background messages: {sim.background_messages}")
    hot = sim.hot_links(5)
    if hot:
        unit = "flows" if task.model == "congestion" else "B"
        print("hottest links: " + ", ".join(f"{n} ({v:.4g} {unit})" for n, v in hot))
    fullest = sim.fullest_buffers(3)
    if fullest:
        print(f"fullest buffers (of {sim.options.packet.buffer_packets} packets): " + ", ".join(
            f"{n} vc{vc} (mean {mean:.3g}, max {most})" for n, vc, most, mean in fullest))
    for what, path in outputs.items():
        print(f"{what}: {path}")
    return 0


def _write_pictures(args, sim, sched) -> dict:
    """The pictures asked for, each written whole (:mod:`topocoll.outputs`; checked before the run,
    and what can still be refused now is refused before the first is written)."""
    from ..topology.draw import MAX_NODES
    topo = sim.network.topology
    if args.draw and topo.n_nodes > MAX_NODES:
        raise SpecError(f"--draw: {topo.spec} has {topo.n_nodes} nodes, expected at most {MAX_NODES} to draw")
    matrix = None
    if args.matrix:
        from ..viz.matrix import bandwidth_matrix
        matrix = bandwidth_matrix(sim)
    out = {}
    if args.trace:
        from ..viz.timeline import write_chrome_trace
        out["timeline"] = str(write_chrome_trace(sim, args.trace))
    if args.matrix:
        from ..viz.matrix import write_matrix_png
        out["bandwidth matrix"] = str(write_matrix_png(matrix, args.matrix))
    if args.draw:
        from ..topology.draw import draw_svg
        unit = "flows" if sim.model == "congestion" else "bytes"   # the congestion model counts flows per link
        out["link loads"] = str(draw_svg(sim.network.topology, args.draw, loads=sim.link_bytes, unit=unit))
    return out
