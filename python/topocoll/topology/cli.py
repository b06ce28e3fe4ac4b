"""``topocoll topo SPEC [--routing R] [--order O] [--pattern P] [--ebb N] [--draw F] [--export-simgrid F]``.

Prints a topology's counts, diameter and bisection bandwidth (theoretical, or a
max-flow upper bound for imported fabrics);
with ``--pattern`` the maximum link load and the link-load histogram of
that pattern under the routing and node order; with ``--ebb N`` the
effective bisection bandwidth over N random bisections (seed printed); with
``--export-simgrid FILE`` the network and its routes as a SimGrid platform.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ..argtypes import bounded_int, seed
from ..errors import SpecError
from ..outputs import add_json_argument, check_outputs, input_files, json_output, write_json
from ..viz.figure import check_path
from .draw import MAX_NODES, draw_svg
from .io.simgrid import check_export, write_simgrid
from .metrics import effective_bisection_bandwidth, link_loads, load_histogram, pattern_pairs, summary
from .order import describe_rails, node_order
from .routing import make_router
from .spec import parse_topology

__all__ = ["add_topo_parser", "topo_command"]

#: command-line limits: ranks placed (as the schedules' largest P) and random bisections
MAX_RANKS = 1 << 20
MAX_BISECTIONS = 100_000


def add_topo_parser(subparsers):
    """Register the ``topo`` verb on an argparse subparsers object."""
    p = subparsers.add_parser(
        "topo", help="a network's counts, diameter, bisection and effective bisection bandwidth, link loads",
        description=__doc__.splitlines()[0])
    p.add_argument("spec", help="crossbar:N, kary:k,n, xgft:h;m..;w.., pgft:h;m..;w..;p.., table1:N, "
                               "torus:8x8x16, torus:8x8x4m, mesh:AxB, dragonfly:a,p,h[,g], "
                               "simgrid-dragonfly:g,l;c,l;r,l;n, aries:g[,rows,cols,nodes], ibnet:PATH[@map=FILE], "
                               "simgrid:PLATFORM.xml, rtr:FILE; options @bw=,lat=,CLASS.bw=,CLASS.lat= "
                               "(e.g. @host.lat=200ns)")
    p.add_argument("--routing", default=None,
                   help="engine[:key=value,...], e.g. d-mod-k, ftree, min-hop, up-down, random:seed=3, "
                        "dor:order=zyx, adaptive, minimal, valiant, ibroute:path=DIR (family default if omitted)")
    p.add_argument("--order", default="routing",
                   help="identity, routing, random, blocked:2x2x2, hostfile:PATH, slurm:PATH (default routing)")
    p.add_argument("--rail", default=None, metavar="first|round-robin|N",
                   help="multi-rail hosts in hostfile:/slurm: orders: first adapter (default), round-robin "
                        "(one rank per adapter, in turn) or adapter N (0-based: 0 = mlx5_0 or HCA-1)")
    p.add_argument("--ranks", type=bounded_int(1, MAX_RANKS, what="ranks"), default=None,
                   help="number of ranks (all endpoints by default)")
    p.add_argument("--pattern", action="append", default=[],
                   help="shift:S, random or alltoall; repeatable")
    p.add_argument("--ebb", type=bounded_int(0, MAX_BISECTIONS, what="bisections"), default=0, metavar="N",
                   help=f"effective bisection bandwidth over N random bisections (at most {MAX_BISECTIONS})")
    p.add_argument("--seed", type=seed, default=0, help="seed of random orders, patterns and bisections (default 0)")
    p.add_argument("--draw", default=None, metavar="OUT.svg", help="draw the topology with the last pattern's loads")
    p.add_argument("--export-simgrid", default=None, metavar="FILE.xml",
                   help="write the network and its routes (the --routing engine's) as a SimGrid platform that SMPI "
                        "runs (one Full zone; at most 1024 endpoints)")
    p.add_argument("--strict", action="store_true",
                   help="fail on the first defect of real-fabric input (a corrupt or incomplete ibroute dump, a "
                        "SimGrid platform or rtr dump element that is ignored or approximated) instead of a warning")
    add_json_argument(p, "the numbers")
    p.set_defaults(func=topo_command)
    return p


def _bw(x):
    if x is None:
        return "n/a"
    for unit, f in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6)):
        if x >= f:
            return f"{x / f:.4g} {unit}"
    return f"{x:.4g} B/s"


def _strict_option(args) -> dict:
    """``strict=True`` for an engine that reads real-fabric dumps when ``--strict`` is given."""
    name = (args.routing or "").partition(":")[0].strip()
    return {"strict": True} if getattr(args, "strict", False) and name == "ibroute" else {}


def topo_command(args) -> int:
    """Run ``topocoll topo``; returns the exit status (errors raise TopocollError)."""
    export = getattr(args, "export_simgrid", None)
    # before any work: a typo must not cost the run, and two outputs (or an output and the input) one file
    check_outputs([("--draw", args.draw), ("--export-simgrid", export), *json_output(args)], input_files(args),
                  stdout=("--json",))
    if args.draw:
        check_path(args.draw, "--draw")
    topo = parse_topology(args.spec, strict=getattr(args, "strict", False))
    out = summary(topo)
    for text in topo.params.get("warnings", ()):    # what an importer ignored or approximated
        print(f"warning: {text}", file=sys.stderr)
    if topo.params.get("warnings"):
        out.setdefault("warnings", []).extend(topo.params["warnings"])
    router = None
    if args.pattern or args.ebb or args.routing or args.draw or export:
        router = make_router(topo, args.routing, **_strict_option(args))
        out["routing"] = router.name + "".join(f":{k}={v}" for k, v in router.options.items())
        for text in router.warnings:       # now: a later error must not hide what was skipped
            print(f"warning: {text}", file=sys.stderr)
        out.setdefault("warnings", []).extend(router.warnings)
    if args.draw and topo.n_nodes > MAX_NODES:      # both outputs refused before either is written
        raise SpecError(f"--draw: {topo.spec} has {topo.n_nodes} nodes, expected at most {MAX_NODES} to draw")
    if export:
        check_export(topo, router)
    order = node_order(topo, args.order, seed=args.seed, n_ranks=args.ranks, rail=args.rail)
    out["order"] = args.order
    aggregation = topo.params.get("aggregation_nodes") or ()
    if aggregation:
        out["aggregation_nodes"] = len(aggregation)
    rails = describe_rails(topo, args.rail, args.order)
    if rails:
        out["rails"] = rails
    out["seed"] = args.seed
    loads = None
    out["patterns"] = []
    for pat in args.pattern:
        start = time.perf_counter()
        src, dst = pattern_pairs(pat, order, seed=args.seed)
        loads = link_loads(router, src, dst)
        out["patterns"].append({"pattern": pat, "flows": int(len(src)), "max_link_load": float(loads.max()),
                                "histogram": load_histogram(loads),
                                "seconds": round(time.perf_counter() - start, 4)})
    if args.ebb:
        start = time.perf_counter()
        e = effective_bisection_bandwidth(router, args.ebb, seed=args.seed, order=order)
        out["effective_bisection"] = {"mean": e.mean, "std": e.std, "bisections": e.n_bisections,
                                      "seed": e.seed, "seconds": round(time.perf_counter() - start, 3)}
    if args.draw:
        try:
            draw_svg(topo, args.draw, loads, unit="flows" if loads is not None else None)
        except OSError as exc:
            raise SpecError(f"--draw {args.draw!r}: {exc.strerror or exc}, expected a writable file") from None
        out["drawing"] = str(args.draw)
    if export:
        out["simgrid"] = write_simgrid(topo, export, router=router, progress=True)
    if write_json(args, out):
        return 0
    print(f"topology   {out['spec']}")
    print(f"endpoints  {out['endpoints']}   switches {out['switches']}   links {out['links']} "
          f"({out['cables']} full-duplex cables)")
    print(f"diameter   {out['diameter']} hops")
    print(f"bisection  {_bw(out['bisection_bandwidth'])} ({out['bisection_method']}, one direction)")
    if aggregation:
        print(f"set aside  {len(aggregation)} SHARP aggregation node{'s' if len(aggregation) > 1 else ''} "
              "recognised, not counted as endpoints")
    if rails:
        print(f"rails      {rails}")
    if router is not None:
        print(f"routing    {out['routing']}   order {args.order}   ranks {len(order)}   seed {args.seed}")
    for p in out["patterns"]:
        items = list(p["histogram"].items())
        if len(items) > 16:  # bin a long tail into ten ranges
            vals = [k for k, v in items for _ in range(v)]
            counts, edges = np.histogram(vals, bins=10)
            hist = "  ".join(f"[{a:g},{b:g}):{c}" for a, b, c in zip(edges, edges[1:], counts))
        else:
            hist = "  ".join(f"{k:g}:{v}" for k, v in items)
        print(f"pattern    {p['pattern']}: {p['flows']} flows, max link load {p['max_link_load']:g}; "
              f"links per load  {hist}")
    if "effective_bisection" in out:
        e = out["effective_bisection"]
        print(f"effective bisection bandwidth  {100 * e['mean']:.1f}% of full (std {100 * e['std']:.1f}%, "
              f"{e['bisections']} random bisections, seed {e['seed']})")
    if args.draw:
        print(f"drawing    {args.draw}")
    if export:
        x = out["simgrid"]
        print(f"simgrid    {export}: {x['hosts']} hosts, {x['cables']} links, {x['routes']} routes (one Full zone)")
    return 0
