"""Peterka, Goodell, Ross, Shen & Thakur, "A configurable algorithm for
parallel image-compositing applications" (radix-k), SC 2009 (seed
``radix-k-compositing.txt``).

Configuration, from the paper: Blue Gene/P, one process per node on a 3D
torus (§4), images of 1, 2, 4 and 8 megapixels at 16 B per pixel (§4.1),
k-values favouring 8 in early rounds, then 4 or 2 (§4.1), compositing in rank
order. The seeds give no BG/P link figures, so the links are BG/L's (175 MB/s,
100 ns per hop, all-to-all paper §2); times scale with the link rate, ratios
hardly. Model: ``flow`` (max-min fair sharing), dimension-order routing,
α = 0, ranks in identity order. The paper does not give the compositing rate
either, so two bounds are shown, neither fitted: compositing free (γ = 0) and
compositing as fast as a link (γ = β).
"""

from __future__ import annotations

import numpy as np

from .common import Claim, Result, Row, Timer, plot_series, write_csv

NAME = "radix-k"
TITLE = "Radix-k image compositing (Peterka, Goodell, Ross, Shen & Thakur 2009)"
PAPER = ("T. Peterka, D. Goodell, R. Ross, H.-W. Shen, R. Thakur, \"A configurable algorithm for parallel "
         "image-compositing applications\", SC 2009 — seed `radix-k-compositing.txt`")

LINK = "175MB/s"
LINK_BW = 175e6
#: P -> (torus shape, k-vector per §4.1: 8 first, then 4 or 2)
FIG4 = {32: ("4x4x2", [8, 4]), 64: ("4x4x4", [8, 8]), 128: ("8x4x4", [8, 8, 2]), 256: ("8x8x4", [8, 8, 4]),
        512: ("8x8x8", [8, 8, 8])}
MEGAPIXELS = (1, 2, 4, 8)
#: §4.1: "on average, Radix-k is 1.45 times faster", "up to 1.51 times faster", "never worse"
PAPER_MEAN, PAPER_MAX = 1.45, 1.51
#: Fig. 6's vectors (256 ranks, 2 megapixels), exactly the paper's list in its order (it prints [2 8 8 2]
#: twice; once here): binary swap first, direct send last (tests/test_paper_data.py reads the seed)
FIG6 = [[2] * 8, [4, 2, 2, 2, 2, 2, 2], [2, 4, 2, 2, 2, 2, 2], [2, 2, 4, 2, 2, 2, 2], [2, 2, 2, 4, 2, 2, 2],
        [2, 2, 2, 2, 4, 2, 2], [2, 2, 2, 2, 2, 4, 2], [2, 2, 2, 2, 2, 2, 4], [8, 2, 2, 2, 2, 2], [2, 8, 2, 2, 2, 2],
        [2, 2, 8, 2, 2, 2], [2, 2, 2, 8, 2, 2], [2, 2, 2, 2, 8, 2], [2, 2, 2, 2, 2, 8], [8, 8, 2, 2], [2, 8, 8, 2],
        [2, 2, 8, 8], [8, 2, 2, 8], [8, 8, 4], [8, 4, 8], [16, 4, 4], [4, 16, 4], [4, 4, 16], [16, 16], [32, 8],
        [8, 32], [64, 4], [4, 64], [256]]
TOLERANCE = 0.10


def _time(algorithm: str, p: int, shape: str, megapixels: int, *, k=None, gamma: bool, mesh: bool = False) -> float:
    from ..schedules import generate
    from ..sim import Platform, make_network, simulate
    pixels = megapixels << 20
    params = {"k": k} if k is not None else {}
    sched = generate("reduce_scatter", algorithm, p, count=pixels, itemsize=16, **params)
    net = make_network(f"{'mesh' if mesh else 'torus'}:{shape}@bw={LINK},lat=100ns", p, order="identity")
    plat = Platform(alpha=0.0, reduce_bandwidth=LINK_BW if gamma else 1e18, network=net)
    return simulate(sched, plat, model="flow").time


def run(out, *, quick: bool, progress=lambda what: None) -> Result:
    clock = Timer()
    res = Result(NAME, TITLE, PAPER,
                 f"`flow` (max-min fair sharing) on `torus:SHAPE@bw={LINK},lat=100ns` (BG/L's links: the seeds give "
                 "none for BG/P), dimension-order routing, identity order, α = 0; compositing free (γ = 0) or as "
                 "fast as a link (γ = β)", quick=quick)
    ps = [32, 64, 128] if quick else sorted(FIG4)
    points = []
    for p in ps:
        shape, k = FIG4[p]
        for mp in MEGAPIXELS:
            for gamma in (False, True):
                bs = _time("binary_swap", p, shape, mp, gamma=gamma)
                rk = _time("radix_k", p, shape, mp, k=k, gamma=gamma)
                points.append((p, mp, gamma, k, bs, rk))
        progress(f"Fig. 4 P={p}")
    write_csv(out / "fig4.csv", ["p", "megapixels", "compositing", "k", "binary_swap_s", "radix_k_s", "speedup"],
              [(p, mp, "link rate" if g else "free", "-".join(map(str, k)), f"{bs:.6g}", f"{rk:.6g}",
                f"{bs / rk:.4f}") for p, mp, g, k, bs, rk in points])
    res.tables.append(("fig4.csv", "Fig. 4: binary swap and radix-k times, every (P, image, compositing rate)"))
    for gamma, label in ((False, "γ = 0"), (True, "γ = β")):
        speed = np.array([bs / rk for p, mp, g, k, bs, rk in points if g == gamma])
        res.rows.append(Row(f"radix-k speed-up over binary swap, mean of {len(speed)} points, {label}",
                            "§4.1, Fig. 4", PAPER_MEAN, float(speed.mean()), "×",
                            abs(speed.mean() / PAPER_MEAN - 1) <= TOLERANCE,
                            f"P = {', '.join(map(str, ps))}; 1–8 megapixels"))
        res.rows.append(Row(f"radix-k speed-up over binary swap, largest, {label}", "§4.1, Fig. 4", PAPER_MAX,
                            float(speed.max()), "×", abs(speed.max() / PAPER_MAX - 1) <= TOLERANCE))
    series = []
    for gamma, label in ((False, "γ = 0"), (True, "γ = β")):
        for mp in (1, 8):
            pts = [(p, bs / rk) for p, m, g, k, bs, rk in points if g == gamma and m == mp]
            series.append((f"topocoll {mp} MP, {label}", [x for x, _ in pts], [y for _, y in pts], "model"))
    series.append(("paper: mean 1.45 over all points", ps, [PAPER_MEAN] * len(ps), "paper"))
    plot_series(out / "fig4.png", series, xlabel="processes", ylabel="binary swap time ÷ radix-k time", logx=True,
                title="Fig. 4: radix-k against binary swap", xticks=ps)
    res.figures.append(("fig4.png", "Fig. 4: radix-k's speed-up over binary swap; hollow circles: the paper's mean"))
    never_worse = all(bs >= rk * 0.999 for *_, bs, rk in points)
    means = [r.model for r in res.rows if "mean" in r.quantity]
    between = min(means) <= PAPER_MEAN <= max(means)
    res.claims.append(Claim(
        "radix-k is never worse than binary swap, 1.45× faster on average", "§4.1, Fig. 4", never_worse,
        "Model: " + "; ".join(f"{r.quantity.split(', ', 1)[1]}: {r.model:.2f}×" for r in res.rows[-4:]
                              if "mean" in r.quantity)
        + ". The model's gain comes from fewer rounds whose messages overlap on the torus links (and, with "
          "γ = β, compositing overlapped with the round's other messages, §3.3); the paper's average lies "
        + ("between" if between else "outside") + " the two compositing bounds."))

    vectors = FIG6 if not quick else [v for v in FIG6 if v != [256]]
    rows = []
    for k in vectors:
        t_torus = _time("radix_k", 256, "8x8x4", 2, k=k, gamma=False)
        t_mesh = _time("radix_k", 256, "8x8x4", 2, k=k, gamma=False, mesh=True)
        rows.append((k, t_torus, t_mesh))
        progress(f"Fig. 6 k={k}")
    write_csv(out / "fig6.csv", ["k", "torus_s", "mesh_s"],
              [("-".join(map(str, k)), f"{t:.6g}", f"{m:.6g}") for k, t, m in rows])
    res.tables.append(("fig6.csv", "Fig. 6 (left): radix-k on 256 ranks, 2 megapixels, torus and mesh 8×8×4"))
    from ..viz.figure import new_figure, save
    fig = new_figure(7.5, 4.2)
    ax = fig.add_subplot()
    xs = range(len(rows))
    ax.plot(xs, [m for _, _, m in rows], marker="o", label="topocoll, mesh 8×8×4")
    ax.plot(xs, [t for _, t, _ in rows], marker="s", label="topocoll, torus 8×8×4")
    ax.set_xticks(list(xs), ["-".join(map(str, k)) for k, _, _ in rows], rotation=45, ha="right",
                  fontsize="small")
    ax.set_ylabel("time (s)")
    ax.set_title("Fig. 6 (left): k-vectors on 256 ranks, 2 megapixels (the paper prints no times)",
                 fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    save(fig, out / "fig6.png", "reproduce")
    res.figures.append(("fig6.png", "Fig. 6 (left): radix-k time per k-vector on a 3D mesh and a 3D torus"))
    gain = [m / t for _, t, m in rows]
    torus_faster = all(g >= 0.999 for g in gain)
    grows = np.mean(gain[-3:]) > np.mean(gain[:3])
    res.claims.append(Claim(
        "a torus is faster than a mesh, more so toward the large k-values (right side of Fig. 6)", "§4.3, Fig. 6",
        torus_faster and grows,
        f"Model: mesh ÷ torus time {gain[0]:.2f} for binary swap, {gain[-1]:.2f} for {rows[-1][0]}; mean "
        f"{np.mean(gain[:3]):.2f} over the three leftmost vectors against {np.mean(gain[-3:]):.2f} over the three "
        "rightmost. Wrap-around links halve the longest paths of the large groups' messages."))
    res.not_done += [
        "Fig. 5 (non powers of two up to 34,816 processes) and Fig. 7 (the Eureka cluster): BG/P rack boundaries "
        "and Myrinet are not modelled",
        "Fig. 6 right (block mappings): BENCHMARKS.md \"Radix-k paper, Fig. 6\" runs them with the flow and packet "
        "models",
    ]
    if quick:
        res.not_done.append("Fig. 4 at P = 256 and 512 and Fig. 6's [256] (direct send): full run only")
    res.seconds = clock()
    return res
