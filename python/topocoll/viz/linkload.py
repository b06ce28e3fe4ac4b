"""Link contention over time: when and where a run's cables were shared, not only how many bytes
each carried.

A total (bytes per cable) cannot tell a random node order from a good one when both move the same
bytes: what differs is *when* — the good order gives every cable one message at a time, the bad one
piles several messages onto one cable while others idle. :func:`link_utilisation` recovers this
exactly from a traced run: a message occupies every link of its static route from its injection to
its arrival, and each (link, time bin) holds the number of messages on it, averaged over the bin.
1.0 is a cable busy with one message all the bin long; 2.0 is two messages sharing it (each at
about half the rate under ``flow``); a contention-free schedule stays at or below 1.0 except where
consecutive messages overlap within a bin's width. :func:`hottest_interval` names the worst
(link, bin).

The picture (:func:`utilisation_figure`): a heat map, links (busiest first) against time, colour =
messages sharing the cable, beside each link's total bytes, with the hottest interval marked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError

__all__ = ["LinkUtilisation", "hottest_interval", "link_utilisation", "utilisation_figure",
           "write_utilisation"]

#: time bins at most (the picture's columns; the arrays stay links × bins)
MAX_BINS = 2000


@dataclass(frozen=True)
class LinkUtilisation:
    """``util[link, bin]``: messages on ``link`` during ``edges[bin] .. edges[bin + 1]`` (s), averaged
    over the bin; ``total_bytes[link]``: bytes over the whole run."""

    edges: np.ndarray
    util: np.ndarray
    total_bytes: np.ndarray


def link_utilisation(sim, bins: int = 100, *, until: float | None = None) -> LinkUtilisation:
    """Messages per link in ``bins`` equal intervals of a run simulated with ``trace=True`` on a
    network with static routes (module docstring).

    ``until`` (s) ends the binned span (default: the run's end); two runs given the same ``until``
    are binned alike (same bin width, same time axis), so their pictures compare bin by bin.

    Examples
    --------
    Two ranks of a 4-port crossbar send 1 MB each to rank 2 at once at 1 GB/s: ``flow`` shares rank
    2's cable, both messages take 2 ms, so that cable holds 2 messages in every bin; each sender's
    cable holds 1. The cable into rank 2 carried 2 MB.

    >>> from topocoll.schedules.ir import Schedule, ScheduleBuilder
    >>> from topocoll.sim import Platform, make_network, simulate
    >>> from topocoll.sim.engine import EngineConfig
    >>> b = ScheduleBuilder(4)
    >>> for r in (0, 1):
    ...     _ = b.send(r, 2, (r,), round=0), b.recv(2, r, (r,), buf="tmp", round=0)
    >>> sched = Schedule.from_ops("alltoall", b.build(), count=125_000, itemsize=8)   # 1 MB blocks
    >>> net = make_network("crossbar:4@bw=1GB/s,lat=0s", 4)
    >>> sim = simulate(sched, Platform(alpha=0, network=net), EngineConfig("flow", trace=True))
    >>> u = link_utilisation(sim, bins=4)
    >>> float(u.util.max().round(6)), sorted({float(x) for x in u.util.max(axis=1).round(6)}), int(u.total_bytes.max())
    (2.0, [0.0, 1.0, 2.0], 2000000)
    """
    from ..topology.routing import route
    tr = getattr(sim, "trace", None)
    if tr is None or "inject" not in tr:
        raise SpecError("link_utilisation: the run was simulated without trace=True, expected a traced run")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or not 1 <= bins <= MAX_BINS:
        raise SpecError(f"link_utilisation: bins={bins!r}, expected 1..{MAX_BINS}")
    net = sim.network
    n_links = len(sim.link_bytes)
    if getattr(net, "router", None) is None:
        raise SpecError("link_utilisation: the run has no network (no routes), expected a run on a topology")
    send = np.asarray(tr["send"], dtype=np.int64)
    src_rank, dst_rank = np.asarray(tr["rank"])[send], np.asarray(tr["peer"])[send]
    nbytes = np.asarray(tr["nbytes"], dtype=np.float64)[send]
    t0, t1 = np.asarray(tr["inject"], dtype=np.float64), np.asarray(tr["arrive"], dtype=np.float64)
    end = float(max(sim.time, t1.max() if len(t1) else 0.0))
    if until is not None:
        if not (isinstance(until, (int, float)) and np.isfinite(until) and until >= end):
            raise SpecError(f"link_utilisation: until={until!r}, expected a time in s at least the run's end "
                            f"({end:g} s)")
        end = float(until)
    edges = np.linspace(0.0, end if end > 0 else 1.0, bins + 1)
    util = np.zeros((n_links, bins))
    order = np.asarray(net.order)
    s_ep, d_ep = order[src_rank], order[dst_rank]
    keep = (s_ep != d_ep) & (nbytes > 0)
    if keep.any():
        indptr, links, weights = route(net.router, s_ep[keep], d_ep[keep], weights=True)
        nb, a, b = nbytes[keep], t0[keep], t1[keep]
        # bytes of each message in each bin: its rate times its overlap with the bin
        lo, hi = edges[:-1][None, :], edges[1:][None, :]
        overlap = np.clip(np.minimum(b[:, None], hi) - np.maximum(a[:, None], lo), 0.0, None)
        msg_of = np.repeat(np.arange(len(nb)), np.diff(indptr).astype(np.int64))
        np.add.at(util, links.astype(np.int64), overlap[msg_of] * weights[:, None])
    util /= np.diff(edges)[None, :]
    return LinkUtilisation(edges, util, np.asarray(sim.link_bytes, dtype=np.float64))


def hottest_interval(u: LinkUtilisation) -> tuple[int, float, float, float]:
    """``(link, start s, end s, utilisation)`` of the most loaded (link, bin)."""
    link, b = np.unravel_index(int(np.argmax(u.util)), u.util.shape)
    return int(link), float(u.edges[b]), float(u.edges[b + 1]), float(u.util[link, b])


def utilisation_figure(u: LinkUtilisation, *, names=None, top: int = 40, title: str = "",
                       vmax: float | None = None, time_scale: tuple[float, str] | None = None):
    """Heat map of the ``top`` busiest links (by total bytes) against time, with their totals beside.

    ``vmax``: the colour scale's top (messages on a cable); give several runs the same one so one
    colour means one load in every picture (default: this run's peak, at least 1). ``time_scale``:
    ``(factor, unit)`` of the time axis, e.g. ``(1e3, "ms")``, to match a table beside it (default:
    the largest unit the run's span reaches)."""
    from matplotlib.colors import Normalize

    from .figure import new_figure
    busy = np.argsort(-u.total_bytes, kind="stable")[:top]
    busy = busy[u.total_bytes[busy] > 0]
    if len(busy) == 0:
        raise SpecError("link utilisation: no link carried a byte, nothing to draw")
    link, a, b, peak = hottest_interval(u)
    if link not in set(busy.tolist()):
        # the hottest interval is the picture's point: its link is drawn even when others carried more bytes
        busy = np.append(busy[:top - 1], link)
    scale, unit = time_scale or _time_unit(float(u.edges[-1]))
    fig = new_figure(7.0, max(2.6, 0.9 + 0.16 * len(busy)))
    grid = fig.add_gridspec(1, 2, width_ratios=[4, 1])
    ax, bar = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    if vmax is None:
        vmax = max(1.0, float(u.util[busy].max()))
    elif not vmax > 0:
        raise SpecError(f"link utilisation: vmax={vmax!r}, expected a positive number of messages")
    im = ax.imshow(u.util[busy], aspect="auto", interpolation="nearest", cmap="magma_r",
                   norm=Normalize(0.0, vmax), extent=(0, u.edges[-1] * scale, len(busy) - 0.5, -0.5))
    labels = [names(int(i)) if names else f"link {int(i)}" for i in busy]
    ax.set_yticks(range(len(busy)), labels, fontsize="x-small")
    ax.set_xlabel(f"time ({unit})")
    row = int(np.flatnonzero(busy == link)[0])
    ax.add_patch(_rect(a * scale, row - 0.5, (b - a) * scale, 1.0))
    ax.set_title(title or f"Messages sharing each cable over time (most: {peak:.2f} at {a * scale:.3g}–"
                          f"{b * scale:.3g} {unit})", fontsize="medium")
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.set_label("messages on the cable (bin average)")
    bar.barh(range(len(busy)), u.total_bytes[busy] / 1e6, color="#4a6fa5")
    bar.set_ylim(len(busy) - 0.5, -0.5)
    bar.set_yticks([])
    bar.set_xlabel("total (MB)")
    return fig


def _rect(x, y, w, h):
    from matplotlib.patches import Rectangle
    return Rectangle((x, y), w, h, fill=False, edgecolor="#0a0", linewidth=1.5)


def _time_unit(seconds: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if seconds * scale >= 1:
            return scale, unit
    return 1e9, "ns"


def write_utilisation(u: LinkUtilisation, path, **kwargs):
    """Write :func:`utilisation_figure` to ``path`` (``.png``, ``.svg`` or ``.pdf``)."""
    from .figure import save
    return save(utilisation_figure(u, **kwargs), path, "link utilisation")
