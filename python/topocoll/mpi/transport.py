"""Two-sided transport of a plan: one persistent request per message.

Every receive is a ``Recv_init`` on its rows (in place or staging), every
send a ``Send_init`` on its rows (in place or packed staging); a run posts all
receives with one ``Startall`` in operation order and completes everything
with ``Waitsome`` over one request array (inactive persistent requests are
ignored by MPI, so the array never changes during a run).
"""

from __future__ import annotations

import os
import time
from functools import lru_cache

import numpy as np

from .compile import RECV, SEND

#: seconds a rank sleeps between polls when ranks outnumber cores
POLITE_SLEEP = 20e-6


@lru_cache(maxsize=1)
def oversubscribed() -> bool:
    """More ranks on this node than it has cores.

    Read from the launcher's environment, without communication (a plan may
    live on any sub-communicator): Hydra's ``MPI_LOCALNRANKS``, Open MPI's
    ``OMPI_COMM_WORLD_LOCAL_SIZE``, else the size of ``COMM_WORLD`` (one
    node). ``TOPOCOLL_POLL=spin|sleep`` overrides."""
    forced = os.environ.get("TOPOCOLL_POLL")
    if forced in ("spin", "sleep"):
        return forced == "sleep"
    local = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    if local and local.isdigit():
        ranks = int(local)
    else:
        from mpi4py import MPI

        ranks = MPI.COMM_WORLD.Get_size()
    # the node's CPUs, not this process's affinity: Open MPI binds each rank to
    # one core, which is not oversubscription (and sleeping there made a 1 MiB
    # allreduce 3x slower)
    return ranks > (os.cpu_count() or 1)


def as_bytes(array: np.ndarray):
    """A byte view of contiguous rows for mpi4py (structured dtypes included)."""
    from mpi4py import MPI

    return [array.reshape(-1).view(np.uint8), MPI.BYTE]


class PointToPoint:
    def __init__(self, plan, view):
        from mpi4py import MPI

        self.MPI = MPI
        program, comm = plan.program, plan.comm
        base = plan.tag_base
        self.guard, self.label = plan.guard, plan.label
        self.peers: list[int] = []   # per request
        self.requests = []
        self.op_of: list[int] = []
        self.request_of: dict[int, int] = {}
        self.pack: dict[int, list] = {}
        self.unpacks: dict[int, list] = {}
        recvs = []
        for i, kind in enumerate(program.kind):
            if kind == SEND:
                pack, sent = program.layout[i]
                buf = view(sent)
                if pack is not None:
                    self.pack[i] = laid_end_to_end(view, pack, buf)
                req = comm.Send_init(as_bytes(buf), dest=program.peer[i], tag=base + program.tag[i])
            elif kind == RECV:
                into, unpack = program.layout[i]
                buf = view(into)
                if unpack is not None:
                    self.unpacks[i] = [(staged, rows) for rows, staged in laid_end_to_end(view, unpack, buf)]
                req = comm.Recv_init(as_bytes(buf), source=program.peer[i], tag=base + program.tag[i])
                recvs.append(req)
            else:
                continue
            self.request_of[i] = len(self.requests)
            self.requests.append(req)
            self.peers.append(program.peer[i])
            self.op_of.append(i)
        self.recvs = recvs
        self.polite = oversubscribed()

    def begin(self) -> None:
        if self.recvs:
            self.MPI.Prequest.Startall(self.recvs)

    def start_send(self, i: int) -> None:
        for src, dst in self.pack.get(i, ()):
            dst[...] = src
        self.requests[self.request_of[i]].Start()

    def unpack(self, i: int) -> None:
        for src, dst in self.unpacks.get(i, ()):
            dst[...] = src

    def wait_some(self):
        if self.guard is not None:   # a cached plan: a mismatch of the ranks' calls ends in an error
            done = self.guard.wait_some(self.requests, self.peers, self.label)
        elif self.polite:
            return self._poll_politely()
        else:
            done = self.MPI.Request.Waitsome(self.requests)
        if done is None:
            return None
        op_of = self.op_of
        return [op_of[k] for k in done]

    def _poll_politely(self):
        """``Testsome`` with a short sleep between polls: with more ranks than
        cores, a rank spinning in ``Waitsome`` holds the core the rank it
        waits for needs (10 ms per wait here at 8 ranks on 2 cores)."""
        testsome, requests, op_of = self.MPI.Request.Testsome, self.requests, self.op_of
        while True:
            done = testsome(requests)
            if done is None:
                return None
            if done:
                return [op_of[k] for k in done]
            time.sleep(POLITE_SLEEP)

    def test_some(self):
        done = self.MPI.Request.Testsome(self.requests)
        if not done:
            return []
        op_of = self.op_of
        return [op_of[k] for k in done]

    def end(self) -> None:
        pass

    def free(self) -> None:
        for req in self.requests:
            req.Free()
        self.requests = []


def laid_end_to_end(view, pieces, buf: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(rows of piece, its slice of buf)`` per piece, the pieces laid end to
    end in ``buf`` (a packed send, or a staged receive to unpack)."""
    return [(view(piece), buf[a:b]) for piece, (a, b) in zip(pieces, _offsets(pieces))]


def _offsets(pieces):
    """Row offsets of pieces laid end to end."""
    out, at = [], 0
    for _, lo, hi in pieces:
        out.append((at, at + hi - lo))
        at += hi - lo
    return out
