"""Reference executor: run a schedule in one process on real NumPy buffers,
and compute what every rank must end with straight from the collective's
definition.

Two halves, written to be independent of the rest of ``verify/``:

- :func:`execute` is a plain interpreter of the per-rank operations: a
  worklist loop that runs an op once the ops it depends on have run (and a
  receive once its matched send has run), messages matched by
  ``(source, destination, tag)`` in the order each rank lists them (MPI's
  non-overtaking rule, MPI-3.1 §3.5). It does not use the symbolic
  verifier's replay (:mod:`.replay`), so a bug in that replay cannot hide in
  both.
- :func:`serial_reference` says what each rank's output blocks must hold,
  from the collective's definition (MPI-3.1 §5) and, where a compositing
  algorithm leaves block ``π(r)`` on rank ``r``, from the definition of ``π``
  in its paper (:func:`defined_result_block`). It never reads the schedule's
  own ``result_blocks`` / ``input_blocks`` metadata or
  :func:`topocoll.schedules.collectives.expected_contributions`; only the
  collective's parameters (``root``, the requested ``depth_order``, radix-k's
  ``k``) enter.

Operators: ``sum``, ``prod``, ``max``, ``min``, ``band``, ``bor``, ``xor`` or
any binary callable ``f(left, right) -> array`` (left is the front / lower
rank side for non-commutative operators). Operators must not modify their
arguments: the executor shares unchanged blocks between buffers.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

import numpy as np

from ..errors import SpecError, VerificationError
from ..schedules.ir import LEFT, Schedule

UFUNCS: dict[str, Callable] = {
    "sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
    "band": np.bitwise_and, "bor": np.bitwise_or, "xor": np.bitwise_xor,
}


def resolve_operator(op) -> Callable:
    if callable(op):
        return op
    if op not in UFUNCS:
        raise SpecError(f"operator {op!r}, expected one of {', '.join(UFUNCS)} or a callable")
    return UFUNCS[op]


def _check_inputs(where: str, schedule: Schedule, inputs) -> None:
    if len(inputs) != schedule.p:
        raise SpecError(f"{where}: {len(inputs)} input arrays, expected p={schedule.p}")
    for rank, x in enumerate(inputs):
        if x.shape[0] != schedule.count:
            raise SpecError(f"{where}: rank {rank} input has {x.shape[0]} elements, expected "
                            f"count={schedule.count}")


# ---- the collective's definition ---------------------------------------------------------------

def _one_block_per_rank(schedule: Schedule) -> None:
    if schedule.nblocks != schedule.p:
        raise SpecError(f"{schedule.label()}: {schedule.collective} with {schedule.nblocks} blocks, expected "
                        f"one block per rank (p={schedule.p})")


def _blocks_per_rank(schedule: Schedule) -> int:
    """``S``: the blocks of each rank's part of an all-gather or reduce-scatter
    vector, ``nblocks = P·S`` (MPI's layout, each rank's part split in ``S``:
    rank ``r``'s blocks are ``r·S .. r·S + S − 1``, as the all-to-all's packets)."""
    nb, p = schedule.nblocks, schedule.p
    if nb < p or nb % p:
        raise SpecError(f"{schedule.label()}: {schedule.collective} with {nb} blocks, expected P·S blocks "
                        f"(S per rank, p={p})")
    return nb // p


def defined_inputs(schedule: Schedule, rank: int) -> range | tuple[int, ...]:
    """Blocks of ``data`` that hold ``rank``'s input when the collective
    starts (MPI-3.1 §5): the root's whole vector for ``bcast``, block ``rank``
    for ``allgather`` / ``gather``, the whole vector otherwise."""
    c = schedule.collective
    if c == "bcast":
        return range(schedule.nblocks) if rank == schedule.root else ()
    if c in ("allgather", "gather"):
        per = _blocks_per_rank(schedule)
        return (rank,) if per == 1 else tuple(range(rank * per, (rank + 1) * per))
    return range(schedule.nblocks)


def _depth_positions(schedule: Schedule) -> list[int]:
    """``position[rank]``: where the rank's image lies front to back (the
    requested ``depth_order``, rank order by default)."""
    order = range(schedule.p) if schedule.depth_order is None else schedule.depth_order
    position = [0] * schedule.p
    for pos, rank in enumerate(order):
        position[int(rank)] = pos
    return position


def _bit_reverse(x: int, bits: int) -> int:
    out = 0
    for _ in range(bits):
        out = (out << 1) | (x & 1)
        x >>= 1
    return out


def _radix_k_block(v: int, p: int, ks) -> int:
    """Radix-k (Peterka et al., SC 2009, §3.1): depth positions fill a
    lattice of shape ``k`` in row-major order; in round ``i`` the groups are
    the lattice lines along dimension ``i``, the current piece splits into
    ``k_i`` sub-pieces and group member ``c`` ("the first group member
    receives the first image piece") keeps sub-piece ``c``."""
    first, size, stride = 0, p, 1
    for k in ks:
        member = (v // stride) % k
        size //= k
        first += member * size
        stride *= k
    return first


def _two_three_swap_blocks(p: int) -> list[int]:
    """Block each depth position ends with under :func:`two_three_swap
    <topocoll.schedules.compositing.two_three_swap>`, from its documented
    design (no paper specifies one; its Notes): ``2^q ≤ p < 2^(q+1)``, ``r =
    p − 2^q``; ``2^(q−1)`` consecutive groups of 2, 3 or 4 with the ``r``
    extra ranks spread evenly (group ``j`` has ``2 + ⌊(j+1)r/G⌋ − ⌊jr/G⌋``);
    members 0 and 1 of group ``j`` are survivors ``u = 2j`` and ``2j + 1`` of
    a binary swap, which leaves survivor ``u`` in slot ``bitreverse(u)``; a
    third member is handed its block by member 0 or 1 alternately over the
    groups of three (by member 0 in a group of four), a fourth by member 1;
    a slot is one block plus one per rank it hands a block to, slots laid out
    in slot order; the survivor keeps the slot's first block, its dependent
    the next."""
    if p == 1:
        return [0]
    q = p.bit_length() - 1
    survivors, extra = 1 << q, p - (1 << q)
    groups = survivors // 2
    start, threes = 0, 0
    survivor_position = [0] * survivors
    carried = [None] * survivors          # survivor -> depth position it hands a block to
    carried_too = [None] * survivors
    for j in range(groups):
        size = 2 + ((j + 1) * extra) // groups - (j * extra) // groups
        survivor_position[2 * j], survivor_position[2 * j + 1] = start, start + 1
        if size == 3:
            carried[2 * j + threes % 2] = start + 2
            threes += 1
        elif size == 4:
            carried[2 * j] = start + 2
            carried_too[2 * j + 1] = start + 3
        start += size
    weight = [1 + (carried[u] is not None) + (carried_too[u] is not None) for u in range(survivors)]
    slot_first, first = [0] * survivors, 0
    for slot in range(survivors):                        # slots in slot order
        u = _bit_reverse(slot, q)                        # the survivor in this slot
        slot_first[slot] = first
        first += weight[u]
    block = [0] * p
    for u in range(survivors):
        mine = slot_first[_bit_reverse(u, q)]
        block[survivor_position[u]] = mine
        for dependent in (carried[u], carried_too[u]):
            if dependent is not None:
                block[dependent] = mine + 1
    return block


def defined_result_block(schedule: Schedule, rank: int) -> int:
    """The block of a ``reduce_scatter`` that ``rank`` must end with.

    MPI's reduce-scatter-block (MPI-3.1 §5.10.1) leaves block ``r`` on rank
    ``r``; so do ring (Thakur et al. 2005), direct send ("each node P_i is
    responsible of compositing the (n/p) pixels ranging from i(n/p) to (i +
    1)(n/p) − 1", Cavin & Demengeon 2012 §2.2.1) and shift-based (§3). The
    compositing algorithms that follow the depth order instead leave block
    ``π(v)`` on the rank at depth position ``v``:

    - ``parallel_pipeline``: ``π(v) = v`` (the ring laid out in depth order);
    - ``binary_swap``: ``π(v) = bitreverse(v)`` over ``log2 p`` bits (round
      ``j`` pairs ``v`` and ``v xor 2^j``; the front one keeps the first
      half, Ma et al. 1994; radix-k paper §2.2);
    - ``radix_k``: the mixed-radix digit reversal of :func:`_radix_k_block`;
    - ``two_three_swap``: :func:`_two_three_swap_blocks`.
    """
    _one_block_per_rank(schedule)
    name, p = schedule.algorithm, schedule.p
    v = _depth_positions(schedule)[rank]
    if name == "parallel_pipeline":
        return v
    if name == "binary_swap":
        return _bit_reverse(v, p.bit_length() - 1)
    if name == "radix_k":
        return _radix_k_block(v, p, schedule.params["k"])
    if name == "two_three_swap":
        return _two_three_swap_blocks(p)[v]
    return rank


#: reduce-scatters whose result follows the depth order (:func:`defined_result_block`)
DEPTH_ORDER_RESULTS = ("parallel_pipeline", "binary_swap", "radix_k", "two_three_swap")


def defined_result_blocks(schedule: Schedule, rank: int) -> tuple[int, ...]:
    """The blocks of a ``reduce_scatter`` that ``rank`` must end with: one
    (:func:`defined_result_block`), or with ``S`` blocks per rank
    (``nblocks = P·S``, MPI's order only) blocks ``r·S .. r·S + S − 1``."""
    per = _blocks_per_rank(schedule)
    if per == 1:
        return (defined_result_block(schedule, rank),)
    if schedule.algorithm in DEPTH_ORDER_RESULTS:
        raise SpecError(f"{schedule.label()}: {per} blocks per rank, expected one for a depth-order result")
    return tuple(range(rank * per, (rank + 1) * per))


def serial_reference(schedule: Schedule, inputs, op="sum") -> list[dict[int, np.ndarray]]:
    """What each rank's output blocks must hold, from the collective's
    definition: ``{block position of data: array}`` per rank.

    A reduced block is a left-to-right fold over every rank's input block, in
    the requested depth order (rank order by default): ``allreduce`` and
    ``barrier`` every block on every rank, ``reduce`` every block on the
    root, ``reduce_scatter`` block :func:`defined_result_block` on each rank;
    ``bcast`` the root's blocks everywhere; ``allgather`` (``gather``: the
    root) block ``s`` = rank ``s``'s block ``s``; ``alltoall`` with ``S =
    nblocks / p`` blocks per pair: rank ``d``'s block ``s·S + j`` = rank
    ``s``'s block ``d·S + j``.
    """
    func = resolve_operator(op)
    _check_inputs("serial_reference", schedule, inputs)
    p, nb, c = schedule.p, schedule.nblocks, schedule.collective
    bounds = schedule.bounds.tolist()
    order = range(p) if schedule.depth_order is None else [int(r) for r in schedule.depth_order]

    def block(rank, b):
        return np.array(inputs[rank][bounds[b]:bounds[b + 1]], copy=True)

    folds: dict[int, np.ndarray] = {}

    def reduced(b):
        if b not in folds:
            acc = None
            for rank in order:
                acc = block(rank, b) if acc is None else func(acc, inputs[rank][bounds[b]:bounds[b + 1]])
            folds[b] = acc
        return folds[b]

    out = []
    for rank in range(p):
        if c in ("allreduce", "barrier"):
            want = {b: reduced(b) for b in range(nb)}
        elif c == "reduce":
            want = {b: reduced(b) for b in range(nb)} if rank == schedule.root else {}
        elif c == "reduce_scatter":
            want = {b: reduced(b) for b in defined_result_blocks(schedule, rank)}
        elif c == "bcast":
            want = {b: block(schedule.root, b) for b in range(nb)}
        elif c in ("allgather", "gather"):
            per = _blocks_per_rank(schedule)
            want = {} if c == "gather" and rank != schedule.root else {b: block(b // per, b) for b in range(nb)}
        elif c == "alltoall":
            per = nb // p
            want = {s * per + j: block(s, rank * per + j) for s in range(p) for j in range(per)}
        else:
            raise SpecError(f"serial_reference: collective={c!r}, expected allreduce, reduce, bcast, "
                            "reduce_scatter, allgather, gather, barrier or alltoall")
        out.append(want)
    return out


# ---- the interpreter ---------------------------------------------------------------------------

def _name(rank: int, idx: int, op) -> str:
    if op.kind in ("send", "recv"):
        return f"rank {rank} op {idx} ({op.kind} {op.buf}{list(op.blocks)} {'to' if op.kind == 'send' else 'from'} " \
               f"{op.peer}, tag {op.tag})"
    return f"rank {rank} op {idx} ({op.kind} {op.src} -> {op.dst})"


def _match_messages(ops) -> dict[tuple[int, int], tuple[int, int]]:
    """``(receiver, recv index) -> (sender, send index)``: the k-th send of
    rank s to rank d with tag t meets the k-th receive of rank d from s with
    tag t, each counted in its rank's list order."""
    sends: dict[tuple[int, int, int], list[int]] = {}
    recvs: dict[tuple[int, int, int], list[int]] = {}
    for rank, rank_ops in enumerate(ops):
        for idx, op in enumerate(rank_ops):
            if op.kind == "send":
                sends.setdefault((rank, op.peer, op.tag), []).append(idx)
            elif op.kind == "recv":
                recvs.setdefault((op.peer, rank, op.tag), []).append(idx)
    sender_of = {}
    for channel in sorted(set(sends) | set(recvs)):
        src, dst, tag = channel
        s_list, r_list = sends.get(channel, []), recvs.get(channel, [])
        if len(s_list) != len(r_list):
            raise VerificationError(f"execute: {len(s_list)} sends from rank {src} to rank {dst} with tag {tag} "
                                    f"but {len(r_list)} receives, expected as many")
        for s_idx, r_idx in zip(s_list, r_list):
            sender_of[(dst, r_idx)] = (src, s_idx)
    return sender_of


def execute(schedule: Schedule, inputs, op="sum") -> list[np.ndarray]:
    """Run ``schedule`` on ``inputs`` (one array of ``count`` elements per rank).

    Every rank's buffers are blocks in a dictionary: ``data`` starts with the
    blocks that hold the rank's input (:func:`defined_inputs`), scratch
    buffers empty. One loop over a FIFO worklist runs each op once it is
    ready: every op it depends on has run and, for a receive, the send it is
    matched with (:func:`_match_messages`) has run. A send takes its blocks
    as they are when it runs (a correct schedule does not touch them before
    the send completes); a receive stores them; a reduce applies ``op``
    (``LEFT``: ``dst = src ∘ dst``, ``RIGHT``: ``dst = dst ∘ src``); a copy
    copies.

    Returns each rank's ``data`` buffer at the end; blocks the schedule never
    wrote on a rank are left as that rank's input.

    Raises
    ------
    VerificationError
        Unmatched messages, a read of a block nothing wrote, a block of the
        wrong size, or ops that never become ready (a cyclic wait).
    """
    func = resolve_operator(op)
    _check_inputs("execute", schedule, inputs)
    ops, p = schedule.ops, schedule.p
    if len(ops) != p:
        raise VerificationError(f"execute: the schedule has op lists for {len(ops)} ranks, expected p={p}")
    bounds = schedule.bounds.tolist()
    nb = schedule.nblocks
    sender_of = _match_messages(ops)

    memory = []
    for rank in range(p):
        memory.append({("data", b): np.array(inputs[rank][bounds[b]:bounds[b + 1]], copy=True)
                       for b in defined_inputs(schedule, rank)})

    # unmet[rank][idx]: ops (or the matched send) still to run before this one
    unmet = [[len(set(op.deps)) for op in rank_ops] for rank_ops in ops]
    then: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for rank, rank_ops in enumerate(ops):
        for idx, op in enumerate(rank_ops):
            for d in set(op.deps):
                if not 0 <= d < idx:
                    raise VerificationError(f"execute: {_name(rank, idx, op)} depends on op {d}, expected an "
                                            "earlier op of its rank")
                then.setdefault((rank, d), []).append((rank, idx))
            if op.kind == "recv":
                unmet[rank][idx] += 1
                then.setdefault(sender_of[(rank, idx)], []).append((rank, idx))
    ready = deque((rank, idx) for rank in range(p) for idx in range(len(ops[rank])) if unmet[rank][idx] == 0)
    in_flight: dict[tuple[int, int], list[np.ndarray]] = {}   # payload of each send that ran

    def read(rank, idx, op, buf, b):
        try:
            return memory[rank][(buf, b)]
        except KeyError:
            where = "outside the blocks" if not 0 <= b < nb else "before anything was written there"
            raise VerificationError(f"execute: {_name(rank, idx, op)} reads {buf}[{b}] {where}") from None

    def write(rank, idx, op, buf, b, value):
        if not 0 <= b < nb:
            raise VerificationError(f"execute: {_name(rank, idx, op)} writes {buf}[{b}] outside the "
                                    f"{nb} blocks")
        if value.shape[0] != bounds[b + 1] - bounds[b]:
            raise VerificationError(f"execute: {_name(rank, idx, op)} stores {value.shape[0]} elements in "
                                    f"{buf}[{b}] of {bounds[b + 1] - bounds[b]}")
        memory[rank][(buf, b)] = value

    ran = 0
    while ready:
        rank, idx = ready.popleft()
        op = ops[rank][idx]
        if op.kind == "send":
            in_flight[(rank, idx)] = [read(rank, idx, op, op.buf, b) for b in op.blocks]
        elif op.kind == "recv":
            payload = in_flight.pop(sender_of[(rank, idx)])
            if len(payload) != len(op.into):
                raise VerificationError(f"execute: {_name(rank, idx, op)} receives {len(payload)} blocks into "
                                        f"{len(op.into)}")
            for b, value in zip(op.into, payload):
                write(rank, idx, op, op.buf, b, value)
        elif op.kind == "reduce":
            for b in op.blocks:
                mine, other = read(rank, idx, op, op.dst, b), read(rank, idx, op, op.src, b)
                write(rank, idx, op, op.dst, b, func(other, mine) if op.side == LEFT else func(mine, other))
        elif op.kind == "copy":
            values = [read(rank, idx, op, op.src, b) for b in op.src_blocks]
            for b, value in zip(op.blocks, values):
                write(rank, idx, op, op.dst, b, value)
        else:
            raise VerificationError(f"execute: rank {rank} op {idx} has kind {op.kind!r}, expected send, "
                                    "recv, reduce or copy")
        ran += 1
        for nxt in then.get((rank, idx), ()):
            unmet[nxt[0]][nxt[1]] -= 1
            if unmet[nxt[0]][nxt[1]] == 0:
                ready.append(nxt)
    if ran != sum(len(rank_ops) for rank_ops in ops):
        rank, idx = next((r, i) for r in range(p) for i in range(len(ops[r])) if unmet[r][i] > 0)
        raise VerificationError(f"execute: {_name(rank, idx, ops[rank][idx])} never became ready (a cyclic "
                                "wait on its dependencies or its matched send)")

    out = []
    for rank in range(p):
        buf = np.array(inputs[rank], copy=True)
        for (name, b), value in memory[rank].items():
            if name == "data":
                buf[bounds[b]:bounds[b + 1]] = value
        out.append(buf)
    return out
