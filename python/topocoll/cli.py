"""The ``topocoll`` command line.

Verbs: ``algorithms`` (the catalogue), ``verify`` (symbolic proof), ``show``
(a schedule round by round), ``compare`` (rank algorithms by α-β-γ cost),
``demo`` (the main job on an embedded default), plus the verbs other areas
register (``topo``, ``composite``, ...). Bad input prints one line
``topocoll: error: ...`` and exits 2; a failed verification exits 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .errors import SpecError, TopocollError, VerificationError

EXIT_FAILED, EXIT_USAGE = 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse with the project's one-line error format and exit code 2."""

    def error(self, message):
        raise SpecError(message)


def parse_value(text: str):
    """``8`` -> 8, ``8,4,2`` -> [8, 4, 2], ``2.5`` -> 2.5, anything else stays a string."""
    if "," in text:
        return [parse_value(t) for t in text.split(",") if t]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_params(items: Sequence[str] | None) -> dict:
    params = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SpecError(f"--param {item!r}, expected NAME=VALUE (e.g. n=2)")
        params[key.strip()] = parse_value(value.strip())
    return params


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer, expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive, expected a positive integer")
    return value


def parse_size(text: str) -> int:
    """Bytes from ``8``, ``64K``, ``1M``, ``2G`` (binary multiples)."""
    units = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2,
             "MIB": 1024**2, "G": 1024**3, "GB": 1024**3, "GIB": 1024**3}
    t = text.strip().upper()
    digits = t.rstrip("KMGIB")
    unit = t[len(digits):]
    try:
        value = float(digits) * units[unit]
    except (ValueError, KeyError):
        raise SpecError(f"message size {text!r}, expected bytes such as 8, 64K, 1M") from None
    if value <= 0 or value != int(value):
        raise SpecError(f"message size {text!r}, expected a positive whole number of bytes")
    return int(value)


# ---- verbs -----------------------------------------------------------------

def cmd_algorithms(args) -> int:
    from .schedules import catalogue

    rows = [("collective", "algorithm", "parameters", "rounds", "any P", "non-comm.", "cost", "paper")]
    for info in catalogue().values():
        if args.collective and info.collective != args.collective:
            continue
        params = ", ".join(f"{k}={v}" for k, v in info.params.items()) or "-"
        anyp = "yes" if info.any_p else "2^k only" if info.valid_p is None else "some"
        noncomm = "yes" if info.noncommutative else ("idempotent only" if info.operators == "idempotent" else "no")
        rows.append((info.collective, info.name, params, info.rounds, anyp, noncomm, info.cost, info.paper))
    print(_table(rows))
    return 0


def cmd_verify(args) -> int:
    from .schedules import catalogue, generate
    from .verify import verify

    if args.all:
        failures = checked = 0
        for info in catalogue().values():
            for params in info.sweep:
                for p in range(1, args.max_procs + 1):
                    if not info.supports(p, params):
                        continue
                    sched = generate(info.collective, info.name, p, **params)
                    checked += 1
                    try:
                        verify(sched, args.op if args.op else None)
                    except VerificationError as exc:
                        failures += 1
                        print(f"FAIL {exc}")
        print(f"{checked - failures}/{checked} schedules verified (P = 1..{args.max_procs})")
        return EXIT_FAILED if failures else 0
    if not (args.collective and args.algorithm and args.procs):
        raise SpecError("verify needs COLLECTIVE ALGORITHM -P N, or --all")
    params = parse_params(args.param)
    sched = generate(args.collective, args.algorithm, args.procs, **params)
    try:
        op = verify(sched, args.op)
    except VerificationError as exc:
        print(f"FAILED {exc}")
        return EXIT_FAILED
    print(f"OK {sched.label()} verified for op={op}")
    return 0


def cmd_show(args) -> int:
    from .schedules import generate, report
    from .verify import verify
    from .verify.symbolic import format_seq

    sched = generate(args.collective, args.algorithm, args.procs, **parse_params(args.param))
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
        for rank, mem in enumerate(memories):
            # the result buffer first, then scratch buffers (partial results kept aside)
            names = sorted({buf for buf, _ in mem}, key=lambda name: (name != "data", name))
            parts = []
            for name in names:
                held = sorted((b, v) for (buf, b), v in mem.items() if buf == name)
                text = " ".join((f"[{b}]" if sched.nblocks > 1 else "") + format_seq(v.seq) for b, v in held)
                parts.append(text if name == "data" else f"{name}: {text}")
            print(f"    rank {rank:>3}: {' | '.join(parts) or '-'}")

    try:
        op = verify(sched, args.op, on_round_end=on_round_end, on_transfer=on_transfer)
    except VerificationError as exc:
        print(f"FAILED {exc}")
        return EXIT_FAILED
    print(f"verified for op={op}")
    return 0


def cmd_compare(args) -> int:
    from .schedules import catalogue, generate, report

    sizes = [parse_size(s) for s in args.sizes.split(",")]
    alpha, beta, gamma = args.alpha, 1.0 / args.bandwidth, 1.0 / args.reduce_bandwidth
    network = _network(args)
    if network is None:
        print(f"{args.collective} on P={args.procs}, α-β-γ model: α = {alpha * 1e6:g} µs, "
              f"β = 1/({args.bandwidth / 1e9:g} GB/s), γ = 1/({args.reduce_bandwidth / 1e9:g} GB/s)")
    else:
        router, order, label = network
        print(f"{args.collective} on P={args.procs}, {label}, α = {alpha * 1e6:g} µs, "
              f"γ = 1/({args.reduce_bandwidth / 1e9:g} GB/s)")
    for size in sizes:
        rows = []
        for info in catalogue().values():
            if info.collective != args.collective or info.operators == "idempotent":
                continue
            params = {k: v for k, v in info.params.items() if k != "root"}
            if info.name == "nway_dissemination":
                params["n"] = "auto"
            if not info.supports(args.procs, params):
                continue
            try:
                sched = generate(info.collective, info.name, args.procs, count=size, itemsize=1, **params)
            except TopocollError:
                continue
            rep = report(sched)
            if network is None:
                rows.append((rep.cost.time(alpha, beta, gamma), info.name, sched.params, rep, None))
            else:
                from .sim import static_contention

                est = static_contention(sched, router, order, alpha=alpha, gamma=gamma)
                rows.append((est.time, info.name, sched.params, rep, est))
        rows.sort(key=lambda r: r[0])
        table = [("rank", "algorithm", "params", "rounds", "msgs/rank", "bytes/rank", "time (model)")]
        if network is not None:
            table[0] += ("congestion", "hottest link")
        for i, (t, name, params, rep, est) in enumerate(rows, 1):
            shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "-"
            row = (str(i), name, shown, str(rep.rounds), str(rep.max_messages_per_rank),
                   _bytes(rep.max_bytes_per_rank), f"{t * 1e6:.2f} µs")
            if est is not None:
                hot = est.hot_links[0][0] if est.hot_links else None
                row += (f"{est.max_congestion:.3g}×", _link_name(router.topology, hot))
            table.append(row)
        print(f"\nmessage size {_bytes(size)}:")
        print(_table(table))
    return 0


def _network(args):
    """(router, order, description) from --topology/--routing/--order, or None."""
    if not getattr(args, "topology", None):
        return None
    from .topology import make_router, node_order, parse_topology

    topo = parse_topology(args.topology)
    router = make_router(topo, args.routing)
    order = node_order(topo, args.order, seed=args.seed, n_ranks=args.procs)
    label = (f"{topo.spec} ({topo.n_endpoints} endpoints), routing {router.name}, order {args.order}"
             + (f" (seed {args.seed})" if args.order == "random" else "")
             + ", static contention model")
    return router, order, label


def _link_name(topo, link):
    if link is None:
        return "-"
    names = topo.names
    return f"{names[int(topo.src[link])]}→{names[int(topo.dst[link])]}"


def cmd_demo(args) -> int:
    """The main job on an embedded default: which allreduce is fastest, and why."""
    from .schedules import catalogue, generate, report
    from .verify import verify

    p = args.procs
    print(f"topocoll demo: allreduce on P={p} ranks\n")
    print("1. every allreduce algorithm, verified symbolically (sum, and rank order where claimed):")
    for info in catalogue().values():
        if info.collective != "allreduce":
            continue
        params = {k: ("auto" if k == "n" and info.name == "nway_dissemination" else v)
                  for k, v in info.params.items()}
        try:
            sched = generate("allreduce", info.name, p, **params)
        except TopocollError as exc:
            print(f"   {info.name:<28} not available at P={p}: {exc}")
            continue
        op = verify(sched)
        rep = report(sched)
        print(f"   {sched.label():<56} OK for op={op:<15} {rep.rounds:>2} rounds, "
              f"split-phase: {'yes' if rep.all_ranks_active_every_round else 'no'}")
    print("\n2. the same algorithms ranked by the α-β-γ model (DDR InfiniBand: α = 1 µs, 2 GB/s):")
    args_compare = argparse.Namespace(collective="allreduce", procs=p, sizes="8,64K,4M", alpha=1e-6,
                                      bandwidth=2e9, reduce_bandwidth=4e9, topology=None)
    cmd_compare(args_compare)
    print("\n3. on a network: 144 ranks on a 12-ary 2-tree (DDR InfiniBand, d-mod-k routing), 4 MiB,"
          "\n   in the routing engine's node order and in a random order (Cavin & Demengeon §5.2):")
    for order in ("routing", "random"):
        cmd_compare(argparse.Namespace(collective="allreduce", procs=144, sizes="4M", alpha=1e-6,
                                       bandwidth=2e9, reduce_bandwidth=4e9, topology="kary:12,2",
                                       routing="d-mod-k", order=order, seed=1))
    print("\n4. the adapted 2-way dissemination at P=8, round by round (End et al. 2016, Table I):")
    show = argparse.Namespace(collective="allreduce", algorithm="nway_dissemination", procs=8,
                              param=["n=2"], op=None)
    return cmd_show(show)


# ---- helpers ---------------------------------------------------------------

def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def _table(rows) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="topocoll", description=(
        "Collective communication algorithms as explicit schedules: verified symbolically, "
        "simulated on modelled networks, executed over MPI."))
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("algorithms", help="list every algorithm with its rounds, P, operators and paper",
                       description="List the catalogue of collective algorithms.")
    p.add_argument("collective", nargs="?", help="only this collective (allreduce, bcast, ...)")
    p.set_defaults(func=cmd_algorithms)

    def schedule_args(p, required=True):
        p.add_argument("collective", nargs=None if required else "?",
                       help="allreduce, reduce, bcast, barrier, reduce_scatter, allgather, alltoall, ...")
        p.add_argument("algorithm", nargs=None if required else "?", help="as listed by `topocoll algorithms`")
        p.add_argument("-P", "--procs", type=positive_int, required=required, help="number of ranks")
        p.add_argument("--param", action="append", metavar="NAME=VALUE",
                       help="generator parameter, repeatable (e.g. n=2, root=3, k=4,3)")
        p.add_argument("--op", help="operator to verify for: sum, prod, max, min, band, bor, xor, "
                                    "noncommutative (default: the strictest the algorithm supports)")

    p = sub.add_parser("verify", help="prove a schedule correct (exit 1 with a diagnosis if not)",
                       description="Symbolically verify one schedule, or every algorithm for P = 1..N.")
    schedule_args(p, required=False)
    p.add_argument("--all", action="store_true", help="verify every algorithm and parameter set")
    p.add_argument("--max-procs", type=positive_int, default=32, help="largest P for --all (default 32)")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("show", help="print a schedule round by round with each rank's partial results",
                       description="Show who sends what to whom in each round and what each rank holds.")
    schedule_args(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("compare", help="rank the algorithms of a collective by α-β-γ cost",
                       description="Rank algorithms by the α-β-γ model of Chan et al. (2007).")
    p.add_argument("collective")
    p.add_argument("-P", "--procs", type=positive_int, required=True)
    p.add_argument("--sizes", default="8,64K,4M", help="message sizes in bytes (default 8,64K,4M)")
    p.add_argument("--alpha", type=float, default=1e-6, help="latency per message in s (default 1e-6)")
    p.add_argument("--bandwidth", type=float, default=2e9, help="link bandwidth in B/s (default 2e9)")
    p.add_argument("--reduce-bandwidth", type=float, default=4e9,
                   help="reduction throughput in B/s (default 4e9)")
    p.add_argument("--topology", metavar="SPEC",
                   help="rank on this network with static routing and link contention instead of the "
                        "α-β-γ model (e.g. kary:12,2, torus:8x8x8, ibnet:FILE; see `topocoll topo`)")
    p.add_argument("--routing", help="routing engine (default: the topology family's)")
    p.add_argument("--order", default="routing",
                   help="node order: routing (the routing engine's, default), identity, random, "
                        "blocked:2x2x2, hostfile:FILE, slurm:FILE")
    p.add_argument("--seed", type=int, default=0, help="seed of a random node order (default 0)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("demo", help="the main job on an embedded default (allreduce on 24 ranks)",
                       description="Verify, rank and show the allreduce algorithms on an embedded default.")
    p.add_argument("-P", "--procs", type=positive_int, default=24, help="number of ranks (default 24)")
    p.set_defaults(func=cmd_demo)

    for register in _extension_parsers():
        register(sub)
    return parser


def _extension_parsers():
    """Verbs owned by other areas, added when their module is present."""
    import importlib

    for module, attr in (("topocoll.topology.cli", "add_topo_parser"),
                         ("topocoll.composite", "add_composite_parser")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue
            raise
        yield getattr(mod, attr)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except TopocollError as exc:
        print(f"topocoll: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
