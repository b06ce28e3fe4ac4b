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

from bisect import bisect_right
from dataclasses import dataclass
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
    """One round of a schedule summarised for round-synchronous models.

    Derived from the op program (:meth:`Schedule.rounds`): the messages of
    the round (``src``, ``dst``, ``nbytes``, one row per send) and the
    reductions (``reduce_rank``, ``reduce_bytes``, one row per reduce op),
    the γ term of the α-β-γ model. Exact dependencies are not summarised:
    models that need them read :meth:`Schedule.program`.
    """

    round: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    reduce_rank: np.ndarray
    reduce_bytes: np.ndarray

    def __len__(self) -> int:
        return int(self.src.shape[0])

    def reduced_per_rank(self, p: int) -> np.ndarray:
        """Bytes each rank reduces in this round."""
        return np.bincount(self.reduce_rank, weights=self.reduce_bytes, minlength=p)


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
    """One collective algorithm over ``p`` ranks; every view derives from its pattern.

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
    pattern : Pattern or callable
        The one description of the algorithm
        (:mod:`topocoll.schedules.pattern`); a bare callable returning every
        rank's op lists is wrapped as :class:`~.pattern.OpsPattern`.
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
    pattern: object
    root: int | None = None
    result_blocks: Callable[[int], Sequence[int]] | None = None
    input_blocks: Callable[[int], Sequence[int]] | None = None
    depth_order: tuple[int, ...] | None = None

    def __post_init__(self):
        from .pattern import OpsPattern

        if callable(self.pattern) and not hasattr(self.pattern, "ops_for"):
            self.pattern = OpsPattern(self.p, self.pattern)

    @property
    def nblocks(self) -> int:
        return int(self.bounds.shape[0] - 1)

    @property
    def block_bytes(self) -> np.ndarray:
        return np.diff(self.bounds) * self.itemsize

    @property
    def ops(self) -> list[list[Op]]:
        """Every rank's operation list (for the verifier and small P)."""
        return self.pattern.all_ops()

    def ops_for(self, rank: int) -> list[Op]:
        """Rank ``rank``'s operations only (what one MPI process runs)."""
        if not 0 <= rank < self.p:
            raise ScheduleError(f"ops_for: rank={rank}, expected a rank in 0..{self.p - 1}")
        return self.pattern.ops_for(rank)

    def program(self):
        """The op program (:mod:`topocoll.schedules.program`), streamed by round."""
        from .program import OpProgram

        pattern, block_bytes = self.pattern, self.block_bytes
        return OpProgram(self.p, self.nblocks, block_bytes, tuple(pattern.buffers()),
                         lambda: pattern.chunks(block_bytes))

    @classmethod
    def from_ops(cls, collective: str, ops: list[list[Op]], *, algorithm: str = "custom",
                 count: int | None = None, itemsize: int = 8, nblocks: int = 1,
                 needs: OperatorNeeds = OperatorNeeds(), root: int | None = None,
                 result_blocks=None, input_blocks=None) -> "Schedule":
        """Wrap hand-written per-rank op lists (one list per rank) as a schedule."""
        from .pattern import OpsPattern

        count = nblocks if count is None else count
        return cls(collective, algorithm, len(ops), count, itemsize, block_bounds(count, nblocks), {},
                   needs, OpsPattern.of(ops), root=root, result_blocks=result_blocks,
                   input_blocks=input_blocks)

    def with_ops(self, ops: list[list[Op]], algorithm: str | None = None) -> "Schedule":
        """A copy with other per-rank ops (mutants, hand-edited schedules)."""
        from .pattern import OpsPattern

        return Schedule(
            collective=self.collective, algorithm=algorithm or self.algorithm, p=self.p,
            count=self.count, itemsize=self.itemsize, bounds=self.bounds, params=dict(self.params),
            needs=self.needs, pattern=OpsPattern.of(ops), root=self.root,
            result_blocks=self.result_blocks, input_blocks=self.input_blocks,
            depth_order=self.depth_order,
        )

    def rounds(self) -> Iterator[RoundArrays]:
        """Per round: messages and reductions, summarised from the op program."""
        from .program import summarise

        for chunk in self.program():
            yield summarise(chunk)

    def label(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.collective}/{self.algorithm}(p={self.p}{', ' + shown if shown else ''})"


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


def _blocks(blocks) -> Sequence[int]:
    """Block lists stay ``range`` objects when given as such (O(1) memory for
    the long contiguous ranges of halving algorithms), else become tuples."""
    return blocks if isinstance(blocks, range) else tuple(blocks)


class _Segments:
    """One buffer's data-flow state as segments of equal state.

    Blocks ``starts[i] .. starts[i+1]-1`` share one last writer and one tuple
    of readers since that write; untouched blocks have neither. Halving and
    doubling algorithms touch a few long ranges per rank, so state is kept
    per range, not per block: a rank's data flow costs O(its ops), not
    O(blocks it touches).
    """

    __slots__ = ("starts", "writer", "readers")

    def __init__(self):
        self.starts: list[int] = [-(1 << 62)]   # one segment holding every block index
        self.writer: list[int | None] = [None]
        self.readers: list[tuple[int, ...]] = [()]

    def _split(self, x: int) -> int:
        """Make ``x`` a segment start; return its segment index."""
        i = bisect_right(self.starts, x) - 1
        if self.starts[i] == x:
            return i
        self.starts.insert(i + 1, x)
        self.writer.insert(i + 1, self.writer[i])
        self.readers.insert(i + 1, self.readers[i])
        return i + 1

    def span(self, lo: int, hi: int) -> range:
        """Indices of the segments covering blocks ``lo .. hi-1`` exactly."""
        i = self._split(lo)
        return range(i, self._split(hi) if hi > lo else i)


def _runs(blocks: Sequence[int]) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of a block list (a ``range`` is one)."""
    if isinstance(blocks, range) and blocks.step == 1:
        return [(blocks.start, blocks.stop)] if len(blocks) else []
    out: list[list[int]] = []
    for b in blocks:
        if out and out[-1][1] == b:
            out[-1][1] = b + 1
        else:
            out.append([b, b + 1])
    return [(lo, hi) for lo, hi in out]


class RankBuilder:
    """Builds one rank's op list, deriving dependencies from data flow.

    Each operation depends exactly on the last writer of every block it reads
    (read-after-write), and a write waits for the last writer and every reader
    since (write-after-write, write-after-read). This gives the earliest start
    allowed by the data, so overlap of reductions with transfers is explicit.
    ``after=`` adds control dependencies the data flow does not imply. This is
    the one place the dependency rules live: every pattern derives its
    dependencies through it.
    """

    __slots__ = ("ops", "_buffers")

    def __init__(self):
        self.ops: list[Op] = []
        self._buffers: dict[str, _Segments] = {}

    def _record(self, reads, writes, after) -> tuple[int, ...]:
        """Dependencies of the next op, which reads and writes ``(buf, blocks)``
        lists; then the op becomes the last reader / writer of those blocks."""
        idx = len(self.ops)
        deps = set(after)
        touched = []
        for buf, blocks, is_write in [(b, bl, False) for b, bl in reads] + [(b, bl, True) for b, bl in writes]:
            seg = self._buffers.get(buf)
            if seg is None:
                seg = self._buffers[buf] = _Segments()
            for lo, hi in _runs(blocks):
                span = seg.span(lo, hi)
                for i in span:
                    w = seg.writer[i]
                    if w is not None:
                        deps.add(w)
                    if is_write:
                        deps.update(seg.readers[i])
                touched.append((seg, lo, hi, is_write))
        for seg, lo, hi, is_write in touched:   # all reads first, then the writes (as per block)
            if not is_write:
                for i in seg.span(lo, hi):
                    seg.readers[i] = seg.readers[i] + (idx,)
        for seg, lo, hi, is_write in touched:
            if is_write:
                for i in seg.span(lo, hi):
                    seg.writer[i] = idx
                    seg.readers[i] = ()
        return tuple(sorted(deps))

    def send(self, peer, blocks, *, buf="data", round, tag=None, after=()) -> int:
        blocks = _blocks(blocks)
        deps = self._record([(buf, blocks)], (), after)
        self.ops.append(Send(peer, buf, blocks, round if tag is None else tag, round, deps))
        return len(self.ops) - 1

    def recv(self, peer, blocks, *, buf="data", into=None, round, tag=None, after=()) -> int:
        blocks = _blocks(blocks)
        into = blocks if into is None else _blocks(into)
        deps = self._record((), [(buf, into)], after)
        self.ops.append(Recv(peer, buf, blocks, into, round if tag is None else tag, round, deps))
        return len(self.ops) - 1

    def reduce(self, blocks, *, dst="data", src, side, round, after=()) -> int:
        if side not in (LEFT, RIGHT):
            raise ScheduleError(f"reduce: side={side!r}, expected 'left' or 'right'")
        blocks = _blocks(blocks)
        deps = self._record([(src, blocks), (dst, blocks)], [(dst, blocks)], after)
        self.ops.append(Reduce(dst, src, blocks, side, round, deps))
        return len(self.ops) - 1

    def copy(self, blocks, *, dst, src, src_blocks=None, round, after=()) -> int:
        blocks = _blocks(blocks)
        src_blocks = blocks if src_blocks is None else _blocks(src_blocks)
        deps = self._record([(src, src_blocks)], [(dst, blocks)], after)
        self.ops.append(Copy(dst, src, blocks, src_blocks, round, deps))
        return len(self.ops) - 1

    def exchange(self, peer, blocks, *, send_buf="data", recv_buf, recv_blocks=None,
                 round, into=None) -> tuple[int, int]:
        """Send ``blocks`` to ``peer`` and receive its ``recv_blocks`` (default:
        the same) into ``recv_buf``, as one round of a pairwise pattern."""
        s = self.send(peer, blocks, buf=send_buf, round=round)
        r = self.recv(peer, blocks if recv_blocks is None else recv_blocks,
                      buf=recv_buf, into=into, round=round)
        return s, r


class ScheduleBuilder:
    """Every rank's :class:`RankBuilder`, addressed by rank (the form most
    generators were first written in: one loop over rounds, one over ranks)."""

    def __init__(self, p: int):
        self.p = p
        self.ranks = [RankBuilder() for _ in range(p)]

    @property
    def ops(self) -> list[list[Op]]:
        return [rb.ops for rb in self.ranks]

    def send(self, rank, *args, **kw) -> int:
        return self.ranks[rank].send(*args, **kw)

    def recv(self, rank, *args, **kw) -> int:
        return self.ranks[rank].recv(*args, **kw)

    def reduce(self, rank, *args, **kw) -> int:
        return self.ranks[rank].reduce(*args, **kw)

    def copy(self, rank, *args, **kw) -> int:
        return self.ranks[rank].copy(*args, **kw)

    def exchange(self, rank, *args, **kw) -> tuple[int, int]:
        return self.ranks[rank].exchange(*args, **kw)

    def build(self) -> list[list[Op]]:
        return self.ops
