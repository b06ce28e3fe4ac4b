"""Patterns: the one description of an algorithm every view derives from.

A pattern answers three questions, and a :class:`~topocoll.schedules.ir.Schedule`
asks nothing else of it:

- ``ops_for(rank)``: one rank's operations (the MPI executor, ``show``);
- ``all_ops()``: every rank's operations (the verifier, small P);
- ``chunks(block_bytes)``: the op program, streamed round by round
  (:mod:`topocoll.schedules.program`; the simulator).

Dependencies are derived once, by data flow, in
:class:`~topocoll.schedules.ir.RankBuilder`. Four kinds of pattern:

- :class:`Circulant` (DIY2's "partners" idea: Morozov & Peterka 2016): every
  rank runs rank 0's operations with peers and blocks moved by a group
  action of its rank (``r + x mod P`` or ``r XOR x``). Data flow is derived on
  rank 0 alone and is the same on every rank, because the action is a
  bijection on ranks and on blocks; the program is then vectorised over
  ranks, so ``P = 65,536`` streams without one Python object per op.
- :class:`~.arraypattern.ArrayPattern`: patterns whose ranks differ (trees,
  folds, halving and doubling), recorded for classes of ranks at once with
  NumPy arrays: the program is scattered round by round, no Python object
  per operation;
- :class:`RankwisePattern`: a function building one rank's operations, for
  the rank-wise patterns not yet described as arrays: ``ops_for`` costs one
  rank's work only; the program merges the ranks.
- :class:`OpsPattern`: explicit op lists for every rank (mutants,
  hand-written schedules, generators not yet described otherwise).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterator, Protocol, Sequence

import numpy as np

from ..errors import ScheduleError
from .dataflow import RankBuilder, _blocks
from .ops import LEFT, RIGHT, Copy, Op, Recv, Reduce, Send
from .program import (KIND_CODES, LEFT_SIDE, RIGHT_SIDE, OpChunk, canonical_runs, chunks_from_ops,
                      run_bytes, strided_runs)


def buffers_of(ops: Sequence[Sequence[Op]]) -> tuple[str, ...]:
    """Buffer names in first-use order, ``data`` first."""
    names = {"data": None}
    for rank_ops in ops:
        for op in rank_ops:
            if op.kind in ("send", "recv"):
                names.setdefault(op.buf)
            else:
                names.setdefault(op.dst)
                names.setdefault(op.src)
    return tuple(names)


class Pattern(Protocol):
    """What every pattern tells the simulator without building its program:
    how many ops it has and how they fall into rounds (the memory estimate
    and the choice between the whole and the streamed program,
    ``topocoll.sim.engine``)."""

    p: int

    def op_count(self) -> int:
        """Ops of the whole program."""

    def round_sizes(self) -> list[int]:
        """Ops of each round, every rank (an estimate where ranks differ)."""


class OpsPattern:
    """Explicit per-rank op lists, built once on first use by ``build()``."""

    #: the op program is derived from every rank's op list, all built first
    streams = False

    def __init__(self, p: int, build: Callable[[], list[list[Op]]]):
        self.p = p
        self._build = build
        self._ops: list[list[Op]] | None = None
        self._buffers: tuple[str, ...] | None = None

    @classmethod
    def of(cls, ops: list[list[Op]]) -> "OpsPattern":
        pattern = cls(len(ops), lambda: ops)
        pattern._ops = ops
        return pattern

    def all_ops(self) -> list[list[Op]]:
        if self._ops is None:
            self._ops = self._build()
        return self._ops

    def ops_for(self, rank: int) -> list[Op]:
        return self.all_ops()[rank]

    def buffers(self) -> tuple[str, ...]:
        if self._buffers is None:   # asked by program() and by chunks(): one pass over the ops
            self._buffers = buffers_of(self.all_ops())
        return self._buffers

    def chunks(self, block_bytes: np.ndarray) -> Iterator[OpChunk]:
        return chunks_from_ops(self.all_ops(), self.buffers(), block_bytes)

    def _rank0_shape(self) -> tuple[int, int]:
        """Rank 0's ops and rounds, counted once (building a rank's ops is the
        cost; the simulator asks for both counts, and again per run)."""
        shape = self.__dict__.get("_rank0")
        if shape is None:
            ops = self.ops_for(0)
            shape = self.__dict__["_rank0"] = (len(ops), len({op.round for op in ops}))
        return shape

    def op_count(self) -> int:
        """P × rank 0's ops (exact where ranks are alike; no other rank built)."""
        return self.p * self._rank0_shape()[0]

    def round_sizes(self) -> list[int]:
        """:meth:`op_count` spread evenly over rank 0's rounds: ranks differ
        (e.g. direct all-to-all: rank t posts P − 1 receives in round t only),
        so the mean round stands for each."""
        rounds = self._rank0_shape()[1]
        return [-(-self.op_count() // max(rounds, 1))] * rounds


class RankwisePattern(OpsPattern):
    """Built one rank at a time by ``rank_ops(rank, builder)``, which records
    that rank's operations on a fresh :class:`RankBuilder`."""

    def __init__(self, p: int, rank_ops: Callable[[int, RankBuilder], None]):
        self._rank_ops = rank_ops
        super().__init__(p, lambda: [self.ops_for(r) for r in range(p)])

    def ops_for(self, rank: int) -> list[Op]:
        if self._ops is not None:
            return self._ops[rank]
        builder = RankBuilder()
        self._rank_ops(rank, builder)
        return builder.ops


# ---- circulant patterns -------------------------------------------------------

ADD, XOR = "add", "xor"
LOWER_FIRST = "lower_first"   # a reduction side: the lower rank's data in front


class Circulant:
    """Rank 0's operations; rank ``r`` runs them moved by the action of ``r``.

    Peers are given as offsets: ``send(t, o)`` sends to ``r ⊕ o`` and
    ``recv(t, o)`` receives from ``r ⊖ o`` what that rank sent with offset
    ``o`` (``⊕`` is ``+ mod P`` for ``group="add"``, XOR for ``"xor"``, where
    ``P`` must be a power of two). Blocks are named as rank 0 names them;
    with ``block_shift=s`` rank ``r`` uses block ``b ⊕ s·r`` (mod
    ``nblocks``; XOR: ``b ⊕ r``), so "my block" patterns such as the ring are
    circulant too. A reduction's ``side`` is ``"left"``, ``"right"`` or
    ``(LOWER_FIRST, o)``: the data received from ``r ⊖ o`` goes in front
    when that rank is lower than ``r`` (non-commutative safe rank order).
    The tag of an operation defaults to its round.
    """

    def __init__(self, *, group: str = ADD, block_shift: int = 0):
        if group not in (ADD, XOR):
            raise ScheduleError(f"Circulant: group={group!r}, expected 'add' or 'xor'")
        self.group = group
        self.block_shift = block_shift
        self.steps: list[tuple] = []

    # ---- recording rank 0's operations
    def send(self, round: int, offset: int, buf: str = "data", *, blocks=(0,), tag=None) -> None:
        self.steps.append(("send", round, offset, buf, tuple(blocks), None, round if tag is None else tag))

    def recv(self, round: int, offset: int, buf: str = "data", *, blocks=(0,), into=None, tag=None) -> None:
        blocks = tuple(blocks)
        into = blocks if into is None else tuple(into)
        self.steps.append(("recv", round, offset, buf, blocks, into, round if tag is None else tag))

    def reduce(self, round: int, *, dst: str, src: str, side=RIGHT, blocks=(0,)) -> None:
        self.steps.append(("reduce", round, dst, src, tuple(blocks), side))

    def copy(self, round: int, *, dst: str, src: str, blocks=(0,), src_blocks=None) -> None:
        blocks = tuple(blocks)
        self.steps.append(("copy", round, dst, src, blocks, blocks if src_blocks is None else tuple(src_blocks)))

    def pattern(self, p: int, nblocks: int = 1) -> "CirculantPattern":
        return CirculantPattern(self, p, nblocks)


class CirculantPattern:
    """A :class:`Circulant` template bound to ``p`` ranks and ``nblocks``."""

    #: the op program is produced round by round (rank 0's ops, tiled)
    streams = True

    def __init__(self, template: Circulant, p: int, nblocks: int):
        if template.group == XOR and p & (p - 1):
            raise ScheduleError(f"XOR circulant pattern: p={p}, expected a power of two")
        self.t, self.p, self.nblocks = template, p, nblocks
        self._ops: list[list[Op]] | None = None
        self._rank0: list[Op] | None = None

    # ---- the group action
    def _peer(self, rank, offset):
        if self.t.group == XOR:
            return rank ^ offset
        return (rank + offset) % self.p

    def _from(self, rank, offset):
        if self.t.group == XOR:
            return rank ^ offset
        return (rank - offset) % self.p

    def _block(self, block, rank):
        s = self.t.block_shift
        if s == 0:
            return block
        if self.t.group == XOR:
            return block ^ rank
        return (block + s * rank) % self.nblocks

    def _side(self, side, rank):
        if isinstance(side, tuple):
            return LEFT if self._from(rank, side[1]) < rank else RIGHT
        return side

    # ---- views
    def buffers(self) -> tuple[str, ...]:
        names = {"data": None}
        for step in self.t.steps:
            if step[0] in ("send", "recv"):
                names.setdefault(step[3])
            else:
                names.setdefault(step[2])
                names.setdefault(step[3])
        return tuple(names)

    def ops_for(self, rank: int) -> list[Op]:
        """Rank 0's operations built once (data flow included), then moved by
        the action of ``rank``: the dependencies are the same on every rank
        (the action is a bijection on ranks and on blocks), so no rank but 0
        pays for data flow (the ring at P = 65,536: 0.4 s instead of 4.4 s)."""
        if self._ops is not None:
            return self._ops[rank]
        if self._rank0 is None:
            self._rank0 = self._built(0)
        return self._rank0 if rank == 0 else self._moved(rank)

    def _moved(self, rank: int) -> list[Op]:
        blk, out = self._block, []
        fixed = self.t.block_shift == 0
        for step, op in zip(self.t.steps, self._rank0):
            kind = step[0]
            if kind == "send":
                blocks = op.blocks if fixed else _blocks([blk(x, rank) for x in step[4]])
                out.append(Send(self._peer(rank, step[2]), op.buf, blocks, op.tag, op.round, op.deps))
            elif kind == "recv":
                sender = self._from(rank, step[2])
                blocks = op.blocks if fixed else _blocks([blk(x, sender) for x in step[4]])
                into = op.into if fixed else _blocks([blk(x, rank) for x in step[5]])
                out.append(Recv(sender, op.buf, blocks, into, op.tag, op.round, op.deps))
            elif kind == "reduce":
                blocks = op.blocks if fixed else _blocks([blk(x, rank) for x in step[4]])
                out.append(Reduce(op.dst, op.src, blocks, self._side(step[5], rank), op.round, op.deps))
            else:
                blocks = op.blocks if fixed else _blocks([blk(x, rank) for x in step[4]])
                src_blocks = op.src_blocks if fixed else _blocks([blk(x, rank) for x in step[5]])
                out.append(Copy(op.dst, op.src, blocks, src_blocks, op.round, op.deps))
        return out

    def op_count(self) -> int:
        """Ranks × the template's steps (every rank runs every step)."""
        return self.p * len(self.t.steps)

    def round_sizes(self) -> list[int]:
        """Per round (in round order) ranks × the template's steps in it."""
        per = Counter(step[1] for step in self.t.steps)
        return [self.p * per[r] for r in sorted(per)]

    def _built(self, rank: int) -> list[Op]:
        b = RankBuilder()
        blk = self._block
        for step in self.t.steps:
            kind, rnd = step[0], step[1]
            if kind == "send":
                b.send(self._peer(rank, step[2]), [blk(x, rank) for x in step[4]], buf=step[3], round=rnd,
                       tag=step[6])
            elif kind == "recv":
                sender = self._from(rank, step[2])
                b.recv(sender, [blk(x, sender) for x in step[4]], buf=step[3],
                       into=[blk(x, rank) for x in step[5]], round=rnd, tag=step[6])
            elif kind == "reduce":
                b.reduce([blk(x, rank) for x in step[4]], dst=step[2], src=step[3],
                         side=self._side(step[5], rank), round=rnd)
            else:
                b.copy([blk(x, rank) for x in step[4]], dst=step[2], src=step[3],
                       src_blocks=[blk(x, rank) for x in step[5]], round=rnd)
        return b.ops

    def all_ops(self) -> list[list[Op]]:
        if self._ops is None:
            self._ops = [self.ops_for(r) for r in range(self.p)]
        return self._ops

    def chunks(self, block_bytes: np.ndarray) -> Iterator[OpChunk]:
        """The op program vectorised over ranks: rank 0's data flow, tiled."""
        rank0 = self.ops_for(0)   # dependencies by data flow, the same on every rank
        steps = self.t.steps
        by_round: dict[int, list[int]] = {}   # one pass: the ring has O(P) rounds and steps
        for i, s in enumerate(steps):
            by_round.setdefault(s[1], []).append(i)
        rounds = sorted(by_round)
        position = {}
        for t in rounds:   # template op i -> (round, position within its round)
            for j, i in enumerate(by_round[t]):
                position[i] = (t, j)
        for i in range(1, len(steps)):
            if steps[i][1] < steps[i - 1][1]:
                raise ScheduleError(f"circulant step {i}: round {steps[i][1]} after round {steps[i - 1][1]}, "
                                    "expected non-decreasing rounds")
        p = self.p
        nb = len(block_bytes)   # the canonical runs' modulus: the schedule's blocks
        if self.t.block_shift and nb != self.nblocks:
            raise ScheduleError(f"circulant pattern: {self.nblocks} blocks moved by the ranks, "
                                f"block_bytes gives {nb}, expected equal")
        ranks = np.arange(p, dtype=np.int64)
        bufs = {name: k for k, name in enumerate(self.buffers())}
        base, first = {}, 0
        for t in rounds:
            base[t] = first
            first += p * len(by_round[t])
        for t in rounds:
            idx = by_round[t]
            m = len(idx)
            kinds = np.array([KIND_CODES[steps[i][0]] for i in idx], dtype=np.int8)
            peer = np.full((p, m), -1, dtype=np.int64)
            tag = np.full((p, m), -1, dtype=np.int64)
            side = np.full((p, m), -1, dtype=np.int8)
            buf = np.zeros(m, dtype=np.int16)
            sbuf = np.zeros(m, dtype=np.int16)
            run_parts = []
            for j, i in enumerate(idx):
                step = steps[i]
                kind = step[0]
                if kind in ("send", "recv"):
                    peer[:, j] = self._peer(ranks, step[2]) if kind == "send" else self._from(ranks, step[2])
                    tag[:, j] = step[6]
                    buf[j] = sbuf[j] = bufs[step[3]]
                    if kind == "send":
                        run_parts.append(self._runs(step[4], step[4], ranks, ranks, nb))
                    else:
                        run_parts.append(self._runs(step[5], step[4], ranks, peer[:, j], nb))
                else:
                    buf[j], sbuf[j] = bufs[step[2]], bufs[step[3]]
                    if kind == "reduce":
                        s = step[5]
                        if isinstance(s, tuple):
                            side[:, j] = np.where(self._from(ranks, s[1]) < ranks, LEFT_SIDE, RIGHT_SIDE)
                        else:
                            side[:, j] = LEFT_SIDE if s == LEFT else RIGHT_SIDE
                        run_parts.append(self._runs(step[4], step[4], ranks, ranks, nb))
                    else:
                        run_parts.append(self._runs(step[4], step[5], ranks, ranks, nb))
            # runs: per step (p, pieces) columns and a mask -> rank-major op order
            counts = np.stack([part[1] for part in run_parts], axis=1)               # (p, m)
            keep = np.concatenate([part[0] for part in run_parts], axis=1)           # (p, Σ pieces)
            run_cols = [np.concatenate([part[2][c] for part in run_parts], axis=1)[keep] for c in range(6)]
            run_ptr = np.concatenate(([0], np.cumsum(counts.ravel())))
            # dependencies: rank 0's, as (round, position) of the template, tiled
            dep_lists = [[position[d] for d in rank0[i].deps] for i in idx]
            dep_counts = np.array([len(d) for d in dep_lists], dtype=np.int64)
            const = np.array([base[tt] + jj for d in dep_lists for tt, jj in d], dtype=np.int64)
            mult = np.array([len(by_round[tt]) for d in dep_lists for tt, _ in d], dtype=np.int64)
            dep_idx = (const[None, :] + ranks[:, None] * mult[None, :]).ravel()
            dep_ptr = np.concatenate(([0], np.cumsum(np.tile(dep_counts, p))))
            nbytes = run_bytes(block_bytes, run_ptr, run_cols[0], run_cols[2], run_cols[3], run_cols[4])
            yield OpChunk(t, base[t], np.repeat(ranks, m), np.tile(kinds, p), peer.ravel(), tag.ravel(),
                          np.tile(buf, p), np.tile(sbuf, p), side.ravel(), nbytes,
                          run_ptr, *run_cols, dep_ptr, dep_idx, nblocks=nb)

    def _runs(self, dst_blocks, src_blocks, dst_rank, src_rank, nb: int):
        """Canonical strided runs (:func:`~.program.strided_runs`) of one
        template op on every rank: ``(mask, counts, columns)`` with the six
        run columns as ``(p, pieces)`` arrays, ``mask`` marking the pieces
        that exist and ``counts`` their number per rank.

        Under ``+ mod nblocks`` every step of the canonical form is moved by a
        constant, so rank ``r``'s runs are rank 0's with their starts moved
        (no run splits: runs are contiguous modulo ``nblocks``). XOR moves no
        range to a range: the blocks are moved one by one and grouped again
        (:func:`~.program.canonical_runs`). ``nb``: the schedule's blocks."""
        p = self.p
        k = self.t.block_shift
        if k and self.t.group == XOR:
            d1 = np.asarray(dst_blocks, dtype=np.int64)[None, :] ^ dst_rank[:, None]
            s1 = np.asarray(src_blocks, dtype=np.int64)[None, :] ^ src_rank[:, None]
            counts, flat = canonical_runs(d1, s1, np.ones_like(d1), nb)
            width = int(counts.max()) if p else 0
            mask = np.arange(width)[None, :] < counts[:, None]
            cols = []
            for col in flat:
                padded = np.zeros((p, width), dtype=np.int64)
                padded[mask] = col
                cols.append(padded)
            return mask, counts, cols
        runs = strided_runs([x % nb for x in dst_blocks], [x % nb for x in src_blocks], nb)
        t = np.array(runs, dtype=np.int64).reshape(-1, 6)
        cols = [np.broadcast_to(t[:, c], (p, len(runs))) for c in range(6)]
        if k:
            cols[0] = (t[None, :, 0] + k * dst_rank[:, None]) % nb
            cols[1] = (t[None, :, 1] + k * src_rank[:, None]) % nb
        return np.ones((p, len(runs)), dtype=bool), np.full(p, len(runs), dtype=np.int64), cols
