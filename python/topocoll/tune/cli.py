"""``topocoll tune``: the decision table over a grid of P and sizes, its views and tuning files.

Also the ``--json``/``--csv`` writers of ``topocoll compare`` (:func:`ranking_json`,
:func:`ranking_csv`). Every file is checked writable before any work and
written through a temporary file renamed into place (:mod:`topocoll.outputs`),
so bad input or a failure leaves no partial file: every output is made before the first is written.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

from ..argtypes import add_platform_arguments, add_ppn_argument, bounded_int, finite_float, parse_size, seed
from .. import outputs
from ..errors import SpecError

#: most P values or sizes a range expands to
MAX_AXIS = 64
#: most panels (collectives × P) of a plot
MAX_PANELS = 48

__all__ = ["MAX_AXIS", "add_tune_parser", "cmd_tune", "parse_procs", "parse_size_range", "ranking_csv",
           "ranking_json", "write_output"]


def parse_procs(text: str) -> list[int]:
    """``16,64,144`` or ``2..64`` (every power of two in the range, and both ends); at most
    :data:`MAX_AXIS` values.

    Examples
    --------
    >>> parse_procs("2..20,144")
    [2, 4, 8, 16, 20, 144]
    """
    return _axis(text, "-P", int_only=True)


def parse_size_range(text: str) -> list[int]:
    """``8,64K,4M`` or ``8..4M`` (every power of two in the range, and both ends).

    Examples
    --------
    >>> parse_size_range("8..64")
    [8, 16, 32, 64]
    """
    return _axis(text, "--sizes", int_only=False)


def _axis(text: str, option: str, *, int_only: bool) -> list[int]:
    parts = str(text).split(",")
    if not str(text).strip() or any(not part.strip() for part in parts):
        raise SpecError(f"{option} {text!r}, expected values separated by single commas, or a range LO..HI")
    values: set[int] = set()

    def one(word):
        if int_only:
            if not re.fullmatch(r"[0-9]+", word.strip()):
                raise SpecError(f"{option} {text!r}: {word!r} is not a whole number of ranks")
            return int(word)
        return parse_size(word)

    for part in parts:
        if ".." in part:
            lo_text, hi_text = part.split("..", 1)
            lo, hi = one(lo_text), one(hi_text)
            if lo < 1 or hi < lo:
                raise SpecError(f"{option} {text!r}: range {part.strip()} is empty, expected LO..HI with "
                                "1 <= LO <= HI")
            values.add(lo)
            values.add(hi)
            x = 1
            while x <= hi:
                if x >= lo:
                    values.add(x)
                x *= 2
                if len(values) > MAX_AXIS:
                    break
        else:
            values.add(one(part))
        if len(values) > MAX_AXIS:
            raise SpecError(f"{option} {text!r}: more than {MAX_AXIS} values, expected at most {MAX_AXIS}")
    if int_only and min(values) < 1:
        raise SpecError(f"{option} {text!r}: P=0, expected at least 1 rank")
    return sorted(values)


# ---- writing files -------------------------------------------------------------------------

def check_output(option: str, path) -> Path | None:
    """``path`` checked writable now, before any work (:func:`topocoll.outputs.check_output`); ``-``
    (stdout) and None pass."""
    return outputs.check_output(option, path, stdout=True)


def write_output(option: str, path, text: str) -> None:
    """Write ``text`` to ``path`` whole (``-``: stdout; :func:`topocoll.outputs.write_text`)."""
    outputs.write_text(path, text, option=option)


# ---- compare --json / --csv ----------------------------------------------------------------

def _ranking_rows(rows) -> list[dict]:
    out = []
    for r in rows:
        out.append({"size": r.size, "position": r.position, "algorithm": r.algorithm,
                    "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in r.params.items()},
                    "rounds": r.report.rounds, "messages_per_rank": r.report.max_messages_per_rank,
                    "bytes_per_rank": r.report.max_bytes_per_rank, "time_s": r.time,
                    "congestion": r.estimate.congestion, "hottest_link": r.estimate.hot_link})
    return out


def ranking_json(collective: str, p: int, rows, model, platform, *, preset: str | None = None, verdicts=None,
                 network: str | None = None, profile: str | None = None) -> str:
    """``topocoll compare --json``: the ranking as one JSON object; with
    ``verdicts`` (:func:`.recheck.rerank_rows`) each size's model, settings,
    caveats and packet-model re-rank (``answers``), and each row's packet
    time where it was re-ranked (``packet_time_s``)."""
    doc = {"collective": collective, "p": p, "model": model.name, "preset": preset, "platform": platform.describe(),
           "profile": profile, "rows": _ranking_rows(rows)}
    if verdicts is not None:
        from .recheck import row_key
        doc["network"] = network or platform.describe()
        doc["answers"] = [{"size": size, **v.as_dict()} for size, v in verdicts.items()]
        for row, r in zip(doc["rows"], rows):
            row["packet_time_s"] = verdicts[r.size].rechecked.get(row_key(r))
    return json.dumps(doc, indent=1) + "\n"


def ranking_csv(rows) -> str:
    """``topocoll compare --csv``: one line per (size, algorithm)."""
    buf = io.StringIO()
    fields = ["size", "position", "algorithm", "params", "rounds", "messages_per_rank", "bytes_per_rank", "time_s",
              "congestion", "hottest_link"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in _ranking_rows(rows):
        row["params"] = ";".join(f"{k}={v}" for k, v in row["params"].items())
        row["time_s"] = f"{row['time_s']:.6g}"
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue()


# ---- plot ----------------------------------------------------------------------------------

def check_plot(table) -> None:
    """Refuse a plot of more than :data:`MAX_PANELS` panels (before any file is written)."""
    panels = len(table.collectives) * len(table.procs)
    if panels > MAX_PANELS:
        raise SpecError(f"--plot: {panels} panels (collectives × P), expected at most {MAX_PANELS}: "
                        "tune fewer P or collectives")


def plot(table, path) -> None:
    """Time against size per algorithm (each algorithm's best parameters and order), one panel per
    (collective, P); the tuned choice at each size is marked. Written atomically."""
    from ..viz.figure import new_figure, save
    check_plot(table)
    panels = [(coll, p) for coll in table.collectives for p in table.procs]
    cols = min(4, len(table.procs))
    nrows = -(-len(panels) // cols)
    fig = new_figure(4.2 * cols, 3.4 * nrows)
    fig.set_layout_engine("tight")
    axes = fig.subplots(nrows, cols, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (coll, p) in zip(axes.flat, panels):
        curves: dict[str, list[tuple[int, float]]] = {}
        chosen = []
        for size in table.sizes:
            pt = table.points.get((coll, p, size))
            if pt is None:
                continue
            for name, choice in pt.fixed().items():
                curves.setdefault(name, []).append((size, choice.time))
            chosen.append((size, pt.best.time, pt.best.algorithm))
        for name, pts in sorted(curves.items()):
            xs, ys = zip(*pts)
            ax.plot(xs, [y * 1e6 for y in ys], marker=".", linewidth=1, label=name)
        if chosen:
            ax.scatter([c[0] for c in chosen], [c[1] * 1e6 for c in chosen], s=90, facecolors="none",
                       edgecolors="black", linewidths=1.5, label="tuned choice", zorder=5)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{coll}, P={p}", fontsize=9)
        ax.set_xlabel("message size (B)", fontsize=8)
        ax.set_ylabel("time (µs, model)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    fig.suptitle(f"topocoll tune: {table.model} model", fontsize=10)
    save(fig, path, "--plot")


# ---- the verb ------------------------------------------------------------------------------

_OUTPUTS = (("--json", "json"), ("--csv", "csv"), ("--plot", "plot"), ("--openmpi-rules", "openmpi_rules"),
            ("--mpich-json", "mpich_json"), ("--topocoll-json", "topocoll_json"))


def cmd_tune(args) -> int:
    from ..sim import model_named
    from ..verify import OPERATORS
    from .tuner import tune

    collectives = [c.strip() for c in args.collectives.split(",")]
    if any(not c for c in collectives):
        raise SpecError(f"tune: collectives {args.collectives!r}, expected names separated by single commas")
    stdout_users = [opt for opt, dest in _OUTPUTS if str(getattr(args, dest) or "") == "-"]
    if len(stdout_users) > 1:
        raise SpecError(f"tune: {' and '.join(stdout_users)} both write to stdout, expected one at most")
    if args.plot == "-":
        raise SpecError("tune: --plot -, expected a file name (the plot is a PNG, SVG or PDF)")
    outputs.check_outputs([(opt, getattr(args, dest)) for opt, dest in _OUTPUTS], outputs.input_files(args),
                          stdout=[opt for opt, dest in _OUTPUTS if dest != "plot"])
    if args.plot is not None and Path(args.plot).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise SpecError(f"--plot {args.plot!r}, expected a .png, .svg or .pdf file")
    procs = parse_procs(args.procs)
    if args.plot is not None and len(collectives) * len(procs) > MAX_PANELS:     # before any work
        raise SpecError(f"--plot: {len(collectives) * len(procs)} panels (collectives × P), expected at most "
                        f"{MAX_PANELS}: tune fewer P or collectives")
    try:
        commutative, idempotent = OPERATORS[args.op]
    except KeyError:
        raise SpecError(f"tune: --op {args.op!r}, expected one of {', '.join(OPERATORS)}") from None
    model = None
    if args.model is not None:
        if args.model == "static" and args.topology is None:
            raise SpecError("--model static needs a network, expected --topology SPEC")
        if args.model == "alpha-beta-gamma" and args.topology is not None:
            raise SpecError(f"--model alpha-beta-gamma with --topology {args.topology}, expected no network")
        model = model_named(args.model)
    if args.preset is not None:
        from ..sim.engine import EVENT_MODELS, EngineOptions
        from ..sim.presets import apply_preset
        if args.model not in EVENT_MODELS:
            raise SpecError(f"--preset {args.preset} with the {args.model or 'default'} model, expected an "
                            f"event-driven model (--model {' / '.join(EVENT_MODELS)}): the preset sets their protocol")
        model = model_named(args.model, options=apply_preset(EngineOptions(), args.preset))
        model.name = f"{args.model} (preset {args.preset})"   # the tables' header names the preset
    model, platform = _with_profile(args, model)
    orders = [o.strip() for o in args.orders.split(",")] if args.orders else None
    if orders is not None and any(not o for o in orders):
        raise SpecError(f"--orders {args.orders!r}, expected names separated by single commas")
    libraries = [lib.strip() for lib in args.libraries.split(",")] if args.libraries else []
    explain = None
    if args.explain is not None:
        explain = (_one_int("--explain P", args.explain[0]), parse_size(args.explain[1]))
    from ..progress import bar, say_first
    from .recheck import budget_from
    shown = {}

    def plan(evaluations, batches, processes, seconds):
        say_first(f"tune: {evaluations} evaluations of {batches} schedules on {processes} "
                  f"process{'es' if processes != 1 else ''}", seconds)
        shown["bar"] = bar(evaluations, "tune", unit="evaluation")

    def progress(done, total):
        if shown.get("bar") is not None:
            shown["bar"].update(done - shown["bar"].n)

    try:
        table = tune(collectives, procs, parse_size_range(args.sizes), topology=args.topology,
                     routing=args.routing, orders=orders, model=model, alpha=platform["alpha"],
                     bandwidth=platform["bandwidth"], reduce_bandwidth=platform["reduce_bandwidth"],
                     commutative=commutative, idempotent=idempotent,
                     libraries=libraries, budget=args.budget, workers=args.jobs, itemsize=args.itemsize,
                     seed=args.seed, keep=args.keep, on_progress=progress, on_plan=plan, recheck=budget_from(args),
                     synthesize=args.synthesize, synth_budget=args.synth_budget)
    finally:
        if shown.get("bar") is not None:
            shown["bar"].close()
    table.profile = args.profile           # the header and the JSON name the profile used
    if explain is not None:
        text = [table.explain(coll, explain[0], explain[1]) for coll in table.collectives]
        body = "\n\n".join(text)
    else:
        body = table.text()
    if not stdout_users:
        print(body)                      # its header names the seed
    else:
        print(f"tune: seed {table.seed} (of node orders named random; every other choice is deterministic)",
              file=sys.stderr)
    from .emit import emit, how_to_load, synthesized_skips
    writers = {"json": lambda: json.dumps(table.to_json(), indent=1) + "\n", "csv": table.to_csv,
               "openmpi_rules": lambda: emit(table, "openmpi"), "mpich_json": lambda: emit(table, "mpich"),
               "topocoll_json": lambda: emit(table, "topocoll")}
    # every output made before the first is written: a refusal (an emitter, the plot's panels) writes nothing
    texts = {dest: writers[dest]() for opt, dest in _OUTPUTS if getattr(args, dest) is not None and dest != "plot"}
    if args.plot is not None:
        check_plot(table)
    for opt, dest in _OUTPUTS:
        path = getattr(args, dest)
        if path is None:
            continue
        if dest == "plot":
            plot(table, path)
        else:
            write_output(opt, path, texts[dest])
        if str(path) != "-":
            print(f"wrote {path}", file=sys.stderr)
            target = {"openmpi_rules": "openmpi", "mpich_json": "mpich", "topocoll_json": "topocoll"}.get(dest)
            if target is not None:
                print(f"  load it with: {how_to_load(target, str(path))}", file=sys.stderr)
            if target in ("openmpi", "mpich"):   # a synthesized winner runs under topocoll only: say what stands in
                for line in synthesized_skips(table, f"{target}-5.0"):
                    print(f"  {line}", file=sys.stderr)
    return 0


def _with_profile(args, model):
    """``tune --profile FILE``: the model (an event model gets the profile's LogGOPS costs, the preset
    applied over them: :func:`topocoll.sim.cli.profile_engine_options`) and the platform's ``alpha``,
    ``bandwidth``, ``reduce_bandwidth``: a flag given explicitly, else the profile's for the model,
    else the built-in default (:func:`topocoll.sim.cli.platform_values`)."""
    from ..sim import model_named
    from ..sim.cli import platform_values, profile_engine_options
    name = args.model or ("static" if args.topology else "alpha-beta-gamma")
    options = profile_engine_options(args)
    if options is not None and model is not None and getattr(model, "options", None) is not None:
        label = model.name
        model = model_named(args.model, options=options)
        model.name = label
    return model, platform_values(args, model=name)


def _one_int(option: str, text: str) -> int:
    if not re.fullmatch(r"[0-9]+", str(text).strip()):
        raise SpecError(f"{option} {text!r}, expected a whole number")
    return int(text)


def add_tune_parser(sub) -> None:
    """Register ``topocoll tune`` (called by :mod:`topocoll.cli` through ``EXTENSIONS``)."""
    from ..sim import MODELS
    from .libdefaults import LIBRARIES
    from .rank import MAX_WORKERS
    from .tuner import DEFAULT_ORDERS, KEEP

    p = sub.add_parser("tune", help="the best algorithm per (P, size) on a network, the MPI libraries' defaults, "
                                    "tuning files", description=(
        "Tune collectives over a grid of P and message sizes: the fastest algorithm, parameters and node "
        "order at each point by a model, the runner-up and margin, the gain over Open MPI's and MPICH's "
        "default choice; as a table, JSON, CSV, a plot, and tuning files for Open MPI, MPICH and "
        "topocoll.mpi's algorithm='auto'."))
    p.add_argument("collectives", help="comma-separated: allreduce, reduce_scatter, alltoall, bcast, allgather")
    p.add_argument("-P", "--procs", required=True, help="numbers of ranks: 16,64,144 or a range 2..64 (powers of two "
                                                        f"and both ends), at most {MAX_AXIS}")
    p.add_argument("--sizes", default="8..4M", help="message sizes in bytes, MPI's convention: 8,64K,4M or a range "
                                                   "8..4M (powers of two), default 8..4M")
    p.add_argument("--op", default="sum", help="operator the algorithms must be correct for: sum (commutative, "
                                               "default), max (also idempotent), noncommutative, ...")
    p.add_argument("--topology", metavar="SPEC", help="network (kary:12,2, torus:8x8x8, ...): static contention "
                                                      "model; without it the α-β-γ model")
    add_ppn_argument(p)
    p.add_argument("--routing", help="routing engine (default: the topology family's)")
    p.add_argument("--orders", help=f"node orders searched, comma-separated (default {','.join(DEFAULT_ORDERS)}; "
                                    "blocked: 2x2x2 blocks of a torus; random: seeded by --seed)")
    p.add_argument("--seed", type=seed, default=0, help="seed of a random node order (default 0; printed)")
    p.add_argument("--model", choices=tuple(MODELS), help="alpha-beta-gamma (default without --topology), static "
                                                          "(default with it), or an event-driven model")
    from ..sim.presets import PRESETS
    p.add_argument("--preset", choices=tuple(PRESETS), default=None,
                   help="validated protocol defaults of the event-driven models (topocoll.sim.presets): smpi or mpi; "
                        "default none (the engine's defaults)")
    add_platform_arguments(p, alpha="s per message (default 1e-6, or --profile's)",
                           bandwidth="link bandwidth of the α-β-γ model in B/s (default 2e9, or --profile's)",
                           reduce="bytes reduced per second (default 4e9, or --profile's)")
    p.add_argument("--profile", metavar="FILE",
                   help="machine profile from `topocoll calibrate` (or --from-osu): its α, bandwidth, γ and, for "
                        "the event models, LogGP costs become the defaults; on SPEC+ppn=N its intra-node level "
                        "sets the node's lat and bw where the spec leaves them out (docs/calibration.md)")
    p.add_argument("--libraries", default=",".join(LIBRARIES),
                   help=f"library defaults to compare with (default {','.join(LIBRARIES)}; empty: none)")
    p.add_argument("--budget", type=finite_float(strict=True, unit="s"), default=None,
                   help="seconds after which extra parameter values are skipped (the fixed parameters and the "
                        "libraries' choices are always evaluated)")
    p.add_argument("--jobs", type=bounded_int(1, MAX_WORKERS, what="worker processes"), default=None, metavar="N",
                   help="worker processes (default: every CPU; 1: in-process)")
    p.add_argument("--itemsize", type=bounded_int(1, 1 << 20, what="bytes per element"), default=8,
                   help="bytes per element (default 8, MPI_DOUBLE)")
    p.add_argument("--keep", type=bounded_int(1, 64, what="parameter values kept"), default=KEEP,
                   help=f"parameter values kept per algorithm after α-β-γ pruning (default {KEEP})")
    from .recheck import add_recheck_arguments
    add_recheck_arguments(p)
    p.add_argument("--synthesize", metavar="DIR",
                   help="also rank the schedules `topocoll synthesize --out` wrote into DIR, each at the P and node "
                        "order whose routes it was made for (needs --topology)")
    p.add_argument("--synth-budget", type=finite_float(unit="s"), default=None, metavar="SECONDS",
                   help="with --synthesize: first synthesize for this network, into DIR, every grid point that has "
                        "no file there (seconds of search per point)")
    p.add_argument("--explain", nargs=2, metavar=("P", "SIZE"),
                   help="print why the winner wins at one grid point instead of the table")
    outputs.add_json_argument(p, "the decision table")
    p.add_argument("--csv", metavar="FILE", help="write one CSV line per grid point (- for stdout)")
    p.add_argument("--plot", metavar="FILE", help="plot time against size per algorithm (.png, .svg, .pdf)")
    p.add_argument("--openmpi-rules", metavar="FILE", help="write Open MPI's coll_tuned dynamic rules (5.0.x)")
    p.add_argument("--mpich-json", metavar="FILE", help="write MPICH's collective selection JSON (5.0.x)")
    p.add_argument("--topocoll-json", metavar="FILE", help="write the tuning table of topocoll.mpi algorithm='auto'")
    p.set_defaults(func=cmd_tune)
