"""The schedule IR: one collective algorithm as explicit per-rank operations.

A :class:`Schedule` describes one collective over ``p`` ranks on a vector of
``count`` elements of ``itemsize`` bytes, split into ``nblocks`` contiguous
blocks. Every rank owns named buffers (``"data"`` holds its input and, at the
end, its output; scratch buffers such as ``"tmp"`` are full-length too) and
runs an ordered list of operations:

- :class:`Send` ``(peer, buf, blocks)``: sends the named blocks of ``buf``;
- :class:`Recv` ``(peer, buf, blocks, into)``: receives ``len(blocks)`` blocks
  and stores them at block positions ``into`` of ``buf``;
- :class:`Reduce` ``(dst, src, blocks, side)``: ``dst = src ∘ dst`` when
  ``side="left"`` (src goes in front) or ``dst = dst ∘ src`` when
  ``side="right"``; the side matters for non-commutative operators;
- :class:`Copy` ``(dst, src, blocks, src_blocks)``.

Each operation lists the earlier operations of its rank it depends on
(``deps``), so a send that needs no received data starts at once and a
reduction overlaps the next transfer. Receives match sends by
``(source, tag)`` in posting order, as MPI's non-overtaking rule matches them.

The *array view* (:meth:`Schedule.rounds`) gives, per round, NumPy arrays of
``(src, dst, nbytes, dep_round, reduced)``. Generators supply it directly,
vectorised, so very large ``p`` never materialises per-rank Python objects;
for small ``p`` it can also be derived from the per-rank view, and the tests
check that both views agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import ScheduleError

LEFT, RIGHT = "left", "right"


@dataclass(frozen=True, slots=True)
class Send:
    peer: int
    buf: str
    blocks: tuple[int, ...]
    tag: int
    round: int
    deps: tuple[int, ...] = ()

    kind = "send"


@dataclass(frozen=True, slots=True)
class Recv:
    peer: int
    buf: str
    blocks: tuple[int, ...]   # block indices as the sender names them
    into: tuple[int, ...]     # block positions written in ``buf``
    tag: int
    round: int
    deps: tuple[int, ...] = ()

    kind = "recv"


@dataclass(frozen=True, slots=True)
class Reduce:
    dst: str
    src: str
    blocks: tuple[int, ...]
    side: str                 # LEFT: dst = src ∘ dst; RIGHT: dst = dst ∘ src
    round: int
    deps: tuple[int, ...] = ()

    kind = "reduce"


@dataclass(frozen=True, slots=True)
class Copy:
    dst: str
    src: str
    blocks: tuple[int, ...]       # positions written in dst
    src_blocks: tuple[int, ...]   # positions read in src
    round: int
    deps: tuple[int, ...] = ()

    kind = "copy"


Op = Send | Recv | Reduce | Copy


@dataclass(frozen=True, slots=True)
class RoundArrays:
    """All transfers of one round, as parallel arrays (the array view).

    ``dep_round[i]`` is the latest earlier round whose received data message
    ``i`` needs before it can start (``-1``: none, it may start at once).
    ``reduced[i]`` is the number of bytes the receiver reduces on arrival
    (the γ term of the α-β-γ model).
    """

    round: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    dep_round: np.ndarray
    reduced: np.ndarray

    def __len__(self) -> int:
        return int(self.src.shape[0])


@dataclass(frozen=True, slots=True)
class OperatorNeeds:
    """What a schedule needs of the reduction operator to be correct."""

    commutative: bool = False   # True: result order differs from rank order
    idempotent: bool = False    # True: some contribution arrives twice


def block_bounds(count: int, nblocks: int) -> np.ndarray:
    """Element offsets of ``nblocks`` near-equal contiguous blocks (MPI style:
    the first ``count % nblocks`` blocks get one element more)."""
    if count < 0 or nblocks < 1:
        raise ScheduleError(f"block_bounds: count={count}, nblocks={nblocks}; expected count >= 0, nblocks >= 1")
    base, extra = divmod(count, nblocks)
    sizes = np.full(nblocks, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


@dataclass
class Schedule:
    """One collective algorithm over ``p`` ranks, in both views.

    Parameters
    ----------
    collective : str
        ``allreduce``, ``reduce``, ``bcast``, ``reduce_scatter``,
        ``allgather``, ``gather``, ``barrier`` or ``alltoall``.
    algorithm : str
        Generator name, as listed by ``topocoll algorithms``.
    p : int
        Number of ranks.
    count, itemsize : int
        Vector length in elements and bytes per element.
    bounds : ndarray
        Element offsets of the blocks, length ``nblocks + 1``.
    params : dict
        The generator's parameters (``n``, ``root``, ...), resolved.
    needs : OperatorNeeds
        Operator properties the algorithm relies on.
    build_ops : callable
        Returns the per-rank operation lists; called once, lazily.
    build_rounds : callable or None
        Yields :class:`RoundArrays` without building per-rank ops; if absent,
        the array view is derived from the per-rank view.
    root : int or None
        Root of rooted collectives.
    result_blocks : callable or None
        ``rank -> blocks`` of ``data`` a reduce-scatter leaves complete there.
    """

    collective: str
    algorithm: str
    p: int
    count: int
    itemsize: int
    bounds: np.ndarray
    params: dict
    needs: OperatorNeeds
    build_ops: Callable[[], list[list[Op]]]
    build_rounds: Callable[[], Iterator[RoundArrays]] | None = None
    root: int | None = None
    result_blocks: Callable[[int], Sequence[int]] | None = None
    input_blocks: Callable[[int], Sequence[int]] | None = None
    depth_order: tuple[int, ...] | None = None
    _ops: list[list[Op]] | None = field(default=None, repr=False)

    @property
    def nblocks(self) -> int:
        return int(self.bounds.shape[0] - 1)

    @property
    def block_bytes(self) -> np.ndarray:
        return np.diff(self.bounds) * self.itemsize

    @property
    def ops(self) -> list[list[Op]]:
        """Per-rank operation lists (materialised on first use)."""
        if self._ops is None:
            self._ops = self.build_ops()
        return self._ops

    @classmethod
    def from_ops(cls, collective: str, ops: list[list[Op]], *, algorithm: str = "custom",
                 count: int | None = None, itemsize: int = 8, nblocks: int = 1,
                 needs: OperatorNeeds = OperatorNeeds(), root: int | None = None,
                 result_blocks=None, input_blocks=None) -> "Schedule":
        """Wrap hand-written per-rank op lists (one list per rank) as a schedule."""
        count = nblocks if count is None else count
        return cls(collective, algorithm, len(ops), count, itemsize, block_bounds(count, nblocks), {},
                   needs, lambda: ops, None, root=root, result_blocks=result_blocks,
                   input_blocks=input_blocks, _ops=ops)

    def with_ops(self, ops: list[list[Op]], algorithm: str | None = None) -> "Schedule":
        """A copy with other per-rank ops (mutants, hand-edited schedules);
        its array view is derived from them."""
        return Schedule(
            collective=self.collective, algorithm=algorithm or self.algorithm, p=self.p,
            count=self.count, itemsize=self.itemsize, bounds=self.bounds, params=dict(self.params),
            needs=self.needs, build_ops=lambda: ops, build_rounds=None, root=self.root,
            result_blocks=self.result_blocks, input_blocks=self.input_blocks,
            depth_order=self.depth_order, _ops=ops,
        )

    def rounds(self) -> Iterator[RoundArrays]:
        """The array view, one :class:`RoundArrays` per round, produced lazily."""
        if self.build_rounds is not None:
            yield from self.build_rounds()
        else:
            yield from rounds_from_ops(self.ops, self.block_bytes)

    def label(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.collective}/{self.algorithm}(p={self.p}{', ' + shown if shown else ''})"


def rounds_from_ops(ops: list[list[Op]], block_bytes: np.ndarray) -> Iterator[RoundArrays]:
    """Derive the array view from per-rank ops (for small p and for checks).

    A message's ``dep_round`` is the latest round among the receives it
    transitively depends on within its rank; ``reduced`` counts the bytes of
    the matching receive that a later reduction on the receiver consumes.
    """
    rows: dict[int, list[tuple[int, int, int, int, int]]] = {}
    reduced_at = _reduced_receives(ops, block_bytes)
    recv_match = _match_index(ops)
    for rank, rank_ops in enumerate(ops):
        latest_recv = _latest_recv_round(rank_ops)
        for idx, op in enumerate(rank_ops):
            if op.kind != "send":
                continue
            nbytes = int(sum(block_bytes[b] for b in op.blocks))
            peer_idx = recv_match.get((rank, idx))
            red = reduced_at.get((op.peer, peer_idx), 0) if peer_idx is not None else 0
            rows.setdefault(op.round, []).append((rank, op.peer, nbytes, latest_recv[idx], red))
    for rnd in sorted(rows):
        arr = np.array(rows[rnd], dtype=np.int64).reshape(-1, 5)
        yield RoundArrays(rnd, arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], arr[:, 4])


def _latest_recv_round(rank_ops: list[Op]) -> list[int]:
    latest = [-1] * len(rank_ops)
    for idx, op in enumerate(rank_ops):
        best = op.round if op.kind == "recv" else -1
        for d in op.deps:
            best = max(best, latest[d])
        latest[idx] = best
    return latest


def _reduced_receives(ops: list[list[Op]], block_bytes: np.ndarray) -> dict[tuple[int, int], int]:
    """(rank, recv index) -> bytes of that receive a later Reduce combines
    (as its source, or as the destination another piece is reduced into)."""
    out: dict[tuple[int, int], int] = {}
    for rank, rank_ops in enumerate(ops):
        writer: dict[tuple[str, int], int] = {}
        for idx, op in enumerate(rank_ops):
            if op.kind == "recv":
                for b in op.into:
                    writer[(op.buf, b)] = idx
            elif op.kind == "reduce":
                # a received piece is reduced whether it enters as the source or
                # is the destination another piece is composited into
                for b in op.blocks:
                    for w in {writer.get((op.src, b)), writer.pop((op.dst, b), None)} - {None}:
                        out[(rank, w)] = out.get((rank, w), 0) + int(block_bytes[b])
            elif op.kind == "copy":
                for b in op.blocks:
                    writer.pop((op.dst, b), None)
    return out


def channels(ops: list[list[Op]]) -> dict[tuple[int, int, int], tuple[list[int], list[int]]]:
    """Every (source, destination, tag) channel with its send indices (on the
    source) and receive indices (on the destination), in posting order.

    MPI's non-overtaking rule matches the i-th send of a channel with its
    i-th receive; the verifier reports channels whose lists differ in length.
    """
    out: dict[tuple[int, int, int], tuple[list[int], list[int]]] = {}
    for rank, rank_ops in enumerate(ops):
        for idx, op in enumerate(rank_ops):
            if op.kind == "send":
                out.setdefault((rank, op.peer, op.tag), ([], []))[0].append(idx)
            elif op.kind == "recv":
                out.setdefault((op.peer, rank, op.tag), ([], []))[1].append(idx)
    return out


def _match_index(ops: list[list[Op]]) -> dict[tuple[int, int], int]:
    """(src rank, send index) -> receive index on the peer, MPI order."""
    return {(src, s_idx): r_idx
            for (src, _, _), (sends, recvs) in channels(ops).items()
            for s_idx, r_idx in zip(sends, recvs)}


class ScheduleBuilder:
    """Builds per-rank op lists, deriving dependencies from data flow.

    Each operation depends exactly on the last writer of every block it reads
    (read-after-write), and a write waits for the last writer and every reader
    since (write-after-write, write-after-read). This gives the earliest start
    allowed by the data, so overlap of reductions with transfers is explicit.
    ``after=`` adds control dependencies the data flow does not imply.
    """

    def __init__(self, p: int):
        self.p = p
        self.ops: list[list[Op]] = [[] for _ in range(p)]
        self._writer: list[dict[tuple[str, int], int]] = [{} for _ in range(p)]
        self._readers: list[dict[tuple[str, int], list[int]]] = [{} for _ in range(p)]

    def _deps(self, rank, reads, writes, after) -> tuple[int, ...]:
        writer, readers = self._writer[rank], self._readers[rank]
        deps = set(after)
        for key in reads:
            w = writer.get(key)
            if w is not None:
                deps.add(w)
        for key in writes:
            w = writer.get(key)
            if w is not None:
                deps.add(w)
            deps.update(readers.get(key, ()))
        return tuple(sorted(deps))

    def _commit(self, rank, op, reads, writes) -> int:
        idx = len(self.ops[rank])
        self.ops[rank].append(op)
        writer, readers = self._writer[rank], self._readers[rank]
        for key in reads:
            readers.setdefault(key, []).append(idx)
        for key in writes:
            writer[key] = idx
            readers[key] = []
        return idx

    def send(self, rank, peer, blocks, *, buf="data", round, tag=None, after=()) -> int:
        blocks = tuple(blocks)
        reads = [(buf, b) for b in blocks]
        op = Send(peer, buf, blocks, round if tag is None else tag, round, self._deps(rank, reads, (), after))
        return self._commit(rank, op, reads, ())

    def recv(self, rank, peer, blocks, *, buf="data", into=None, round, tag=None, after=()) -> int:
        blocks = tuple(blocks)
        into = blocks if into is None else tuple(into)
        writes = [(buf, b) for b in into]
        op = Recv(peer, buf, blocks, into, round if tag is None else tag, round,
                  self._deps(rank, (), writes, after))
        return self._commit(rank, op, (), writes)

    def reduce(self, rank, blocks, *, dst="data", src, side, round, after=()) -> int:
        if side not in (LEFT, RIGHT):
            raise ScheduleError(f"reduce: side={side!r}, expected 'left' or 'right'")
        blocks = tuple(blocks)
        reads = [(src, b) for b in blocks] + [(dst, b) for b in blocks]
        writes = [(dst, b) for b in blocks]
        op = Reduce(dst, src, blocks, side, round, self._deps(rank, reads, writes, after))
        return self._commit(rank, op, reads, writes)

    def copy(self, rank, blocks, *, dst, src, src_blocks=None, round, after=()) -> int:
        blocks = tuple(blocks)
        src_blocks = blocks if src_blocks is None else tuple(src_blocks)
        reads = [(src, b) for b in src_blocks]
        writes = [(dst, b) for b in blocks]
        op = Copy(dst, src, blocks, src_blocks, round, self._deps(rank, reads, writes, after))
        return self._commit(rank, op, reads, writes)

    def exchange(self, rank, peer, blocks, *, send_buf="data", recv_buf, recv_blocks=None,
                 round, into=None) -> tuple[int, int]:
        """Send ``blocks`` to ``peer`` and receive its ``recv_blocks`` (default:
        the same) into ``recv_buf``, as one round of a pairwise pattern."""
        s = self.send(rank, peer, blocks, buf=send_buf, round=round)
        r = self.recv(rank, peer, blocks if recv_blocks is None else recv_blocks,
                      buf=recv_buf, into=into, round=round)
        return s, r

    def build(self) -> list[list[Op]]:
        return self.ops
