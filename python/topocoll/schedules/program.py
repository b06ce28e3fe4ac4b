"""The op program: a schedule as NumPy columns over operations, round by round.

This is the contract the simulator and the timing-grade executor consume
(``docs/ir.md`` describes it in full). A program is a stream of
:class:`OpChunk`, one per round, each holding *every* operation of that round
on every rank as parallel columns:

- ``rank``, ``kind`` (:data:`SEND`, :data:`RECV`, :data:`REDUCE`,
  :data:`COPY`), ``peer`` (``-1`` for local operations), ``tag``
  (``-1`` for local operations);
- ``buf``, ``src_buf``: indices into :attr:`OpProgram.buffers` (the buffer
  written — or read, for a send — and the buffer read by a reduction or copy);
  ``side``: :data:`LEFT_SIDE` / :data:`RIGHT_SIDE` for reductions, ``-1``
  otherwise;
- ``nbytes``: bytes the operation moves (send, receive) or combines (reduce,
  copy);
- the blocks, as a CSR of *runs*: op ``i`` touches runs
  ``run_ptr[i]:run_ptr[i+1]``; run ``j`` covers blocks ``run_dst[j] ..
  run_dst[j] + run_len[j] - 1`` of ``buf`` and reads blocks ``run_src[j] ..``
  of ``src_buf`` (a receive's ``run_src`` is the sender's naming of the
  blocks, a send's and a reduction's equal ``run_dst``);
- the exact direct dependencies, as a CSR of global op ids:
  ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]``, every id smaller than op ``i``'s own.

Global op ids are dense and ordered round-major, then rank, then each rank's
posting order, so row ``i`` of a chunk is op ``first_id + i`` and a
dependency always points into the same or an earlier chunk. Within one
``(rank, peer, tag)`` channel, sends (and receives) are posted in id order and
the i-th send matches the i-th receive (MPI's non-overtaking rule,
MPI-3.1 §3.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import ScheduleError
from .ops import Copy, Recv, Reduce, RoundArrays, Send

SEND, RECV, REDUCE, COPY = 0, 1, 2, 3
KIND_NAMES = ("send", "recv", "reduce", "copy")
KIND_CODES = {name: code for code, name in enumerate(KIND_NAMES)}
LEFT_SIDE, RIGHT_SIDE = 0, 1

COLUMNS = ("rank", "kind", "peer", "tag", "buf", "src_buf", "side", "nbytes")


@dataclass(frozen=True, slots=True)
class OpChunk:
    """All operations of one round, every rank, as columns (see module doc)."""

    round: int
    first_id: int
    rank: np.ndarray
    kind: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    buf: np.ndarray
    src_buf: np.ndarray
    side: np.ndarray
    nbytes: np.ndarray
    run_ptr: np.ndarray
    run_dst: np.ndarray
    run_src: np.ndarray
    run_len: np.ndarray
    dep_ptr: np.ndarray
    dep_idx: np.ndarray

    def __len__(self) -> int:
        return int(self.rank.shape[0])

    @property
    def ids(self) -> np.ndarray:
        return np.arange(self.first_id, self.first_id + len(self), dtype=np.int64)

    def deps_of(self, row: int) -> np.ndarray:
        return self.dep_idx[self.dep_ptr[row]:self.dep_ptr[row + 1]]

    def runs_of(self, row: int) -> list[tuple[int, int, int]]:
        """``(dst_first, src_first, length)`` of every run of op ``row``."""
        lo, hi = self.run_ptr[row], self.run_ptr[row + 1]
        return list(zip(self.run_dst[lo:hi].tolist(), self.run_src[lo:hi].tolist(),
                        self.run_len[lo:hi].tolist()))


@dataclass(frozen=True, slots=True)
class OpProgram:
    """A schedule's op program: header plus a re-iterable stream of chunks."""

    p: int
    nblocks: int
    block_bytes: np.ndarray
    buffers: tuple[str, ...]
    make_chunks: Callable[[], Iterator[OpChunk]]

    def __iter__(self) -> Iterator[OpChunk]:
        return self.make_chunks()

    def concatenated(self) -> OpChunk:
        """The whole program as one chunk (``round`` = -1): for small P only."""
        return concatenate(list(self))


def concatenate(chunks: Sequence[OpChunk]) -> OpChunk:
    if not chunks:
        z = np.zeros(0, dtype=np.int64)
        return OpChunk(-1, 0, *(z,) * 8, np.zeros(1, np.int64), z, z, z, np.zeros(1, np.int64), z)
    cols = {c: np.concatenate([getattr(ch, c) for ch in chunks]) for c in COLUMNS}
    return OpChunk(
        -1, chunks[0].first_id, **cols,
        run_ptr=_join_ptr([ch.run_ptr for ch in chunks]),
        run_dst=np.concatenate([ch.run_dst for ch in chunks]),
        run_src=np.concatenate([ch.run_src for ch in chunks]),
        run_len=np.concatenate([ch.run_len for ch in chunks]),
        dep_ptr=_join_ptr([ch.dep_ptr for ch in chunks]),
        dep_idx=np.concatenate([ch.dep_idx for ch in chunks]))


def _join_ptr(ptrs: Sequence[np.ndarray]) -> np.ndarray:
    out, base = [np.zeros(1, dtype=np.int64)], 0
    for ptr in ptrs:
        out.append(ptr[1:] + base)
        base += int(ptr[-1])
    return np.concatenate(out)


def block_runs(dst: Sequence[int], src: Sequence[int]) -> list[tuple[int, int, int]]:
    """Split parallel block lists into maximal runs contiguous in both.

    >>> block_runs((4, 5, 6, 0), (1, 2, 3, 4))
    [(4, 1, 3), (0, 4, 1)]
    """
    if isinstance(dst, range) and isinstance(src, range) and dst.step == 1 and src.step == 1:
        return [(dst.start, src.start, len(dst))] if len(dst) else []
    runs: list[tuple[int, int, int]] = []
    for d, s in zip(dst, src):
        if runs and runs[-1][0] + runs[-1][2] == d and runs[-1][1] + runs[-1][2] == s:
            lo_d, lo_s, n = runs[-1]
            runs[-1] = (lo_d, lo_s, n + 1)
        else:
            runs.append((d, s, 1))
    return runs


def run_bytes(block_bytes: np.ndarray, run_ptr: np.ndarray, run_dst: np.ndarray,
              run_len: np.ndarray) -> np.ndarray:
    """Bytes covered by each op's runs (prefix sums of the block sizes)."""
    prefix = np.concatenate(([0], np.cumsum(block_bytes, dtype=np.int64)))
    per_run = prefix[run_dst + run_len] - prefix[run_dst]
    sums = np.concatenate(([0], np.cumsum(per_run, dtype=np.int64)))
    return sums[run_ptr[1:]] - sums[run_ptr[:-1]]


def summarise(chunk: OpChunk):
    """The round-synchronous summary of one chunk: its messages and reductions."""
    send = chunk.kind == SEND
    red = chunk.kind == REDUCE
    return RoundArrays(chunk.round, chunk.rank[send], chunk.peer[send], chunk.nbytes[send],
                       chunk.rank[red], chunk.nbytes[red])


def chunks_from_ops(ops: Sequence[Sequence], buffers: Sequence[str],
                    block_bytes: np.ndarray) -> Iterator[OpChunk]:
    """The op program of explicit per-rank op lists (the generic derivation).

    Every rank's list must be in non-decreasing round order (posting order
    is list order); dependencies are taken as the ops declare them.
    """
    buf_index = {name: i for i, name in enumerate(buffers)}
    rank_c, idx_c, round_c, kind_c, peer_c, tag_c, buf_c, sbuf_c, side_c = ([] for _ in range(9))
    runs: list[list[tuple[int, int, int]]] = []
    deps: list[tuple[int, ...]] = []
    offsets = [0]
    for rank, rank_ops in enumerate(ops):
        last = None
        for idx, op in enumerate(rank_ops):
            if last is not None and op.round < last:
                raise ScheduleError(f"rank {rank} op {idx}: round {op.round} after round {last}, "
                                    "expected each rank's ops in non-decreasing round order")
            last = op.round
            kind = KIND_CODES[op.kind]
            rank_c.append(rank)
            idx_c.append(idx)
            round_c.append(op.round)
            kind_c.append(kind)
            if kind == SEND or kind == RECV:
                peer_c.append(op.peer)
                tag_c.append(op.tag)
                buf_c.append(buf_index[op.buf])
                sbuf_c.append(buf_index[op.buf])
                side_c.append(-1)
                runs.append(block_runs(op.into, op.blocks) if kind == RECV else block_runs(op.blocks, op.blocks))
            else:
                peer_c.append(-1)
                tag_c.append(-1)
                buf_c.append(buf_index[op.dst])
                sbuf_c.append(buf_index[op.src])
                if kind == REDUCE:
                    side_c.append(LEFT_SIDE if op.side == "left" else RIGHT_SIDE)
                    runs.append(block_runs(op.blocks, op.blocks))
                else:
                    side_c.append(-1)
                    runs.append(block_runs(op.blocks, op.src_blocks))
            deps.append(op.deps)
        offsets.append(len(rank_c))
    n = len(rank_c)
    i64 = np.int64
    rank_a, round_a = np.array(rank_c, dtype=i64), np.array(round_c, dtype=i64)
    order = np.lexsort((np.array(idx_c, dtype=i64), rank_a, round_a))   # flat position of each id
    gid = np.empty(n, dtype=i64)
    gid[order] = np.arange(n, dtype=i64)
    off = np.array(offsets, dtype=i64)
    dep_counts = np.array([len(d) for d in deps], dtype=i64)
    flat_deps = np.fromiter((d for ds in deps for d in ds), dtype=i64, count=int(dep_counts.sum()))
    dep_gid = gid[np.repeat(off[:-1][rank_a], dep_counts) + flat_deps] if n else flat_deps
    run_counts = np.array([len(r) for r in runs], dtype=i64)
    run_flat = np.array([x for rs in runs for x in rs], dtype=i64).reshape(-1, 3)
    cols = {"rank": rank_a, "kind": np.array(kind_c, dtype=np.int8), "peer": np.array(peer_c, dtype=i64),
            "tag": np.array(tag_c, dtype=i64), "buf": np.array(buf_c, dtype=np.int16),
            "src_buf": np.array(sbuf_c, dtype=np.int16), "side": np.array(side_c, dtype=np.int8)}
    sorted_rounds = round_a[order]
    cuts = np.flatnonzero(np.diff(sorted_rounds)) + 1
    for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [n]))):
        if hi <= lo:
            continue
        rows = order[lo:hi]
        run_ptr = np.concatenate(([0], np.cumsum(run_counts[rows])))
        run_rows = _gather(np.concatenate(([0], np.cumsum(run_counts)))[:-1][rows], run_counts[rows])
        rd, rs, rl = run_flat[run_rows, 0], run_flat[run_rows, 1], run_flat[run_rows, 2]
        dep_ptr = np.concatenate(([0], np.cumsum(dep_counts[rows])))
        dep_rows = _gather(np.concatenate(([0], np.cumsum(dep_counts)))[:-1][rows], dep_counts[rows])
        chunk_cols = {k: v[rows] for k, v in cols.items()}
        nbytes = run_bytes(block_bytes, run_ptr, rd, rl)
        yield OpChunk(int(sorted_rounds[lo]), int(lo), **chunk_cols, nbytes=nbytes,
                      run_ptr=run_ptr, run_dst=rd, run_src=rs, run_len=rl,
                      dep_ptr=dep_ptr, dep_idx=dep_gid[dep_rows])


def _gather(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices ``starts[i] .. starts[i] + counts[i] - 1`` for every i, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum(counts)))[:-1]
    return np.repeat(starts - ptr, counts) + np.arange(total, dtype=np.int64)


def ops_from_chunk_rows(chunk: OpChunk, buffers: Sequence[str], rows: Sequence[int] | None = None):
    """Rebuild :mod:`~topocoll.schedules.ir` ops from program rows (all, or
    ``rows``): yields ``(rank, global id, op)`` with dependencies as global ids."""
    for row in (range(len(chunk)) if rows is None else rows):
        row = int(row)
        kind = int(chunk.kind[row])
        dst, src = [], []
        for d, s, n in chunk.runs_of(row):
            dst.extend(range(d, d + n))
            src.extend(range(s, s + n))
        deps = tuple(chunk.deps_of(row).tolist())
        buf, sbuf = buffers[chunk.buf[row]], buffers[chunk.src_buf[row]]
        peer, tag = int(chunk.peer[row]), int(chunk.tag[row])
        if kind == SEND:
            op = Send(peer, buf, tuple(dst), tag, chunk.round, deps)
        elif kind == RECV:
            op = Recv(peer, buf, tuple(src), tuple(dst), tag, chunk.round, deps)
        elif kind == REDUCE:
            op = Reduce(buf, sbuf, tuple(dst), "left" if chunk.side[row] == LEFT_SIDE else "right",
                        chunk.round, deps)
        else:
            op = Copy(buf, sbuf, tuple(dst), tuple(src), chunk.round, deps)
        yield int(chunk.rank[row]), chunk.first_id + row, op
