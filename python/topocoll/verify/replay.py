"""Replay a schedule on abstract values, the way a correct MPI run would.

One engine for the symbolic verifier (values are sets or sequences of rank
contributions) and the analyses built on it; the reference executor
(:mod:`.reference`) interprets schedules on its own, so that the two check
each other. Replay

1. checks every block index against the schedule's block count, matches
   every receive to a send by (source, destination, tag) in posting order,
   as MPI's non-overtaking rule does (MPI-3.1 §3.5), and checks each pair:
   the sender's block naming and the message size in bytes;
2. orders posts and completions as MPI must: a send or receive is *posted*
   once its dependencies completed and the previous operation of its
   channel on its rank was posted (the order the MPI executor posts in); a
   matched pair *completes* once both sides are posted (rendezvous, the
   strictest protocol: what passes also runs with eager sends). What cannot
   be ordered is a cyclic wait, i.e. deadlock;
3. runs the completions and local operations in that order, round by round,
   checking that every read sees a value written by an operation it depends
   on (no read before write, no race between unordered operations of a
   rank); on request it also tracks which reductions reach an output.
"""

from __future__ import annotations

import gc
import heapq
from typing import Any, Callable, Protocol

from ..errors import VerificationError
from ..schedules.collectives import expected_contributions, input_blocks
from ..schedules.ir import LEFT, Schedule, channels


class Algebra(Protocol):
    def initial(self, rank: int, block: int) -> Any: ...
    def combine(self, left: Any, right: Any, where: Callable[[], str]) -> Any: ...


def show_blocks(blocks) -> str:
    """``[0, 1, 2]``; long lists shortened so a diagnosis stays one line."""
    if len(blocks) <= 8:
        return str(list(blocks))
    return f"[{blocks[0]}, {blocks[1]}, ..., {blocks[-1]}] ({len(blocks)} blocks)"


def describe(rank: int, idx: int, op) -> str:
    if op.kind == "send":
        return f"rank {rank} op {idx} (send {op.buf}{show_blocks(op.blocks)} to {op.peer}, tag {op.tag})"
    if op.kind == "recv":
        return f"rank {rank} op {idx} (recv {op.buf}{show_blocks(op.into)} from {op.peer}, tag {op.tag})"
    if op.kind == "reduce":
        return f"rank {rank} op {idx} (reduce {op.src}{show_blocks(op.blocks)} into {op.dst}, side {op.side})"
    return f"rank {rank} op {idx} (copy {op.src}{show_blocks(op.src_blocks)} to {op.dst}{show_blocks(op.blocks)})"


def channel_name(src: int, dst: int, tag: int) -> str:
    return f"channel {src}->{dst} tag {tag}"


def _named_blocks(op):
    """(what the indices name, indices) for every block list of ``op``."""
    if op.kind == "send":
        return ((op.buf, op.blocks),)
    if op.kind == "recv":
        return ((op.buf, op.into), ("the sender's blocks", op.blocks))
    if op.kind == "reduce":
        return ((op.dst if op.dst == op.src else f"{op.src}/{op.dst}", op.blocks),)
    return ((op.dst, op.blocks), (op.src, op.src_blocks))


def check_blocks(schedule: Schedule) -> None:
    """Every block index of every op lies in ``0 .. nblocks - 1``.

    Checked before replay: an index beyond the blocks would otherwise verify
    under an idempotent operator and raise IndexError in the MPI executor (``topocoll.mpi.plan``).
    """
    nb = schedule.nblocks
    for rank, rank_ops in enumerate(schedule.ops):
        for idx, op in enumerate(rank_ops):
            for what, blocks in _named_blocks(op):
                if len(blocks) and (min(blocks) < 0 or max(blocks) >= nb):
                    bad = next(b for b in blocks if not 0 <= b < nb)
                    where = ""
                    if op.kind in ("send", "recv"):
                        src, dst = (rank, op.peer) if op.kind == "send" else (op.peer, rank)
                        where = f" ({channel_name(src, dst, op.tag)})"
                    raise VerificationError(
                        f"{describe(rank, idx, op)}: block {bad} of {what} is out of range, "
                        f"expected 0 <= block < {nb} (the schedule's block count){where}")


def _same_blocks(a, b) -> bool:
    if type(a) is type(b):
        return a == b
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


def match(schedule: Schedule) -> dict[tuple[int, int], tuple[int, int]]:
    """(rank, send index) -> (peer, recv index); raises on any mismatch."""
    return _match(schedule)[0]


def _match(schedule: Schedule):
    """The pairs of :func:`match` and the channels they were matched on."""
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
                    f"{describe(dst, r_idx, r_op)} expects {len(r_op.into)} ({channel_name(src, dst, tag)})")
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
    return pairs, by_channel


def check_messages(schedule: Schedule, pairs) -> None:
    """Each matched receive names the sender's blocks and has its size.

    MPI matches by envelope only (MPI-3.1 §3.5) and moves bytes: a receive
    sized as another block verifies by block count yet fails with "message
    truncated" (or leaves bytes unwritten), so sizes are compared in bytes,
    block by block, with ``schedule.block_bytes``.
    """
    ops = schedule.ops
    sizes = schedule.block_bytes.tolist()
    uniform = len(set(sizes)) <= 1
    for (src, s_idx), (dst, r_idx) in pairs.items():
        s_op, r_op = ops[src][s_idx], ops[dst][r_idx]
        if not _same_blocks(r_op.blocks, s_op.blocks):
            raise VerificationError(
                f"{describe(dst, r_idx, r_op)} names blocks {show_blocks(r_op.blocks)} but the matching "
                f"{describe(src, s_idx, s_op)} sends blocks {show_blocks(s_op.blocks)} "
                f"({channel_name(src, dst, s_op.tag)})")
        if uniform:
            continue
        sent = sum(sizes[b] for b in s_op.blocks)
        got = sum(sizes[b] for b in r_op.into)
        if sent != got:
            raise VerificationError(
                f"{describe(dst, r_idx, r_op)} receives {got} B but the matching {describe(src, s_idx, s_op)} "
                f"sends {sent} B ({channel_name(src, dst, s_op.tag)})")
        for b_s, b_r in zip(s_op.blocks, r_op.into):
            if sizes[b_s] != sizes[b_r]:
                raise VerificationError(
                    f"{describe(dst, r_idx, r_op)} stores {sizes[b_s]} B of block {b_s} from "
                    f"{describe(src, s_idx, s_op)} in {r_op.buf}[{b_r}] of {sizes[b_r]} B "
                    f"({channel_name(src, dst, s_op.tag)})")


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
           unused: list | None = None,
           ) -> list[dict[tuple[str, int], Any]]:
    """Run ``schedule`` on ``algebra``'s values; return each rank's buffers.

    ``on_round_end(round, memories)`` is called after the last event of each
    round (events run round-major), e.g. to print which partial results each
    rank holds; ``on_transfer(src, dst, send_op, payload)`` for every message.
    If ``unused`` is a list, every reduction whose result never reaches an
    output of the collective (overwritten, or left in a buffer nothing reads)
    is appended to it as ``(rank, op index, [(buffer, block), ...])``.
    Raises :class:`VerificationError` on any defect.
    """
    # The replay allocates small containers per op and no reference cycles:
    # the cyclic collector's passes over them took ~40 % of its time.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _replay(schedule, algebra, on_round_end, on_transfer, unused)
    finally:
        if enabled:
            gc.enable()


def _replay(schedule, algebra, on_round_end, on_transfer, unused):
    ops, p = schedule.ops, schedule.p
    if len(ops) != p:
        raise VerificationError(f"schedule has op lists for {len(ops)} ranks, expected p={p}")
    check_blocks(schedule)
    pairs, by_channel = _match(schedule)
    check_messages(schedule, pairs)
    offsets = [0]
    g_rank: list[int] = []
    for rank, rank_ops in enumerate(ops):
        offsets.append(offsets[-1] + len(rank_ops))
        g_rank.extend([rank] * len(rank_ops))
    total = offsets[-1]
    # Nodes: 0 .. total-1 are the ops (the *post* of a send or receive, the
    # execution of a reduce or copy); total + c is the completion of pair c.
    pair_list = [(s_rank, s_idx, r_rank, r_idx) for (s_rank, s_idx), (r_rank, r_idx) in pairs.items()]
    nodes = total + len(pair_list)
    succ: list[list[int]] = [[] for _ in range(nodes)]
    indeg = [0] * nodes
    finish = list(range(total))   # the node whose end completes op gid
    for c, (s_rank, s_idx, r_rank, r_idx) in enumerate(pair_list, start=total):
        for g in (offsets[s_rank] + s_idx, offsets[r_rank] + r_idx):
            finish[g] = c
            succ[g].append(c)     # rendezvous: both sides posted
        indeg[c] = 2
    for (src, dst, _), (s_list, r_list) in by_channel.items():
        for rank, posted in ((src, s_list), (dst, r_list)):
            base = offsets[rank]
            for a, b in zip(posted, posted[1:]):   # posted in list order (MPI-3.1 §3.5)
                succ[base + a].append(base + b)
                indeg[base + b] += 1
    for rank, rank_ops in enumerate(ops):
        base = offsets[rank]
        for idx, op in enumerate(rank_ops):
            for d in op.deps:
                if not 0 <= d < idx:
                    raise VerificationError(
                        f"{describe(rank, idx, op)}: depends on op {d}, expected an earlier op of rank {rank}")
                succ[finish[base + d]].append(base + idx)
                indeg[base + idx] += 1
    memories = []
    for rank in range(p):
        mem = _Memory(rank, _ancestors(ops[rank]))
        for b in input_blocks(schedule, rank):
            mem.values[("data", b)] = algebra.initial(rank, b)
        memories.append(mem)
    track = unused is not None
    if track:   # value ids: one per block a reduction writes; copies and messages alias them
        made: list[tuple[int, int, tuple[str, int]]] = []
        sources: list[tuple] = []
        vids: list[dict] = [{} for _ in range(p)]

    heap: list[tuple[int, int, int, int]] = []
    posts: list[int] = []   # ready posts: they move no data, so they run at once

    def enqueue(node):
        if node >= total:
            s_rank, s_idx = pair_list[node - total][:2]
            heapq.heappush(heap, (ops[s_rank][s_idx].round, s_rank, s_idx, node))
            return
        r = g_rank[node]
        i = node - offsets[r]
        op = ops[r][i]
        if op.kind == "send" or op.kind == "recv":
            posts.append(node)
        else:
            heapq.heappush(heap, (op.round, r, i, node))

    for node in range(nodes):
        if indeg[node] == 0:
            enqueue(node)
    done = 0
    current_round = None
    while heap or posts:
        if posts:
            node = posts.pop()
        else:
            rnd, rank, idx, node = heapq.heappop(heap)
            if on_round_end is not None and current_round is not None and rnd != current_round:
                on_round_end(current_round, [m.values for m in memories])
            current_round = rnd
            op = ops[rank][idx]
            mem = memories[rank]
            if node >= total:   # a matched pair completes: the data moves
                _, _, peer_rank, peer_idx = pair_list[node - total]
                payload = [mem.read(idx, op, op.buf, b, ops[rank]) for b in op.blocks]
                rop = ops[peer_rank][peer_idx]
                if on_transfer is not None:
                    on_transfer(rank, peer_rank, op, payload)
                pmem = memories[peer_rank]
                for b, value in zip(rop.into, payload):
                    pmem.write(peer_idx, rop, rop.buf, b, value, ops[peer_rank])
                if track:
                    mine, theirs = vids[rank], vids[peer_rank]
                    moved = [mine.get((op.buf, b)) for b in op.blocks]
                    for b, v in zip(rop.into, moved):
                        theirs[(rop.buf, b)] = v
            elif op.kind == "reduce":
                for b in op.blocks:
                    a = mem.read(idx, op, op.src, b, ops[rank])
                    d = mem.read(idx, op, op.dst, b, ops[rank])
                    # built only if the algebra reports an error: replay's hot path
                    where = lambda rank=rank, idx=idx, op=op, b=b: f"{describe(rank, idx, op)} block {b}"  # noqa: E731
                    value = algebra.combine(a, d, where) if op.side == LEFT else algebra.combine(d, a, where)
                    mem.write(idx, op, op.dst, b, value, ops[rank])
                    if track:
                        mine = vids[rank]
                        sources.append((mine.get((op.src, b)), mine.get((op.dst, b))))
                        mine[(op.dst, b)] = len(made)
                        made.append((rank, idx, (op.dst, b)))
            elif op.kind == "copy":
                vals = [mem.read(idx, op, op.src, b, ops[rank]) for b in op.src_blocks]
                for b, value in zip(op.blocks, vals):
                    mem.write(idx, op, op.dst, b, value, ops[rank])
                if track:
                    mine = vids[rank]
                    moved = [mine.get((op.src, b)) for b in op.src_blocks]
                    for b, v in zip(op.blocks, moved):
                        mine[(op.dst, b)] = v
            else:
                raise AssertionError(f"op kind {op.kind!r} scheduled as an event")
        done += 1
        for nxt in succ[node]:
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                enqueue(nxt)
    if on_round_end is not None and current_round is not None:
        on_round_end(current_round, [m.values for m in memories])
    if done != nodes:
        raise VerificationError(_deadlock_message(ops, offsets, g_rank, pair_list, succ, indeg))
    if track:
        unused.extend(_dead_reductions(schedule, vids, made, sources))
    return [m.values for m in memories]


def _dead_reductions(schedule, vids, made, sources):
    """Reductions none of whose results reaches an output block: live values
    are those the outputs hold and, transitively, what reductions made them of."""
    live = [False] * len(made)
    stack = []
    for rank in range(schedule.p):
        for b in expected_contributions(schedule, rank):
            v = vids[rank].get(("data", b))
            if v is not None:
                stack.append(v)
    while stack:
        v = stack.pop()
        if live[v]:
            continue
        live[v] = True
        stack.extend(s for s in sources[v] if s is not None and not live[s])
    dead: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for v, (rank, idx, key) in enumerate(made):
        if not live[v]:
            dead.setdefault((rank, idx), []).append(key)
    return [(rank, idx, keys) for (rank, idx), keys in sorted(dead.items())]


def _deadlock_message(ops, offsets, g_rank, pair_list, succ, indeg) -> str:
    """Find one cycle among the blocked nodes and name its operations, each
    with the reason it waits for the next."""
    total = offsets[-1]
    blocked = [n for n in range(len(indeg)) if indeg[n] > 0]
    in_blocked = set(blocked)
    pred: dict[int, list[int]] = {}
    for g in blocked:
        for nxt in succ[g]:
            if nxt in in_blocked:
                pred.setdefault(nxt, []).append(g)
    seen: dict[int, int] = {}
    node, path = blocked[0], []
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = pred[node][0]
    cycle = path[seen[node]:]  # each waits for the next
    first = min(range(len(cycle)), key=lambda i: (cycle[i] >= total, cycle[i]))
    cycle = cycle[first:] + cycle[:first]

    def locate(g):
        r = g_rank[g]
        return r, g - offsets[r]

    def name(g):
        r, i = locate(g)
        return describe(r, i, ops[r][i])

    phrases, awaited = [], None
    for a, b in zip(cycle, cycle[1:] + cycle[:1]):
        if b >= total:       # op a depends on one side of pair b
            s_rank, s_idx, r_rank, r_idx = pair_list[b - total]
            ra, ia = locate(a)
            deps = ops[ra][ia].deps
            side = (s_rank, s_idx) if s_rank == ra and s_idx in deps else (r_rank, r_idx)
            awaited = offsets[side[0]] + side[1]
            phrases.append(f"waits for {name(awaited)} to complete")
        elif a >= total:     # pair a completes only once both sides are posted
            if b != awaited:
                phrases.append(f"completes only once {name(b)} is posted (rendezvous)")
        elif ops[g_rank[b]][b - offsets[g_rank[b]]].kind in ("send", "recv"):
            rb, ib = locate(b)
            ob = ops[rb][ib]
            chan = channel_name(rb, ob.peer, ob.tag) if ob.kind == "send" else channel_name(ob.peer, rb, ob.tag)
            phrases.append(f"cannot be posted before {name(b)} (same {chan}, MPI-3.1 §3.5)")
        else:
            phrases.append(f"waits for {name(b)}")
    shown = phrases[:10]
    text = f"{name(cycle[0])} {shown[0]}" + "".join(f", which {ph}" for ph in shown[1:])
    more = f" ... (+{len(phrases) - 10} more)" if len(phrases) > 10 else ""
    return "deadlock (cyclic wait under MPI posting order, rendezvous sends): " + text + more
