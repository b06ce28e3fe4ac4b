"""Per-rank operations of a schedule and the round summary.

- :class:`Send` ``(peer, buf, blocks)``: sends the named blocks of ``buf``;
- :class:`Recv` ``(peer, buf, blocks, into)``: receives ``len(blocks)`` blocks
  (``blocks`` as the sender names them) and stores them at block positions
  ``into`` of ``buf``;
- :class:`Reduce` ``(dst, src, blocks, side)``: ``dst = src ∘ dst`` when
  ``side="left"`` (src goes in front) or ``dst = dst ∘ src`` when
  ``side="right"``; the side matters for non-commutative operators;
- :class:`Copy` ``(dst, src, blocks, src_blocks)``.

Each operation lists the earlier operations of its rank it depends on
(``deps``); block lists are tuples or ``range`` objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
