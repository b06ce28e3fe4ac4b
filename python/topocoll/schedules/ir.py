"""The schedule IR: one collective algorithm, one pattern, every view derived.

A :class:`Schedule` describes one collective over ``p`` ranks on a vector of
``count`` elements of ``itemsize`` bytes, split into ``nblocks`` contiguous
blocks. Every rank owns named buffers (``"data"`` holds its input and, at the
end, its output; scratch buffers such as ``"tmp"`` are full-length too) and
runs an ordered list of operations (:mod:`.ops`) whose dependencies come from
data flow (:mod:`.dataflow`). The schedule holds one pattern
(:mod:`.pattern`); per-rank ops, one rank's ops, the op program
(:mod:`.program`) and the round summary all derive from it. Receives match
sends by ``(source, tag)`` in posting order, as MPI's non-overtaking rule
matches them. ``docs/ir.md`` is the design note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import ScheduleError
from .dataflow import RankBuilder, ScheduleBuilder
from .ops import LEFT, RIGHT, Copy, Op, Recv, Reduce, RoundArrays, Send, channels
from .pattern import OpsPattern
from .program import OpProgram, summarise

__all__ = [
    "LEFT", "RIGHT", "Send", "Recv", "Reduce", "Copy", "Op", "RoundArrays", "OperatorNeeds", "Schedule",
    "RankBuilder", "ScheduleBuilder", "block_bounds", "channels",
]


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
    pattern : Circulant/Array/Rankwise/OpsPattern
        The one description of the algorithm (:mod:`topocoll.schedules.pattern`):
        ``ops_for(rank)``, ``all_ops()``, ``buffers()``, ``chunks(block_bytes)``.
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
        pattern, block_bytes = self.pattern, self.block_bytes
        return OpProgram(self.p, self.nblocks, block_bytes, tuple(pattern.buffers()),
                         lambda: pattern.chunks(block_bytes))

    @classmethod
    def from_ops(cls, collective: str, ops: list[list[Op]], *, algorithm: str = "custom",
                 count: int | None = None, itemsize: int = 8, nblocks: int = 1,
                 needs: OperatorNeeds = OperatorNeeds(), root: int | None = None,
                 result_blocks=None, input_blocks=None) -> "Schedule":
        """Wrap hand-written per-rank op lists (one list per rank) as a schedule."""
        count = nblocks if count is None else count
        return cls(collective, algorithm, len(ops), count, itemsize, block_bounds(count, nblocks), {},
                   needs, OpsPattern.of(ops), root=root, result_blocks=result_blocks,
                   input_blocks=input_blocks)

    def with_ops(self, ops: list[list[Op]], algorithm: str | None = None) -> "Schedule":
        """A copy with other per-rank ops (mutants, hand-edited schedules)."""
        return Schedule(
            collective=self.collective, algorithm=algorithm or self.algorithm, p=self.p,
            count=self.count, itemsize=self.itemsize, bounds=self.bounds, params=dict(self.params),
            needs=self.needs, pattern=OpsPattern.of(ops), root=self.root,
            result_blocks=self.result_blocks, input_blocks=self.input_blocks,
            depth_order=self.depth_order,
        )

    def rounds(self) -> Iterator[RoundArrays]:
        """Per round: messages and reductions, summarised from the op program."""
        for chunk in self.program():
            yield summarise(chunk)

    def label(self) -> str:
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return f"{self.collective}/{self.algorithm}(p={self.p}{', ' + shown if shown else ''})"


def _short(value) -> str:
    """A parameter as a label shows it: long sequences (a depth order of
    thousands of ranks) abbreviated."""
    if isinstance(value, (tuple, list)) and len(value) > 8:
        return "(" + ", ".join(map(str, value[:4])) + f", … {len(value) - 4} more)"
    return str(value)
