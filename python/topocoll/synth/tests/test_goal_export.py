"""GOAL export of a synthesized schedule (issue 29): the text LogGOPSim reads has one send and one
receive per planned transfer, with the transfer's bytes, and every send waits for the data it carries.

What is expected is counted from the schedule file (the plan's arrays as ``topocoll synthesize`` wrote
them: ``docs/synthesis.md``, "The file") and the vector's split, not from the op program or the
exporter; the GOAL text is read by the small parser below, not by :func:`~topocoll.schedules.goal.read_goal`."""

import json
import re
from collections import Counter

import pytest

from topocoll.schedules.goal import to_goal
from topocoll.synth import load_schedule, synthesize

ITEMSIZE = 8
# (collective, network, P, size in bytes); count divisible by P · chunks so every block has equal bytes
CASES = [("allreduce", "torus:2x4", 8, 8 * 64 * ITEMSIZE), ("allgather", "kary:2,2", 4, 32 * ITEMSIZE),
         ("reduce_scatter", "torus:2x2", 4, 4 * 64 * ITEMSIZE), ("bcast", "torus:2x4", 8, 64 * ITEMSIZE),
         ("alltoall", "torus:2x2", 4, 16 * ITEMSIZE)]


def _parse(text: str):
    """GOAL text → per rank: ops {label: (kind, bytes, peer, tag)} and requires {label: [labels]}."""
    ops, reqs, rank = {}, {}, None
    for line in text.splitlines():
        line = line.strip()
        if m := re.fullmatch(r"rank (\d+) \{", line):
            rank = int(m.group(1))
            ops[rank], reqs[rank] = {}, {}
        elif m := re.fullmatch(r"l(\d+): (send|recv) (\d+)b (?:to|from) (\d+) tag (\d+)", line):
            ops[rank][int(m.group(1))] = (m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5)))
        elif m := re.fullmatch(r"l(\d+): calc (\d+)", line):
            ops[rank][int(m.group(1))] = ("calc", int(m.group(2)), -1, -1)
        elif m := re.fullmatch(r"l(\d+) requires l(\d+)", line):
            reqs[rank].setdefault(int(m.group(1)), []).append(int(m.group(2)))
    return ops, reqs


def _ancestors(reqs: dict, label: int) -> set:
    seen, todo = set(), [label]
    while todo:
        for d in reqs.get(todo.pop(), []):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_goal_has_one_send_and_recv_per_planned_transfer(case, tmp_path):
    collective, network, p, size = case
    res = synthesize(collective, network, p, size, budget=0, compare_fixed=False, progress=False,
                     itemsize=ITEMSIZE, seed=5)
    path = tmp_path / "s.json"
    res.save(path)
    doc = json.loads(path.read_text())
    count = doc["count"]
    block_bytes = count * ITEMSIZE // doc["chunking"]["blocks"] if collective != "alltoall" \
        else count * ITEMSIZE // p
    assert block_bytes * (doc["chunking"]["blocks"] if collective != "alltoall" else p) == count * ITEMSIZE

    # the planned transfers, from the file: (src, dst, round, bytes, chunks, phase kind)
    planned = []
    for ph in doc["phases"]:
        ptr, chunks = ph["chunk_ptr"], ph["chunks"]
        for i in range(len(ph["src"])):
            carried = chunks[ptr[i]:ptr[i + 1]]
            nbytes = block_bytes if ph["kind"] == "direct" else len(carried) * block_bytes
            planned.append((ph["src"][i], ph["dst"][i], ph["offset"] + ph["step"][i], nbytes, carried, ph["kind"]))
    assert planned

    ops, reqs = _parse(to_goal(load_schedule(path, itemsize=ITEMSIZE)))
    assert sorted(ops) == list(range(p))
    sends = Counter((r, peer, tag, nbytes) for r in ops for kind, nbytes, peer, tag in ops[r].values()
                    if kind == "send")
    recvs = Counter((r, peer, tag, nbytes) for r in ops for kind, nbytes, peer, tag in ops[r].values()
                    if kind == "recv")
    assert sends == Counter((s, d, t, b) for s, d, t, b, _, _ in planned)
    assert recvs == Counter((d, s, t, b) for s, d, t, b, _, _ in planned)

    # dependencies: a rank sends a chunk only after the receives that brought it (gather: the last one
    # before; reduce: every partial of it it adds) — wherever the plan names them
    label = {}
    for r in ops:
        for lab, (kind, _, peer, tag) in ops[r].items():
            if kind in ("send", "recv"):
                label.setdefault((r, kind, peer, tag), []).append(lab)
    checked = 0
    for s, d, t, _, carried, kind in planned:
        if kind == "direct":
            continue
        (send,) = label[s, "send", d, t]          # one transfer per pair and round in these plans
        before = _ancestors(reqs[s], send)
        for b in carried:
            into_s = [(t2, src2, k2) for src2, d2, t2, _, c2, k2 in planned if d2 == s and b in c2 and t2 < t]
            if kind == "reduce":
                need = [x for x in into_s if x[2] == "reduce"]
            else:
                need = sorted(into_s)[-1:]
            for t2, src2, _ in need:
                (recv,) = label[s, "recv", src2, t2]
                assert recv in before, (collective, s, d, t, b, src2, t2)
                checked += 1
    if collective in ("allreduce", "reduce_scatter", "bcast"):
        assert checked > 0                         # the plan forwards: the check had something to check
