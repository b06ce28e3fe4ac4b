"""GOAL, LogGOPSim's text format for schedules: write a schedule's op program
as GOAL, and read GOAL (e.g. Schedgen's output) as a program the simulator runs.

GOAL ("Group Operation Assembly Language", Hoefler, Siebert & Lumsdaine,
ICPP 2009) describes every rank's operations as a small dependency graph; the
text form LogGOPSim's ``txt2bin`` reads is::

    num_ranks 2

    rank 0 {
    l1: send 1024b to 1 tag 0
    l2: calc 100 cpu 0
    l2 requires l1
    }

    rank 1 {
    l1: recv 1024b from 0 tag 0
    }

Statements end at the line end; labels (``[A-Za-z][A-Za-z0-9_]*``) are local
to their rank; ``send``/``recv`` take a size in bytes (``b``), a peer rank,
and optional ``tag T`` (default 0), ``cpu C`` and ``nic N``; ``calc`` takes a
duration and an optional ``cpu C``; ``lA requires lB`` makes ``lA`` wait for
``lB`` to complete and ``lA irequires lB`` for ``lB`` to start; ``//`` and
``/* … */`` are comments.
"""

from __future__ import annotations

import heapq
import math
import os
import re
from pathlib import Path

import numpy as np

from ..errors import ParseError, ScheduleError, SpecError
from ..inputs import TABLE_BYTES, read_text
from ..outputs import write_text
from .program import COPY, RECV, REDUCE, SEND, OpChunk, OpProgram, concatenate
from .registry import MAX_P
from .sizes import MAX_BYTES

__all__ = ["GoalProgram", "read_goal", "to_goal", "write_goal", "MAX_GOAL_BYTES", "MAX_GOAL_TAG"]

#: largest ``send``/``recv`` size and ``calc`` amount a GOAL file may give: 1 TiB, as ``--size``
#: (:data:`~topocoll.schedules.sizes.MAX_BYTES`; more than any rank's memory)
MAX_GOAL_BYTES = MAX_BYTES
#: largest tag: MPI tags are C ``int``s (``MPI_TAG_UB`` is at most 2^31 − 1)
MAX_GOAL_TAG = (1 << 31) - 1
#: digits a number may have before it is refused unread
_MAX_DIGITS = 30

_ANNOTATION = re.compile(r"//\s*topocoll\s+([A-Za-z][A-Za-z0-9_]*)\s+(reduce|copy)\s+([0-9]+)b\s*$")
_TOKEN = re.compile(r"(?P<nl>\r?\n)|(?P<ws>[ \t\f\v]+)|(?P<lc>//[^\r\n]*)|(?P<bc>/\*.*?\*/)"
                    r"|(?P<int>-?[0-9]+)|(?P<ident>[A-Za-z][A-Za-z0-9_]*)|(?P<punct>[:{}])|(?P<bad>.)", re.S)
_OPS = ("send", "recv", "calc")
_RESERVED = frozenset(_OPS + ("rank", "num_ranks", "requires", "irequires"))


class GoalProgram:
    """A GOAL schedule as a one-chunk op program (what :func:`read_goal` returns).

    Quacks like a :class:`~topocoll.schedules.ir.Schedule` where the
    simulator needs it (``p``, :meth:`label`, :meth:`program`), so
    ``simulate(read_goal(path))`` runs LogGOPSim's schedules.

    Attributes
    ----------
    p : int
        Number of ranks (``num_ranks``).
    name : str
        The file's name, or ``"goal"`` for text.
    rank, kind, peer, tag, nbytes : ndarray of int64
        One entry per operation, ordered by rank, then a topological order of
        the rank's dependencies (file order where that is one).
    dep_ptr, dep_idx : ndarray of int64
        The dependencies as a CSR of op ids; every id is of the same rank and
        smaller than its dependant's.
    """

    def __init__(self, p: int, rank, kind, peer, tag, nbytes, dep_ptr, dep_idx, *, name: str = "goal"):
        self.p, self.name = int(p), name
        i64 = np.int64
        self.rank, self.peer, self.tag = (np.asarray(a, dtype=i64) for a in (rank, peer, tag))
        self.kind = np.asarray(kind, dtype=np.int8)
        self.nbytes = np.asarray(nbytes, dtype=i64)
        self.dep_ptr, self.dep_idx = np.asarray(dep_ptr, dtype=i64), np.asarray(dep_idx, dtype=i64)

    def __len__(self) -> int:
        return int(self.rank.shape[0])

    def __repr__(self) -> str:
        return f"GoalProgram({self.label()}, {len(self)} ops)"

    def label(self) -> str:
        return f"goal:{self.name}(p={self.p})"

    def chunk(self) -> OpChunk:
        """Every operation as one :class:`OpChunk` (round 0, first id 0); no
        buffers (``buf``/``src_buf``/``side`` -1) and no block runs."""
        n = len(self)
        none = np.full(n, -1, dtype=np.int16)
        empty = np.zeros(0, dtype=np.int64)
        return OpChunk(0, 0, self.rank, self.kind, self.peer, self.tag, none, none.copy(),
                       np.full(n, -1, dtype=np.int8), self.nbytes, np.zeros(n + 1, dtype=np.int64),
                       empty, empty.copy(), empty.copy(), empty.copy(), empty.copy(), empty.copy(),
                       self.dep_ptr, self.dep_idx)

    def program(self) -> OpProgram:
        """The op program: one chunk (GOAL has no rounds, so the simulator's
        ``sync="rounds"`` and ``"barrier"`` see a single round)."""
        chunk = self.chunk()
        return OpProgram(self.p, 0, np.zeros(0, dtype=np.int64), (), lambda: iter((chunk,)))


# --------------------------------------------------------------------------- writing


def to_goal(schedule, *, reduce_cost_per_byte: float = 1.0) -> str:
    """The op program of ``schedule`` as GOAL text (LogGOPSim's ``txt2bin`` input).

    Parameters
    ----------
    schedule : Schedule or GoalProgram
        Anything with ``p`` and ``program()`` (and optionally ``label()``).
    reduce_cost_per_byte : float
        A reduction or copy of ``n`` bytes becomes ``calc round(n ·
        reduce_cost_per_byte)``, in LogGOPSim's time unit (that of its L, o
        and g parameters).

    Returns
    -------
    str
        ``num_ranks p``, then one ``rank r { … }`` block per rank with one
        label ``l1, l2, …`` per operation in the rank's posting order, each
        followed by its ``requires`` lines. Every ``calc`` is preceded by a
        comment ``// topocoll lN reduce|copy Nb`` that LogGOPSim skips and
        :func:`read_goal` uses to restore the operation exactly.

    Raises
    ------
    SpecError
        If ``reduce_cost_per_byte`` is negative or not finite.
    ScheduleError
        If an operation depends on another rank's, or a tag is negative.

    References
    ----------
    T. Hoefler, C. Siebert, A. Lumsdaine, "Group Operation Assembly Language —
    A Flexible Way to Express Collective Communication", ICPP 2009.
    T. Hoefler, T. Schneider, A. Lumsdaine, "LogGOPSim — Simulating
    Large-Scale Applications in the LogGOPS Model", HPDC 2010 (``txt2bin``).

    Examples
    --------
    >>> from topocoll.schedules import generate
    >>> print(to_goal(generate("bcast", "binomial", 3, count=4, itemsize=8)))
    // bcast/binomial(p=3, root=0), written by topocoll
    num_ranks 3
    <BLANKLINE>
    rank 0 {
    l1: send 32b to 1 tag 0
    l2: send 32b to 2 tag 1
    }
    <BLANKLINE>
    rank 1 {
    l1: recv 32b from 0 tag 0
    }
    <BLANKLINE>
    rank 2 {
    l1: recv 32b from 0 tag 1
    }
    <BLANKLINE>
    """
    try:
        cost = float(reduce_cost_per_byte)
    except (TypeError, ValueError):
        cost = math.nan
    if isinstance(reduce_cost_per_byte, bool) or not math.isfinite(cost) or cost < 0:
        raise SpecError(f"to_goal: reduce_cost_per_byte={reduce_cost_per_byte!r}, expected a finite number >= 0")
    p = int(schedule.p)
    ch = concatenate(list(schedule.program()))
    n = len(ch)
    rank, kind, peer, tag, nbytes = (np.asarray(getattr(ch, c), dtype=np.int64)
                                     for c in ("rank", "kind", "peer", "tag", "nbytes"))
    dep_ptr, dep_idx = np.asarray(ch.dep_ptr, dtype=np.int64), np.asarray(ch.dep_idx, dtype=np.int64)
    first = int(ch.first_id)
    dep_idx = dep_idx - first
    dep_rank = np.repeat(rank, np.diff(dep_ptr))
    crossing = np.flatnonzero(rank[dep_idx] != dep_rank) if n else np.zeros(0, np.int64)
    if crossing.size:
        j = int(crossing[0])
        op = int(np.searchsorted(dep_ptr, j, side="right") - 1)
        raise ScheduleError(f"to_goal: op {op + first} of rank {rank[op]} depends on op {dep_idx[j] + first} of "
                            f"rank {rank[dep_idx[j]]}, expected dependencies within a rank (GOAL's requires)")
    comm = (kind == SEND) | (kind == RECV)
    if np.any(tag[comm] < 0):
        op = int(np.flatnonzero(comm & (tag < 0))[0])
        raise ScheduleError(f"to_goal: op {op + first} has tag {tag[op]}, expected a tag >= 0")
    order = np.argsort(rank, kind="stable")           # rows are in id order: rank, then posting order
    local = np.empty(n, dtype=np.int64)               # label number of every op
    counts = np.bincount(rank, minlength=p) if n else np.zeros(p, np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)))[:-1]
    local[order] = np.arange(n) - np.repeat(starts, counts) + 1
    calc = np.rint(nbytes * cost).astype(np.int64)

    title = schedule.label() if hasattr(schedule, "label") else "schedule"
    out = [f"// {title}, written by topocoll", f"num_ranks {p}"]
    rows = order.tolist()
    ptr = np.concatenate(([0], np.cumsum(counts))).tolist()
    kinds, peers, tags, sizes, labels, costs = (a.tolist() for a in (kind, peer, tag, nbytes, local, calc))
    dptr, didx = dep_ptr.tolist(), dep_idx.tolist()
    for r in range(p):
        out.append("")
        out.append(f"rank {r} {{")
        for i in rows[ptr[r]:ptr[r + 1]]:
            lab, k = labels[i], kinds[i]
            if k == SEND:
                out.append(f"l{lab}: send {sizes[i]}b to {peers[i]} tag {tags[i]}")
            elif k == RECV:
                out.append(f"l{lab}: recv {sizes[i]}b from {peers[i]} tag {tags[i]}")
            else:
                out.append(f"// topocoll l{lab} {'copy' if k == COPY else 'reduce'} {sizes[i]}b")
                out.append(f"l{lab}: calc {costs[i]}")
            out.extend(f"l{lab} requires l{labels[d]}" for d in didx[dptr[i]:dptr[i + 1]])
        out.append("}")
    return "\n".join(out) + "\n"


def write_goal(schedule, path, *, reduce_cost_per_byte: float = 1.0) -> Path:
    """Write :func:`to_goal` of ``schedule`` to ``path`` and return the path."""
    return write_text(path, to_goal(schedule, reduce_cost_per_byte=reduce_cost_per_byte), option="GOAL file")


# --------------------------------------------------------------------------- reading


class _Rank:
    """One ``rank R { … }`` block while it is read."""

    def __init__(self, rank: int, line: int, text: str):
        self.rank, self.line, self.text = rank, line, text
        self.kind: list[int] = []
        self.peer: list[int] = []
        self.tag: list[int] = []
        self.nbytes: list[int] = []
        self.labels: dict[str, int] = {}
        self.requires: list[tuple[int, str, str, str]] = []        # (line, label, needed, text)
        self.notes: list[tuple[int, str, str, int, str]] = []      # (line, label, kind, bytes, text)
        self.lines: list[int] = []                                # line of each operation
        self.order: list[int] = []
        self.preds: list[list[int]] = []


class _Reader:
    def __init__(self, text: str, where: str):
        self.text, self.where = text, where
        self.lines = re.split(r"\r?\n", text)
        self.p: int | None = None
        self.ranks: dict[int, _Rank] = {}
        self.open: _Rank | None = None

    def fail(self, line: int, bad: str, expected: str, detail: str = ""):
        raise ParseError(f"{self.where}:{line}: {bad!r}{' ' + detail if detail else ''}, expected {expected}")

    def line_text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    # -- tokens, one physical line at a time

    def run(self) -> GoalProgram:
        line, toks = 1, []
        for m in _TOKEN.finditer(self.text):
            kind, value = m.lastgroup, m.group()
            if kind == "nl":
                self.statements(line, toks)
                line, toks = line + 1, []
            elif kind == "lc":
                note = _ANNOTATION.match(value)
                if note:
                    self.note(line, note)
            elif kind == "bc":
                if "\n" in value:                       # a statement cannot span a block comment
                    self.statements(line, toks)
                    line, toks = line + value.count("\n"), []
            elif kind == "bad":
                if value == "/" and self.text.startswith("/*", m.start()):
                    self.fail(line, self.line_text(line), "'*/' to close the comment", "has an unterminated /*")
                self.fail(line, value, "a statement: 'num_ranks N', 'rank N {', '}', an operation or a "
                                       "dependency", f"in {self.line_text(line)!r}")
            elif kind != "ws":
                toks.append((kind, value))
        self.statements(line, toks)
        return self.finish()

    def statements(self, line: int, toks: list[tuple[str, str]]):
        i = 0
        while i < len(toks):
            kind, value = toks[i]
            if value == "num_ranks":
                i = self.num_ranks(line, toks, i)
            elif value == "rank":
                i = self.rank_open(line, toks, i)
            elif value == "}":
                if self.open is None:
                    self.fail(line, "}", "'rank N {' before it", "closes no rank block")
                self.close(self.open)
                self.open = None
                i += 1
            else:
                self.statement(line, toks[i:])
                return

    def number(self, line: int, toks, i: int, what: str) -> int:
        if i >= len(toks) or toks[i][0] != "int":
            bad = toks[i][1] if i < len(toks) else self.line_text(line)
            self.fail(line, bad, what, f"in {self.line_text(line)!r}" if i < len(toks) else "ends early")
        digits = toks[i][1]
        if len(digits.lstrip("-")) > _MAX_DIGITS:
            self.fail(line, digits[:_MAX_DIGITS] + "...", f"{what} of at most {_MAX_DIGITS} digits",
                      f"({len(digits.lstrip('-'))} digits)")
        return int(digits)

    def num_ranks(self, line: int, toks, i: int) -> int:
        p = self.number(line, toks, i + 1, "the number of ranks after num_ranks")
        if p < 1:
            self.fail(line, self.line_text(line), "num_ranks >= 1")
        if p > MAX_P:
            self.fail(line, self.line_text(line), f"num_ranks <= {MAX_P} (MAX_P)")
        if self.p is not None and p != self.p:
            self.fail(line, self.line_text(line), f"num_ranks {self.p} as set before")
        if self.ranks and self.p is None:
            self.fail(line, self.line_text(line), "num_ranks before the first rank block")
        self.p = p
        return i + 2

    def rank_open(self, line: int, toks, i: int) -> int:
        text = self.line_text(line)
        if self.p is None:
            self.fail(line, text, "'num_ranks N' before the first rank block", "comes before num_ranks")
        r = self.number(line, toks, i + 1, "a rank number after 'rank'")
        if i + 2 >= len(toks) or toks[i + 2][1] != "{":
            self.fail(line, text, f"'rank {r} {{'")
        if self.open is not None:
            self.fail(line, text, f"'}}' to close rank {self.open.rank} (line {self.open.line}) first",
                      "opens a rank block inside another")
        if not 0 <= r < self.p:
            self.fail(line, text, f"a rank in 0..{self.p - 1} (num_ranks {self.p})")
        if r in self.ranks:
            self.fail(line, text, "one block per rank", f"repeats rank {r} (line {self.ranks[r].line})")
        self.open = self.ranks[r] = _Rank(r, line, text)
        return i + 3

    def statement(self, line: int, toks):
        text = self.line_text(line)
        block = self.open
        if block is None:
            self.fail(line, text, "'rank N {' before operations", "is outside any rank block")
        values = [v for _, v in toks]
        label = None
        if len(values) >= 2 and values[1] in ("requires", "irequires"):
            if len(values) != 3 or toks[0][0] != "ident" or toks[2][0] != "ident":
                self.fail(line, text, f"'LABEL {values[1]} LABEL'")
            # irequires (start dependency) is read as requires (completion): conservative.
            block.requires.append((line, values[0], values[2], text))
            return
        if len(values) >= 2 and values[1] == ":":
            if toks[0][0] != "ident" or values[0] in _RESERVED:
                self.fail(line, values[0], "a label ([A-Za-z][A-Za-z0-9_]*, not a keyword)", f"in {text!r}")
            label, values, toks = values[0], values[2:], toks[2:]
        if not values or values[0] not in _OPS:
            self.fail(line, values[0] if values else text, "send, recv or calc", f"in {text!r}")
        op = values[0]
        if op == "calc":
            size = self.number(line, toks, 1, "a duration after calc")
            if not 0 <= size <= MAX_GOAL_BYTES:
                self.fail(line, text, f"a duration in 0..{MAX_GOAL_BYTES} (MAX_GOAL_BYTES)")
            rest, peer, tag, kind = 2, -1, -1, REDUCE
            options = ("cpu",)
        else:
            size = self.number(line, toks, 1, f"a size in bytes after {op}")
            if not 0 <= size <= MAX_GOAL_BYTES:
                self.fail(line, text, f"a size in 0..{MAX_GOAL_BYTES} bytes (MAX_GOAL_BYTES, 1 TiB)")
            want = "to" if op == "send" else "from"
            if len(values) < 4 or values[2] != "b" or values[3] != want:
                self.fail(line, text, f"'{op} Nb {want} RANK'")
            peer = self.number(line, toks, 4, f"a rank after '{want}'")
            if peer == -1 and op == "recv":
                self.fail(line, text, f"a rank in 0..{self.p - 1}", "receives from any source (-1)")
            if not 0 <= peer < self.p:
                self.fail(line, text, f"a rank in 0..{self.p - 1} (num_ranks {self.p})")
            rest, tag, kind = 5, 0, SEND if op == "send" else RECV
            options = ("tag", "cpu", "nic")
        seen = -1
        while rest < len(values):
            word = values[rest]
            if word not in options or options.index(word) <= seen:
                self.fail(line, word, " or ".join(f"'{o} N'" for o in options[seen + 1:]) + " or the line end"
                          if seen + 1 < len(options) else "the line end", f"in {text!r}")
            seen = options.index(word)
            value = self.number(line, toks, rest + 1, f"a number after '{word}'")
            if word == "tag":
                if value < 0:
                    self.fail(line, text, "a tag >= 0", "receives any tag (-1)")
                if value > MAX_GOAL_TAG:
                    self.fail(line, text, f"a tag in 0..{MAX_GOAL_TAG} (MAX_GOAL_TAG, MPI's int tags)")
                tag = value
            rest += 2
        if label is not None:
            if label in block.labels:
                self.fail(line, text, f"a label new to rank {block.rank}", f"redefines {label}")
            block.labels[label] = len(block.kind)
        block.kind.append(kind)
        block.peer.append(peer)
        block.tag.append(tag)
        block.nbytes.append(size)
        block.lines.append(line)

    def note(self, line: int, m: re.Match):
        if self.open is not None:
            self.open.notes.append((line, m.group(1), m.group(2), int(m.group(3)), self.line_text(line)))

    # -- a closed rank block: dependencies, their order

    def close(self, block: _Rank):
        n = len(block.kind)
        preds: list[list[int]] = [[] for _ in range(n)]
        where: dict[tuple[int, int], tuple[int, str]] = {}
        for line, label, needed, text in block.requires:
            for name in (label, needed):
                if name not in block.labels:
                    self.fail(line, text, f"a label of rank {block.rank}", f"names {name}, which rank "
                                                                            f"{block.rank} does not define")
            a, b = block.labels[label], block.labels[needed]
            if b not in preds[a]:
                preds[a].append(b)
                where[(a, b)] = (line, text)
        for line, label, what, size, text in block.notes:
            i = block.labels.get(label)
            if i is None or block.kind[i] != REDUCE:
                self.fail(line, text, f"a calc label of rank {block.rank}", "annotates no calc")
            block.kind[i] = COPY if what == "copy" else REDUCE
            block.nbytes[i] = size
        # Kahn's algorithm, smallest definition index first: file order where it is topological.
        indeg = [len(ps) for ps in preds]
        succs: list[list[int]] = [[] for _ in range(n)]
        for a, ps in enumerate(preds):
            for b in ps:
                succs[b].append(a)
        ready = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for j in succs[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(ready, j)
        if len(order) < n:
            self.cycle(block, preds, indeg, where)
        block.order, block.preds = order, preds

    def cycle(self, block: _Rank, preds, indeg, where):
        names = {i: name for name, i in block.labels.items()}
        node, path, seen = next(i for i in range(len(indeg)) if indeg[i] > 0), [], {}
        while node not in seen:
            seen[node] = len(path)
            path.append(node)
            node = next(b for b in preds[node] if indeg[b] > 0)
        loop = path[seen[node]:] + [node]
        line, text = min(where[(a, b)] for a, b in zip(loop, loop[1:]))
        chain = " requires ".join(names.get(i, f"op {i}") for i in loop)
        self.fail(line, text, "dependencies without a cycle", f"closes a cycle in rank {block.rank}: {chain}")

    def match(self, cols: dict) -> None:
        """Every send has its receive, of its size: pair the k-th send and the
        k-th receive of each channel (source, destination, tag) in op-id order,
        as the simulator's engine does (``src/engine/program.rs``), and report
        the first channel (in that order) that does not pair up, at its line."""
        channels: dict[tuple[int, int, int], tuple[list[int], list[int]]] = {}
        for i, (r, k, peer, tag) in enumerate(zip(cols["rank"], cols["kind"], cols["peer"], cols["tag"])):
            if k == SEND:
                channels.setdefault((r, peer, tag), ([], []))[0].append(i)
            elif k == RECV:
                channels.setdefault((peer, r, tag), ([], []))[1].append(i)
        line, size = cols["line"], cols["nbytes"]
        for (src, dst, tag), (sends, recvs) in sorted(channels.items()):
            for s, r in zip(sends, recvs):
                if size[s] != size[r]:
                    raise ParseError(
                        f"{self.where}:{line[r]}: {self.line_text(line[r])!r}: send op {s} ({size[s]} B, line "
                        f"{line[s]} of rank {src}) matches receive op {r} ({size[r]} B, rank {dst}), expected equal "
                        "sizes")
            if len(sends) != len(recvs):
                extra, what, lacks = (sends[len(recvs)], "send", "receive") if len(sends) > len(recvs) else \
                    (recvs[len(sends)], "recv", "send")
                raise ParseError(
                    f"{self.where}:{line[extra]}: {self.line_text(line[extra])!r} has no matching {lacks}: channel "
                    f"{src}→{dst} tag {tag} has {len(sends)} sends but {len(recvs)} receives, expected equal "
                    f"numbers (a {'recv' if what == 'send' else 'send'} in rank {dst if what == 'send' else src})")

    def finish(self) -> GoalProgram:
        if self.open is not None:
            self.fail(self.open.line, self.open.text, f"'}}' to close rank {self.open.rank}", "is never closed")
        if self.p is None:
            raise ParseError(f"{self.where}: no 'num_ranks N' line, expected one before the rank blocks")
        cols = {k: [] for k in ("rank", "kind", "peer", "tag", "nbytes", "line")}
        dep_counts, dep_idx, base = [], [], 0
        for r in sorted(self.ranks):
            block = self.ranks[r]
            position = np.empty(len(block.order), dtype=np.int64)
            position[block.order] = np.arange(len(block.order))
            for i in block.order:
                cols["rank"].append(r)
                cols["kind"].append(block.kind[i])
                cols["peer"].append(block.peer[i])
                cols["tag"].append(block.tag[i])
                cols["nbytes"].append(block.nbytes[i])
                cols["line"].append(block.lines[i])
                dep_counts.append(len(block.preds[i]))
                dep_idx.extend(base + int(position[b]) for b in block.preds[i])
            base += len(block.order)
        self.match(cols)
        dep_ptr = np.concatenate(([0], np.cumsum(dep_counts, dtype=np.int64))).astype(np.int64)
        name = Path(self.where).name if self.where != "<string>" else "goal"
        return GoalProgram(self.p, cols["rank"], cols["kind"], cols["peer"], cols["tag"], cols["nbytes"],
                           dep_ptr, np.asarray(dep_idx, dtype=np.int64), name=name)


def read_goal(text_or_path) -> GoalProgram:
    """Read a GOAL schedule (LogGOPSim's text format) as an op program.

    Parameters
    ----------
    text_or_path : str or os.PathLike
        A path (a :class:`~pathlib.Path`, or a one-line string naming an
        existing file) or the GOAL text itself.

    Returns
    -------
    GoalProgram
        Operations ordered by rank, then by a topological order of the rank's
        dependencies that keeps file order where file order is one; every
        dependency points to a smaller op id of the same rank.

    Raises
    ------
    ParseError
        One line ``FILE:LINE: 'text', expected …`` (``<string>`` for text):
        a statement that does not parse, operations outside a rank block, a
        missing ``num_ranks``, a peer or rank out of ``0..p-1``, a wildcard
        receive (source or tag -1), a label used but not defined in its rank,
        a dependency cycle, unmatched braces; a send without its receive (or
        the reverse) or a receive of another size than its send (channels
        paired as the simulator pairs them); a size or ``calc`` above
        :data:`MAX_GOAL_BYTES` (1 TiB), a tag above :data:`MAX_GOAL_TAG`,
        ``num_ranks`` above ``MAX_P`` (2^20), a number of more than 30 digits.
    SpecError
        If a one-line string names no file and is not GOAL text.

    Notes
    -----
    What the reader maps, and how:

    - ``calc N`` becomes a reduction (``REDUCE``) of ``nbytes = N``; the
      simulator charges reductions γ per byte, so ``calc N`` costs ``N·γ``
      (LogGOPSim charges ``N`` time units). A ``// topocoll lN copy|reduce Nb``
      comment, as :func:`to_goal` writes before each ``calc``, restores the
      operation's kind and bytes, so ``read_goal(to_goal(s))`` is ``s``'s op
      program.
    - ``irequires`` (``lA`` may start once ``lB`` has *started*) is read as
      ``requires`` (once ``lB`` has *completed*): the op program has only
      completion dependencies, so this is conservative.
    - ``cpu`` and ``nic`` are accepted and ignored: a rank has one CPU, and
      NIC ports are the simulator's ``EngineOptions(ports=…)``.
    - Labels may be used before they are defined within their rank block
      (LogGOPSim's ``txt2bin`` needs them defined first).

    References
    ----------
    T. Hoefler, C. Siebert, A. Lumsdaine, "Group Operation Assembly Language —
    A Flexible Way to Express Collective Communication", ICPP 2009.
    T. Hoefler, T. Schneider, A. Lumsdaine, "LogGOPSim — Simulating
    Large-Scale Applications in the LogGOPS Model", HPDC 2010.

    Examples
    --------
    >>> g = read_goal('''num_ranks 2
    ... rank 0 {
    ... l1: send 8b to 1 tag 3
    ... l2: calc 100
    ... l2 requires l1
    ... }
    ... rank 1 {
    ... l1: recv 8b from 0 tag 3
    ... }''')
    >>> g.p, g.rank.tolist(), g.kind.tolist(), g.nbytes.tolist(), g.dep_idx.tolist()
    (2, [0, 0, 1], [0, 2, 1], [8, 100, 8], [0])
    """
    if isinstance(text_or_path, os.PathLike):
        path = Path(text_or_path)
    elif isinstance(text_or_path, str) and "\n" not in text_or_path and "{" not in text_or_path:
        path = Path(text_or_path)
        if not path.is_file() and "num_ranks" not in text_or_path:
            raise SpecError(f"read_goal: {text_or_path!r} names no file, expected a GOAL file or GOAL text")
        if not path.is_file():
            return _Reader(text_or_path, "<string>").run()
    elif isinstance(text_or_path, str):
        return _Reader(text_or_path, "<string>").run()
    else:
        raise SpecError(f"read_goal: {type(text_or_path).__name__} {text_or_path!r}, expected GOAL text or a path")
    text = read_text(path, limit=TABLE_BYTES, what="a GOAL file")
    return _Reader(text, str(path)).run()
