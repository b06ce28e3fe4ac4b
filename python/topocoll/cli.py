"""The ``topocoll`` command line: it parses, calls the library, and prints.

Verbs: ``algorithms`` (the catalogue), ``verify`` (symbolic proof), ``show``
(a schedule round by round), ``compare`` (rank algorithms by a model,
:func:`topocoll.tune.rank`), ``demo`` (the main job on an embedded default),
plus the verbs other areas register (``topo``, ``composite``, ...). Bad input
prints one line ``topocoll: error: ...`` and exits 2; a failed verification
exits 1.

Start-up: a verb's arguments are added when that verb is parsed or prints its
help (:meth:`_Parser.fill_with`), and each verb imports what it uses when it
runs, so one verb imports none of the others' modules. ``topocoll --help``
itself never reaches this module: :mod:`topocoll.entry` (the console script's
entry point) prints it from the verb table without importing argparse.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .argtypes import add_platform_arguments, add_ppn_argument, apply_ppn, bounded_int, finite_float, parse_params, parse_sizes, parse_value, positive_int, seed
from .entry import DESCRIPTION, EXTENSIONS, VERBS, top_help
from .errors import SpecError, TopocollError, VerificationError
from .text import human_bytes as _bytes
from .text import table as _table

EXIT_FAILED, EXIT_USAGE = 1, 2
#: Ctrl-C: 128 + SIGINT, as a shell reports a process SIGINT ended
EXIT_INTERRUPTED = 130

#: largest P of ``verify --all`` (every algorithm and parameter set, P = 1..N)
MAX_VERIFY_ALL = 256
#: largest P of ``demo`` (it verifies every allreduce algorithm symbolically)
MAX_DEMO_P = 1024
#: ``compare`` on a terminal: seconds before its progress bar and streamed lines appear
PROGRESS_DELAY = 0.5

__all__ = ["main", "build_parser", "parse_value", "parse_params"]


class _ParserExit(Exception):
    """``--help`` or ``--version`` printed its text: :func:`main` returns ``status``."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


#: two examples per verb, the end of its ``--help`` (one home: :func:`build_parser` sets every
#: verb's epilog from it; tests parse each example)
EXAMPLES = {
    "algorithms": ("topocoll algorithms", "topocoll algorithms allreduce"),
    "verify": ("topocoll verify allreduce ring -P 8", "topocoll verify --all --max-procs 16"),
    "show": ("topocoll show allreduce ring -P 4", "topocoll show reduce_scatter radix_k -P 12 --param k=4,3"),
    "compare": ("topocoll compare allreduce -P 64 --sizes 8,64K,4M",
                "topocoll compare alltoall -P 64 --topology kary:8,2 --model loggops --sizes 4K"),
    "demo": ("topocoll demo", "topocoll demo -P 64 --out report"),
    "topo": ("topocoll topo kary:12,2 --pattern shift:1", "topocoll topo torus:4x4 --ebb 100 --draw torus.svg"),
    "goal": ("topocoll goal allreduce ring -P 8 --size 1M -o ring.goal",
             "topocoll goal alltoall bruck -P 16 --size 4K"),
    "simulate": ("topocoll simulate allreduce ring -P 16 --size 1M --topology kary:4,2",
                 "topocoll simulate alltoall shift -P 64 --size 64K --model packet --topology torus:4x4x4"),
    "composite": ("topocoll composite -P 8 --algorithm radix_k --k 4,2 --width 512 --height 512 --check",
                  "topocoll composite -P 4 --algorithm binary_swap --width 256 --height 256 --save out.png"),
    "bench": ("topocoll bench allreduce --np 4", "topocoll bench alltoall --np 2 --sizes 8,64K --csv bench.csv"),
    "calibrate": ("topocoll calibrate --quick -o profile.json",
                  "topocoll calibrate --from-osu inter:osu_latency.txt inter:osu_bw.txt -o profile.json"),
    "tune": ("topocoll tune allreduce -P 16,64 --sizes 8..1M",
             "topocoll tune allreduce,alltoall -P 64 --topology kary:8,2 --mpich-json mpich.json"),
    "reproduce": ("topocoll reproduce --list", "topocoll reproduce radix-k --quick --out out/reproduce"),
    "synthesize": ("topocoll synthesize allgather --topology torus:8x4 -P 32 --size 1M --out ag.json",
                   "topocoll synthesize allreduce --topology kary:4,2 -P 16 --size 64K --budget 10"),
}


def _epilog(verb: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[verb])


class _Formatter(argparse.HelpFormatter):
    """argparse's help, each line of a description or epilog wrapped on its own (so examples stay
    one per line; an example longer than the terminal continues indented)."""

    def _fill_text(self, text, width, indent):
        import textwrap
        return "\n".join(textwrap.fill(line, width, initial_indent=indent,
                                        subsequent_indent=indent + " " * (len(line) - len(line.lstrip()) + 4),
                                        break_on_hyphens=False, break_long_words=False) if line.strip() else ""
                         for line in text.splitlines())


class _Parser(argparse.ArgumentParser):
    """argparse with the project's one-line error format and exit code 2;
    ``--help`` and ``--version`` return from :func:`main` instead of exiting
    the interpreter (so in-process calls get a status, as for errors). A
    verb's parser may get its arguments on first use (:meth:`fill_with`)."""

    _fill = None

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def fill_with(self, fill) -> None:
        """Add this parser's arguments with ``fill(parser)`` when it first
        parses or formats its help (its imports wait until then)."""
        self._fill = fill

    def _filled(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            fill(self)

    def parse_known_args(self, args=None, namespace=None):
        self._filled()
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def format_usage(self):
        self._filled()
        return super().format_usage()

    def format_help(self):
        self._filled()
        return super().format_help()

    def error(self, message):
        hint = _json_swallowed(getattr(self, "_argv", ())) if "arguments are required" in message else ""
        raise SpecError(message.replace("\n", " ") + hint)

    def exit(self, status=0, message=None):
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


def _json_swallowed(argv) -> str:
    """`` (--json took WORD as its FILE: ...)`` when a bare ``--json`` was followed by a word (argparse's
    ``nargs="?"`` takes it as FILE, so a positional argument after it goes missing); else ''."""
    from .outputs import JSON_SWALLOW_HINT
    argv = list(argv)
    for k, word in enumerate(argv[:-1]):
        if word == "--json" and not argv[k + 1].startswith("-"):
            return f" (--json took {argv[k + 1]!r} as its FILE: {JSON_SWALLOW_HINT})"
    return ""


class _TopParser(_Parser):
    """The ``topocoll`` parser: its help is :func:`topocoll.entry.top_help`, the
    text ``topocoll --help`` prints without importing this module."""

    def format_help(self):
        return top_help()


class _Version(argparse._VersionAction):
    """``--version``, reading the version only when asked (importing
    ``importlib.metadata`` costs more than the rest of ``--help``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        self.version = f"topocoll {version()}"
        super().__call__(parser, namespace, values, option_string)


def version() -> str:
    """topocoll's version: the installed package's metadata, else (a source
    tree not installed) ``pyproject.toml``'s ``[project] version``."""
    import importlib.metadata
    import tomllib
    from pathlib import Path
    try:
        return importlib.metadata.version("topocoll")
    except importlib.metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text())["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


# ---- verbs -----------------------------------------------------------------

def cmd_algorithms(args) -> int:
    from .schedules.registry import catalogue, check_collective, needs_text
    from .verify.uniform import same_result
    if args.collective is not None:
        check_collective(args.collective)
    rows = [("collective", "algorithm", "parameters", "rounds", "P", "operator", "same result on every rank",
             "α-β-γ cost", "paper")]
    for info in catalogue().values():
        if args.collective and info.collective != args.collective:
            continue
        params = ", ".join(f"{k}={v}" for k, v in info.params.items()) or "-"
        same = same_result(info.collective, info.name)
        rows.append((info.collective, info.name, params, info.rounds, info.p_rule_text, needs_text(info.needs),
                     same.text if same else "not analysed", info.cost_formula, info.paper))
    import shutil

    from .text import fits, records
    if not sys.stdout.isatty():
        print(_table(rows))           # into a pipe or a file: one line per algorithm, for grep and scripts
        return 0
    width = shutil.get_terminal_size().columns    # $COLUMNS, else the terminal's
    print(_table(rows, width=width) if fits(rows, width) else records(rows, width, title=2))
    return 0


def _schedule(args):
    """The schedule named on the command line, small enough for a per-rank view."""
    from .schedules.registry import lookup
    info, params = lookup(args.collective, args.algorithm), parse_params(args.param)
    info.check_size(args.procs, params)
    return info.generate(args.procs, **params)


def cmd_verify(args) -> int:
    from .schedules.registry import catalogue
    from .verify import verify, verify_report
    if args.all:
        if args.collective or args.algorithm or args.procs or args.param:
            raise SpecError("verify --all takes no COLLECTIVE, ALGORITHM, -P or --param, expected "
                            "`verify --all [--max-procs N] [--op OP]`")
        failures = checked = 0
        for info in catalogue().values():
            for params in info.sweep:
                for p in range(1, args.max_procs + 1):
                    if not info.supports(p, params):
                        continue
                    sched = info.generate(p, **params)
                    checked += 1
                    try:
                        verify(sched, args.op)
                    except VerificationError as exc:
                        failures += 1
                        print(f"FAIL {exc}")
        print(f"{checked - failures}/{checked} schedules verified (P = 1..{args.max_procs})")
        return EXIT_FAILED if failures else 0
    if not (args.collective and args.algorithm and args.procs):
        raise SpecError("verify needs COLLECTIVE ALGORITHM -P N, or --all")
    sched = _schedule(args)
    try:
        result = verify_report(sched, args.op)
    except VerificationError as exc:
        print(f"FAILED {exc}")
        return EXIT_FAILED
    print(f"OK {sched.label()} verified for op={result.op}")
    for warning in result.warnings:
        print(f"warning: {warning}")
    return 0


def _print_show(sched, op) -> int:
    """Print a schedule round by round with every rank's partial results."""
    from .schedules import report
    from .verify import verify
    from .verify.symbolic import format_seq
    rep = report(sched)
    print(f"{sched.label()}: {rep.rounds} rounds, {rep.messages} messages, "
          f"every rank active in every round: {'yes' if rep.all_ranks_active_every_round else 'no'}")
    transfers: dict[int, list[str]] = {}

    def value_text(payload):
        return ", ".join(f"[{v.block}]={format_seq(v.seq)}" if sched.nblocks > 1 else format_seq(v.seq)
                         for v in payload)

    def on_transfer(src, dst, op, payload):
        transfers.setdefault(op.round, []).append(f"    {src:>3} → {dst:<3} {op.buf} {value_text(payload)}")

    def on_round_end(rnd, memories):
        print(f"round {rnd + 1}")
        print("\n".join(transfers.get(rnd, ["    (no messages)"])))
        print("  partial results after it:")
        for rank_, mem in enumerate(memories):
            # the result buffer first, then scratch buffers (partial results kept aside)
            names = sorted({buf for buf, _ in mem}, key=lambda name: (name != "data", name))
            parts = []
            for name in names:
                held = sorted((b, v) for (buf, b), v in mem.items() if buf == name)
                text = " ".join((f"[{b}]" if sched.nblocks > 1 else "") + format_seq(v.seq) for b, v in held)
                parts.append(text if name == "data" else f"{name}: {text}")
            print(f"    rank {rank_:>3}: {' | '.join(parts) or '-'}")

    try:
        op = verify(sched, op, on_round_end=on_round_end, on_transfer=on_transfer)
    except VerificationError as exc:
        print(f"FAILED {exc}")
        return EXIT_FAILED
    print(f"verified for op={op}")
    return 0


def cmd_show(args) -> int:
    return _print_show(_schedule(args), args.op)


def _platform(args) -> tuple:
    """(model, platform) from compare's options."""
    from .sim import Platform, make_network, model_named
    from .sim.cli import check_model_options, engine_options, platform_values
    network_only = [opt for opt, value in (("--routing", args.routing), ("--order", args.order),
                                           ("--rail", args.rail),
                                           ("--seed", args.seed)) if value is not None]
    name = args.model or ("alpha-beta-gamma" if args.topology is None else "static")
    check_model_options(args, model=name)
    if name in ("alpha-beta-gamma", "static"):
        if getattr(args, "preset", None) is not None:
            raise SpecError(f"--preset {args.preset} with the {name} model, expected an event-driven model "
                            "(--model loggops, flow, congestion or packet): the preset sets their protocol")
        model = model_named(name)
    else:
        model = model_named(name, options=engine_options(args))
    if args.topology is None:
        if network_only:
            raise SpecError(f"{network_only[0]} given without --topology, expected it only with a network "
                            "(e.g. --topology kary:12,2)")
        if name == "static":
            raise SpecError("--model static needs a network, expected --topology SPEC")
        return model, Platform(**platform_values(args, model=name))
    if name == "alpha-beta-gamma":
        raise SpecError(f"--model alpha-beta-gamma with --topology {args.topology}, expected no network: the "
                        "α-β-γ model has none (use static, loggops, flow or congestion)")
    if args.bandwidth is not None:
        raise SpecError(f"--bandwidth {args.bandwidth:g} with --topology {args.topology}, expected one of them: "
                        "the topology's links carry their own bandwidths (set them in the spec, e.g. "
                        "crossbar:16@bw=1GB/s)")
    network = make_network(args.topology, args.procs, routing=args.routing, order=args.order or "routing",
                           seed=0 if args.seed is None else args.seed, rail=args.rail)
    values = platform_values(args, model=name)
    return model, Platform(alpha=values["alpha"], reduce_bandwidth=values["reduce_bandwidth"], network=network)


def _print_ranking(collective, p, rows, model, platform, verdicts=None, preset=None, profile=None) -> None:
    from .schedules.sizes import CONVENTION
    from .sim import AlphaBetaGamma, StaticContention
    from .tune.recheck import model_line, platform_text, row_key
    options = getattr(model, "options", None)
    if options is not None:   # an event model: its protocol and preset (topocoll.sim.presets)
        from .sim.presets import describe_preset
        print(f"{collective} on P={p}, {model.name} model, {describe_preset(preset, options)}: "
              f"{platform_text(platform, model, p)}" + (f"; profile {profile}" if profile else ""))
    else:
        print(f"{collective} on P={p}, {model.name} model: {platform_text(platform, model, p)}"
              + (f"; profile {profile}" if profile else ""))
    print(model_line(model))
    static = isinstance(model, StaticContention)
    links = platform.network is not None and not isinstance(model, AlphaBetaGamma)
    sizes = list(dict.fromkeys(r.size for r in rows))
    for size in sizes:
        verdict = (verdicts or {}).get(size)
        packet = verdict is not None and verdict.by_packet
        table = [("rank", "algorithm", "params", "rounds", "msgs/rank", "bytes/rank", "time (model)")]
        if packet:
            table[0] += ("time (packet)",)
        if static:
            table[0] += ("congestion", "hottest link")
        elif links:
            table[0] += ("hottest link",)
        mine = [r for r in rows if r.size == size]
        for r in mine:
            shown = ", ".join(f"{k}={v}" for k, v in r.params.items()) or "-"
            row = (str(r.position), r.algorithm, shown, str(r.report.rounds), str(r.report.max_messages_per_rank),
                   _bytes(r.report.max_bytes_per_rank), f"{r.time * 1e6:.2f} µs")
            if packet:
                key = row_key(r)
                row += (f"{verdict.rechecked[key] * 1e6:.2f} µs" if key in verdict.rechecked else "-",)
            if static:
                row += (f"{r.estimate.congestion:.3g}×", r.estimate.hot_link)
            elif links:
                row += (r.estimate.hot_link or "-",)
            table.append(row)
        kind = CONVENTION[collective]
        print(f"\nmessage size {_bytes(size)} ({kind}):" if kind != "none" else "\nno message (barrier):")
        print(_table(table))
        for line in (verdict.lines() if verdict is not None else []):
            print(line)


class _Progress:
    """``compare``'s live output on stderr (stdout keeps only the final tables).

    On a terminal: a tqdm progress bar and one line per (algorithm, size) as
    it finishes, from :data:`PROGRESS_DELAY` s on (the lines of earlier
    results come out then; a comparison done sooner prints only its tables).
    With ``--stream``: the lines at once, wherever stderr goes (no bar unless
    it is a terminal).
    """

    def __init__(self, label: str, *, stream: bool):
        import threading
        import time
        self.clock = time.monotonic
        self.start = self.clock()
        self.delay = 0.0 if stream else PROGRESS_DELAY
        self.tty = sys.stderr.isatty()
        self.active = self.tty or stream
        self.bar, self.waiting, self.live, self.timer = None, [], self.delay == 0, None
        self.lock = threading.Lock()
        if self.tty:
            from tqdm import tqdm
            self.bar = tqdm(desc=label, unit="run", file=sys.stderr, delay=self.delay, leave=False,
                            dynamic_ncols=True)

    def __call__(self, ev) -> None:
        shown = ", ".join(f"{k}={v}" for k, v in (ev.params or {}).items())
        what = ev.algorithm + (f" ({shown})" if shown else "")
        size = _bytes(ev.size) if ev.size else "no message"
        result = f"{ev.time * 1e6:.2f} µs" if ev.estimate is not None else f"left out: {ev.left_out}"
        with self.lock:
            self.waiting.append(f"[{ev.done}/{ev.total}] {size}  {what}: {result}")
            if self.bar is not None:
                if self.bar.total is None:
                    self.bar.total = ev.total
                self.bar.update(1)
            left = self.start + self.delay - self.clock()
            if not self.live and left > 0:
                if self.timer is None:     # started after rank() forked its workers: no thread crosses a fork
                    import threading
                    self.timer = threading.Timer(left, self._flush, kwargs={"now": True})
                    self.timer.daemon = True
                    self.timer.start()
                return
            self._flush()

    def _flush(self, now: bool = False) -> None:
        if now:
            with self.lock:
                self.live = True
                self._flush()
            return
        self.live = True
        for line in self.waiting:
            if self.bar is not None:
                self.bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr, flush=True)
        self.waiting.clear()

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        with self.lock:
            self.live = True          # no more lines: a quick comparison's are dropped
            self.waiting.clear()
            if self.bar is not None:
                self.bar.close()


#: ``compare``'s CPU seconds per message of the candidates, by model (measured: alltoall and allreduce
#: at P = 128, 4 KiB, on torus:8x4x4, ``--jobs 1``, process time; the rank-wise all-to-alls, built in
#: Python, set the rate: 10–14 µs a message, 1.5–3 µs for allreduce). The flow model's max-min sharing
#: grows with the flows in flight: 348 µs a message for the all-to-alls at P = 128, taken as
#: proportional to P (2.7 µs a message and rank).
COMPARE_S_PER_MESSAGE = 1.4e-5
COMPARE_FLOW_S_PER_MESSAGE_RANK = 2.7e-6


def compare_seconds_per_message(model: str, p: int) -> float:
    """CPU seconds per message of ``compare`` with ``model`` at ``p`` ranks (the rates above)."""
    return COMPARE_S_PER_MESSAGE + (COMPARE_FLOW_S_PER_MESSAGE_RANK * p if model == "flow" else 0.0)


def cmd_compare(args) -> int:
    from .schedules.registry import check_collective
    from .tune import rank
    check_collective(args.collective)
    sizes = parse_sizes(args.sizes, option="--sizes")
    model, platform = _platform(args)
    from .outputs import check_outputs, input_files
    from .tune.cli import ranking_csv, ranking_json, write_output
    if args.json == "-" and args.csv == "-":
        raise SpecError("compare: --json - and --csv - both write to stdout, expected one at most")
    check_outputs([("--json", args.json), ("--csv", args.csv)], input_files(args), stdout=("--json", "--csv"))
    progress = _Progress(f"compare {args.collective} P={args.procs}", stream=args.stream)

    def plan(evaluations, messages, processes):
        from .progress import say_first, wall_seconds
        seconds = wall_seconds(messages * compare_seconds_per_message(model.name, args.procs), processes)
        say_first(f"compare {args.collective} P={args.procs}: {evaluations} evaluations, {messages:,} messages, "
                  f"{model.name} model, {processes} process{'es' if processes != 1 else ''}", seconds)

    from .tune.recheck import budget_from, platform_text, rerank_rows
    budget = budget_from(args)
    try:
        rows = rank(args.collective, args.procs, sizes, model=model, platform=platform, op=args.op,
                    workers=args.jobs, on_result=progress if progress.active else None, on_plan=plan)
    finally:
        progress.close()
    rows, verdicts = rerank_rows(args.collective, args.procs, rows, model, platform, budget=budget)
    if args.synthesize:
        rows = _with_synthesized(args, rows, model, platform)
    if "-" not in (args.json, args.csv):
        _print_ranking(args.collective, args.procs, rows, model, platform, verdicts, getattr(args, "preset", None),
                       args.profile)
    if args.json is not None:
        write_output("--json", args.json, ranking_json(args.collective, args.procs, rows, model, platform,
                                                       preset=getattr(args, "preset", None), verdicts=verdicts,
                                                       profile=args.profile,
                                                       network=platform_text(platform, model, args.procs)))
    if args.csv is not None:
        write_output("--csv", args.csv, ranking_csv(rows))
    return 0


def _with_synthesized(args, rows, model, platform):
    """``compare --synthesize``: a schedule synthesized for each size (:func:`topocoll.synth.synthesize`,
    judged by the same model on the same platform) ranked among the fixed algorithms."""
    import dataclasses
    from .schedules.metrics import report
    from .synth import COLLECTIVES, synthesize
    if args.collective not in COLLECTIVES:
        raise SpecError(f"compare --synthesize {args.collective}: expected one of {', '.join(COLLECTIVES)}")
    out = []
    for size in dict.fromkeys(r.size for r in rows):
        mine = [r for r in rows if r.size == size]
        res = synthesize(args.collective, platform.network, args.procs, size, budget=args.synth_budget,
                         seed=0 if args.seed is None else args.seed, model=model, platform=platform,
                         compare_fixed=False, progress=False)
        sched = res.synthesized_schedule
        mine.append(dataclasses.replace(mine[0], algorithm="synthesized", params=dict(sched.params),
                                        report=report(sched), estimate=res.estimate))
        mine.sort(key=lambda r: (r.time, r.algorithm))
        out += [dataclasses.replace(r, position=k) for k, r in enumerate(mine, 1)]
    return out


def cmd_demo(args) -> int:
    """The main job on an embedded default (:mod:`topocoll.demo`)."""
    from . import demo
    return demo.run(args)


# ---- helpers ---------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = _TopParser(prog="topocoll", description=DESCRIPTION)
    parser.add_argument("--version", action=_Version, help="print topocoll's version and exit")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True

    sub.add_parser("algorithms", help=VERBS["algorithms"], epilog=_epilog("algorithms"),
                   description="List the catalogue of collective algorithms.").fill_with(_algorithms_arguments)
    sub.add_parser("verify", help=VERBS["verify"], epilog=_epilog("verify"),
                   description="Symbolically verify one schedule, or every algorithm for P = 1..N."
                   ).fill_with(_verify_arguments)
    sub.add_parser("show", help=VERBS["show"], epilog=_epilog("show"),
                   description="Show who sends what to whom in each round and what each rank holds."
                   ).fill_with(_show_arguments)
    sub.add_parser("compare", help=VERBS["compare"], epilog=_epilog("compare"),
                   description="Rank algorithms by the α-β-γ model of Chan et al. (2007), by static "
                               "link contention on a network (--topology), or by an event-driven "
                               "model (--model loggops|flow|congestion|packet).").fill_with(_compare_arguments)
    sub.add_parser("demo", help=VERBS["demo"], epilog=_epilog("demo"),
                   description="Rank compositing, allreduce (with network noise) and all-to-all algorithms on an "
                               "embedded default network and write report/index.html."
                   ).fill_with(_demo_arguments)

    for module, register, verbs in EXTENSIONS:
        parsers = {verb: sub.add_parser(verb, help=line, epilog=_epilog(verb)) for verb, line in verbs.items()}
        fill = _extension_fill(module, register, parsers)
        for verb_parser in parsers.values():
            verb_parser.fill_with(fill)
    return parser


def _algorithms_arguments(p) -> None:
    p.add_argument("collective", nargs="?", help="only this collective (allreduce, bcast, ...)")
    p.set_defaults(func=cmd_algorithms)


def _schedule_arguments(p, required=True) -> None:
    from .schedules.registry import MAX_P
    p.add_argument("collective", nargs=None if required else "?",
                   help="allreduce, reduce, bcast, barrier, reduce_scatter, allgather, alltoall, ...")
    p.add_argument("algorithm", nargs=None if required else "?", help="as listed by `topocoll algorithms`")
    p.add_argument("-P", "--procs", type=positive_int, required=required,
                   help=f"number of ranks (1..{MAX_P})")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="generator parameter, repeatable (e.g. n=2, root=3, k=4,3, shape=3x2, shape=6x); "
                        "count=ELEMENTS and itemsize=BYTES set the vector")
    p.add_argument("--op", help="operator to verify for: sum, prod, max, min, band, bor, xor, "
                                "noncommutative (default: the strictest the algorithm supports)")


def _verify_arguments(p) -> None:
    _schedule_arguments(p, required=False)
    p.add_argument("--all", action="store_true", help="verify every algorithm and parameter set")
    p.add_argument("--max-procs", type=bounded_int(1, MAX_VERIFY_ALL, what="largest P of --all"), default=32,
                   help=f"largest P for --all (default 32, at most {MAX_VERIFY_ALL})")
    p.set_defaults(func=cmd_verify)


def _show_arguments(p) -> None:
    _schedule_arguments(p)
    p.set_defaults(func=cmd_show)


def _compare_arguments(p) -> None:
    from .schedules.registry import MAX_P
    from .sim import MODELS
    from .sim.cli import add_engine_arguments
    from .tune.rank import MAX_WORKERS
    p.add_argument("collective")
    p.add_argument("-P", "--procs", type=positive_int, required=True, help=f"number of ranks (1..{MAX_P})")
    p.add_argument("--sizes", default="8,64K,4M",
                   help="message sizes in bytes, MPI's convention: per destination for alltoall, per rank "
                        "for allgather, the whole vector otherwise (default 8,64K,4M)")
    p.add_argument("--op", default="sum", help="operator the algorithms must be correct for (default sum)")
    add_platform_arguments(p, alpha="software overhead per message in s (default 1e-6, or --profile's)",
                           bandwidth="link bandwidth in B/s of the α-β-γ model (default 2e9); not with --topology",
                           reduce="reduction throughput in B/s (default 4e9, or --profile's)")
    p.add_argument("--topology", metavar="SPEC",
                   help="rank on this network with static routing and link contention instead of the "
                        "α-β-γ model (e.g. kary:12,2, torus:8x8x8, ibnet:FILE; see `topocoll topo`)")
    add_ppn_argument(p)
    p.add_argument("--routing", help="routing engine (default: the topology family's); with --topology")
    p.add_argument("--order",
                   help="node order: routing (the routing engine's, default), identity, random, "
                        "blocked:2x2x2, hostfile:FILE, slurm:FILE; with --topology")
    p.add_argument("--rail", default=None, metavar="first|round-robin|N",
                   help="multi-rail hosts in hostfile:/slurm: orders (as `topocoll topo --rail`); with --topology")
    p.add_argument("--seed", type=seed, default=None,
                   help="seed of a random node order (default 0); with --topology")
    p.add_argument("--model", choices=tuple(MODELS),
                   help="alpha-beta-gamma (default without --topology), static (default with it), or an "
                        "event-driven model: loggops, flow, congestion, packet (`topocoll simulate`)")
    p.add_argument("--jobs", type=bounded_int(1, MAX_WORKERS, what="worker processes"), default=None,
                   metavar="N", help="evaluate candidates on N worker processes (default: every CPU, in-process "
                                     f"when the work is small; 1: in-process; at most {MAX_WORKERS})")
    p.add_argument("--stream", action="store_true",
                   help="print each candidate's result on stderr as it finishes (on a terminal this and a "
                        "progress bar show anyway after "
                        f"{PROGRESS_DELAY:g} s); stdout keeps only the final tables")
    from .outputs import add_json_argument     # the verb's imports wait until it is parsed (module doc)
    add_json_argument(p, "the ranking")
    p.add_argument("--csv", metavar="FILE", help="also write the ranking as CSV (- : to stdout, instead of the table)")
    from .tune.recheck import add_recheck_arguments
    add_recheck_arguments(p)
    p.add_argument("--synthesize", action="store_true",
                   help="also rank a schedule synthesized for the network at each size (`topocoll synthesize`; "
                        "allgather, reduce_scatter, allreduce, bcast, alltoall; --seed seeds it)")
    p.add_argument("--synth-budget", type=finite_float(unit="s"), default=10.0, metavar="SECONDS",
                   help="wall-clock seconds of synthesis per size with --synthesize (default 10)")
    add_engine_arguments(p)
    p.set_defaults(func=cmd_compare)


def _demo_arguments(p) -> None:
    from . import demo
    demo.add_arguments(p)
    p.set_defaults(func=cmd_demo)


class _Listed:
    """The subparsers an area's ``add_*_parser`` is handed when its verbs are
    filled in: ``add_parser(verb, ...)`` returns the parser already listed."""

    _SETTINGS = ("description", "epilog", "formatter_class", "usage")

    def __init__(self, module: str, parsers: dict):
        self.module, self.parsers = module, parsers

    def add_parser(self, name, *, help=None, **settings):
        if name not in self.parsers:
            raise TypeError(f"{self.module} registers verb {name!r}, expected it in topocoll.cli.EXTENSIONS")
        unknown = set(settings) - set(self._SETTINGS)
        if unknown:
            raise TypeError(f"{self.module}: add_parser({name!r}) with {', '.join(sorted(unknown))}, expected "
                            f"only help and {', '.join(self._SETTINGS)}")
        parser = self.parsers[name]
        for key, value in settings.items():
            setattr(parser, key, value)
        return parser


def _extension_fill(module: str, register: str, parsers: dict):
    """Fill the verbs of ``module`` (all of them: one registration adds them together)."""

    def fill(_parser) -> None:
        for verb_parser in parsers.values():
            verb_parser.fill_with(None)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                raise SpecError(f"{' and '.join(parsers)} need {module}, which this installation lacks") from None
            raise
        getattr(mod, register)(_Listed(module, parsers))

    return fill


def main(argv: "list[str] | tuple[str, ...] | None" = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        apply_ppn(args)
        if getattr(args, "profile", None) is not None and getattr(args, "topology", None):
            from .sim.cli import apply_profile_to_nodes   # the profile's intra-node costs for SPEC+ppn=N
            apply_profile_to_nodes(args)
        return args.func(args)
    except TopocollError as exc:
        print(f"topocoll: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _ParserExit as done:
        return done.status
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("topocoll: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
