"""A simulated run as a Chrome / Perfetto timeline (Trace Event Format JSON).

Tracks are grouped: one *process* per group of ranks — the ranks whose
endpoints hang off one leaf switch (a node's neighbourhood on a fat tree or a
real fabric), else consecutive ranks in blocks of :data:`GROUP` (a crossbar, a
torus) — so that a viewer opens a 64-rank run as a handful of collapsible
groups, each holding its ranks' lanes. One track per rank (``tid`` = rank,
named ``rank N``) shows what the rank did and when, as LogGOPSim's Drawviz
timelines do for its runs:
complete events (``"ph": "X"``) for every send (CPU start → completion),
reduction and copy; every receive split into ``wait`` (posted → arrival of
its message, on a companion track ``rank N wait``; a rank's overlapping waits
merged into one slice by default) and ``recv`` (arrival → completion); and
one flow arrow (``"ph": "s"`` → ``"ph": "f"``) per message,
from its send to its receive. Open the file at https://ui.perfetto.dev or in
``chrome://tracing``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import SpecError
from ..outputs import atomic
from ..schedules.program import COPY, RECV, REDUCE, SEND

__all__ = ["GROUP", "chrome_trace", "rank_groups", "write_chrome_trace"]

_NS = 1e9
#: ranks per process where the network gives no leaf switches (or only one)
GROUP = 8
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


def _ranges(ranks: list[int]) -> str:
    """``0–3, 8, 10–11``: sorted ranks as runs."""
    parts, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[i]) if i == j else f"{ranks[i]}–{ranks[j]}")
        i = j + 1
    return ", ".join(parts)


def rank_groups(sim, group: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Which process of the timeline each rank's tracks go to, and its name.

    Parameters
    ----------
    sim : topocoll.sim.engine.Simulation
    group : int, optional
        Ranks per process, consecutive ranks together. Default: by leaf
        switch (the switch each rank's endpoint is cabled to) where the
        network has more than one, else blocks of :data:`GROUP` ranks.

    Returns
    -------
    groups : ndarray of int64, shape (p,)
        Group of each rank, numbered 0, 1, … in order of their smallest rank.
    names : list of str
        ``leaf s3: ranks 24–35`` or ``ranks 0–7``.

    Examples
    --------
    >>> from topocoll.schedules import generate
    >>> from topocoll.sim import Platform, make_network
    >>> from topocoll.sim.engine import simulate
    >>> net = make_network("kary:4,2", 8, order="identity")
    >>> sim = simulate(generate("allreduce", "ring", 8, count=8, itemsize=8), Platform(network=net))
    >>> groups, names = rank_groups(sim)
    >>> groups.tolist(), names
    ([0, 0, 0, 0, 1, 1, 1, 1], ['leaf s0: ranks 0–3', 'leaf s1: ranks 4–7'])
    """
    p = len(sim.rank_done)
    key = None
    names: list[str] = []
    if group is None:
        net = getattr(sim, "network", None)
        topo = getattr(net, "topology", None) if net is not None else None
        if topo is not None and getattr(topo, "n_switches", 0) > 0 and getattr(net, "order", None) is not None:
            endpoint = np.asarray(net.order, dtype=np.int64)[:p]
            leaf = np.asarray(topo.dst, dtype=np.int64)[np.asarray(topo.indptr, dtype=np.int64)[endpoint]]
            if len(np.unique(leaf)) > 1:
                key = leaf
        if key is None:
            group = GROUP
    elif isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 1:
        raise SpecError(f"chrome_trace: group={group!r}, expected ranks per process >= 1")
    if key is None:
        key = np.arange(p, dtype=np.int64) // int(group)
    # number groups by their smallest rank
    first = {}
    for r, k in enumerate(key.tolist()):
        first.setdefault(k, len(first))
    groups = np.array([first[k] for k in key.tolist()], dtype=np.int64)
    members: list[list[int]] = [[] for _ in first]
    for r, g in enumerate(groups.tolist()):
        members[g].append(r)
    for k, g in first.items():
        ranks = _ranges(members[g])
        if group is None:
            names.append(f"leaf {sim.network.topology.names[k]}: ranks {ranks}")
        else:
            names.append(f"ranks {ranks}")
    return groups, names


WAITS = ("merged", "each")


def _merge_waits(rank: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[list[int]]:
    """Indices of the wait slices grouped per rank into runs that overlap in time
    (sorted by start; a slice joins the run while it starts before the run ends)."""
    groups: list[list[int]] = []
    current: list[int] = []
    current_rank, current_hi = None, 0.0
    for i in np.lexsort((lo, rank)).tolist():
        r = int(rank[i])
        if current and r == current_rank and lo[i] < current_hi:
            current.append(i)
            current_hi = max(current_hi, float(hi[i]))
        else:
            if current:
                groups.append(current)
            current, current_rank, current_hi = [i], r, float(hi[i])
    if current:
        groups.append(current)
    return groups


def chrome_trace(sim, title: str = "", *, group: int | None = None, waits: str = "merged") -> dict:
    """The traced simulation ``sim`` as a Trace Event Format document.

    Parameters
    ----------
    sim : topocoll.sim.engine.Simulation
        A run simulated with ``trace=True``.
    title : str
        Run name, first in every process name (default: the model and the
        network).
    group : int, optional
        Ranks per process (:func:`rank_groups`; default by leaf switch).
    waits : str
        ``merged`` (default): a rank's waits that overlap in time become one
        ``wait`` slice on the rank's one wait lane, its ``args`` naming the
        receives (``ops``, ``receives``, ``peers``, ``bytes``, ``round``: the
        first); ``each``: one ``wait`` slice per receive, crossing ones on
        further lanes (every receive's own wait, many tracks when a rank
        posts many receives at once).

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``,
        ready for :func:`json.dump`. Times (``ts``, ``dur``) are µs as floats,
        snapped to whole nanoseconds (Perfetto's resolution) so that slices
        that nest in the simulation still nest once the viewer reads them.
        Every complete event carries ``args`` ``op`` (global op id), ``peer``
        (-1 for local ops), ``bytes`` and ``round`` (a merged wait: see
        ``waits``). ``otherData`` holds the
        ``model``, the completion ``time`` (s), the background traffic's
        ``seed``, the ``network`` label, ``p``, ``sync`` and ``groups``
        (the process of each rank). Process ``g + 1`` holds the tracks of
        group ``g`` of :func:`rank_groups`, named ``TITLE — NAME``.

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
    sorted just below it, inside the process of the rank's group; with
    ``waits="merged"`` overlapping waits are one slice, so a rank has one
    wait lane. Where slices of one kind still cross (rendezvous sends that
    outlast the next operation; with ``waits="each"``, waits posted at
    different times), the crossing one goes to a further lane, ``rank N
    (2)`` or ``rank N wait (2)``, … (first fit); these extra threads are
    numbered from ``p`` on. A 64-rank ring allreduce has 64 wait lanes per
    rank with ``each`` and one with ``merged`` (test).

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
    if waits not in WAITS:
        raise SpecError(f"chrome_trace: waits={waits!r}, expected one of {', '.join(WAITS)}")
    merged_args: dict[int, dict] = {}
    if waits == "merged" and is_wait.any():
        w = np.flatnonzero(is_wait)
        groups = [[int(w[i]) for i in g] for g in _merge_waits(rank[s_op[w]], s_lo[w], s_hi[w])]
        keep = np.flatnonzero(~is_wait)
        base = len(keep)
        for j, g in enumerate(groups):
            members = s_op[g]
            merged_args[base + j] = {"ops": sorted(members.tolist()), "receives": len(g),
                                     "peers": sorted(set(peer[members].tolist())),
                                     "bytes": int(nbytes[members].sum()), "round": int(rnd[members].min())}
        s_op = np.concatenate((s_op[keep], np.array([s_op[g[0]] for g in groups], dtype=np.int64)))
        s_name = np.concatenate((s_name[keep], np.full(len(groups), -1)))
        s_lo = np.concatenate((s_lo[keep], [s_lo[g].min() for g in groups]))
        s_hi = np.concatenate((s_hi[keep], [s_hi[g].max() for g in groups]))
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

    groups, group_names = rank_groups(sim, group)
    label = title or f"{sim.model} on {sim.network.label}"
    events: list[dict] = []
    for g, name in enumerate(group_names):
        events.append({"name": "process_name", "ph": "M", "pid": g + 1, "args": {"name": f"{label} — {name}"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": g + 1, "args": {"sort_index": g}})
    pid_of_rank = groups + 1
    pid_of_tid = np.zeros(p + len(combos), dtype=np.int64)
    pid_of_tid[combo_tid] = pid_of_rank[combos[:, 0]] if len(combos) else 0
    pid_of_tid[:p] = pid_of_rank
    extra = {r: [] for r in range(p)}
    for (r, fam, ln), t, pos in zip(combos.tolist(), combo_tid.tolist(), within.tolist()):
        if t != r:
            extra[r].append((t, f"rank {r}" + (" wait" if fam else "") + (f" ({ln + 1})" if ln else ""), pos))
    for r in range(p):                  # every rank has its track, with or without ops
        for t, lane_name, pos in [(r, f"rank {r}", 0)] + extra[r]:
            pid = int(pid_of_rank[r])
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": t, "args": {"name": lane_name}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": t,
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
    for idx, ts, dur, t, op, code, fe, pe, nb, rd in zip(
            order.tolist(), ts_us[order].tolist(), dur_us[order].tolist(), tid[order].tolist(), s_op[order].tolist(),
            s_name[order].tolist(), flow_end[order].tolist(), peer[s_op[order]].tolist(),
            nbytes[s_op[order]].tolist(), rnd[s_op[order]].tolist()):
        if fe >= 0:
            events.append({"name": "message", "cat": "message", "ph": "f", "id": fe, "pid": int(pid_of_tid[t]),
                           "tid": t, "ts": ts})
        name = names[code]
        events.append({"name": name, "cat": name, "ph": "X", "pid": int(pid_of_tid[t]), "tid": t, "ts": ts,
                       "dur": dur,
                       "args": merged_args.get(idx) or {"op": op, "peer": pe, "bytes": nb, "round": rd}})

    # Flow starts: in the middle of the send's slice (bound to the enclosing slice).
    send_slice = np.full(n, -1, dtype=np.int64)
    send_slice[s_op[s_name == SEND]] = slice_idx[s_name == SEND]
    ss = send_slice[send]
    mid = np.floor((s_lo[ss] + s_hi[ss]) / 2) / 1e3
    events.extend({"name": "message", "cat": "message", "ph": "s", "id": m, "pid": int(pid_of_tid[t]), "tid": t,
                   "ts": ts} for m, t, ts in zip(msg_ids.tolist(), tid[ss].tolist(), mid.tolist()))

    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"model": sim.model, "time": sim.time, "seed": sim.seed,
                          "network": sim.network.label, "p": p,
                          "sync": getattr(getattr(sim, "options", None), "sync", None),
                          "groups": groups.tolist(),
                          **({"title": title} if title else {})}}


def write_chrome_trace(sim, path, *, title: str = "", group: int | None = None, waits: str = "merged") -> Path:
    """Write :func:`chrome_trace` of ``sim`` to ``path`` (JSON) and return the path.

    Parameters
    ----------
    sim : topocoll.sim.engine.Simulation
        Simulated with ``trace=True``.
    path : str or os.PathLike
    title : str
    group : int, optional
    waits : str
        See :func:`chrome_trace`.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    SpecError
        If ``sim`` has no trace.
    """
    doc = chrome_trace(sim, title, group=group, waits=waits)
    path = Path(path)
    with atomic(path, option="--trace") as f:
        json.dump(doc, f, separators=(",", ":"))
    return path
