"""Hoefler, Schneider & Lumsdaine, "The Impact of Network Noise at Large-Scale
Communication Performance", IPDPS workshops 2009 (seed
``network-noise-large-scale.txt``).

ORCS units: the paper's simulator counts congestion, not seconds, and
reports the longest path's congestion sum. topocoll's ``congestion`` model
with α = 0 and links without latency is that count scaled by one message's
serialisation time, so slowdowns (ratios) are the paper's quantity.

Configuration, from the paper: the fat trees of its Table 1 (XGFTs of 24-port
switches, full bisection bandwidth, topocoll's ``table1:N``), OpenSM's
fat-tree routing (``ftree``), the application on half of the endpoints placed
at random and background traffic on the other half (perturbation ratio 0.5:
one random permutation per round, §3), a binomial-tree reduction of 8 B (POP's
"global eight-byte reduction", §1). Model: ``congestion``, the paper's own
(§3: every message's time is the largest congestion on its route, the
collective's time the longest dependency path); seeded runs, the slowdown of
each run is its time over the clean time.
"""

from __future__ import annotations

import numpy as np

from .common import Claim, Result, Row, Timer, plot_series, write_csv

NAME = "network-noise"
TITLE = "The impact of network noise at large scale (Hoefler, Schneider & Lumsdaine 2009)"
PAPER = ("T. Hoefler, T. Schneider, A. Lumsdaine, \"The Impact of Network Noise at Large-Scale Communication "
         "Performance\", IPDPS workshops 2009 — seed `network-noise-large-scale.txt`")

#: Table 1: layout, endpoints, switches
TABLE1 = [
    ("xgft(2,12,6)", 144, 18),
    ("xgft(2,24,12)", 288, 36),
    ("xgft(3,12,8,12,4)", 1152, 240),
    ("xgft(3,12,16,12,8)", 2304, 480),
    ("xgft(3,12,24,12,12)", 3456, 720),
    ("xgft(4,12,12,6,12,12,3)", 10368, 3024),
    ("xgft(4,12,12,12,12,12,6)", 20736, 6048),
]
#: Fig. 7: the rank -> node map of the 8-rank binomial tree on a 16-node tree of 4-port crossbars
FIG7_MAP = {0: 3, 1: 6, 2: 5, 3: 13, 4: 7, 5: 9, 6: 0, 7: 10}
#: Fig. 7: the unperturbed run's congestion along the longest path (§3: "3 in this example")
FIG7_CLEAN = 3
RATIO = 0.5
SEED = 1


def _table1() -> list[Row]:
    from ..topology import parse_topology
    rows = []
    for layout, endpoints, switches in TABLE1:
        t = parse_topology(f"table1:{endpoints}")
        rows.append(Row(f"{layout}: endpoints", "Table 1", endpoints, t.n_endpoints, "", t.n_endpoints == endpoints))
        rows.append(Row(f"{layout}: switches", "Table 1", switches, t.n_switches, "", t.n_switches == switches))
    return rows


def _fig7() -> tuple[Row, str]:
    """The worked example's unperturbed congestion: per round, the largest
    number of the tree's messages sharing a link; summed along the rounds."""
    from ..schedules import generate
    from ..sim import static_contention
    from ..topology import make_router, parse_topology
    topo = parse_topology("kary:4,2")
    router = make_router(topo, "ftree")
    order = np.array([FIG7_MAP[r] for r in range(8)])
    sched = generate("bcast", "binomial", 8, count=1, itemsize=8)
    est = static_contention(sched, router, order, alpha=0.0)
    per_round = [int(round(r.congestion)) for r in est.rounds]
    total = sum(per_round)
    return (Row("8-rank binomial tree on a 16-node tree of 4-port switches, given rank map: congestion of the "
                "unperturbed run along its rounds", "§3, Fig. 7", FIG7_CLEAN, total, "",
                total == FIG7_CLEAN, f"per round {per_round}"), str(per_round))


#: the ratio sweep: a quarter of table1:1152 runs the allreduce, so ratios up to 0.75 find background endpoints
RATIO_TREE, RATIO_RANKS, RATIOS = 1152, 288, (0.1, 0.25, 0.5, 0.75)


def _slowdowns(n: int, runs: int, *, p: int | None = None, ratio: float = RATIO):
    from ..schedules import generate
    from ..sim import NetworkNoise, Platform, make_network, noise_runs
    p = n // 2 if p is None else p
    sched = generate("allreduce", "binomial", p, count=1, itemsize=8)
    net = make_network(f"table1:{n}@lat=0s", p, routing="ftree", order="random", seed=SEED)
    return noise_runs(sched, Platform(alpha=0.0, network=net), model="congestion",
                      noise=NetworkNoise(ratio, seed=SEED), runs=runs, workers=1)


def run(out, *, quick: bool, progress=lambda what: None) -> Result:
    from ..viz.boxplot import write_boxplot_png
    clock = Timer()
    sizes = [144, 288, 1152, 2304] if quick else [t[1] for t in TABLE1]       # every Table 1 tree
    runs = 50 if quick else 100
    res = Result(NAME, TITLE, PAPER,
                 f"`congestion` (the paper's dependency-based congestion model) in ORCS units: α = 0 and no link "
                 "latency, so a message takes its route's largest congestion times its bytes over the link "
                 "bandwidth and the slowdown is the ratio of congestion sums along the longest path, as the paper "
                 "counts it (§3); `ftree` routing; "
                 f"binomial allreduce of 8 B on half of each `table1:N` tree placed at random (seed {SEED}), "
                 f"perturbation ratio {RATIO} (the other half), {runs} seeded runs per size "
                 f"(seeds {SEED}..{SEED + runs - 1}); the ratio sweep on {RATIO_RANKS} ranks of table1:{RATIO_TREE}",
                 quick=quick)
    res.rows += _table1()
    progress("Table 1")
    row, _ = _fig7()
    res.rows.append(row)
    progress("Fig. 7")

    ensembles = {}
    for n in sizes:
        ensembles[n] = _slowdowns(n, runs)
        progress(f"Fig. 10: {n} endpoints")
    write_csv(out / "fig10.csv", ["endpoints", "ranks", "seed", "clean_s", "time_s", "slowdown"],
              [(n, n // 2, s, f"{e.clean:.9g}", f"{t:.9g}", f"{t / e.clean:.6g}")
               for n, e in ensembles.items() for s, t in zip(e.seeds, e.times)])
    res.tables.append(("fig10.csv", "Fig. 10: every seeded run, clean and perturbed time"))
    for n, e in ensembles.items():
        lo, hi = e.notch
        res.rows.append(Row(f"slowdown at ratio 0.5, {n} endpoints ({n // 2} ranks): mean (median, 95% notch)",
                            "Fig. 10", "grows with size", e.mean, "×", None,
                            f"median {e.median:.3f}, notch [{lo:.3f}, {hi:.3f}]"))
    write_boxplot_png([(f"{n}\n({n // 2} ranks)", np.asarray(e.times) / e.clean) for n, e in ensembles.items()],
                      out / "fig10-boxes.png", ylabel="slowdown (perturbed / clean)", reference=1.0,
                      title=f"Fig. 10: binomial allreduce, 8 B, ratio {RATIO}, {runs} runs per size")
    plot_series(out / "fig10.png", [("topocoll: mean slowdown", sizes, [ensembles[n].mean for n in sizes], "model")],
                xlabel="endpoints of the Table 1 tree (half run the allreduce)", ylabel="slowdown", logx=True,
                title="Fig. 10: slowdown against network size, ratio 0.5", xticks=sizes)
    res.figures += [("fig10.png", "Fig. 10: mean slowdown against network size (the paper prints no numbers, "
                                  "only the curve; its claim is the growth)"),
                    ("fig10-boxes.png", "Fig. 10: distribution of the seeded runs (notched box plots)")]
    means = [ensembles[n].mean for n in sizes]
    grows = all(b > a * 1.001 for a, b in zip(means, means[1:])) and means[0] > 1.001
    notch_apart = ensembles[sizes[0]].notch[1] < ensembles[sizes[-1]].notch[0]
    res.claims.append(Claim(
        "the influence of network noise grows with the network size (ratio 0.5, Table 1 trees)", "§4.1, Fig. 10",
        grows and notch_apart,
        "Model: mean slowdown " + ", ".join(f"{m:.3f} ({n})" for n, m in zip(sizes, means))
        + f"; the medians of the smallest and largest tree differ with 95 % confidence: "
          f"{'yes' if notch_apart else 'no'} (notches do not overlap)."))
    sweep = {r: _slowdowns(RATIO_TREE, runs, p=RATIO_RANKS, ratio=r) for r in RATIOS}
    progress("ratio sweep")
    for r, e in sweep.items():
        res.rows.append(Row(f"slowdown on table1:{RATIO_TREE}, {RATIO_RANKS} ranks, ratio {r}: mean", "§2.1 Fig. 4, "
                            "§3.1 Fig. 8", "grows with the ratio", e.mean, "×", None,
                            f"median {e.median:.3f}, notch [{e.notch[0]:.3f}, {e.notch[1]:.3f}]"))
    plot_series(out / "ratio.png", [("topocoll: mean slowdown", list(RATIOS), [sweep[r].mean for r in RATIOS],
                                     "model")],
                xlabel="perturbation ratio", ylabel="slowdown",
                title=f"slowdown against the perturbation ratio, {RATIO_RANKS} ranks on table1:{RATIO_TREE}")
    res.figures.append(("ratio.png", "Slowdown against the perturbation ratio (the paper's Figs. 4 and 8 show the "
                                     "trend on CHiC and the real fabrics, no numbers)"))
    ratio_means = [sweep[r].mean for r in RATIOS]
    res.claims.append(Claim(
        "the influence of network noise grows with the perturbation ratio", "§2.1 Fig. 4, §3.1 Fig. 8",
        all(b > a * 1.001 for a, b in zip(ratio_means, ratio_means[1:])),
        "Model: mean slowdown " + ", ".join(f"{m:.3f} at {r}" for r, m in zip(RATIOS, ratio_means))
        + f" ({RATIO_RANKS} ranks placed at random on table1:{RATIO_TREE}, {runs} runs each)."))
    res.claims.append(Claim(
        "with the application's ranks chosen well, the tree pattern itself is congestion free; only the "
        "perturbation congests it", "§3, Fig. 7", row.holds,
        f"Model: every round of the 8-rank binomial tree under the given rank map has congestion 1 "
        f"({row.note}), total {row.model}, the paper's 3."))
    res.not_done += [
        "Fig. 7's perturbed congestion (5): it depends on the random permutation drawn in the figure, which the "
        "paper does not list",
        "Figs. 3–5 and the abstract's factor of two on 246 nodes: measurements on the CHiC cluster, not simulations",
        "Fig. 8 (the real fabrics Thunderbird, Ranger, Atlas, CHiC, Odin): their ibnetdiscover maps are not in the "
        "seeds",
    ]
    if quick:
        res.not_done.append("Fig. 10 at 3,456, 10,368 and 20,736 endpoints, and 100 runs per size: full run only")
    res.seconds = clock()
    return res
