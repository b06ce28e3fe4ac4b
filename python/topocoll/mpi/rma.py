"""One-sided transport of a plan: put the data, then a notification the
target polls — the model of GASPI's ``gaspi_write_notify`` the butterfly
allreduce paper is built on (End et al. 2016 §I-II), over MPI-3 RMA.

Each rank exposes one window: a slot per message it receives plus one
64-bit notification word per slot. At plan creation every rank tells each
sender where its messages go (slot offset, length, notification word), in
the order the verifier matches them (source, tag, posting order). A send
packs if needed, ``Put``s the payload, ``Flush``es it to the target (remote
completion, so the notification can never overtake the data), then writes
the run number into the notification word with an atomic
``Accumulate(REPLACE)``. The target polls its notification words after
``Win_sync``; a word equal to the current run number means the slot holds
this run's payload, which is then copied to its rows. Numbering runs, rather
than clearing words, keeps a plan reusable without a reset; a barrier closes
each run so that no rank's next-run put can overwrite a slot its target has
not consumed yet (what ``gaspi_barrier`` between iterations does).
"""

from __future__ import annotations

import time

import numpy as np

from .compile import RECV, SEND
from .transport import POLITE_SLEEP, _offsets, as_bytes, laid_end_to_end, oversubscribed


class OneSided:
    def __init__(self, plan, view):
        from mpi4py import MPI

        self.MPI = MPI
        program, comm = plan.program, plan.comm
        self.comm = comm
        p = comm.Get_size()
        self.run_id = 0
        # receive slots: payload bytes first, then one int64 notification word per receive
        recv_ops = [i for i, k in enumerate(program.kind) if k == RECV]
        sizes = []
        self.unpacks: dict[int, list] = {}
        self.slot_of: dict[int, tuple[int, int]] = {}
        itemsize = plan.recvbuf.itemsize * int(np.prod(plan.recvbuf.shape[1:], dtype=np.int64))
        at = 0
        for i in recv_ops:
            into, unpack = program.layout[i]
            nbytes = (into[2] - into[1]) * itemsize
            self.slot_of[i] = (at, nbytes)
            targets = [into] if unpack is None else unpack
            self.unpacks[i] = [(piece, (a * itemsize, b * itemsize)) for piece, (a, b) in zip(targets, _offsets(targets))]
            at += nbytes
            sizes.append(nbytes)
        flag_base = (at + 7) // 8 * 8
        total = flag_base + 8 * len(recv_ops)
        self.win = MPI.Win.Allocate(max(total, 8), disp_unit=1, comm=comm)
        memory = np.frombuffer(self.win.tomemory(), dtype=np.uint8)
        self.slots = memory
        self.flags = memory[flag_base:flag_base + 8 * len(recv_ops)].view(np.int64)
        self.flags[:] = 0
        self.recv_ops = np.array(recv_ops, dtype=np.int64)
        self.views = {i: [(view(piece), memory[a + self.slot_of[i][0]:b + self.slot_of[i][0]])
                          for piece, (a, b) in self.unpacks[i]] for i in recv_ops}
        # tell every sender where its messages land, in matching order per channel
        outgoing: list[list] = [[] for _ in range(p)]
        seq: dict[tuple[int, int], int] = {}
        for k, i in enumerate(recv_ops):
            key = (program.peer[i], program.tag[i])
            n = seq.get(key, 0)
            seq[key] = n + 1
            offset, nbytes = self.slot_of[i]
            outgoing[program.peer[i]].append((program.tag[i], n, offset, nbytes, flag_base + 8 * k))
        incoming = comm.alltoall(outgoing)
        where = {(src, tag, n): (offset, nbytes, flag) for src, rows in enumerate(incoming)
                 for tag, n, offset, nbytes, flag in rows}
        self.sends: dict[int, tuple] = {}
        self.pack: dict[int, list] = {}
        seq = {}
        for i, kind in enumerate(program.kind):
            if kind != SEND:
                continue
            key = (program.peer[i], program.tag[i])
            n = seq.get(key, 0)
            seq[key] = n + 1
            pack, sent = program.layout[i]
            buf = view(sent)
            if pack is not None:
                self.pack[i] = laid_end_to_end(view, pack, buf)
            offset, nbytes, flag = where[(program.peer[i], program.tag[i], n)]
            payload = as_bytes(buf)[0]
            if payload.nbytes != nbytes:
                raise RuntimeError(f"send {i} to rank {program.peer[i]} has {payload.nbytes} bytes, "
                                   f"its target slot {nbytes}")
            self.sends[i] = (program.peer[i], payload, offset, flag)
        self.note = np.zeros(1, dtype=np.int64)
        self.completed: list[int] = []
        self.polite = oversubscribed()
        self.win.Lock_all(MPI.MODE_NOCHECK)

    def begin(self) -> None:
        self.run_id += 1
        self.note[0] = self.run_id
        self.pending = self.recv_ops.copy()
        self.completed = []

    def start_send(self, i: int) -> None:
        MPI = self.MPI
        for src, dst in self.pack.get(i, ()):
            dst[...] = src
        target, payload, offset, flag = self.sends[i]
        if payload.nbytes:
            self.win.Put([payload, MPI.BYTE], target, target=[offset, payload.nbytes, MPI.BYTE])
            self.win.Flush(target)   # remote completion first: the notification must not overtake the data
        self.win.Accumulate([self.note, MPI.INT64_T], target, target=[flag, 1, MPI.INT64_T], op=MPI.REPLACE)
        self.win.Flush(target)
        self.completed.append(i)

    def unpack(self, i: int) -> None:
        for dst, src in self.views[i]:
            dst.reshape(-1).view(np.uint8)[...] = src

    def _poll(self):
        out, self.completed = self.completed, []
        if len(self.pending):
            self.win.Sync()
            index = np.flatnonzero(self.flags[self._flag_index(self.pending)] == self.run_id)
            if index.size:
                out.extend(self.pending[index].tolist())
                self.pending = np.delete(self.pending, index)
        return out

    def _flag_index(self, ops: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.recv_ops, ops)

    def wait_some(self):
        while True:
            out = self._poll()
            if out:
                return out
            if not len(self.pending):
                return None
            self.comm.Iprobe()   # let the library progress active-message RMA
            if self.polite:
                time.sleep(POLITE_SLEEP)

    def test_some(self):
        return self._poll()

    def end(self) -> None:
        self.comm.Barrier()

    def free(self) -> None:
        self.win.Unlock_all()
        self.win.Free()
