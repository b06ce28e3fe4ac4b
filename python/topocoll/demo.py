"""``topocoll demo``: the main job on an embedded default, and its HTML report.

On the shift-based paper's machine (Cavin & Demengeon, EGPGV 2012, §5: 144
nodes on a 12-ary 2-tree of 24-port DDR InfiniBand switches, OpenSM's
Fat-tree Unicast routing) the demo asks the questions the five papers ask,
with the models that answer them, and prints one ranked table per question:

1. *compositing* (shift-based §5, radix-k §4): every ``reduce_scatter``
   algorithm for a 4096×2048 image of 16 B pixels, nodes in the routing
   engine's order and in a random order (the paper's "alphabetical" order),
   on the ``loggops`` model (LogGOPS with first-come link reservations
   along the static routes);
2. *allreduce under network noise* (network-noise paper §2–4): every
   allreduce algorithm for 8 B to 8 MiB by powers of 4 on half of the
   endpoints, placed at random, without and with background traffic on the
   other half (perturbation ratio 0.5), on the paper's ``congestion`` model,
   over seeded runs (median slowdown and its notch): the fastest algorithm per
   size, clean and under noise;
3. *all-to-all* (all-to-all paper): every all-to-all algorithm for 4 KiB per
   destination, on the ``loggops`` model.

Every answer names the model and its settings and the mechanisms that model
lacks by which the candidates differ (:mod:`topocoll.sim.caveats`); where
the packet model has them and its run fits ``--recheck-budget``, the
candidates at stake are re-ranked by it and the table says so
(:mod:`topocoll.tune.recheck`). ``--model`` ranks questions 1 and 3 with
another model.

It writes ``report/index.html`` (static: no JavaScript, no server) with the
tables, the plots (time per algorithm, slowdown box plots), the bandwidth
matrices of the shift-based run in both orders (the paper's Figs. 5–6, on the
``flow`` model: max-min fair sharing gives every pair its bandwidth), the
link loads drawn on the topology, and a Perfetto timeline of the fastest
allreduce under noise. ``--topology``, ``-P``, ``--size`` and ``--routing``
ask the same questions of another network.

Every number is the model's, computed here; seeds are printed.
"""

from __future__ import annotations

import html
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SpecError
from .outputs import write_text
from .text import human_bytes
from .text import table as text_table

__all__ = ["DEFAULT_TOPOLOGY", "DEFAULT_IMAGE", "add_arguments", "run"]

#: the shift-based paper's cluster: 144 endpoints, 24-port switches, 4x DDR links (2 GB/s), 1 µs
DEFAULT_TOPOLOGY = "kary:12,2"
#: its routing engine: OpenSM's Fat-tree Unicast
DEFAULT_ROUTING = "ftree"
#: 4096×2048 pixels of 16 B (RGBA float32), the paper's §5.1–5.2 image
DEFAULT_IMAGE = (4096, 2048, 16)
#: allreduce sizes: 8 B to 8 MiB by powers of 4 (the network-noise paper's 8 B and 2 KiB among them)
ALLREDUCE_SIZES = tuple(8 * 4 ** k for k in range(11))
#: the allreduce size whose fastest algorithm's run under noise becomes the timeline
TIMELINE_SIZE = 2048
#: models questions 1 and 3 may use (``--model``)
DEMO_MODELS = ("loggops", "flow", "congestion", "packet", "static")
ALLTOALL_SIZE = 4096
NOISE_RATIO = 0.5
#: largest -P the demo accepts (its pictures and tables stay readable)
MAX_DEMO_P = 1024


def add_arguments(p) -> None:
    """The ``demo`` verb's options (``topocoll demo --help``)."""
    from .argtypes import bounded_int, seed
    p.add_argument("--topology", default=DEFAULT_TOPOLOGY, metavar="SPEC",
                   help=f"network (default {DEFAULT_TOPOLOGY}: the shift-based paper's 144-node DDR InfiniBand "
                        "fat tree; any `topocoll topo` spec)")
    p.add_argument("--routing", default=None,
                   help=f"routing engine (default {DEFAULT_ROUTING} on the default network, else the family's)")
    p.add_argument("-P", "--procs", type=bounded_int(2, MAX_DEMO_P, what="number of ranks"), default=None,
                   help="ranks for compositing and all-to-all (default: every endpoint, at most "
                        f"{MAX_DEMO_P}); allreduce runs on at most half the endpoints, the rest make the noise")
    p.add_argument("--size", default=None, metavar="WxHxB|BYTES",
                   help="compositing image, e.g. 4096x2048x16 (pixels and bytes per pixel) or 128M "
                        "(default 4096x2048x16)")
    p.add_argument("--runs", type=bounded_int(1, 1000, what="noise runs"), default=10,
                   help="seeded runs with network noise per algorithm and size (default 10)")
    p.add_argument("--seed", type=seed, default=1, help="seed of the random orders and the noise (default 1)")
    p.add_argument("--out", default="report", metavar="DIR",
                   help="directory of the report (default report/; index.html inside)")
    p.add_argument("--jobs", type=bounded_int(1, 256, what="worker processes"), default=None, metavar="N",
                   help="worker processes for the rankings (default: every CPU)")
    p.add_argument("--model", choices=DEMO_MODELS, default="loggops",
                   help="model ranking compositing and all-to-all (default loggops; allreduce under noise keeps "
                        "the network-noise paper's congestion model)")
    from .tune.recheck import add_recheck_arguments
    add_recheck_arguments(p)


def _image(text: str | None) -> tuple[int, int, int]:
    """``(width, height, bytes per pixel)`` of ``--size``."""
    from .argtypes import parse_size
    if text is None:
        return DEFAULT_IMAGE
    parts = text.lower().split("x")
    if len(parts) == 3:
        try:
            w, h, b = (int(x) for x in parts)
        except ValueError:
            w = h = b = 0
        if min(w, h, b) < 1 or w * h * b > 1 << 40:
            raise SpecError(f"--size {text!r}, expected WIDTHxHEIGHTxBYTES with positive integers "
                            "(e.g. 4096x2048x16), at most 1 TiB")
        return w, h, b
    n = parse_size(text)
    return n, 1, 1


@dataclass
class Table:
    """One ranked table: a title, the model, rows (algorithm, params, time s, extra columns) and the
    notes under it (the model's caveats, a packet-model re-rank)."""

    key: str
    title: str
    model: str
    header: tuple
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in (params or {}).items()) or "-"


def _ranked_table(key, title, model_text, rows, verdict=None) -> Table:
    from .tune.recheck import row_key
    packet = verdict is not None and verdict.by_packet
    head = ("rank", "algorithm", "params", "rounds", "msgs/rank", "time (model)")
    t = Table(key, title, model_text, head + (("time (packet)",) if packet else ()) + ("hottest link",))
    for r in rows:
        row = (str(r.position), r.algorithm, _params_text(r.params), str(r.report.rounds),
               str(r.report.max_messages_per_rank), f"{r.time * 1e6:.2f} µs")
        if packet:
            shown = verdict.rechecked.get(row_key(r))
            row += (f"{shown * 1e6:.2f} µs" if shown is not None else "-",)
        t.rows.append(row + (r.estimate.hot_link or "-",))
    t.notes = _verdict_notes(verdict)
    return t


def _verdict_notes(verdict) -> list[str]:
    """The lines under a table: the caveats that matter, or that none do."""
    if verdict is None:
        return []
    lines = verdict.lines()
    return lines or [f"caveats: none (the candidates differ by no mechanism {verdict.model} lacks)"]


def _print_table(t: Table) -> None:
    print(f"\n{t.title}\n  model: {t.model}")
    print(text_table([t.header] + [tuple(row) for row in t.rows]))
    for line in t.notes:
        print(f"  {line}")


class _Progress:
    """A tqdm bar on stderr (only on a terminal) counting evaluations and pictures."""

    def __init__(self, total: int):
        from tqdm import tqdm
        self.bar = tqdm(total=total, desc="demo", unit="step", file=sys.stderr, disable=None, leave=False,
                        dynamic_ncols=True)

    def step(self, what: str = "", n: int = 1) -> None:
        if what:
            self.bar.set_postfix_str(what, refresh=False)
        self.bar.update(n)

    def ranking(self, expected: int):
        """``rank()``'s ``on_result`` for one ranking counted as ``expected``
        steps: the bar's total is corrected by the ranking's own count
        (``Evaluated.total``) when its first result comes."""
        seen = []

        def on_result(ev) -> None:
            if not seen:
                seen.append(ev.total)
                self.bar.total += ev.total - expected
            self.step()

        return on_result

    def close(self) -> None:
        self.bar.close()


def _prepare_out(text: str) -> Path:
    """The report directory, created now (before any work), or a one-line error."""
    import os
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {text!r} is a file, expected a directory for the report")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(f"--out {text!r}: directory {str(out.parent)!r} does not exist, expected an existing "
                        "directory to create the report in")
    try:
        out.mkdir(exist_ok=True)
    except OSError as exc:
        raise SpecError(f"--out {text!r}: cannot create the report directory ({exc.strerror or exc}), expected a "
                        "writable place") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise SpecError(f"--out {text!r}: the directory is not writable, expected a writable place")
    return out


def _model(name: str):
    from .sim import EventModel, StaticContention
    return StaticContention() if name == "static" else EventModel(name)


def _network_words(kind: str) -> dict:
    """How the report speaks of the network: the compositing intro and the timeline's grouping."""
    if kind == "fat-tree":
        return {"intro": "Shift-based compositing (Cavin &amp; Demengeon 2012) is contention free on a fat tree "
                         "when the ranks follow the routing engine's order; in another order its shifts meet hot "
                         "spots (their Figs. 5–6)."}
    if kind in ("torus", "torus-asymmetric", "mesh"):
        return {"intro": "On a torus or mesh, radix-k's groups (Peterka et al. 2009, §4.3) gain when successive "
                         "ranks fill small blocks of the network; shift-based compositing's shifts cross many "
                         "hops. The routing engine's order and a random order are compared below."}
    return {"intro": "The same compositing algorithms in the routing engine's order and in a random order: the "
                     "order decides which messages share links."}


def run(args) -> int:
    """Run the demo from parsed arguments (:func:`add_arguments`); prints the
    tables and writes the report. Returns the exit status (0)."""
    from .sim import EventModel, NetworkNoise, Platform, make_network, simulate
    from .sim.caveats import topology_kind
    from .sim.engine import EngineConfig
    from .topology import parse_topology
    from .tune import rank
    from .tune.recheck import budget_from, rerank_rows
    from .viz.boxplot import write_boxplot_png
    from .viz.curves import curve_label, write_bars, write_curves
    from .viz.matrix import bandwidth_matrix, summary, write_matrix_png
    from .viz.timeline import rank_groups, write_chrome_trace
    from .topology.draw import draw_svg
    from .tune.recheck import model_line
    from .viz.timeline import GROUP

    started = time.monotonic()
    width, height, pixel = _image(args.size)
    image_bytes = width * height * pixel
    topo = parse_topology(args.topology)
    routing = args.routing or (DEFAULT_ROUTING if args.topology == DEFAULT_TOPOLOGY else None)
    endpoints = topo.n_endpoints
    p = args.procs or min(endpoints, MAX_DEMO_P)
    if p > endpoints:
        raise SpecError(f"-P {p} on {args.topology} ({endpoints} endpoints), expected at most {endpoints}")
    p_ar = min(p, endpoints // 2)
    if p_ar < 2:
        raise SpecError(f"{args.topology} has {endpoints} endpoints, expected at least 4: allreduce runs on half of "
                        "them and the other half makes the network noise")
    budget = budget_from(args)
    out = _prepare_out(args.out)
    seed = args.seed
    kind = topology_kind(topo)
    model = _model(args.model)
    model_text = model_line(model).removeprefix("model: ")
    alpha, gamma_bw = 1e-6, 4e9

    def platform(ranks, order):
        net = make_network(args.topology, ranks, routing=routing, order=order, seed=seed)
        return Platform(alpha=alpha, reduce_bandwidth=gamma_bw, network=net)

    plat_routing, plat_random = platform(p, "routing"), platform(p, "random")
    plat_ar = platform(p_ar, "random")
    itemsize = pixel if image_bytes % pixel == 0 else 1
    network_name = plat_routing.network.label.split(", order")[0]
    print(f"topocoll demo on {network_name} ({kind.replace('-', ' ')})")
    print(f"  α = {alpha * 1e6:g} µs per message, reductions at {gamma_bw / 1e9:g} GB/s; link bandwidths from the "
          f"spec ({topo.bandwidth.min() / 1e9:g}–{topo.bandwidth.max() / 1e9:g} GB/s); seed {seed} "
          "(random orders and noise)")
    print(f"  compositing and all-to-all: {model_text}")
    print("  " + ("no packet-model re-rank (--no-recheck)" if budget is None else
                  "the packet model ranks them itself (no re-rank)" if args.model == "packet" else
                  f"candidates that differ by a mechanism the model lacks are re-ranked by the packet model within "
                  f"--recheck-budget {budget.seconds:g} s"))

    from .schedules.registry import catalogue
    count = {c: sum(1 for info in catalogue().values() if info.collective == c)
             for c in ("reduce_scatter", "allreduce", "alltoall")}      # rank() reports each once per size
    n_comp, n_ar, n_a2a = count["reduce_scatter"], count["allreduce"] * len(ALLREDUCE_SIZES), count["alltoall"]
    progress = _Progress(2 * n_comp + 2 * n_ar + n_a2a + 7)
    tables: list[Table] = []
    pictures: dict[str, str] = {}
    workers = args.jobs
    try:
        # 1. compositing in two orders
        comp = {}
        for order, plat in (("routing", plat_routing), ("random", plat_random)):
            rows = rank("reduce_scatter", p, [image_bytes], model=model, platform=plat, op="noncommutative",
                        itemsize=itemsize, workers=workers, on_result=progress.ranking(n_comp))
            rows, verdicts = rerank_rows("reduce_scatter", p, rows, model, plat, itemsize=itemsize, budget=budget)
            comp[order] = rows
            tables.append(_ranked_table(
                f"compositing-{order}",
                f"1{'a' if order == 'routing' else 'b'}. image compositing (reduce_scatter, over), {width}×{height}"
                f"×{pixel} B = {human_bytes(image_bytes)}, P={p}, nodes in "
                + ("the routing engine's order" if order == "routing" else f"a random order (seed {seed})"),
                f"{model_text}; {plat.network.label}", rows, verdicts[image_bytes]))
        bars = {order: {curve_label(r.algorithm, r.params): r.time for r in rows} for order, rows in comp.items()}
        pictures["compositing"] = write_bars(
            bars, out / "compositing.png", ylabel=f"time (ms, {args.model} model)", scale=1e3,
            title=f"compositing {width}×{height}×{pixel} B, P={p}: routing vs random order").name
        progress.step("compositing plot")

        # 2. allreduce, clean and under noise, over the size grid
        congestion = EventModel("congestion")
        clean_rows = rank("allreduce", p_ar, list(ALLREDUCE_SIZES), model=congestion,
                          platform=plat_ar, workers=workers, on_result=progress.ranking(n_ar))
        _, ar_verdicts = rerank_rows("allreduce", p_ar, clean_rows, congestion, plat_ar, budget=budget)
        # the noisy runs of every (algorithm, size): one op program each, run with seeds seed .. seed + runs − 1
        # (as EventModel("congestion", noise=NetworkNoise(NOISE_RATIO, seed=s)) per seed, compiled once)
        from .schedules import generate
        from .schedules.sizes import from_bytes
        from .sim.noise import noise_runs
        noisy: dict[tuple[str, int], list[float]] = {}
        for r in clean_rows:
            sched = generate("allreduce", r.algorithm, p_ar, **r.params, **from_bytes("allreduce", p_ar, r.size))
            runs = noise_runs(sched, plat_ar, model="congestion", noise=NetworkNoise(NOISE_RATIO, seed=seed),
                              runs=args.runs, workers=workers)
            noisy[(r.algorithm, r.size)] = [float(x) for x in runs.times]
            progress.step(f"noise {r.algorithm}")
        from .viz.boxplot import box_stats
        t = Table("allreduce",
                  f"2. allreduce of {human_bytes(ALLREDUCE_SIZES[0])} to {human_bytes(ALLREDUCE_SIZES[-1])} on "
                  f"P={p_ar} (random placement, seed {seed}), without and with network noise (ratio {NOISE_RATIO}: "
                  f"{p_ar} background endpoints, {args.runs} runs, seeds {seed}..{seed + args.runs - 1}); per size "
                  "the fastest clean and the fastest by median time under noise",
                  f"{model_line(congestion).removeprefix('model: ')}; "
                  f"{plat_ar.network.label}",
                  ("size", "fastest clean", "clean", "fastest under noise", "noise: median", "slowdown median",
                   "95% notch", "runner-up under noise", "margin"))
        best_noisy = {}
        for size in ALLREDUCE_SIZES:
            clean = [r for r in clean_rows if r.size == size]
            stats = []
            for r in clean:
                slow = box_stats([x / r.time for x in noisy.get((r.algorithm, size), [])])
                stats.append((r, slow))
            stats.sort(key=lambda x: (x[0].time * x[1]["median"], x[0].algorithm))
            (b, bs), (ru, rs) = stats[0], stats[1] if len(stats) > 1 else (None, None)
            best_noisy[size] = b
            first = clean[0]
            t.rows.append((human_bytes(size), curve_label(first.algorithm, first.params),
                           f"{first.time * 1e6:.2f} µs", curve_label(b.algorithm, b.params),
                           f"{b.time * bs['median'] * 1e6:.2f} µs", f"{bs['median']:.3f}",
                           f"[{bs['notch'][0]:.3f}, {bs['notch'][1]:.3f}]",
                           curve_label(ru.algorithm, ru.params) if ru else "-",
                           f"{(ru.time * rs['median']) / (b.time * bs['median']) * 100 - 100:.1f}%" if ru else "-"))
        t.notes = sorted(set(line for v in ar_verdicts.values() for line in _verdict_notes(v)))
        tables.append(t)
        pictures["allreduce-curves"] = write_curves(
            clean_rows, out / "allreduce-curves.png",
            title=f"allreduce on P={p_ar}, no noise (congestion model)").name
        series = [(f"{r.algorithm}\n{human_bytes(r.size)}", [x / r.time for x in noisy[(r.algorithm, r.size)]])
                  for size, r in best_noisy.items() if (r.algorithm, r.size) in noisy]
        pictures["allreduce-noise"] = write_boxplot_png(
            series, out / "allreduce-noise.png", ylabel="slowdown (noisy time / clean time)", reference=1.0,
            title=f"fastest allreduce per size under network noise, ratio {NOISE_RATIO}, {args.runs} runs").name
        progress.step("allreduce plots", 2)

        # 3. all-to-all
        a2a = rank("alltoall", p, [ALLTOALL_SIZE], model=model, platform=plat_routing, workers=workers,
                   on_result=progress.ranking(n_a2a))
        a2a, a2a_verdicts = rerank_rows("alltoall", p, a2a, model, plat_routing, budget=budget)
        tables.append(_ranked_table(
            "alltoall", f"3. all-to-all of {human_bytes(ALLTOALL_SIZE)} per destination, P={p}, routing order",
            f"{model_text}; {plat_routing.network.label}", a2a, a2a_verdicts[ALLTOALL_SIZE]))
        pictures["alltoall"] = write_bars(
            {"routing order": {curve_label(r.algorithm, r.params): r.time for r in a2a}}, out / "alltoall.png",
            ylabel=f"time (µs, {args.model} model)", scale=1e6,
            title=f"all-to-all {human_bytes(ALLTOALL_SIZE)} per destination, P={p}").name
        progress.step("all-to-all plot")

        # 4. the shift-based run in both orders: bandwidth matrices, link loads
        shift = generate("reduce_scatter", "shift_based", p, **from_bytes("reduce_scatter", p, image_bytes,
                                                                          itemsize=itemsize))
        matrices = {}
        for order, plat in (("routing", plat_routing), ("random", plat_random)):
            sim = simulate(shift, plat, EngineConfig("flow", trace=True))
            m = bandwidth_matrix(sim)
            matrices[order] = (summary(m), sim.time)
            vmax = float(plat.network.topology.bandwidth.max())
            pictures[f"matrix-{order}"] = write_matrix_png(
                m, out / f"matrix-{order}.png", vmax=vmax,
                title=f"shift-based, P={p}, {order} order: {1 / sim.time:.2f} frames/s").name
            if order == "random":
                pictures["links"] = draw_svg(plat.network.topology, out / "links-random.svg", sim.link_bytes,
                                             unit="bytes",
                                             title=f"shift-based, random order: bytes per cable").name
            progress.step(f"matrix {order}")

        # 5. a timeline: the fastest allreduce at TIMELINE_SIZE, under noise (seed `seed`)
        best = best_noisy[TIMELINE_SIZE]
        best_sched = generate("allreduce", best.algorithm, p_ar, **best.params,
                              **from_bytes("allreduce", p_ar, TIMELINE_SIZE))
        sim = simulate(best_sched, plat_ar, EngineConfig("congestion", noise=NetworkNoise(NOISE_RATIO, seed=seed),
                                                         trace=True))
        timeline = write_chrome_trace(sim, out / "timeline.json",
                                      title=f"allreduce {best.algorithm} {human_bytes(TIMELINE_SIZE)}, noise "
                                            f"seed {seed}").name
        _, group_names = rank_groups(sim)
        progress.step("timeline")
    finally:
        progress.close()

    for t in tables:
        _print_table(t)
    print()
    for order, (s, t_sim) in matrices.items():
        print(f"shift-based in {order} order (flow model, for the bandwidth matrices): {1 / t_sim:.2f} frames/s; "
              f"bandwidth per pair min {s['min'] / 1e6:.0f}, mean {s['mean'] / 1e6:.0f}, max {s['max'] / 1e6:.0f} MB/s")
    grouping = (f"one process per switch the ranks' endpoints attach to ({len(group_names)} groups)"
                if group_names and group_names[0].startswith("leaf ") else
                f"one process per {GROUP} consecutive ranks ({len(group_names)} groups)")
    index = _write_html(out, tables, pictures, timeline, plat_routing, p, p_ar, seed, matrices,
                        time.monotonic() - started, words={**_network_words(kind), "grouping": grouping,
                                                            "model": model_text})
    print(f"\nreport: {index} ({time.monotonic() - started:.0f} s)")
    return 0


_CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#eef}tr:first-child td{font-weight:bold}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
.model{color:#555;font-size:90%}figure{margin:1em 0}figcaption{color:#555;font-size:90%}"""


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in t.rows)
    return (f'<h3 id="{t.key}">{html.escape(t.title)}</h3>\n<p class="model">model: {html.escape(t.model)}</p>\n'
            f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>\n" + _notes_html(t))


def _figure(src: str, caption: str) -> str:
    return (f'<figure><img src="{html.escape(src)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _notes_html(t: Table) -> str:
    return "".join(f'<p class="model">{html.escape(line)}</p>\n' for line in t.notes)


def _write_html(out: Path, tables, pictures, timeline, plat, p, p_ar, seed, matrices, seconds, *, words) -> Path:
    by = {t.key: t for t in tables}
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>topocoll demo report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>topocoll demo report</h1>",
        f"<p>Network: {html.escape(plat.network.label.split(', order')[0])}; {p} ranks for compositing and "
        f"all-to-all, {p_ar} for allreduce (the others make the noise). Seed {seed}. Every number is a model's "
        f"prediction, computed by <code>topocoll demo</code> in {seconds:.0f} s. Compositing and all-to-all: "
        f"{html.escape(words['model'])}. Under each table: the mechanisms that model lacks by which the "
        "candidates differ, and where the packet model re-ranked them.</p>",
        "<h2>1. Which compositing algorithm, in which node order?</h2>",
        f"<p>{words['intro']}</p>",
        _html_table(by["compositing-routing"]), _html_table(by["compositing-random"]),
        _figure(pictures["compositing"], "Compositing time per algorithm, routing order against random order"),
        "<h3>Bandwidth matrices of the shift-based run (the paper's Figs. 5–6)</h3>",
        "<p>Row: sending rank, column: receiving rank, grey level: bandwidth of that pair (white = link "
        "bandwidth), on the flow model; the histogram under each matrix gives min / mean / max per pair.</p>",
        _figure(pictures["matrix-routing"], "Bandwidth matrix, routing order"),
        _figure(pictures["matrix-random"], "Bandwidth matrix, random order"),
        _figure(pictures["links"], "Bytes per cable of the shift-based run in random order"),
        "<h2>2. Which allreduce, with and without network noise?</h2>",
        "<p>Half of the network runs the allreduce, the other half sends random permutations (network-noise "
        "paper, ratio 0.5); the slowdown is the noisy time over the clean time of each seeded run.</p>",
        _html_table(by["allreduce"]),
        _figure(pictures["allreduce-curves"], "Allreduce time against message size, no noise"),
        _figure(pictures["allreduce-noise"], "Slowdown of the fastest algorithm per size under network noise "
                                             "(notched box plots)"),
        f'<p>Timeline of the fastest allreduce at {human_bytes(TIMELINE_SIZE)} under noise: '
        f'<a href="{html.escape(timeline)}">{html.escape(timeline)}</a> (Chrome trace format: open it at '
        f"https://ui.perfetto.dev or in chrome://tracing; {html.escape(words['grouping'])}, each rank's send, "
        "receive and wait lanes inside).</p>",
        "<h2>3. Which all-to-all?</h2>", _html_table(by["alltoall"]),
        _figure(pictures["alltoall"], "All-to-all time per algorithm"),
        "<p>Reproductions of the papers' figures: <code>topocoll reproduce --all</code> (docs/reproduce.md).</p>",
        "</body></html>",
    ]
    index = out / "index.html"
    write_text(index, "\n".join(parts) + "\n", option="--out")     # whole: an interrupted run leaves the old page
    return index
