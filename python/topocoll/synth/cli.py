"""``topocoll synthesize COLLECTIVE --topology SPEC -P N --size S``: a schedule made for the network.

Prints the seed, every variant tried (the plan's own estimate and the
model's time), the best synthesized schedule, the best fixed algorithm by
the same model and their ratio; writes the schedule file (``--out``) that
``simulate``, ``show``, ``verify``, ``compare`` and the MPI executor read as
``synthesized`` with ``--param file=PATH`` (``docs/synthesis.md``).
"""

from __future__ import annotations

from ..argtypes import bounded_int, finite_float, seed
from ..errors import SpecError
from ..outputs import add_json_argument, check_outputs, json_output, write_json

__all__ = ["add_synthesize_parser", "cmd_synthesize"]


def add_synthesize_parser(sub) -> None:
    from ..sim import MODELS
    from ..sim.cli import add_engine_arguments
    from .plan import COLLECTIVES
    from .routes import MAX_SYNTH_P
    from .search import MAX_BUDGET
    p = sub.add_parser("synthesize", help="a schedule made for a network's routes (allgather, reduce_scatter, "
                                          "allreduce, bcast, alltoall), ranked beside the fixed algorithms",
                       description=__doc__.splitlines()[0])
    p.add_argument("collective", help=", ".join(COLLECTIVES))
    p.add_argument("--topology", metavar="SPEC", required=True,
                   help="the network (e.g. torus:4x4, kary:8,2, xgft:2;8,8;8,4, dragonfly:4,2,2, ibnet:FILE; "
                        "see `topocoll topo`)")
    p.add_argument("-P", "--procs", type=bounded_int(1, MAX_SYNTH_P, what="ranks"), required=True,
                   help=f"number of ranks (1..{MAX_SYNTH_P})")
    p.add_argument("--size", required=True,
                   help="message size in bytes, MPI's convention (per rank for allgather, per destination for "
                        "alltoall, the whole vector otherwise); K/M/G suffixes")
    from ..argtypes import add_ppn_argument
    add_ppn_argument(p)
    p.add_argument("--routing", help="routing engine (default: the topology family's); single-path only")
    p.add_argument("--order", default="routing",
                   help="node order: routing (default), identity, random, blocked:2x2x2, hostfile:FILE, slurm:FILE")
    p.add_argument("--order-seed", type=seed, default=0, help="seed of a random node order (default 0)")
    p.add_argument("--rail", default=None, metavar="first|round-robin|N",
                   help="multi-rail hosts in hostfile:/slurm: orders (as `topocoll topo --rail`)")
    p.add_argument("--root", type=int, default=0, help="broadcast root (default 0)")
    p.add_argument("--model", choices=tuple(MODELS), default="flow",
                   help="the model that judges the variants and the fixed algorithms (default flow)")
    p.add_argument("--alpha", type=finite_float(unit="s"), default=None,
                   help="software overhead per message in s (default 1e-6, or --profile's)")
    p.add_argument("--reduce-bandwidth", type=finite_float(strict=True, unit="B/s"), default=None,
                   help="reduction throughput in B/s (default 4e9, or --profile's)")
    p.add_argument("--budget", type=finite_float(unit="s"), default=30.0,
                   help=f"wall-clock seconds for trying variants (default 30, at most {MAX_BUDGET:g}); the first "
                        "variant and the fixed algorithms always run")
    p.add_argument("--seed", type=seed, default=0, help="seed of the greedy's random choices (default 0)")
    p.add_argument("--no-fixed", action="store_true",
                   help="do not rank the fixed algorithms (the synthesized schedule is returned as it is)")
    p.add_argument("--out", "-o", metavar="FILE",
                   help="write the schedule file (JSON; FILE.gz compressed)")
    add_json_argument(p, "the result (variants tried, best synthesized and best fixed, ratio)")
    add_engine_arguments(p)
    p.set_defaults(func=cmd_synthesize)


def cmd_synthesize(args) -> int:
    from ..argtypes import parse_sizes
    from ..sim import Platform, make_network
    from ..sim.cli import check_model_options, engine_options, platform_values
    from ..text import table
    from .search import synthesize
    sizes = parse_sizes(args.size, option="--size")
    # every output checked before the work (a budget's worth), none to the same file
    check_outputs([("--out", args.out), *json_output(args)], stdout=("--json",))
    if len(sizes) != 1:
        raise SpecError(f"--size {args.size}: {len(sizes)} sizes, expected one (a schedule is made for one size)")
    check_model_options(args, model=args.model)
    network = make_network(args.topology, args.procs, routing=args.routing, order=args.order, seed=args.order_seed,
                           rail=args.rail)
    values = platform_values(args, model=args.model)
    platform = Platform(alpha=values["alpha"], reduce_bandwidth=values["reduce_bandwidth"], network=network)
    options = engine_options(args) if args.model in ("loggops", "flow", "congestion", "packet") else None
    result = synthesize(args.collective, network, args.procs, sizes[0], budget=args.budget, seed=args.seed,
                        model=args.model, platform=platform, root=args.root, compare_fixed=not args.no_fixed,
                        options=options)
    if args.out:
        result.save(args.out)
    if write_json(args, as_dict(result, args.out)):
        return 0
    print(f"synthesize {args.collective} on P={args.procs}, {sizes[0]} B, {result.model} model: "
          f"{platform.describe()}")
    print(f"seed {result.seed}, budget {result.budget:g} s: {len(result.tried)} variants in {result.wall:.2f} s "
          f"({result.cpu:.2f} s CPU)")
    rows = [("variant", "transfers", "steps", "planned", "model", "CPU")]
    for t in result.tried:
        rows.append((t.text(), f"{t.transfers:,}", str(t.rounds), f"{t.planned * 1e6:.2f} µs",
                     f"{t.time * 1e6:.2f} µs", f"{t.cpu:.2f} s"))
    print(table(rows))
    print(f"best synthesized: {result.synthesized_time * 1e6:.2f} µs ({result.synthesized_schedule.label()}); "
          f"link test: {'every step within the links' if not result.link_test else result.link_test[0]}")
    if result.best_fixed is not None:
        name, params, t = result.best_fixed
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        print(f"best fixed: {name}{'(' + shown + ')' if shown else ''}: {t * 1e6:.2f} µs; synthesized ÷ best fixed "
              f"= {result.synthesized_ratio:.3f}")
        if result.fixed_won:
            print(f"the fixed algorithm {name} is faster: returning its schedule (ratio {result.ratio:.3f})")
    if args.out:
        print(f"wrote {args.out}" + (" (it names the fixed algorithm)" if result.fixed_won else ""))
    return 0


def as_dict(result, out=None) -> dict:
    """The result as ``--json`` prints it."""
    return {
        "collective": result.collective, "P": result.p, "size": result.size, "model": result.model,
        "seed": result.seed, "budget_s": result.budget, "wall_s": result.wall, "cpu_s": result.cpu,
        "time_s": result.time, "synthesized_time_s": result.synthesized_time,
        "best_fixed": None if result.best_fixed is None else {"algorithm": result.best_fixed[0],
                                                              "params": {k: str(v) for k, v in
                                                                         result.best_fixed[1].items()},
                                                              "time_s": result.best_fixed[2]},
        "ratio": result.ratio, "synthesized_ratio": result.synthesized_ratio, "fixed_won": result.fixed_won,
        "link_test": result.link_test, "routes_sha256": result.routes.sha256, "out": out,
        "tried": [{"variant": {**t.variant.params(), "chains": t.chains}, "planned_s": t.planned, "time_s": t.time,
                   "transfers": t.transfers, "steps": t.rounds, "cpu_s": t.cpu} for t in result.tried],
    }
