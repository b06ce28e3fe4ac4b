"""A simulated run as a Chrome / Perfetto timeline (Trace Event Format JSON).

One track per rank (``pid`` 0, ``tid`` = rank, named ``rank N``) shows what
the rank did and when, as LogGOPSim's Drawviz timelines do for its runs:
complete events (``"ph": "X"``) for every send (CPU start → completion),
reduction and copy; every receive split into ``wait`` (posted → arrival of
its message, on a companion track ``rank N wait``) and ``recv`` (arrival →
completion); and one flow arrow (``"ph": "s"`` → ``"ph": "f"``) per message,
from its send to its receive. Open the file at https://ui.perfetto.dev or in
``chrome://tracing``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import SpecError
from ..schedules.program import COPY, RECV, REDUCE, SEND

__all__ = ["chrome_trace", "write_chrome_trace"]

_NS = 1e9
_NAMES = {SEND: "send", REDUCE: "reduce", COPY: "copy"}


def _traced(sim, where: str) -> dict:
    trace = getattr(sim, "trace", None)
    if trace is None:
        raise SpecError(f"{where}: the simulation has no trace, expected simulate(..., trace=True)")
    return trace


def _lanes(rank: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane of every interval, per rank, such that the intervals on one lane
    nest or are disjoint (first fit, in order of start, longest first)."""
    order = np.lexsort((-end, start, rank))
    lane = np.zeros(len(order), dtype=np.int64)
    stacks: list[list[float]] = []     # per lane: ends of the open intervals, innermost last
    current = None
    for i, r, s, e in zip(order.tolist(), rank[order].tolist(), start[order].tolist(), end[order].tolist()):
        if r != current:
            current, stacks = r, []
        for j, stack in enumerate(stacks):
            while stack and stack[-1] <= s:
                stack.pop()
            if not stack or stack[-1] >= e:
                stack.append(e)
                lane[i] = j
                break
        else:
            stacks.append([e])
            lane[i] = len(stacks) - 1
    return lane


def chrome_trace(sim, title: str = "") -> dict:
    """The traced simulation ``sim`` as a Trace Event Format document.

    Parameters
    ----------
    sim : topocoll.sim.engine.Simulation
        A run simulated with ``trace=True``.
    title : str
        Process name shown above the rank tracks (default: the model and the
        network).

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``,
        ready for :func:`json.dump`. Times (``ts``, ``dur``) are µs as floats,
        snapped to whole nanoseconds (Perfetto's resolution) so that slices
        that nest in the simulation still nest once the viewer reads them.
        Every complete event carries ``args`` ``op`` (global op id), ``peer``
        (-1 for local ops), ``bytes`` and ``round``. ``otherData`` holds the
        ``model``, the completion ``time`` (s), the background traffic's
        ``seed``, the ``network`` label, ``p`` and ``sync``.

    Raises
    ------
    SpecError
        If ``sim`` was simulated without ``trace=True``.

    Notes
    -----
    Complete events on one thread must nest (Trace Event Format; Perfetto
    drops or truncates crossing slices), but one rank's operations overlap:
    receives posted early wait side by side (a ring posts all its receives
    at once) while the rank sends and reduces. So thread ``tid = rank``
    (``rank N``) holds the rank's sends, ``recv`` parts, reductions and
    copies, and its ``wait`` slices go to a companion thread ``rank N wait``
    sorted just below it. Where slices of one kind still cross (waits posted
    at different times; rendezvous sends that outlast the next operation),
    the crossing one goes to a further lane, ``rank N (2)`` or ``rank N wait
    (2)``, … (first fit); these extra threads are numbered from ``p`` on.

    A flow starts (``"s"``) in the middle of its send's slice (bound to the
    enclosing slice) and ends (``"f"``, no ``bp``: bound to the next slice) at
    the start of its receive's ``recv`` slice, which follows it in the event
    list.

    References
    ----------
    "Trace Event Format", Chromium project design document (2016): complete,
    metadata and flow events, and the rule that complete events on one thread
    nest. T. Hoefler, T. Schneider, A. Lumsdaine, "LogGOPSim — Simulating
    Large-Scale Applications in the LogGOPS Model", HPDC 2010 (its Drawviz
    timelines).

    Examples
    --------
    >>> from topocoll.schedules import generate
    >>> from topocoll.sim.engine import simulate
    >>> sim = simulate(generate("allreduce", "ring", 4, count=16, itemsize=8), trace=True)
    >>> doc = chrome_trace(sim)
    >>> sorted({e["name"] for e in doc["traceEvents"] if e["ph"] == "X"})
    ['recv', 'reduce', 'send', 'wait']
    >>> sum(e["ph"] == "s" for e in doc["traceEvents"]) == len(sim.trace["send"])
    True
    """
    tr = _traced(sim, "chrome_trace")
    rank = np.asarray(tr["rank"], dtype=np.int64)
    kind = np.asarray(tr["kind"], dtype=np.int64)
    peer = np.asarray(tr["peer"], dtype=np.int64)
    nbytes = np.asarray(tr["nbytes"], dtype=np.int64)
    rnd = np.asarray(tr["round"], dtype=np.int64)
    start = np.asarray(tr["start"], dtype=np.float64)
    end = np.asarray(tr["end"], dtype=np.float64)
    send = np.asarray(tr["send"], dtype=np.int64)
    recv = np.asarray(tr["recv"], dtype=np.int64)
    arrive = np.asarray(tr["arrive"], dtype=np.float64)
    n, p = len(rank), len(sim.rank_done)

    # Arrival of each receive's message (a receive without one waits to its end).
    arrival = np.full(n, np.nan)
    arrival[recv] = arrive
    split = np.where(np.isnan(arrival), end, np.clip(arrival, start, end))

    # Slices: one per send/reduce/copy; wait + recv per receive.
    ops = np.arange(n, dtype=np.int64)
    is_recv = kind == RECV
    s_op = np.concatenate((ops[~is_recv], ops[is_recv], ops[is_recv]))
    s_name = np.concatenate((kind[~is_recv], np.full(int(is_recv.sum()), -1), kind[is_recv]))  # -1: wait
    # Whole nanoseconds (the viewers' resolution): nesting survives the export.
    s_lo = np.rint(np.concatenate((start[~is_recv], start[is_recv], split[is_recv])) * _NS)
    s_hi = np.rint(np.concatenate((end[~is_recv], split[is_recv], end[is_recv])) * _NS)
    is_wait = s_name == -1
    s_rank = rank[s_op]
    lane = np.zeros(len(s_op), dtype=np.int64)
    for family in (~is_wait, is_wait):
        rows = np.flatnonzero(family)
        lane[rows] = _lanes(s_rank[rows], s_lo[rows], s_hi[rows])

    # Tracks (rank, family 0 ops / 1 waits, lane): the ops' lane 0 of rank r is
    # thread r, every other track a thread numbered from p on.
    if len(s_op):
        combos, which = np.unique(np.stack((s_rank, is_wait.astype(np.int64), lane), axis=1), axis=0,
                                  return_inverse=True)
        which = np.asarray(which).reshape(-1)
    else:
        combos, which = np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    main = (combos[:, 1] == 0) & (combos[:, 2] == 0)
    combo_tid = np.where(main, combos[:, 0], p + np.cumsum(~main) - 1)
    tid = combo_tid[which]
    within = np.arange(len(combos)) - np.searchsorted(combos[:, 0], combos[:, 0])   # 0: the rank's main
    width = int(within.max(initial=0)) + 1

    events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
                           "args": {"name": title or f"{sim.model} on {sim.network.label}"}}]
    extra = {r: [] for r in range(p)}
    for (r, fam, ln), t, pos in zip(combos.tolist(), combo_tid.tolist(), within.tolist()):
        if t != r:
            extra[r].append((t, f"rank {r}" + (" wait" if fam else "") + (f" ({ln + 1})" if ln else ""), pos))
    for r in range(p):                  # every rank has its track, with or without ops
        for t, label, pos in [(r, f"rank {r}", 0)] + extra[r]:
            events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": t, "args": {"name": label}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": t,
                           "args": {"sort_index": r * width + pos}})

    # Slices in (rank, start, longest first) order, each receive's flow end
    # just before its "recv" slice (bound to the next slice on the thread).
    msg_ids = np.arange(len(send), dtype=np.int64)
    slice_idx = np.arange(len(s_op), dtype=np.int64)
    recv_slice = np.full(n, -1, dtype=np.int64)
    recv_slice[s_op[~is_wait & (s_name == RECV)]] = slice_idx[~is_wait & (s_name == RECV)]
    flow_end = np.full(len(s_op), -1, dtype=np.int64)
    flow_end[recv_slice[recv]] = msg_ids
    names = {**_NAMES, RECV: "recv", -1: "wait"}
    order = np.lexsort((-s_hi, s_lo, s_rank))
    ts_us, dur_us = s_lo / 1e3, (s_hi - s_lo) / 1e3
    for ts, dur, t, op, code, fe, pe, nb, rd in zip(
            ts_us[order].tolist(), dur_us[order].tolist(), tid[order].tolist(), s_op[order].tolist(),
            s_name[order].tolist(), flow_end[order].tolist(), peer[s_op[order]].tolist(),
            nbytes[s_op[order]].tolist(), rnd[s_op[order]].tolist()):
        if fe >= 0:
            events.append({"name": "message", "cat": "message", "ph": "f", "id": fe, "pid": 0, "tid": t,
                           "ts": ts})
        name = names[code]
        events.append({"name": name, "cat": name, "ph": "X", "pid": 0, "tid": t, "ts": ts, "dur": dur,
                       "args": {"op": op, "peer": pe, "bytes": nb, "round": rd}})

    # Flow starts: in the middle of the send's slice (bound to the enclosing slice).
    send_slice = np.full(n, -1, dtype=np.int64)
    send_slice[s_op[s_name == SEND]] = slice_idx[s_name == SEND]
    ss = send_slice[send]
    mid = np.floor((s_lo[ss] + s_hi[ss]) / 2) / 1e3
    events.extend({"name": "message", "cat": "message", "ph": "s", "id": m, "pid": 0, "tid": t, "ts": ts}
                  for m, t, ts in zip(msg_ids.tolist(), tid[ss].tolist(), mid.tolist()))

    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"model": sim.model, "time": sim.time, "seed": sim.seed,
                          "network": sim.network.label, "p": p,
                          "sync": getattr(getattr(sim, "options", None), "sync", None),
                          **({"title": title} if title else {})}}


def write_chrome_trace(sim, path, *, title: str = "") -> Path:
    """Write :func:`chrome_trace` of ``sim`` to ``path`` (JSON) and return the path.

    Parameters
    ----------
    sim : topocoll.sim.engine.Simulation
        Simulated with ``trace=True``.
    path : str or os.PathLike
    title : str
        See :func:`chrome_trace`.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    SpecError
        If ``sim`` has no trace.
    """
    doc = chrome_trace(sim, title)
    path = Path(path)
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    return path
