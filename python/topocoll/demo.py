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
   allreduce algorithm for 8 B and 2 KiB on half of the endpoints, placed at
   random, without and with background traffic on the other half
   (perturbation ratio 0.5), on the paper's ``congestion`` model, over
   seeded runs (median slowdown and its notch);
3. *all-to-all* (all-to-all paper): every all-to-all algorithm for 4 KiB per
   destination, on the ``loggops`` model.

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
from .text import human_bytes
from .text import table as text_table

__all__ = ["DEFAULT_TOPOLOGY", "DEFAULT_IMAGE", "add_arguments", "run"]

#: the shift-based paper's cluster: 144 endpoints, 24-port switches, 4x DDR links (2 GB/s), 1 µs
DEFAULT_TOPOLOGY = "kary:12,2"
#: its routing engine: OpenSM's Fat-tree Unicast
DEFAULT_ROUTING = "ftree"
#: 4096×2048 pixels of 16 B (RGBA float32), the paper's §5.1–5.2 image
DEFAULT_IMAGE = (4096, 2048, 16)
ALLREDUCE_SIZES = (8, 2048)
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
    """One ranked table: a title, the model, and rows (algorithm, params, time s, extra columns)."""

    key: str
    title: str
    model: str
    header: tuple
    rows: list = field(default_factory=list)


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in (params or {}).items()) or "-"


def _ranked_table(key, title, model_text, rows) -> Table:
    t = Table(key, title, model_text, ("rank", "algorithm", "params", "rounds", "msgs/rank", "time (model)",
                                       "hottest link"))
    for r in rows:
        t.rows.append((str(r.position), r.algorithm, _params_text(r.params), str(r.report.rounds),
                       str(r.report.max_messages_per_rank), f"{r.time * 1e6:.2f} µs",
                       r.estimate.hot_link or "-"))
    return t


def _print_table(t: Table) -> None:
    print(f"\n{t.title}\n  model: {t.model}")
    print(text_table([t.header] + [tuple(row) for row in t.rows]))


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


def run(args) -> int:
    """Run the demo from parsed arguments (:func:`add_arguments`); prints the
    tables and writes the report. Returns the exit status (0)."""
    from .sim import EventModel, NetworkNoise, Platform, make_network, simulate
    from .sim.engine import EngineConfig
    from .topology import parse_topology
    from .tune import rank
    from .viz.boxplot import write_boxplot_png
    from .viz.curves import curve_label, write_bars, write_curves
    from .viz.matrix import bandwidth_matrix, summary, write_matrix_png
    from .viz.timeline import write_chrome_trace
    from .topology.draw import draw_svg

    started = time.monotonic()
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {args.out!r} is a file, expected a directory for the report")
    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise SpecError(f"--out {args.out!r}: directory {str(out.parent)!r} does not exist, expected an existing "
                        "directory to create the report in")
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
    seed = args.seed
    out.mkdir(exist_ok=True)
    loggops = EventModel("loggops")     # LogGOPS + first-come link reservations: 10× faster than flow here
    loggops_text = "loggops (LogGOPS, each message reserves the links of its route first come, first served)"
    alpha, gamma_bw = 1e-6, 4e9

    def platform(ranks, order):
        net = make_network(args.topology, ranks, routing=routing, order=order, seed=seed)
        return Platform(alpha=alpha, reduce_bandwidth=gamma_bw, network=net)

    plat_routing, plat_random = platform(p, "routing"), platform(p, "random")
    plat_ar = platform(p_ar, "random")
    itemsize = pixel if image_bytes % pixel == 0 else 1
    print(f"topocoll demo on {plat_routing.network.label.split(', order')[0]}")
    print(f"  α = {alpha * 1e6:g} µs per message, reductions at {gamma_bw / 1e9:g} GB/s; link bandwidths from the "
          f"spec ({topo.bandwidth.min() / 1e9:g}–{topo.bandwidth.max() / 1e9:g} GB/s); seed {seed} "
          "(random orders and noise)")

    from .schedules.registry import catalogue
    count = {c: sum(1 for info in catalogue().values() if info.collective == c)
             for c in ("reduce_scatter", "allreduce", "alltoall")}      # rank() reports each once per size
    n_comp, n_ar, n_a2a = count["reduce_scatter"], count["allreduce"] * len(ALLREDUCE_SIZES), count["alltoall"]
    progress = _Progress(2 * n_comp + n_ar * (1 + args.runs) + n_a2a + 7)
    tables: list[Table] = []
    pictures: dict[str, str] = {}
    workers = args.jobs
    try:
        # 1. compositing in two orders
        comp = {}
        for order, plat in (("routing", plat_routing), ("random", plat_random)):
            rows = rank("reduce_scatter", p, [image_bytes], model=loggops, platform=plat, op="noncommutative",
                        itemsize=itemsize, workers=workers, on_result=progress.ranking(n_comp))
            comp[order] = rows
            tables.append(_ranked_table(
                f"compositing-{order}",
                f"1{'a' if order == 'routing' else 'b'}. image compositing (reduce_scatter, over), {width}×{height}"
                f"×{pixel} B = {human_bytes(image_bytes)}, P={p}, nodes in "
                + ("the routing engine's order" if order == "routing" else f"a random order (seed {seed})"),
                f"{loggops_text}, {plat.network.label}", rows))
        bars = {order: {curve_label(r.algorithm, r.params): r.time for r in rows} for order, rows in comp.items()}
        pictures["compositing"] = write_bars(
            bars, out / "compositing.png", ylabel="time (ms)", scale=1e3,
            title=f"compositing {width}×{height}×{pixel} B, P={p}: routing vs random order").name
        progress.step("compositing plot")

        # 2. allreduce, clean and under noise
        clean_rows = rank("allreduce", p_ar, list(ALLREDUCE_SIZES), model=EventModel("congestion"),
                          platform=plat_ar, workers=workers, on_result=progress.ranking(n_ar))
        noisy: dict[tuple[str, int], list[float]] = {}
        for s in range(seed, seed + args.runs):
            model = EventModel("congestion", noise=NetworkNoise(NOISE_RATIO, seed=s))
            for r in rank("allreduce", p_ar, list(ALLREDUCE_SIZES), model=model, platform=plat_ar,
                          workers=workers, on_result=progress.ranking(n_ar)):
                noisy.setdefault((r.algorithm, r.size), []).append(r.time)
        from .viz.boxplot import box_stats
        for size in ALLREDUCE_SIZES:
            clean = [r for r in clean_rows if r.size == size]
            t = Table(f"allreduce-{size}",
                      f"2. allreduce of {human_bytes(size)} on P={p_ar} (random placement, seed {seed}), without and "
                      f"with network noise (ratio {NOISE_RATIO}: {p_ar} background endpoints, {args.runs} runs, "
                      f"seeds {seed}..{seed + args.runs - 1}), ranked by the median time under noise",
                      f"congestion (network-noise paper §3), {plat_ar.network.label}",
                      ("rank", "algorithm", "params", "rounds", "clean", "noise: median", "slowdown median",
                       "95% notch", "range"))
            stats = []
            for r in clean:
                times = noisy.get((r.algorithm, size), [])
                slow = box_stats([x / r.time for x in times])
                stats.append((r, slow))
            stats.sort(key=lambda x: (x[0].time * x[1]["median"], x[0].algorithm))
            for i, (r, slow) in enumerate(stats, 1):
                t.rows.append((str(i), r.algorithm, _params_text(r.params), str(r.report.rounds),
                               f"{r.time * 1e6:.2f} µs", f"{r.time * slow['median'] * 1e6:.2f} µs",
                               f"{slow['median']:.3f}", f"[{slow['notch'][0]:.3f}, {slow['notch'][1]:.3f}]",
                               f"[{slow['min']:.3f}, {slow['max']:.3f}]"))
            tables.append(t)
        pictures["allreduce-curves"] = write_curves(
            clean_rows, out / "allreduce-curves.png",
            title=f"allreduce on P={p_ar}, no noise (congestion model)").name
        series = [(f"{r.algorithm}\n{human_bytes(r.size)}", [x / r.time for x in noisy[(r.algorithm, r.size)]])
                  for r in sorted(clean_rows, key=lambda r: (r.size, r.algorithm))
                  if (r.algorithm, r.size) in noisy]
        pictures["allreduce-noise"] = write_boxplot_png(
            series, out / "allreduce-noise.png", ylabel="slowdown (noisy time / clean time)", reference=1.0,
            title=f"allreduce under network noise, ratio {NOISE_RATIO}, {args.runs} runs").name
        progress.step("allreduce plots", 2)

        # 3. all-to-all
        a2a = rank("alltoall", p, [ALLTOALL_SIZE], model=loggops, platform=plat_routing, workers=workers,
                   on_result=progress.ranking(n_a2a))
        tables.append(_ranked_table(
            "alltoall", f"3. all-to-all of {human_bytes(ALLTOALL_SIZE)} per destination, P={p}, routing order",
            f"{loggops_text}, {plat_routing.network.label}", a2a))
        pictures["alltoall"] = write_bars(
            {"routing order": {curve_label(r.algorithm, r.params): r.time for r in a2a}}, out / "alltoall.png",
            ylabel="time (µs)", scale=1e6, title=f"all-to-all {human_bytes(ALLTOALL_SIZE)} per destination, P={p}"
        ).name
        progress.step("all-to-all plot")

        # 4. the shift-based run in both orders: bandwidth matrices, link loads
        from .schedules import generate
        from .schedules.sizes import from_bytes
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

        # 5. a timeline: the fastest allreduce at the larger size, under noise (seed `seed`)
        best = next(r for r in clean_rows if r.size == ALLREDUCE_SIZES[-1] and r.position == 1)
        best_sched = generate("allreduce", best.algorithm, p_ar, **best.params,
                              **from_bytes("allreduce", p_ar, ALLREDUCE_SIZES[-1]))
        sim = simulate(best_sched, plat_ar, EngineConfig("congestion", noise=NetworkNoise(NOISE_RATIO, seed=seed),
                                                         trace=True))
        timeline = write_chrome_trace(sim, out / "timeline.json",
                                      title=f"allreduce {best.algorithm} {human_bytes(ALLREDUCE_SIZES[-1])}, noise "
                                            f"seed {seed}").name
        progress.step("timeline")
    finally:
        progress.close()

    for t in tables:
        _print_table(t)
    print()
    for order, (s, t_sim) in matrices.items():
        print(f"shift-based in {order} order: {1 / t_sim:.2f} frames/s; bandwidth per pair min {s['min'] / 1e6:.0f}, "
              f"mean {s['mean'] / 1e6:.0f}, max {s['max'] / 1e6:.0f} MB/s")
    index = _write_html(out, tables, pictures, timeline, plat_routing, p, p_ar, seed, matrices,
                        time.monotonic() - started)
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
            f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>")


def _figure(src: str, caption: str) -> str:
    return (f'<figure><img src="{html.escape(src)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _write_html(out: Path, tables, pictures, timeline, plat, p, p_ar, seed, matrices, seconds) -> Path:
    by = {t.key: t for t in tables}
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>topocoll demo report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>topocoll demo report</h1>",
        f"<p>Network: {html.escape(plat.network.label.split(', order')[0])}; {p} ranks for compositing and "
        f"all-to-all, {p_ar} for allreduce (the others make the noise). Seed {seed}. Every number is a model's "
        f"prediction, computed by <code>topocoll demo</code> in {seconds:.0f} s.</p>",
        "<h2>1. Which compositing algorithm, in which node order?</h2>",
        "<p>Shift-based compositing (Cavin &amp; Demengeon 2012) is contention free on a fat tree when the ranks "
        "follow the routing engine's order; in another order its shifts meet hot spots (their Figs. 5–6).</p>",
        _html_table(by["compositing-routing"]), _html_table(by["compositing-random"]),
        _figure(pictures["compositing"], "Compositing time per algorithm, routing order against random order"),
        "<h3>Bandwidth matrices of the shift-based run (the paper's Figs. 5–6)</h3>",
        "<p>Row: sending rank, column: receiving rank, grey level: bandwidth of that pair (white = link "
        "bandwidth); the histogram under each matrix gives min / mean / max per pair.</p>",
        _figure(pictures["matrix-routing"], "Bandwidth matrix, routing order"),
        _figure(pictures["matrix-random"], "Bandwidth matrix, random order"),
        _figure(pictures["links"], "Bytes per cable of the shift-based run in random order"),
        "<h2>2. Which allreduce, with and without network noise?</h2>",
        "<p>Half of the network runs the allreduce, the other half sends random permutations (network-noise "
        "paper, ratio 0.5); the slowdown is the noisy time over the clean time of each seeded run.</p>",
    ]
    parts += [_html_table(by[f"allreduce-{s}"]) for s in ALLREDUCE_SIZES]
    parts += [
        _figure(pictures["allreduce-curves"], "Allreduce time against message size, no noise"),
        _figure(pictures["allreduce-noise"], "Slowdown under network noise (notched box plots)"),
        f'<p>Timeline of the fastest allreduce at {human_bytes(ALLREDUCE_SIZES[-1])} under noise: '
        f'<a href="{html.escape(timeline)}">{html.escape(timeline)}</a> (Chrome trace format: open it at '
        "https://ui.perfetto.dev or in chrome://tracing; one process per leaf switch, each rank's send, "
        "receive and wait lanes inside).</p>",
        "<h2>3. Which all-to-all?</h2>", _html_table(by["alltoall"]),
        _figure(pictures["alltoall"], "All-to-all time per algorithm"),
        "<p>Reproductions of the papers' figures: <code>topocoll reproduce --all</code> (docs/reproduce.md).</p>",
        "</body></html>",
    ]
    index = out / "index.html"
    index.write_text("\n".join(parts) + "\n")
    return index
