"""Replay a schedule on abstract values, the way a correct MPI run would.

One engine serves both consumers: the symbolic verifier (values are sets or
sequences of rank contributions) and the reference executor (values are
NumPy arrays). Replay

1. matches every receive to a send by (source, tag) in posting order, as MPI
   does, and reports unmatched operations and size mismatches;
2. contracts each matched pair into one event (blocking rendezvous: neither
   side completes before both are ready) and orders all events
   topologically; what cannot be ordered is a cyclic wait, i.e. deadlock;
3. runs the events in that order, round by round, checking that every read
   sees a value written by an operation it depends on (no read before write,
   no race between unordered operations of a rank).
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Protocol

from ..errors import VerificationError
from ..schedules.collectives import input_blocks
from ..schedules.ir import LEFT, Schedule, channels


class Algebra(Protocol):
    def initial(self, rank: int, block: int) -> Any: ...
    def combine(self, left: Any, right: Any, where: Callable[[], str]) -> Any: ...


def describe(rank: int, idx: int, op) -> str:
    if op.kind == "send":
        return f"rank {rank} op {idx} (send {op.buf}{list(op.blocks)} to {op.peer}, tag {op.tag})"
    if op.kind == "recv":
        return f"rank {rank} op {idx} (recv {op.buf}{list(op.into)} from {op.peer}, tag {op.tag})"
    if op.kind == "reduce":
        return f"rank {rank} op {idx} (reduce {op.src}{list(op.blocks)} into {op.dst}, side {op.side})"
    return f"rank {rank} op {idx} (copy {op.src}{list(op.src_blocks)} to {op.dst}{list(op.blocks)})"


def match(schedule: Schedule) -> dict[tuple[int, int], tuple[int, int]]:
    """(rank, send index) -> (peer, recv index); raises on any mismatch."""
    ops, p = schedule.ops, schedule.p
    for rank, rank_ops in enumerate(ops):
        for idx, op in enumerate(rank_ops):
            if op.kind in ("send", "recv") and not 0 <= op.peer < p:
                raise VerificationError(f"{describe(rank, idx, op)}: peer {op.peer} is not a rank of 0..{p - 1}")
    by_channel = channels(ops)
    pairs: dict[tuple[int, int], tuple[int, int]] = {}
    for (src, dst, tag), (s_list, r_list) in sorted(by_channel.items()):
        for s_idx, r_idx in zip(s_list, r_list):
            s_op, r_op = ops[src][s_idx], ops[dst][r_idx]
            if len(s_op.blocks) != len(r_op.into):
                raise VerificationError(
                    f"{describe(src, s_idx, s_op)} sends {len(s_op.blocks)} blocks but the matching "
                    f"{describe(dst, r_idx, r_op)} expects {len(r_op.into)}")
            pairs[(src, s_idx)] = (dst, r_idx)
        if len(s_list) > len(r_list):
            s_idx = s_list[len(r_list)]
            raise VerificationError(
                f"{describe(src, s_idx, ops[src][s_idx])}: send never received "
                f"(rank {dst} posts {len(r_list)} receives from {src} with tag {tag}, {len(s_list)} sends)")
        if len(r_list) > len(s_list):
            r_idx = r_list[len(s_list)]
            raise VerificationError(
                f"{describe(dst, r_idx, ops[dst][r_idx])}: no matching send "
                f"(rank {src} posts {len(s_list)} sends to {dst} with tag {tag}, {len(r_list)} receives)")
    return pairs


def _ancestors(rank_ops) -> list[int]:
    anc = [0] * len(rank_ops)
    for idx, op in enumerate(rank_ops):
        mask = 0
        for d in op.deps:
            if not 0 <= d < idx:
                raise VerificationError(f"op {idx} depends on op {d}, expected an earlier op of its rank")
            mask |= anc[d] | (1 << d)
        anc[idx] = mask
    return anc


class _Memory:
    """One rank's buffers with the hazard bookkeeping of the replay."""

    __slots__ = ("rank", "values", "writer", "readers", "anc")

    def __init__(self, rank, anc):
        self.rank = rank
        self.values: dict[tuple[str, int], Any] = {}
        self.writer: dict[tuple[str, int], int] = {}
        self.readers: dict[tuple[str, int], list[int]] = {}
        self.anc = anc

    def read(self, idx, op, buf, block, ops):
        key = (buf, block)
        if key not in self.values:
            raise VerificationError(
                f"{describe(self.rank, idx, op)}: reads {buf}[{block}] before anything was written there")
        w = self.writer.get(key)
        if w is not None and not (self.anc[idx] >> w) & 1:
            raise VerificationError(
                f"{describe(self.rank, idx, op)}: reads {buf}[{block}] written by "
                f"{describe(self.rank, w, ops[w])} without depending on it (race)")
        self.readers.setdefault(key, []).append(idx)
        return self.values[key]

    def write(self, idx, op, buf, block, value, ops):
        key = (buf, block)
        for prior in [self.writer.get(key), *self.readers.get(key, ())]:
            if prior is not None and prior != idx and not (self.anc[idx] >> prior) & 1:
                raise VerificationError(
                    f"{describe(self.rank, idx, op)}: overwrites {buf}[{block}] used by "
                    f"{describe(self.rank, prior, ops[prior])} without depending on it (race)")
        self.values[key] = value
        self.writer[key] = idx
        self.readers[key] = []


def replay(schedule: Schedule, algebra: Algebra,
           on_round_end: Callable[[int, list[dict]], None] | None = None,
           on_transfer: Callable[[int, int, Any, list], None] | None = None,
           ) -> list[dict[tuple[str, int], Any]]:
    """Run ``schedule`` on ``algebra``'s values; return each rank's buffers.

    ``on_round_end(round, memories)`` is called after the last event of each
    round (events run round-major), e.g. to print which partial results each
    rank holds; ``on_transfer(src, dst, send_op, payload)`` for every message.
    Raises :class:`VerificationError` on any defect.
    """
    ops, p = schedule.ops, schedule.p
    if len(ops) != p:
        raise VerificationError(f"schedule has op lists for {len(ops)} ranks, expected p={p}")
    pairs = match(schedule)
    offsets = [0]
    for rank_ops in ops:
        offsets.append(offsets[-1] + len(rank_ops))
    total = offsets[-1]
    rep = list(range(total))
    for (s_rank, s_idx), (r_rank, r_idx) in pairs.items():
        rep[offsets[r_rank] + r_idx] = offsets[s_rank] + s_idx
    succ: list[list[int]] = [[] for _ in range(total)]
    indeg = [0] * total
    for rank, rank_ops in enumerate(ops):
        for idx, op in enumerate(rank_ops):
            node = rep[offsets[rank] + idx]
            for d in op.deps:
                if not 0 <= d < idx:
                    raise VerificationError(
                        f"{describe(rank, idx, op)}: depends on op {d}, expected an earlier op of rank {rank}")
                src = rep[offsets[rank] + d]
                if src != node:
                    succ[src].append(node)
                    indeg[node] += 1
    memories = []
    for rank in range(p):
        mem = _Memory(rank, _ancestors(ops[rank]))
        for b in input_blocks(schedule, rank):
            mem.values[("data", b)] = algebra.initial(rank, b)
        memories.append(mem)

    def locate(gid):
        rank = _bisect(offsets, gid)
        return rank, gid - offsets[rank]

    heap = []
    for gid in range(total):
        if rep[gid] == gid and indeg[gid] == 0:
            r, i = locate(gid)
            heapq.heappush(heap, (ops[r][i].round, r, i, gid))
    done = 0
    current_round = None
    while heap:
        rnd, rank, idx, gid = heapq.heappop(heap)
        if on_round_end is not None and current_round is not None and rnd != current_round:
            on_round_end(current_round, [m.values for m in memories])
        current_round = rnd
        op = ops[rank][idx]
        mem = memories[rank]
        if op.kind == "send":
            peer_rank, peer_idx = pairs[(rank, idx)]
            payload = [mem.read(idx, op, op.buf, b, ops[rank]) for b in op.blocks]
            rop = ops[peer_rank][peer_idx]
            if on_transfer is not None:
                on_transfer(rank, peer_rank, op, payload)
            pmem = memories[peer_rank]
            for b, value in zip(rop.into, payload):
                pmem.write(peer_idx, rop, rop.buf, b, value, ops[peer_rank])
            done += 2
        elif op.kind == "reduce":
            for b in op.blocks:
                a = mem.read(idx, op, op.src, b, ops[rank])
                d = mem.read(idx, op, op.dst, b, ops[rank])
                # built only if the algebra reports an error: replay's hot path
                where = lambda rank=rank, idx=idx, op=op, b=b: f"{describe(rank, idx, op)} block {b}"  # noqa: E731
                value = algebra.combine(a, d, where) if op.side == LEFT else algebra.combine(d, a, where)
                mem.write(idx, op, op.dst, b, value, ops[rank])
            done += 1
        elif op.kind == "copy":
            vals = [mem.read(idx, op, op.src, b, ops[rank]) for b in op.src_blocks]
            for b, value in zip(op.blocks, vals):
                mem.write(idx, op, op.dst, b, value, ops[rank])
            done += 1
        else:  # an unmatched receive cannot be here: match() raised already
            raise AssertionError("receive scheduled on its own")
        for nxt in succ[gid]:
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                r, i = locate(nxt)
                heapq.heappush(heap, (ops[r][i].round, r, i, nxt))
    if on_round_end is not None and current_round is not None:
        on_round_end(current_round, [m.values for m in memories])
    if done != total:
        raise VerificationError(_deadlock_message(ops, offsets, rep, succ, indeg, locate))
    return [m.values for m in memories]


def _bisect(offsets, gid):
    lo, hi = 0, len(offsets) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offsets[mid] <= gid:
            lo = mid
        else:
            hi = mid
    return lo


def _deadlock_message(ops, offsets, rep, succ, indeg, locate) -> str:
    """Find one cycle among the blocked events and name its operations."""
    blocked = {g for g in range(len(rep)) if rep[g] == g and indeg[g] > 0}
    pred: dict[int, list[int]] = {}
    for g in range(len(rep)):
        for nxt in succ[g]:
            if nxt in blocked and g in blocked:
                pred.setdefault(nxt, []).append(g)
    start = min(blocked)
    seen: dict[int, int] = {}
    node, path = start, []
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = pred[node][0]
    cycle = path[seen[node]:]  # each waits for the next
    names = []
    for g in cycle[:6]:
        r, i = locate(g)
        names.append(describe(r, i, ops[r][i]))
    more = f" (+{len(cycle) - 6} more)" if len(cycle) > 6 else ""
    return "deadlock (cyclic wait under rendezvous): " + " -> waits for -> ".join(names) + more
