"""One rank's part of a schedule, compiled once into flat arrays (no MPI).

:func:`compile_rank` turns ``schedule.ops_for(rank)`` into what a plan binds
to buffers and requests (:mod:`.plan`): per operation its kind, round, tag,
peer, the rows it touches in two memory spaces, and the dependencies as
dependents lists. Nothing here depends on the element type or on a
communicator, so the compile can be measured alone (``P = 65,536``, one rank:
BENCHMARKS.md, "MPI executor").

Memory. Space ``DATA`` is the caller's ``recvbuf`` (the schedule's ``data``
buffer, rows = elements along axis 0). Space ``ARENA`` holds everything else,
allocated once per plan:

- scratch buffers (``tmp``, ``recv3`` ...) keep only the blocks a schedule
  touches (direct send names P - 1 one-block buffers: full-length copies would
  be P images);
- every receive into a scratch buffer gets *fresh* rows (a new version of
  those blocks, as register renaming does): no later write can hit rows a
  posted receive owns, so every receive is posted when the run starts
  (MPI then matches into posted buffers, no unexpected-message copies), in
  operation order, which keeps MPI's non-overtaking matching equal to the
  verifier's (source, tag, posting order);
- a receive into ``data`` with no dependencies lands in place; one with
  dependencies lands in staging rows and is copied when they complete;
- a send whose blocks are adjacent rows goes from them directly; otherwise
  it is packed into staging rows first (a derived datatype would avoid the
  copy; MPICH packs such datatypes the same way).

Space ``INPUT`` is the caller's ``sendbuf`` when it is not ``recvbuf``
(``separate_input=True``): every read of a ``data`` block that nothing has
written yet reads the input there, so sends go straight from ``sendbuf``
and a first reduction writes ``f(received, input)`` into ``recvbuf``
without copying the input in first (as MPI libraries do). Only the input
blocks nothing ever writes are copied in (``input_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import SpecError
from ..schedules.collectives import input_blocks
from ..schedules.ir import LEFT, Schedule

SEND, RECV, REDUCE, COPY = 0, 1, 2, 3
DATA, ARENA, INPUT = 0, 1, 2

Piece = tuple[int, int, int]   # (space, first row, end row)


def _merge(pieces: list[Piece]) -> list[Piece]:
    """Adjacent pieces of one space joined: fewer copies, fewer kernel calls."""
    out: list[Piece] = []
    for space, lo, hi in pieces:
        if out and out[-1][0] == space and out[-1][2] == lo:
            out[-1] = (space, out[-1][1], hi)
        elif hi > lo or not out:
            out.append((space, lo, hi))
    return out


@dataclass
class RankProgram:
    """One rank's compiled operations (see the module docstring)."""

    rank: int
    p: int
    count: int
    label: str
    kind: list[int] = field(default_factory=list)
    round: list[int] = field(default_factory=list)
    peer: list[int] = field(default_factory=list)
    tag: list[int] = field(default_factory=list)
    deps: list[tuple[int, ...]] = field(default_factory=list)
    # SEND: (pieces to pack or None, the piece sent); RECV: (the piece received
    # into, pieces to unpack into or None); REDUCE: [(dst, src, dst's old
    # value)] piece triples and side; COPY: (src pieces, dst pieces)
    layout: list = field(default_factory=list)
    side: list = field(default_factory=list)
    arena_rows: int = 0
    input_rows: list[tuple[int, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def max_tag(self) -> int:
        return max(self.tag, default=0)

    def dependents(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.kind]
        for i, deps in enumerate(self.deps):
            for d in deps:
                out[d].append(i)
        return out


class _Memory:
    """Rows of each (buffer, block): ``data`` in place, scratch in the arena."""

    def __init__(self, bounds: np.ndarray, separate_input: bool):
        self.bounds = bounds
        self.rows = 0
        self.where: dict[tuple[str, int], Piece] = {}
        self.separate_input = separate_input
        self.written: set[int] = set()   # data blocks some operation has written

    def read(self, buf: str, block: int) -> Piece:
        """Where ``block`` of ``buf`` is read now: the input while unwritten."""
        if buf == "data" and self.separate_input and block not in self.written:
            return (INPUT, int(self.bounds[block]), int(self.bounds[block + 1]))
        return self.piece(buf, block)

    def wrote(self, buf: str, blocks) -> None:
        if buf == "data":
            self.written.update(blocks)

    def take(self, n: int) -> int:
        lo = self.rows
        self.rows += n
        return lo

    def size(self, block: int) -> int:
        return int(self.bounds[block + 1] - self.bounds[block])

    def piece(self, buf: str, block: int) -> Piece:
        if buf == "data":
            return (DATA, int(self.bounds[block]), int(self.bounds[block + 1]))
        key = (buf, block)
        if key not in self.where:   # first touch of a scratch block
            n = self.size(block)
            lo = self.take(n)
            self.where[key] = (ARENA, lo, lo + n)
        return self.where[key]

    def fresh(self, buf: str, blocks) -> Piece:
        """New rows for ``blocks`` of a scratch buffer, adjacent in block
        order: one piece a receive lands in directly."""
        start = self.rows
        for b in blocks:
            n = self.size(b)
            lo = self.take(n)
            self.where[(buf, b)] = (ARENA, lo, lo + n)
        return (ARENA, start, self.rows)


def compile_rank(schedule: Schedule, rank: int, separate_input: bool = False) -> RankProgram:
    """Compile ``rank``'s operations of ``schedule`` (no MPI, no buffers);
    ``separate_input``: the input lives in its own buffer (``INPUT``)."""
    if not 0 <= rank < schedule.p:
        raise SpecError(f"compile_rank: rank={rank}, expected a rank in 0..{schedule.p - 1}")
    ops = schedule.ops_for(rank)
    mem = _Memory(schedule.bounds, separate_input)
    prog = RankProgram(rank, schedule.p, schedule.count, schedule.label())
    last_write: dict[tuple[str, int], int] = {}   # last reduction or copy writing each scratch block
    for idx, op in enumerate(ops):
        if op.kind in ("reduce", "copy") and op.dst != "data":
            for b in op.blocks:
                last_write[(op.dst, b)] = idx
    for idx, op in enumerate(ops):
        kind = op.kind
        if kind == "send":
            src = _merge([mem.read(op.buf, b) for b in op.blocks])
            if len(src) == 1:
                layout = (None, src[0])
            else:
                n = sum(hi - lo for _, lo, hi in src)
                lo = mem.take(n)
                layout = (src, (ARENA, lo, lo + n))
            prog.kind.append(SEND)
            prog.peer.append(op.peer)
            prog.tag.append(op.tag)
        elif kind == "recv":
            if op.buf != "data":
                layout = (mem.fresh(op.buf, op.into), None)
            else:
                target = _merge([mem.piece("data", b) for b in op.into])
                # no earlier op touched these rows when every read went to the input
                untouched = mem.separate_input and not any(b in mem.written for b in op.into)
                if len(target) == 1 and (untouched or not op.deps):
                    layout = (target[0], None)
                else:   # staged: copied to its rows once its dependencies are done
                    n = sum(hi - lo for _, lo, hi in target)
                    lo = mem.take(n)
                    layout = ((ARENA, lo, lo + n), target)
                mem.wrote("data", op.into)
            prog.kind.append(RECV)
            prog.peer.append(op.peer)
            prog.tag.append(op.tag)
        elif kind == "reduce":
            layout = _reduce_triples([mem.piece(op.dst, b) for b in op.blocks],
                                     [mem.read(op.src, b) for b in op.blocks],
                                     [mem.read(op.dst, b) for b in op.blocks])
            mem.wrote(op.dst, op.blocks)
            prog.kind.append(REDUCE)
            prog.peer.append(-1)
            prog.tag.append(-1)
        else:
            src = [mem.read(op.src, b) for b in op.src_blocks]
            if op.dst != "data" and all(p[0] == INPUT for p in src) and \
                    all(last_write.get((op.dst, b), -1) <= idx for b in op.blocks):
                # a scratch copy of the input nothing writes again: alias the input rows
                for b, piece in zip(op.blocks, src):
                    mem.where[(op.dst, b)] = piece
                layout = ([], [])
            else:
                dst = [mem.piece(op.dst, b) for b in op.blocks]
                layout = (src, dst)
                mem.wrote(op.dst, op.blocks)
            prog.kind.append(COPY)
            prog.peer.append(-1)
            prog.tag.append(-1)
        prog.layout.append(layout)
        prog.side.append(getattr(op, "side", None) == LEFT)
        prog.round.append(op.round)
        prog.deps.append(tuple(op.deps))
    prog.arena_rows = mem.rows
    kept = [b for b in input_blocks(schedule, rank) if not (separate_input and b in mem.written)]
    prog.input_rows = _merge_rows([(int(schedule.bounds[b]), int(schedule.bounds[b + 1])) for b in kept])
    return prog


def _reduce_triples(dst: list[Piece], src: list[Piece], old: list[Piece]) -> list[tuple[Piece, Piece, Piece]]:
    """Per block (dst, src, dst's old value), runs of blocks adjacent in all
    three joined (one kernel call per run)."""
    out: list[tuple[Piece, Piece, Piece]] = []
    for triple in zip(dst, src, old):
        if out and all(p[0] == q[0] and p[2] == q[1] for p, q in zip(out[-1], triple)):
            out[-1] = tuple((p[0], p[1], q[2]) for p, q in zip(out[-1], triple))
            continue
        out.append(triple)
    return out


def _merge_rows(rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(rows):
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        elif hi > lo:
            out.append((lo, hi))
    return out
