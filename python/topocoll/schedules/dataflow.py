"""Data flow: the one place where dependencies between operations are derived."""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from ..errors import ScheduleError
from .ops import LEFT, RIGHT, Copy, Op, Recv, Reduce, Send
from .program import block_runs


def _blocks(blocks) -> Sequence[int]:
    """Block lists stay ``range`` objects when given as such (O(1) memory for
    the long contiguous ranges of halving algorithms), else become tuples."""
    return blocks if isinstance(blocks, range) else tuple(blocks)


class _Segments:
    """One buffer's data-flow state as segments of equal state.

    Blocks ``start .. next start - 1`` share one last writer and one tuple of
    readers since that write (``state[start] = (writer, readers)``);
    untouched blocks have neither. Halving and doubling algorithms touch a
    few long ranges per rank, so state is kept per range, not per block: a
    rank's data flow costs O(its ops), not O(blocks it touches). The sorted
    ``starts`` is the only list a split inserts into (the ring at P = 65,536
    splits it 65,536 times): the state lives in a dict keyed by start.
    """

    __slots__ = ("starts", "state")

    def __init__(self):
        self.starts: list[int] = [-(1 << 62)]   # one segment holding every block index
        self.state: dict[int, tuple] = {-(1 << 62): (None, ())}

    def _split(self, x: int) -> int:
        """Make ``x`` a segment start; return its position in ``starts``."""
        starts = self.starts
        i = bisect_right(starts, x) - 1
        s = starts[i]
        if s == x:
            return i
        starts.insert(i + 1, x)
        self.state[x] = self.state[s]
        return i + 1

    def span(self, lo: int, hi: int) -> list[int]:
        """Starts of the segments covering blocks ``lo .. hi-1`` exactly."""
        i = self._split(lo)
        if hi <= lo:
            return []
        j = self._split(hi)
        return self.starts[i:j]


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
            for lo, _, n in block_runs(blocks, blocks):
                hi = lo + n
                state = seg.state
                for key in seg.span(lo, hi):
                    w, readers = state[key]
                    if w is not None:
                        deps.add(w)
                    if is_write:
                        deps.update(readers)
                touched.append((seg, lo, hi, is_write))
        for seg, lo, hi, is_write in touched:   # all reads first, then the writes (as per block)
            if not is_write:
                state = seg.state
                for key in seg.span(lo, hi):
                    w, readers = state[key]
                    state[key] = (w, readers + (idx,))
        for seg, lo, hi, is_write in touched:
            if is_write:
                state = seg.state
                for key in seg.span(lo, hi):
                    state[key] = (idx, ())
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
