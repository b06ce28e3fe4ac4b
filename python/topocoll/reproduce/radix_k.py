"""Peterka, Goodell, Ross, Shen & Thakur, "A configurable algorithm for
parallel image-compositing applications" (radix-k), SC 2009 (seed
``radix-k-compositing.txt``).

Configuration, from the paper: Blue Gene/P, one process per node (§4),
images of 1, 2, 4 and 8 megapixels at 16 B per pixel (§4.1), k-values
favouring 8 in early rounds, then 4 or 2 (§4.1), compositing in rank order.

The partitions' real shapes: "at 256-node partitions and below, the
wrap-around links are unavailable making the network a mesh instead of a
torus. By allocating a 512-node partition, however, even if 256 nodes are
used, a true 3D torus exists" (§4.3); IBM's BG/P blocks likewise use the
torus only from 512 nodes up (KAUST's Shaheen BG/P documentation: "Processes
must run on a block of at least 512 nodes in order to use the torus
network"). So P = 32 … 256 run on meshes (4×4×2, 4×4×4, 8×4×4, 8×8×4: the
seeds give no sub-midplane shapes; these fill an 8×8×8 midplane's corner,
BG/P's 32-node node card being 4×4×2) and P = 512 on the 8×8×8 torus;
Fig. 6's "torus" at 256 ranks is 256 ranks on a 512-node torus (the first
four z-planes of ``torus:8x8x8``), not an 8×8×4 torus whose z-rings close
over four planes.

The seeds give no BG/P link figures, so the links are BG/L's (175 MB/s,
100 ns per hop, all-to-all paper §2); times scale with the link rate, ratios
hardly. Model: ``flow`` (max-min fair sharing), dimension-order routing,
α = 0. The paper does not give the compositing rate either, so two bounds
are shown, neither fitted: compositing free (γ = 0) and compositing as fast
as a link (γ = β).

Node order: the paper's Fig. 4 does not say how ranks were mapped. Its §4.3
(Fig. 6 right) shows radix-8 rounds paying off when successive ranks fill
2×2×2 blocks ("each 2 × 2 × 2 block operate[s] as a 3D hypercube"), which is
what its k-vectors favouring 8 assume. Three readings are run and each is
judged: (A) the paper's k-vectors with 2×2×2 blocks; (B) the paper's
k-vectors in BG/P's default XYZ order (topocoll's ``identity``: x fastest),
where a first radix-8 round is a line of 8 nodes along x; (C) that default
order with the best k-vector per P, as the paper set its k-values "based on
initial tests of good values" (§4): the vectors of radices 2 … 64 in at most
3 rounds (Fig. 4's own vectors have at most 3) with a radix above 2 (binary
swap itself excluded), chosen by the
model at 1 megapixel with compositing free.

Why (B) loses on a mesh (hand-derived; ``test_reproduce`` checks it):
direct send among 8 nodes on a mesh line sends, across the middle link in
each direction, 4 × 4 = 16 messages of m/8 bytes, 2m/B; binary swap's three
rounds on the same line load every link with m/2 per round, 1.5m/B; on a ring
of 8 the same direct send's busiest link carries 8–10 such messages,
m/B–1.25m/B. So a radix-8 round on an x-line is faster than three binary-swap
rounds on a torus and slower on a mesh.

Overlap (§3.3): radix-k composites each message as it arrives while the
round's others are still in flight. The model expresses it: a schedule's
reduction depends only on its message and the previous partial result in
the compositing order (the out-of-order rule of §3.1), and ``simulate``
charges each reduction its bytes at the compositing rate on the rank's CPU,
while messages keep moving. Whether it shows depends on arrival times: the
fluid model shares a node's links among all its messages, so a group's
messages arrive together and nothing can be composited early (no gain); the
packet model sends them packet by packet and they arrive staggered. The
page measures time with γ = β against the no-overlap sum (time with γ = 0
plus the compositing a rank does, n(P − 1)/P pixels at γ, §2.2's
assumption 5) on both models.
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
#: the smallest BG/P block with wrap-around links (§4.3; KAUST Shaheen BG/P documentation)
TORUS_FROM = 512
#: P -> (partition shape, k-vector per §4.1: 8 first, then 4 or 2); mesh below TORUS_FROM
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
#: the node orders of the readings (module doc)
BLOCKS, DEFAULT = "blocked:2x2x2", "identity"
#: the best-k search (reading C): radices and most rounds
SEARCH_RADICES, SEARCH_ROUNDS = (2, 4, 8, 16, 32, 64), 3
#: the overlap runs: BG/L packets (all-to-all paper §2: 240 B payload + 16 B header; 4 packets per VC
#: buffer as BENCHMARKS.md's radix-k rows assume; dimension order with a dateline, 2 VCs; no switch delay:
#: BG/L's 100 ns per hop is on the link), 1 megapixel, 2×2×2 blocks, γ = β
OVERLAP_P = {32: ("4x4x2", [8, 4]), 64: ("4x4x4", [8, 8])}


def partition(p: int, shape: str) -> str:
    """The topology spec of BG/P's ``p``-node partition: a mesh below
    :data:`TORUS_FROM`, a torus from it."""
    return f"{'mesh' if p < TORUS_FROM else 'torus'}:{shape}@bw={LINK},lat=100ns"


def _bgl_packets():
    from ..sim.packet import PacketOptions
    return PacketOptions(packet_bytes=240, header_bytes=16, vcs=2, buffer_packets=4, router_delay=0.0)


def _time(algorithm: str, p: int, spec: str, megapixels: float, *, k=None, gamma: bool, order: str = DEFAULT,
          model: str = "flow") -> float:
    from ..schedules import generate
    from ..sim import Platform, make_network, simulate
    from ..sim.engine import EngineConfig, EngineOptions
    pixels = int(megapixels * (1 << 20))
    params = {"k": k} if k is not None else {}
    sched = generate("reduce_scatter", algorithm, p, count=pixels, itemsize=16, **params)
    net = make_network(spec, p, order=order)
    plat = Platform(alpha=0.0, reduce_bandwidth=LINK_BW if gamma else 1e18, network=net)
    options = EngineOptions(packet=_bgl_packets()) if model == "packet" else EngineOptions()
    return simulate(sched, plat, EngineConfig(model, options)).time


def k_vectors(p: int, radices=SEARCH_RADICES, rounds: int = SEARCH_ROUNDS) -> list[list[int]]:
    """Ordered k-vectors of ``p`` from ``radices`` in at most ``rounds`` rounds with a radix above 2.

    Examples
    --------
    >>> k_vectors(16)
    [[16], [2, 8], [4, 4], [8, 2], [2, 2, 4], [2, 4, 2], [4, 2, 2]]
    >>> [4, 2, 2] in k_vectors(16, rounds=2), [2, 2, 2, 2] in k_vectors(16, rounds=4)
    (False, False)
    """
    out: list[list[int]] = []

    def walk(rest, prefix):
        if rest == 1:
            if max(prefix) > 2:
                out.append(prefix)
            return
        if len(prefix) == rounds:
            return
        for f in radices:
            if rest % f == 0:
                walk(rest // f, prefix + [f])

    walk(p, [])
    return sorted(out, key=lambda k: (len(k), k))


def _best_k(p: int, spec: str) -> tuple[list[int], int]:
    """Reading C's k-vector: the fastest of :func:`k_vectors` at 1 megapixel, γ = 0, default order."""
    vectors = k_vectors(p)
    times = [(_time("radix_k", p, spec, 1, k=k, gamma=False), i) for i, k in enumerate(vectors)]
    return vectors[min(times)[1]], len(vectors)


def _fig4(res, out, ps, progress):
    """Fig. 4 in the three readings; rows, claim, CSV and plot."""
    readings = {"A": ("paper's k, 2×2×2 blocks", BLOCKS), "B": ("paper's k, default XYZ order", DEFAULT),
                "C": ("best k per P, default XYZ order", DEFAULT)}
    points = []        # (reading, p, mp, gamma, k, bs, rk)
    searched = {}
    for p in ps:
        shape, paper_k = FIG4[p]
        spec = partition(p, shape)
        best, n = _best_k(p, spec)
        searched[p] = (best, n)
        for reading, (_, order) in readings.items():
            k = best if reading == "C" else paper_k
            # the ratios do not change with the image at α = 0 (the flow model is linear in bytes): the paper's
            # reading (A) runs every image, the others the smallest and the largest
            for mp in (MEGAPIXELS if reading == "A" else (MEGAPIXELS[0], MEGAPIXELS[-1])):
                for gamma in (False, True):
                    bs = _time("binary_swap", p, spec, mp, gamma=gamma, order=order)
                    rk = _time("radix_k", p, spec, mp, k=k, gamma=gamma, order=order)
                    points.append((reading, p, mp, gamma, k, bs, rk))
        progress(f"Fig. 4 P={p}")
    write_csv(out / "fig4.csv", ["reading", "p", "network", "order", "megapixels", "compositing", "k",
                                 "binary_swap_s", "radix_k_s", "speedup"],
              [(r, p, partition(p, FIG4[p][0]).split("@")[0], readings[r][1], mp, "link rate" if g else "free",
                "-".join(map(str, k)), f"{bs:.6g}", f"{rk:.6g}", f"{bs / rk:.4f}")
               for r, p, mp, g, k, bs, rk in points])
    res.tables.append(("fig4.csv", "Fig. 4: binary swap and radix-k times, every (reading, P, image, compositing "
                                   "rate)"))
    verdicts = {}
    for reading, (label, _) in readings.items():
        for gamma, glabel in ((False, "γ = 0"), (True, "γ = β")):
            speed = np.array([bs / rk for r, p, mp, g, k, bs, rk in points if r == reading and g == gamma])
            res.rows.append(Row(f"({reading}) {label}: radix-k speed-up over binary swap, mean of {len(speed)} "
                                f"points, {glabel}", "§4.1, Fig. 4", PAPER_MEAN, float(speed.mean()), "×",
                                abs(speed.mean() / PAPER_MEAN - 1) <= TOLERANCE,
                                f"P = {', '.join(map(str, ps))}; 1–8 megapixels; worst {speed.min():.2f}×"))
            if not gamma:
                res.rows.append(Row(f"({reading}) {label}: radix-k speed-up over binary swap, largest, {glabel}",
                                    "§4.1, Fig. 4", PAPER_MAX, float(speed.max()), "×",
                                    abs(speed.max() / PAPER_MAX - 1) <= TOLERANCE))
        mine = [(p, bs / rk) for r, p, mp, g, k, bs, rk in points if r == reading]
        losing = sorted({p for p, s in mine if s < 0.999})
        verdicts[reading] = losing
    series = []
    for reading, (label, _) in readings.items():
        pts = [(p, bs / rk) for r, p, mp, g, k, bs, rk in points if r == reading and mp == 1 and not g]
        series.append((f"({reading}) {label}, γ = 0", [x for x, _ in pts], [y for _, y in pts], "model"))
    series.append(("paper: mean 1.45 over all points", ps, [PAPER_MEAN] * len(ps), "paper"))
    plot_series(out / "fig4.png", series, xlabel="processes (mesh below 512, torus at 512)",
                ylabel="binary swap time ÷ radix-k time", logx=True, title="Fig. 4: radix-k against binary swap",
                xticks=ps)
    res.figures.append(("fig4.png", "Fig. 4: radix-k's speed-up over binary swap in three readings (1 megapixel, "
                                    "compositing free; the ratios do not change with the image at α = 0); hollow "
                                    "circles: the paper's mean"))
    best_text = "; ".join(f"P={p}: {'-'.join(map(str, k))} (of {n})" for p, (k, n) in searched.items())
    for reading, (label, _) in readings.items():
        means = [r.model for r in res.rows if r.quantity.startswith(f"({reading})") and "mean" in r.quantity]
        lo, hi = sorted(means)
        why = {"A": "the radix-8 rounds run inside 2×2×2 blocks (a 3D hypercube, §4.3) on the mesh and the torus "
                    "alike; the paper's 1.45 lies " + ("between" if lo <= PAPER_MEAN <= hi else "outside")
                    + " the two compositing bounds",
               "B": "on a mesh the first radix-8 round is a line of 8 nodes along x: its middle link carries 16 "
                    "messages of m/8 (2m/B) where binary swap's three rounds need 1.5m/B (module doc); on the "
                    "512-node torus the ring's wrap-around halves that",
               "C": f"the k-vectors the model picks (of the vectors with a radix above 2): {best_text}"}[reading]
        losing = verdicts[reading]
        res.claims.append(Claim(
            f"({reading}) {label}: radix-k is never worse than binary swap, 1.45× faster on average",
            "§4.1, Fig. 4", not losing,
            f"Model: mean {means[0]:.2f}× (γ = 0) and {means[1]:.2f}× (γ = β)"
            + (f"; slower than binary swap at P = {', '.join(map(str, losing))}" if losing else "; never slower")
            + f". {why[0].upper()}{why[1:]}."))
    return points


def _fig6(res, out, quick, progress):
    vectors = FIG6 if not quick else [v for v in FIG6 if v != [256]]
    rows = []
    for k in vectors:
        t_torus = _time("radix_k", 256, f"torus:8x8x8@bw={LINK},lat=100ns", 2, k=k, gamma=False)
        t_mesh = _time("radix_k", 256, partition(256, "8x8x4"), 2, k=k, gamma=False)
        rows.append((k, t_torus, t_mesh))
        progress(f"Fig. 6 k={k}")
    write_csv(out / "fig6.csv", ["k", "torus_s", "mesh_s"],
              [("-".join(map(str, k)), f"{t:.6g}", f"{m:.6g}") for k, t, m in rows])
    res.tables.append(("fig6.csv", "Fig. 6 (left): radix-k on 256 ranks, 2 megapixels: a 256-node mesh 8×8×4 and "
                                   "256 ranks on a 512-node torus 8×8×8"))
    from ..viz.figure import new_figure, save
    fig = new_figure(7.5, 4.2)
    ax = fig.add_subplot()
    xs = range(len(rows))
    ax.plot(xs, [m for _, _, m in rows], marker="o", label="topocoll, 256-node mesh 8×8×4")
    ax.plot(xs, [t for _, t, _ in rows], marker="s", label="topocoll, 256 ranks of a 512-node torus 8×8×8")
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
        "rightmost. The torus's x- and y-rings close (its z-rings do not help: the 256 ranks hold four of the "
        "eight planes, and the way round the unused ones is longer), which halves the longest paths of the large "
        "groups' messages in x and y."))


def _overlap(res, out, quick, progress):
    """§3.3: compositing overlapped with arrivals, flow and packet, against the no-overlap sum."""
    cases = dict(list(OVERLAP_P.items())[:1]) if quick else OVERLAP_P
    lines = []
    for p, (shape, k) in cases.items():
        spec = partition(p, shape)
        composite = (1 << 20) * 16 * (p - 1) / p / LINK_BW      # n(P − 1)/P pixels at γ = β
        for model in ("flow", "packet"):
            for alg, kk in (("binary_swap", None), ("radix_k", k)):
                free = _time(alg, p, spec, 1, k=kk, gamma=False, order=BLOCKS, model=model)
                paid = _time(alg, p, spec, 1, k=kk, gamma=True, order=BLOCKS, model=model)
                lines.append((p, model, alg, "-".join(map(str, kk)) if kk else "-", free, paid, free + composite))
        progress(f"overlap P={p}")
    write_csv(out / "overlap.csv", ["p", "model", "algorithm", "k", "time_compositing_free_s",
                                    "time_compositing_at_link_rate_s", "no_overlap_sum_s", "overlap_gain"],
              [(p, m, a, k, f"{f:.6g}", f"{t:.6g}", f"{s:.6g}", f"{s / t:.4f}") for p, m, a, k, f, t, s in lines])
    res.tables.append(("overlap.csv", "§3.3: time with compositing at the link rate against the no-overlap sum "
                                      "(time with compositing free + the compositing a rank does), 1 megapixel, "
                                      "2×2×2 blocks, flow and packet (BG/L packets)"))
    for p in sorted({p for p, *_ in lines}):
        t = {(m, a, g): (paid if g else free) for q, m, a, k, free, paid, _ in lines if q == p
             for g in (False, True)}
        for g, glabel in ((False, "γ = 0"), (True, "γ = β")):
            speed = t["packet", "binary_swap", g] / t["packet", "radix_k", g]
            res.rows.append(Row(f"(A) on the packet model (BG/L packets, dimension order), P={p}, 1 megapixel: "
                                f"radix-k speed-up over binary swap, {glabel}", "§4.1, Fig. 4", PAPER_MEAN, speed,
                                "×", abs(speed / PAPER_MEAN - 1) <= TOLERANCE,
                                f"flow: {t['flow', 'binary_swap', g] / t['flow', 'radix_k', g]:.2f}×"))
    gain = {(p, m, a): s / t for p, m, a, k, f, t, s in lines}
    ps = sorted({p for p, *_ in lines})
    rk_packet = [gain[p, "packet", "radix_k"] for p in ps]
    bs_all = [gain[p, m, "binary_swap"] for p in ps for m in ("flow", "packet")]
    rk_flow = [gain[p, "flow", "radix_k"] for p in ps]
    res.claims.append(Claim(
        "radix-k overlaps compositing with messages still arriving; binary swap cannot", "§3.3, Fig. 3",
        min(rk_packet) > 1.05 and max(abs(g - 1) for g in bs_all) < 0.01,
        "Model (no-overlap sum ÷ time, 1 megapixel, γ = β): radix-k "
        + ", ".join(f"P={p} {gain[p, 'packet', 'radix_k']:.2f}×" for p in ps) + " in the packet model, "
        + ", ".join(f"{g:.2f}×" for g in rk_flow) + " in flow; binary swap "
        + f"{min(bs_all):.2f}–{max(bs_all):.2f}× in both. The schedule lets each message be composited as soon "
          "as it and its neighbour in the compositing order are in; the fluid model delivers a group's messages "
          "together (max-min sharing of the node's links), so there is nothing to composite early, while the "
          "packet model's messages arrive one after another. The paper shows the overlap as a trace (Fig. 3) and "
          "gives no number."))


def run(out, *, quick: bool, progress=lambda what: None) -> Result:
    clock = Timer()
    res = Result(NAME, TITLE, PAPER,
                 f"`flow` (max-min fair sharing) on BG/P's partitions: `mesh:SHAPE@bw={LINK},lat=100ns` below 512 "
                 f"nodes, `torus:8x8x8@…` at 512 (§4.3; BG/L's links: the seeds give none for BG/P), "
                 "dimension-order routing, α = 0; compositing free (γ = 0) or as fast as a link (γ = β); node order "
                 "2×2×2 blocks (A) or BG/P's default XYZ (B, C); §3.3's overlap also on the packet model with BG/L "
                 "packets", quick=quick)
    ps = [32, 64, 128] if quick else sorted(FIG4)
    _fig4(res, out, ps, progress)
    _fig6(res, out, quick, progress)
    _overlap(res, out, quick, progress)
    res.not_done += [
        "Fig. 5 (non powers of two up to 34,816 processes) and Fig. 7 (the Eureka cluster): BG/P rack boundaries "
        "and Myrinet are not modelled",
        "Fig. 6 right (block mappings) at 256 ranks: BENCHMARKS.md \"Radix-k paper, Fig. 6\" runs them with the "
        "flow and packet models; Fig. 4's reading A uses the 2×2×2 blocks",
        "Fig. 4 above 512 processes (1,024 … 16,384: several midplanes, the rack boundaries of the \"slight "
        "bump\")",
    ]
    if quick:
        res.not_done.append("Fig. 4 at P = 256 and 512, Fig. 6's [256] (direct send) and the overlap at P = 64: "
                            "full run only")
    res.seconds = clock()
    return res
