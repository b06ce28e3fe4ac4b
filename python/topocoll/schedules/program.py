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
- the blocks, as a CSR of *strided runs*: op ``i`` touches runs
  ``run_ptr[i]:run_ptr[i+1]``; run ``j`` is ``run_count[j]`` pieces of
  ``run_len[j]`` blocks, piece ``c`` covering blocks ``run_dst[j] +
  c·run_dst_stride[j] + 0 .. run_len[j] - 1`` of ``buf`` and reading blocks
  ``run_src[j] + c·run_src_stride[j] + …`` of ``src_buf``, every block
  index taken modulo ``nblocks`` (a receive's ``run_src`` is the sender's
  naming of the blocks, a send's and a reduction's equal ``run_dst``). The
  runs are canonical (:func:`strided_runs`), so two derivations of one
  program agree column by column: Bruck's all-to-all, whose rounds send
  ``P/2`` scattered blocks per rank, has two runs per op instead of ``P/2``;
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
RUN_COLUMNS = ("run_dst", "run_src", "run_len", "run_count", "run_dst_stride", "run_src_stride")


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
    run_count: np.ndarray
    run_dst_stride: np.ndarray
    run_src_stride: np.ndarray
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    nblocks: int = 0

    def __len__(self) -> int:
        return int(self.rank.shape[0])

    @property
    def ids(self) -> np.ndarray:
        return np.arange(self.first_id, self.first_id + len(self), dtype=np.int64)

    def deps_of(self, row: int) -> np.ndarray:
        return self.dep_idx[self.dep_ptr[row]:self.dep_ptr[row + 1]]

    def runs_of(self, row: int) -> list[tuple[int, int, int]]:
        """``(dst_first, src_first, length)`` of op ``row``'s blocks as plain
        contiguous runs, in order: strided runs expanded, a run that wraps
        past the last block split there (so ``dst_first + length <=
        nblocks``, and the same for the source). For small programs and
        tests; consumers at scale read the strided columns."""
        nb = self.nblocks
        out: list[tuple[int, int, int]] = []
        for j in range(int(self.run_ptr[row]), int(self.run_ptr[row + 1])):
            d0, s0, n = int(self.run_dst[j]), int(self.run_src[j]), int(self.run_len[j])
            sd, ss = int(self.run_dst_stride[j]), int(self.run_src_stride[j])
            for c in range(int(self.run_count[j])):
                d, s, left = (d0 + c * sd) % nb, (s0 + c * ss) % nb, n
                while left:
                    piece = min(left, nb - d, nb - s)
                    out.append((d, s, piece))
                    d, s, left = (d + piece) % nb, (s + piece) % nb, left - piece
        return out

    def blocks_of(self, row: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Op ``row``'s blocks, written (``dst``) and read (``src``), in order."""
        dst: list[int] = []
        src: list[int] = []
        for d, s, n in self.runs_of(row):
            dst.extend(range(d, d + n))
            src.extend(range(s, s + n))
        return tuple(dst), tuple(src)


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
        return OpChunk(-1, 0, *(z,) * 8, np.zeros(1, np.int64), *(z,) * 6, np.zeros(1, np.int64), z)
    cols = {c: np.concatenate([getattr(ch, c) for ch in chunks]) for c in COLUMNS + RUN_COLUMNS}
    return OpChunk(
        -1, chunks[0].first_id, **cols,
        run_ptr=_join_ptr([ch.run_ptr for ch in chunks]),
        dep_ptr=_join_ptr([ch.dep_ptr for ch in chunks]),
        dep_idx=np.concatenate([ch.dep_idx for ch in chunks]), nblocks=chunks[0].nblocks)


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


def strided_runs(dst: Sequence[int], src: Sequence[int], nblocks: int) -> list[tuple[int, int, int, int, int, int]]:
    """The canonical strided runs of parallel block lists (module doc).

    Returns ``(dst, src, len, count, dst_stride, src_stride)`` per run: first
    the maximal runs contiguous in both lists *modulo* ``nblocks`` (block
    ``nblocks - 1`` is followed by block 0), then, left to right, consecutive
    runs of equal length whose starts advance by equal steps (modulo
    ``nblocks``, in each list) joined into one run; a run of one piece has
    strides 0. Every step is the same on lists moved by a constant (mod
    ``nblocks``), so a circulant pattern's runs are rank 0's moved
    (:class:`~.pattern.CirculantPattern`).

    >>> strided_runs((1, 3, 5, 7), (1, 3, 5, 7), 8)     # every other block
    [(1, 1, 1, 4, 2, 2)]
    >>> strided_runs((7, 0, 4), (2, 3, 4), 8)           # 7, 0 contiguous modulo 8
    [(7, 2, 2, 1, 0, 0), (4, 4, 1, 1, 0, 0)]
    >>> strided_runs((3, 2, 1), (1, 2, 3), 4)           # the inverse rotation of Bruck's all-to-all
    [(3, 1, 1, 3, 3, 1)]
    """
    nb = int(nblocks)
    if isinstance(dst, range) and isinstance(src, range) and dst.step == 1 and src.step == 1:
        return [(dst.start % nb, src.start % nb, len(dst), 1, 0, 0)] if len(dst) else []
    if len(dst) == 1:   # the common op of rank-wise all-to-alls: one block, one run (half the compile time)
        return [(int(dst[0]) % nb, int(src[0]) % nb, 1, 1, 0, 0)]
    runs: list[list[int]] = []
    for d, s in zip(dst, src):
        d, s = int(d) % nb, int(s) % nb
        if runs:
            last = runs[-1]
            if (last[0] + last[2]) % nb == d and (last[1] + last[2]) % nb == s:
                last[2] += 1
                continue
        runs.append([d, s, 1])
    out: list[list[int]] = []
    for d, s, n in runs:
        if out:
            g = out[-1]
            ld, ls = (g[0] + (g[3] - 1) * g[4]) % nb, (g[1] + (g[3] - 1) * g[5]) % nb
            sd, ss = (d - ld) % nb, (s - ls) % nb
            if g[2] == n and (g[3] == 1 or (g[4], g[5]) == (sd, ss)):
                g[3] += 1
                g[4], g[5] = sd, ss
                continue
        out.append([d, s, n, 1, 0, 0])
    return [tuple(g) for g in out]


def canonical_runs(d: np.ndarray, s: np.ndarray, n: np.ndarray, nblocks: int):
    """:func:`strided_runs` of many ops at once: row ``i`` of the ``(rows,
    U)`` arrays ``d``, ``s``, ``n`` lists one op's ``U`` contiguous runs (each
    ``n >= 1``), in order. Returns ``(counts, columns)``: the number of
    canonical runs of each row and the six run columns, row-major. One
    vectorised pass per column ``u`` (``U`` is small: a class's runs per op).
    """
    nb = int(nblocks)
    d = np.asarray(d, dtype=np.int64) % nb
    s = np.asarray(s, dtype=np.int64) % nb
    n = np.asarray(n, dtype=np.int64)
    rows, width = d.shape
    if width == 0:
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(rows, dtype=np.int64), (z,) * 6
    idx = np.arange(rows)
    # maximal runs contiguous modulo nb (in both lists)
    md, ms, mn = (np.zeros((rows, width), dtype=np.int64) for _ in range(3))
    k = np.zeros(rows, dtype=np.int64)
    md[:, 0], ms[:, 0], mn[:, 0] = d[:, 0], s[:, 0], n[:, 0]
    for u in range(1, width):
        cd, cs, cn = md[idx, k], ms[idx, k], mn[idx, k]
        join = ((cd + cn) % nb == d[:, u]) & ((cs + cn) % nb == s[:, u])
        mn[idx[join], k[join]] += n[join, u]
        new = ~join
        k[new] += 1
        md[idx[new], k[new]], ms[idx[new], k[new]], mn[idx[new], k[new]] = d[new, u], s[new, u], n[new, u]
    merged = k + 1
    # greedy grouping of equal-length runs with equal steps
    out = [np.zeros((rows, width), dtype=np.int64) for _ in range(6)]
    g = np.zeros(rows, dtype=np.int64)
    for c, col in enumerate((md[:, 0], ms[:, 0], mn[:, 0], np.ones(rows, np.int64))):
        out[c][:, 0] = col
    for u in range(1, width):
        live = idx[merged > u]
        gg = g[live]
        gd, gs, gn, gc, gsd, gss = (o[live, gg] for o in out)
        ld, ls = (gd + (gc - 1) * gsd) % nb, (gs + (gc - 1) * gss) % nb
        nd, ns, nn = md[live, u], ms[live, u], mn[live, u]
        sd, ss = (nd - ld) % nb, (ns - ls) % nb
        join = (gn == nn) & ((gc == 1) | ((gsd == sd) & (gss == ss)))
        jr, jg = live[join], gg[join]
        out[3][jr, jg] += 1
        out[4][jr, jg], out[5][jr, jg] = sd[join], ss[join]
        nr = live[~join]
        g[nr] += 1
        ng = g[nr]
        out[0][nr, ng], out[1][nr, ng], out[2][nr, ng] = nd[~join], ns[~join], nn[~join]
        out[3][nr, ng] = 1
    counts = g + 1
    keep = np.arange(width)[None, :] < counts[:, None]
    return counts, tuple(o[keep] for o in out)


def run_bytes(block_bytes: np.ndarray, run_ptr: np.ndarray, run_dst: np.ndarray,
              run_len: np.ndarray, run_count: np.ndarray | None = None,
              run_dst_stride: np.ndarray | None = None) -> np.ndarray:
    """Bytes covered by each op's runs: ``len·count·size`` where every block
    has one size (all-to-all), else the pieces' sums of block sizes, blocks
    taken modulo ``nblocks``."""
    block_bytes = np.asarray(block_bytes, dtype=np.int64)
    nb = block_bytes.shape[0]
    count = np.ones_like(run_len) if run_count is None else run_count
    if nb == 0 or run_len.shape[0] == 0:
        per_run = np.zeros(run_len.shape[0], dtype=np.int64)
    elif (block_bytes == block_bytes[0]).all():
        per_run = run_len * count * block_bytes[0]
    else:
        prefix = np.concatenate(([0], np.cumsum(np.concatenate((block_bytes, block_bytes)), dtype=np.int64)))
        if run_count is None or (count == 1).all():
            per_run = prefix[run_dst + run_len] - prefix[run_dst]
        else:   # uneven blocks: expand the pieces (the piece count, not P² blocks, bounds it)
            piece_run = np.repeat(np.arange(run_len.shape[0]), count)
            first = np.concatenate(([0], np.cumsum(count)))[:-1]
            c = np.arange(piece_run.shape[0], dtype=np.int64) - first[piece_run]
            lo = (run_dst[piece_run] + c * run_dst_stride[piece_run]) % nb
            piece = np.concatenate(([0], np.cumsum(prefix[lo + run_len[piece_run]] - prefix[lo])))
            ends = np.cumsum(count)
            per_run = piece[ends] - piece[ends - count]
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
    nb = len(block_bytes)
    rank_c, idx_c, round_c, kind_c, peer_c, tag_c, buf_c, sbuf_c, side_c = ([] for _ in range(9))
    runs: list[list[tuple[int, ...]]] = []
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
                runs.append(strided_runs(op.into, op.blocks, nb) if kind == RECV
                            else strided_runs(op.blocks, op.blocks, nb))
            else:
                peer_c.append(-1)
                tag_c.append(-1)
                buf_c.append(buf_index[op.dst])
                sbuf_c.append(buf_index[op.src])
                if kind == REDUCE:
                    side_c.append(LEFT_SIDE if op.side == "left" else RIGHT_SIDE)
                    runs.append(strided_runs(op.blocks, op.blocks, nb))
                else:
                    side_c.append(-1)
                    runs.append(strided_runs(op.blocks, op.src_blocks, nb))
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
    run_flat = np.array([x for rs in runs for x in rs], dtype=i64).reshape(-1, 6)
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
        rd, rs, rl, rc, rsd, rss = (run_flat[run_rows, c] for c in range(6))
        dep_ptr = np.concatenate(([0], np.cumsum(dep_counts[rows])))
        dep_rows = _gather(np.concatenate(([0], np.cumsum(dep_counts)))[:-1][rows], dep_counts[rows])
        chunk_cols = {k: v[rows] for k, v in cols.items()}
        nbytes = run_bytes(block_bytes, run_ptr, rd, rl, rc, rsd)
        yield OpChunk(int(sorted_rounds[lo]), int(lo), **chunk_cols, nbytes=nbytes,
                      run_ptr=run_ptr, run_dst=rd, run_src=rs, run_len=rl, run_count=rc,
                      run_dst_stride=rsd, run_src_stride=rss,
                      dep_ptr=dep_ptr, dep_idx=dep_gid[dep_rows], nblocks=nb)


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
        dst, src = chunk.blocks_of(row)
        deps = tuple(chunk.deps_of(row).tolist())
        buf, sbuf = buffers[chunk.buf[row]], buffers[chunk.src_buf[row]]
        peer, tag = int(chunk.peer[row]), int(chunk.tag[row])
        if kind == SEND:
            op = Send(peer, buf, dst, tag, chunk.round, deps)
        elif kind == RECV:
            op = Recv(peer, buf, src, dst, tag, chunk.round, deps)
        elif kind == REDUCE:
            op = Reduce(buf, sbuf, dst, "left" if chunk.side[row] == LEFT_SIDE else "right",
                        chunk.round, deps)
        else:
            op = Copy(buf, sbuf, dst, src, chunk.round, deps)
        yield int(chunk.rank[row]), chunk.first_id + row, op
