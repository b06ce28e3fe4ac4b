"""The Chrome/Perfetto timeline against the simulation it draws: one slice per
send/reduce/copy and two per receive with the simulated times, flows that pair
each message's send with its receive, slices that nest on every thread (the
Trace Event Format's rule), JSON that round-trips; tracks grouped in one
process per leaf switch (or block of ranks), each rank's lanes inside its
group's process."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.schedules.program import COPY, RECV, REDUCE, SEND
from topocoll.sim import Platform, make_network
from topocoll.sim.engine import EngineOptions, simulate
from topocoll.viz import chrome_trace, write_chrome_trace
from topocoll.viz.timeline import GROUP, rank_groups

CASES = [
    ("allreduce", "ring", 5, EngineOptions()),
    ("allreduce", "ring", 6, EngineOptions(eager=0)),        # rendezvous: sends outlast their CPU part
    ("alltoall", "bruck", 6, EngineOptions()),                # copies
    ("alltoall", "direct", 7, EngineOptions(eager=0)),
    ("reduce_scatter", "radix_k", 12, EngineOptions()),
    ("bcast", "binomial", 7, EngineOptions()),
]


def _sim(collective, algorithm, p, options):
    sched = generate(collective, algorithm, p, count=24 * p, itemsize=8)
    return simulate(sched, options=options, trace=True)


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-eager{c[3].eager}")
def run(request):
    sim = _sim(*request.param)
    return sim, chrome_trace(sim, title="test", waits="each")


def _slices(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def _ns(us):
    """A timeline time (µs, snapped to whole ns) as integer ns."""
    return round(us * 1e3)


def _thread_names(doc):
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}


def test_one_slice_per_send_reduce_copy_and_wait_plus_recv_per_receive(run):
    sim, doc = run
    tr = sim.trace
    by_op = {}
    for e in _slices(doc):
        by_op.setdefault(e["args"]["op"], []).append(e)
    assert sorted(by_op) == list(range(len(tr["kind"])))
    names = {SEND: ["send"], REDUCE: ["reduce"], COPY: ["copy"], RECV: ["recv", "wait"]}
    arrival = dict(zip(tr["recv"].tolist(), tr["arrive"].tolist()))
    for op, evs in by_op.items():
        kind = int(tr["kind"][op])
        assert sorted(e["name"] for e in evs) == names[kind], op
        start, end = tr["start"][op] * 1e9, tr["end"][op] * 1e9
        for e in evs:
            assert e["args"]["peer"] == int(tr["peer"][op])
            assert e["args"]["bytes"] == int(tr["nbytes"][op])
            assert e["args"]["round"] == int(tr["round"][op])
        if kind != RECV:
            (e,) = evs
            assert _ns(e["ts"]) == round(start)
            assert _ns(e["ts"]) + _ns(e["dur"]) == round(end)
        else:
            wait = next(e for e in evs if e["name"] == "wait")
            recv = next(e for e in evs if e["name"] == "recv")
            split = round(min(max(arrival[op] * 1e9, start), end))
            assert _ns(wait["ts"]) == round(start)
            assert _ns(wait["ts"]) + _ns(wait["dur"]) == split
            assert _ns(recv["ts"]) == split
            assert _ns(recv["ts"]) + _ns(recv["dur"]) == round(end)


def test_every_slice_lies_within_the_run_and_on_its_ranks_tracks(run):
    sim, doc = run
    names = _thread_names(doc)
    limit = round(sim.time * 1e9)
    groups = doc["otherData"]["groups"]
    for e in _slices(doc):
        assert e["pid"] == groups[int(sim.trace["rank"][e["args"]["op"]])] + 1
        assert e["ts"] >= 0 and e["dur"] >= 0
        assert _ns(e["ts"]) + _ns(e["dur"]) <= limit
        rank = int(sim.trace["rank"][e["args"]["op"]])
        name = names[e["tid"]]
        assert name == f"rank {rank}" or name.startswith(f"rank {rank} "), (name, rank)
        if e["name"] == "wait":
            assert "wait" in name
        else:
            assert "wait" not in name


def test_each_rank_has_its_track_and_its_ops_are_on_it(run):
    sim, doc = run
    p = len(sim.rank_done)
    names = _thread_names(doc)
    for r in range(p):
        assert names[r] == f"rank {r}"
    cpu = [e for e in _slices(doc) if e["name"] != "wait"]
    # The ops' first lane is thread `rank`; extra lanes exist only where slices cross.
    on_main = sum(e["tid"] == int(sim.trace["rank"][e["args"]["op"]]) for e in cpu)
    assert on_main >= len(cpu) // 2


def test_slices_on_one_thread_nest(run):
    """The Trace Event Format allows only perfectly nested complete events per thread."""
    _, doc = run
    per_tid = {}
    for e in _slices(doc):
        per_tid.setdefault(e["tid"], []).append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    for tid, spans in per_tid.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for lo, hi in spans:
            while stack and stack[-1] <= lo:
                stack.pop()
            assert not stack or hi <= stack[-1], (tid, lo, hi, stack[-1])
            stack.append(hi)


def test_flows_pair_each_send_with_its_receive(run):
    sim, doc = run
    tr = sim.trace
    events = doc["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: (i, e) for i, e in enumerate(events) if e["ph"] == "f"}
    assert len(starts) == len(ends) == len(tr["send"])
    assert sum(e["ph"] == "s" for e in events) == len(starts)
    slices = {(e["args"]["op"], e["name"]): e for e in _slices(doc)}
    for m, (snd, rcv) in enumerate(zip(tr["send"].tolist(), tr["recv"].tolist())):
        s = starts[m]
        send = slices[(snd, "send")]
        assert s["tid"] == send["tid"]
        assert send["ts"] <= s["ts"] <= send["ts"] + send["dur"]
        i, f = ends[m]
        recv = slices[(rcv, "recv")]
        assert f["tid"] == recv["tid"] and f["ts"] == recv["ts"]
        assert "bp" not in f
        assert events[i + 1] is recv                  # binds to the next slice: its receive


def test_json_round_trip_and_other_data(run, tmp_path):
    sim, doc = run
    assert json.loads(json.dumps(doc)) == doc
    path = write_chrome_trace(sim, tmp_path / "t.json", title="test", waits="each")
    assert json.loads(path.read_text()) == doc
    assert doc["displayTimeUnit"] == "ns"
    other = doc["otherData"]
    assert other["model"] == sim.model and other["time"] == sim.time and other["seed"] == sim.seed
    assert other["network"] == sim.network.label and other["p"] == len(sim.rank_done)
    proc = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    p = len(sim.rank_done)
    assert [e["pid"] for e in proc] == list(range(1, -(-p // GROUP) + 1))     # an ideal crossbar: blocks of 8
    assert proc[0]["args"]["name"] == f"test — ranks 0–{min(p, GROUP) - 1}"


def _fake(ops, messages, p):
    """A hand-made traced run: ops as (rank, kind, peer, start, end), messages as
    (send op, recv op, inject, arrive)."""
    rank, kind, peer, start, end = (np.array(c) for c in zip(*ops))
    send, recv, inject, arrive = (np.array(c) for c in zip(*messages))
    trace = {"rank": rank, "kind": kind, "peer": peer, "nbytes": np.full(len(rank), 8),
             "round": np.zeros(len(rank), np.int64), "start": start.astype(float), "end": end.astype(float),
             "send": send.astype(np.uint32), "recv": recv.astype(np.uint32),
             "inject": inject.astype(float), "arrive": arrive.astype(float)}
    return SimpleNamespace(trace=trace, rank_done=np.zeros(p), time=float(end.max()), model="loggops", seed=None,
                           network=SimpleNamespace(label="fake"), options=EngineOptions())


def test_late_receive_waits_for_nothing_and_crossing_waits_get_a_second_lane():
    # rank 0 sends twice; rank 1 posts one receive at 0 (message arrives at 5)
    # and one at 2 (arrives at 3, before the first: the waits cross), and a
    # third, late, at 7 after its message arrived at 6.
    ops = [(0, SEND, 1, 0e-6, 1e-6), (0, SEND, 1, 1e-6, 2e-6), (0, SEND, 1, 2e-6, 3e-6),
           (1, RECV, 0, 0e-6, 5e-6), (1, RECV, 0, 2e-6, 3e-6), (1, RECV, 0, 7e-6, 8e-6)]
    sim = _fake(ops, [(0, 3, 1e-6, 5e-6), (1, 4, 2e-6, 3e-6), (2, 5, 3e-6, 6e-6)], 2)
    doc = chrome_trace(sim, waits="each")
    waits = {e["args"]["op"]: e for e in _slices(doc) if e["name"] == "wait"}
    assert waits[5]["ts"] == pytest.approx(7.0) and waits[5]["dur"] == 0.0     # posted after the arrival
    assert waits[3]["dur"] == pytest.approx(5.0) and waits[4]["dur"] == pytest.approx(1.0)
    names = _thread_names(doc)
    assert names[waits[3]["tid"]] == "rank 1 wait"
    assert names[waits[4]["tid"]] == "rank 1 wait"        # [2, 3] nests in [0, 5]
    assert waits[5]["tid"] == waits[3]["tid"]
    ops2 = ops[:3] + [(1, RECV, 0, 0e-6, 5e-6), (1, RECV, 0, 2e-6, 6e-6), (1, RECV, 0, 7e-6, 8e-6)]
    doc2 = chrome_trace(_fake(ops2, [(0, 3, 1e-6, 5e-6), (1, 4, 2e-6, 6e-6), (2, 5, 3e-6, 6e-6)], 2), waits="each")
    waits2 = {e["args"]["op"]: e for e in _slices(doc2) if e["name"] == "wait"}
    names2 = _thread_names(doc2)
    assert names2[waits2[3]["tid"]] == "rank 1 wait"
    assert names2[waits2[4]["tid"]] == "rank 1 wait (2)"   # [2, 6] crosses [0, 5]
    assert waits2[4]["tid"] >= 2                           # extra tracks are numbered from p on


def test_a_run_without_trace_is_one_line_error():
    sim = simulate(generate("allreduce", "ring", 3, count=6, itemsize=8))
    with pytest.raises(SpecError, match=r"^chrome_trace: the simulation has no trace, expected simulate\(\.\.\., "
                                        r"trace=True\)$"):
        chrome_trace(sim)


def _tracks(doc):
    """{pid: [thread names]} and {pid: process name}."""
    threads, procs = {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            threads.setdefault(e["pid"], []).append(e["args"]["name"])
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
    return threads, procs


def test_64_ranks_on_a_fat_tree_are_eight_processes_one_per_leaf_switch():
    """kary:8,2: 64 endpoints, 8 per leaf switch; in a random order each leaf's
    ranks are scattered, and the process of a leaf holds exactly its ranks."""
    net = make_network("kary:8,2", 64, order="random", seed=3)
    sim = simulate(generate("allreduce", "ring", 64, count=64, itemsize=8), Platform(network=net), trace=True)
    doc = chrome_trace(sim, title="ring")
    threads, procs = _tracks(doc)
    assert len(procs) == 8
    topo = net.topology
    leaf = topo.dst[topo.indptr[net.order]]                        # each rank's leaf switch, by hand
    for pid, name in procs.items():
        ranks = sorted({int(n.split()[1]) for n in threads[pid]})
        assert len(ranks) == 8 and len({int(leaf[r]) for r in ranks}) == 1
        assert name.startswith(f"ring — leaf {topo.names[int(leaf[ranks[0]])]}: ranks ")
        assert f"rank {ranks[0]}" in threads[pid] and f"rank {ranks[0]} wait" in threads[pid]
    firsts = [min(int(n.split()[1]) for n in threads[pid]) for pid in sorted(procs)]
    assert firsts == sorted(firsts) and firsts[0] == 0             # processes in order of their first rank
    for e in doc["traceEvents"]:                                   # every slice in its rank's leaf's process
        if e["ph"] == "X":
            args = e["args"]
            rank = int(sim.trace["rank"][args["op"] if "op" in args else args["ops"][0]])
            assert procs[e["pid"]].split("leaf ")[1].startswith(topo.names[int(leaf[rank])] + ":")


def test_explicit_group_size_and_bad_group():
    sim = simulate(generate("allreduce", "ring", 10, count=10, itemsize=8), trace=True)
    groups, names = rank_groups(sim, 4)
    assert groups.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert names == ["ranks 0–3", "ranks 4–7", "ranks 8–9"]
    threads, procs = _tracks(chrome_trace(sim, group=4))
    assert sorted(len({n.split()[1] for n in v}) for v in threads.values()) == [2, 4, 4]
    with pytest.raises(SpecError, match=r"^chrome_trace: group=0, expected ranks per process >= 1$"):
        chrome_trace(sim, group=0)


def test_merged_waits_cover_every_receive_and_leave_one_wait_lane_per_rank():
    """A ring allreduce posts receives at once: with waits="each" a rank has up
    to p wait lanes, merged one; every receive's own wait (posted → arrival)
    lies inside the merged slice that names it."""
    sim = _sim("allreduce", "ring", 16, EngineOptions())
    each, merged = chrome_trace(sim, waits="each"), chrome_trace(sim)
    lanes = lambda doc: sum(1 for n in _thread_names(doc).values() if " wait" in n)   # noqa: E731
    assert lanes(each) > 16 and lanes(merged) == 16
    per_op = {e["args"]["op"]: e for e in _slices(each) if e["name"] == "wait"}
    covered = {}
    by_rank = {}
    for e in _slices(merged):
        if e["name"] != "wait":
            continue
        assert e["args"]["receives"] == len(e["args"]["ops"])
        for op in e["args"]["ops"]:
            covered[op] = e
        by_rank.setdefault(int(sim.trace["rank"][e["args"]["ops"][0]]), []).append((e["ts"], e["ts"] + e["dur"]))
    assert sorted(covered) == sorted(per_op)                    # every receive, once
    for op, w in per_op.items():
        m = covered[op]
        assert _ns(m["ts"]) <= _ns(w["ts"]) and _ns(w["ts"]) + _ns(w["dur"]) <= _ns(m["ts"]) + _ns(m["dur"])
        assert int(sim.trace["rank"][op]) == int(sim.trace["rank"][m["args"]["ops"][0]])
    for spans in by_rank.values():                              # merged slices of a rank never overlap
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    with pytest.raises(SpecError, match=r"^chrome_trace: waits='all', expected one of merged, each$"):
        chrome_trace(sim, waits="all")
