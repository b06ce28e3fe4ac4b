"""The congestion model at the papers' sizes: circulant schedules in lockstep,
from rank 0's ops alone (Rust: ``src/engine/lockstep.rs``).

A circulant schedule (:class:`~topocoll.schedules.pattern.Circulant`: every
rank runs rank 0's ops moved by the group action) whose rounds move at most
one message per rank is fully described by one *shape* per round, measured
here on rank 0's ops: when the send and the receive are posted and when the
CPU is done with the work that does not wait for the message (a tiny run of
the event loop's CPU rule: released work in (release time, communication
before computation, op) order), and
the work after the message arrives. With ``sync=rounds`` or ``barrier`` the
state is then one time per rank, and the engine never builds the op program:
a shift all-to-all over all 20,736 endpoints of the largest Table 1 tree
(430 M messages) needs O(P) memory.

:func:`lockstep_shapes` returns ``None`` where the fast path does not apply
(not circulant, uneven blocks, several messages in a round, forwarding within
a round, a rendezvous send that local work waits for); :func:`simulate` then
runs the event loop. The two agree exactly where both apply (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schedules.ir import Schedule
from ..schedules.pattern import XOR, CirculantPattern

__all__ = ["Shapes", "lockstep_shapes"]

_PS = 1e12


@dataclass(frozen=True)
class Shapes:
    xor: bool
    message: np.ndarray
    send_off: np.ndarray
    nbytes: np.ndarray
    send_at: np.ndarray
    recv_at: np.ndarray
    local_end: np.ndarray
    post: np.ndarray


def _ceil_ps(x: float) -> int:
    """As the engine's ``ceil_ps``: round up, forgiving floating-point excess."""
    if not x > 0:
        return 0
    below = float(np.floor(x))
    return int(below) if x - below <= 1e-9 * max(x, 1.0) else int(np.ceil(x))


def lockstep_shapes(schedule: Schedule, *, o_send: int, o_per_byte: float, gamma: float, copy: float,
                    o_recv: int, eager: int) -> Shapes | None:
    """Round shapes of ``schedule`` (costs in ps and ps per byte, as the
    engine takes them), or None when the lockstep path does not apply."""
    pattern = getattr(schedule, "pattern", None)     # a GOAL program has none
    if not isinstance(pattern, CirculantPattern):
        return None
    sizes = schedule.block_bytes
    if len(sizes) == 0 or (sizes != sizes[0]).any():
        return None
    block = int(sizes[0])
    p, xor = schedule.p, pattern.t.group == XOR
    ops = schedule.ops_for(0)
    rounds = sorted({op.round for op in ops})
    by_round = {r: [] for r in rounds}
    for i, op in enumerate(ops):
        by_round[op.round].append(i)
    cols = {k: [] for k in ("message", "send_off", "nbytes", "send_at", "recv_at", "local_end", "post")}

    def work(op) -> int:
        n = len(op.blocks) * block
        if op.kind == "send":
            return o_send + _ceil_ps(n * o_per_byte)
        if op.kind == "reduce":
            return _ceil_ps(n * gamma)
        if op.kind == "copy":
            return _ceil_ps(n * copy)
        return 0

    for r in rounds:
        ids = by_round[r]
        mine = set(ids)
        sends = [i for i in ids if ops[i].kind == "send"]
        recvs = [i for i in ids if ops[i].kind == "recv"]
        if len(sends) > 1 or len(recvs) > 1 or len(sends) != len(recvs):
            return None
        # ops waiting for this round's message (transitively)
        waits: set[int] = set()
        for i in ids:
            if any(d in waits or (recvs and d == recvs[0]) for d in ops[i].deps if d in mine):
                waits.add(i)
        if sends:
            s, v = sends[0], recvs[0]
            off = ops[s].peer
            if (ops[v].peer != (off if xor else (-off) % p) or len(ops[s].blocks) != len(ops[v].blocks)
                    or ops[s].tag != ops[v].tag):
                return None     # the receive matches another round's send
            nbytes = len(ops[s].blocks) * block
            if s in waits or any(ops[i].kind == "send" for i in waits):
                return None     # forwarding within the round
            if any(s in ops[i].deps for i in ids if i != v) and nbytes > eager:
                return None     # local work waits for a rendezvous send
        # the CPU rule of the event loop on the work that does not wait
        local = [i for i in ids if i not in waits]
        done: dict[int, int] = {}
        released = {i: 0 for i in local if not [d for d in ops[i].deps if d in mine]}
        pending = [i for i in local if i not in released]
        cpu, post_at = 0, {}
        while released:
            i = min(released, key=lambda k: (released[k], ops[k].kind in ("reduce", "copy"), k))
            start = max(cpu, released.pop(i))
            cpu = start + work(ops[i])
            done[i] = cpu
            post_at[i] = cpu
            for j in list(pending):
                if all(d in done for d in ops[j].deps if d in mine):
                    released[j] = max(done[d] for d in ops[j].deps if d in mine)
                    pending.remove(j)
        if pending:
            return None
        cols["message"].append(bool(sends))
        cols["send_off"].append(ops[sends[0]].peer if sends else 0)
        cols["nbytes"].append(len(ops[sends[0]].blocks) * block if sends else 0)
        cols["send_at"].append(post_at[sends[0]] if sends else 0)
        cols["recv_at"].append(post_at[recvs[0]] if recvs else 0)
        cols["local_end"].append(cpu)
        cols["post"].append((o_recv if recvs else 0) + sum(work(ops[i]) for i in sorted(waits)))
    dtypes = {"message": bool, "send_off": np.uint32}
    return Shapes(xor, **{k: np.asarray(v, dtype=dtypes.get(k, np.uint64)) for k, v in cols.items()})
