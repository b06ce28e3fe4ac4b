"""Plans of the one-shot calls, cached per communicator and agreed once.

A one-shot call (``allreduce(x, y, algorithm="auto")``) used to choose its
algorithm, hash its signature and compare the hash across ranks with one
``MPI_Allreduce`` on every call: 240–320 µs per ``auto`` call up to 4 KiB at
P = 2 on this machine, against 3 µs for the same algorithm as a persistent
plan. Here a call costs a dictionary look-up more than the plan it runs
(about 0.5 µs; BENCHMARKS.md, "MPI one-shot calls").

The cache
---------
One :class:`PlanCache` per communicator, stored as an attribute of it
(``MPI_Comm_create_keyval`` with a delete callback), so it is freed with the
communicator (``comm.Free()``; ``MPI_COMM_WORLD``'s lives as long as the
process). It holds at most :data:`CACHE_SIZE` keys, least recently used
evicted first. A key is what the call is, never where its data lives:
(collective, algorithm as requested, its parameters, count, element shape and
type, operator, transport, ``identical``, the tuning table). Under a key: the
schedule, this rank's compiled program (compiled once per in-place/separate
input), and plans *bound* to buffers: a plan for the caller's own ``sendbuf``
/ ``recvbuf`` (no copies; at most :data:`BINDINGS` buffer pairs per key,
least recently used rebound first; bound when the same buffers come twice in
a row, or at once from :data:`BIND_BYTES`) and a staging plan on buffers of
its own (the input is copied in, the result out) for the others. A call whose
buffers are not those a plan was bound to never runs that plan: buffers are
compared by identity, then by address, and a bound plan holds references to
its buffers, so an address it was bound to cannot be freed and reused by
another array while the binding lives. Rebinding makes new persistent requests
for the new buffers from the same compiled program (local, no communication).

Agreeing once, and why hits need no collective
----------------------------------------------
Every rank changes its cache only inside a call, as a function of the call's
key: a miss inserts the key (evicting the least recently used one when
full), a hit marks it most recently used (the cache's call clock). A repeated
``allreduce`` on the same objects skips building the key
(``api._LAST``) but still ticks the clock: whether it skips depends on this
rank's objects, which other ranks need not share. The key is a pure function of the call's
arguments, and every argument in it is one the ranks must pass alike: count,
type, operator and communicator as MPI requires for every collective
(MPI-4.1 §6.1), algorithm, parameters, transport and tuning table as this
module requires. So in a correct program the ranks' caches hold the same keys
in the same order after every call, every rank hits where one hits, and a hit
runs the plan every rank agreed on when the key was inserted. Agreement is
therefore needed on misses only: the first call with a key exchanges a 16-byte
digest of its signature (and whether the rank has a problem with the call)
with every other rank, point to point, before any data moves; any difference
raises the same one-line :class:`~topocoll.errors.SpecError` on every rank
(naming the rank and the field, via one ``allgather`` of the signatures).
The evictions follow from the keys, so no eviction is ever agreed either.

What a hit cannot check by itself is a program that breaks the rule on a
later call: rank 0 calls with 8 elements, rank 1 with 16, both keys cached.
That is caught without a per-call collective by the messages themselves.
Every cached plan of a communicator runs on one duplicate of it and in a tag
range of its own (its cache slot; slots are given lowest-free-first, as
consistently as the keys), the agreement uses tag 0, and a rank that has
waited a while (:data:`POLLS` unsuccessful tests) for a message or send from
peer ``s`` probes for any message from ``s`` that its run did not post a
receive for. MPI does not let messages of one sender on one communicator
overtake each other (MPI-4.1 §3.5), and a rank finishes a call only once its
sends have completed, so a pending message from ``s`` of another tag range,
or an agreement message, while this rank still waits for ``s``'s message
of this call, means ``s`` has gone on to another call without sending it:
the ranks' calls differ. The rank then aborts the job with one line naming
both calls (:func:`~topocoll.mpi.plan.abort`: the other ranks may have
messages in flight that nothing will ever match, so no clean unwinding
exists), after the message has stood for :data:`GRACE_S` (a large message
that has matched but still streams cannot pass as a mismatch). The fast path
pays nothing for this: the probes run only once a wait has stalled.

Limits, said plainly: a mismatch where no rank has sent anything the others
can see (every rank of the mismatch waits to receive first) still hangs, as
it would in MPI. At P = 2 every allreduce of the catalogue has rank 1 send
before it waits (`mpi/tests/test_cache.py`), so any two
allreduce calls that differ are caught; an allreduce on rank 0 against a
binomial broadcast from rank 0 on rank 1 (both wait first) is not. A call
that delegates to the library's own collective (``algorithm="mpi"``, or a
tuning row naming it) runs inside ``MPI_Allreduce``, where no probe reaches:
there the key carries only what MPI requires equal anyway (and the tuning
table, agreed on the first call).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict

import numpy as np

from ..errors import SpecError
from .compile import compile_rank
from .plan import Plan, abort, agree
from .transport import POLITE_SLEEP, oversubscribed

#: keys held per communicator
CACHE_SIZE = 16
#: buffer pairs a key's plan stays bound to (double buffering needs two)
BINDINGS = 2
#: messages of at least this many bytes bind the plan to the caller's buffers on first sight;
#: smaller ones bind when the same buffers come twice in a row (a copy costs less than a rebind)
BIND_BYTES = 1 << 16
#: unsuccessful tests before a waiting rank probes for another call's messages
POLLS = 1024
#: seconds a foreign message must stand before it is called a mismatch
GRACE_S = 1.0
#: tag of the agreement messages; cached plans use the tags above it, a range per slot
AGREE_TAG = 0


_MPI = None


def _mpi():
    """mpi4py's MPI, imported on first use (importing it initialises MPI)."""
    global _MPI
    if _MPI is None:
        from mpi4py import MPI

        _MPI = MPI
    return _MPI


def digest(signature) -> int:
    """A 62-bit digest of a signature (the same on every rank: no per-process salt)."""
    return int.from_bytes(hashlib.sha1(repr(signature).encode()).digest()[:8], "little") >> 2


class Guard:
    """Waits of the cached plans of one communicator that turn a mismatch into an error.

    ``wait(requests, peers, label)`` completes ``requests`` (to or from the
    ranks ``peers``); after :data:`POLLS` unsuccessful tests it probes each
    peer for a message of another call (module docstring)."""

    def __init__(self, cache: "PlanCache"):
        self.cache = cache
        self.polite = oversubscribed()

    def waiter(self, request, peer: int, label: str):
        """A step of a script: complete one request."""
        test = request.Test
        requests, peers = [request], (peer,)

        def wait():
            if not test():
                self.wait(requests, peers, label)
        return wait

    def waiter_all(self, requests, peers, label: str):
        testall = _mpi().Request.Testall
        peers = tuple(sorted(set(peers)))

        def wait():
            if not testall(requests):
                self.wait(requests, peers, label)
        return wait

    def wait(self, requests, peers, label: str) -> None:
        MPI = _mpi()
        testall = MPI.Request.Testall
        polls, seen = 0, {}
        while not testall(requests):
            polls += 1
            if polls % POLLS == 0:
                seen = self.probe(peers, seen, label)
            if self.polite:
                time.sleep(POLITE_SLEEP)

    def wait_some(self, requests, peers, label: str):
        """``Waitsome`` over ``requests`` with the same watch (the dataflow engine's wait)."""
        testsome = _mpi().Request.Testsome
        polls, seen = 0, {}
        while True:
            done = testsome(requests)
            if done is None or done:
                return done
            polls += 1
            if polls % POLLS == 0:
                seen = self.probe(tuple(sorted(set(peers))), seen, label)
            if self.polite:
                time.sleep(POLITE_SLEEP)

    def probe(self, peers, seen: dict, label: str) -> dict:
        """Peers with a message this wait did not post for: since when (abort once it stood GRACE_S)."""
        MPI = _mpi()
        comm, status, now = self.cache.comm, MPI.Status(), time.monotonic()
        still = {}
        for peer in peers:
            if comm.Iprobe(source=peer, tag=MPI.ANY_TAG, status=status):
                tag = status.Get_tag()
                first = seen.get(peer, now)
                if now - first >= GRACE_S:
                    abort(comm, f"{label}: rank {comm.Get_rank()} waits for rank {peer}, which has gone on to "
                                f"{self.cache.describe_tag(tag)}; the ranks' calls differ, expected every rank "
                                "to make the same calls (count, type, operator, algorithm, parameters) in the "
                                "same order")
                still[peer] = first
        return still


class Entry:
    """One key of the cache: its schedule, compiled programs and bound plans."""

    def __init__(self, cache: "PlanCache", key, slot: int, schedule, operator, label: str, *, row_shape=(),
                 dtype=np.float64, native=None, broadcast: bool = False):
        self.cache, self.key, self.slot, self.schedule = cache, key, slot, schedule
        self.operator, self.label, self.native, self.broadcast = operator, label, native, broadcast
        self.row_shape, self.dtype = tuple(row_shape), np.dtype(dtype)
        self.tag_base = 1 + slot * cache.stride
        self._programs: dict[bool, object] = {}
        self.bound: OrderedDict[tuple, Plan] = OrderedDict()   # (send address, recv address) -> plan
        self.last: Plan | None = None       # the plan run last, for the identity check
        self.seen: tuple | None = None      # buffer addresses of the last call that did not bind
        self._staging: Plan | None = None
        self.owners: list[int] | None = None   # reduce_scatter: the block each rank ends with
        self.used = 0

    def program(self, separate_input: bool):
        found = self._programs.get(separate_input)
        if found is None:
            found = compile_rank(self.schedule, self.cache.rank, separate_input=separate_input)
            self._programs[separate_input] = found
        return found

    def _bind(self, sendbuf, recvbuf) -> Plan:
        program = self.program(sendbuf is not recvbuf)
        pl = Plan(self.schedule, program, self.cache.comm, sendbuf, recvbuf, self.operator, "p2p",
                  tag_base=self.tag_base, guard=self.cache.guard, label=self.label)
        pl.owner = self
        pl.run_owned = pl.runner()
        return pl

    @property
    def staging(self) -> Plan:
        """The plan on buffers of its own (the input is copied in, the result out)."""
        if self._staging is None:
            work = np.zeros((self.schedule.count,) + self.row_shape, dtype=self.dtype)
            self._staging = self._bind(work, work)
        return self._staging

    def plan_for(self, send: np.ndarray, recv: np.ndarray) -> Plan | None:
        """The plan bound to exactly these buffers, binding one when it pays;
        None: run through the staging plan."""
        last = self.last
        if last is not None and last.recvbuf is recv and last.sendbuf is send:
            return last
        for pl in self.bound.values():   # the same objects as another binding (alternating buffers)
            if pl.recvbuf is recv and pl.sendbuf is send:
                self.last = pl
                return pl
        if not _bindable(send, recv):
            return None
        where = (_address(send), _address(recv))
        found = self.bound.get(where)
        if found is not None:
            self.bound.move_to_end(where)
            self.last = found
            return found
        if recv.nbytes < BIND_BYTES and where != self.seen:
            self.seen = where
            return None
        if len(self.bound) >= BINDINGS:
            _, old = self.bound.popitem(last=False)
            if old is self.last:
                self.last = None
            old.release()
        pl = self._bind(send, recv)
        self.bound[where] = pl
        self.last = pl
        return pl

    def free(self) -> None:
        for pl in [*self.bound.values(), self._staging]:
            if pl is None:
                continue
            if pl.comm is self.cache.comm:
                pl.release()   # borrows the cache's communicator
            else:
                pl.free()      # a one-sided plan with a communicator of its own (collective, as evictions are)
        self.bound.clear()
        self._staging = self.last = None


def _bindable(send: np.ndarray, recv: np.ndarray) -> bool:
    """Buffers a plan can send from and receive into directly."""
    if not (recv.flags.c_contiguous and recv.flags.writeable and send.flags.c_contiguous):
        return False
    return send is recv or not np.shares_memory(send, recv)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class PlanCache:
    """The cached plans of one communicator (module docstring)."""

    def __init__(self, comm):
        MPI = _mpi()
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.capacity = CACHE_SIZE
        self.stride = (int(self.comm.Get_attr(MPI.TAG_UB)) - 1) // self.capacity
        self.entries: dict[tuple, Entry] = {}
        self.clock = 0   # calls so far: an entry's ``used`` is the clock at its last call (least recent: lowest)
        self.guard = Guard(self)
        self.freed = False

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key) -> Entry | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.clock = entry.used = self.clock + 1
        return entry

    def describe_tag(self, tag: int) -> str:
        if tag == AGREE_TAG:
            return "a call it had not made before (its cache missed where this rank's hit)"
        slot = (tag - 1) // self.stride
        for entry in self.entries.values():
            if entry.slot == slot:
                return f"the cached {entry.label}"
        return f"a call this rank has no plan for (tag {tag})"

    def agree(self, signature: tuple, problem: str | None, where: str) -> None:
        """Collective (on a miss): every rank's signature digest and problem
        flag to every other rank, point to point on tag 0; the same one-line
        error on every rank if any rank has a problem or the digests differ."""
        MPI = _mpi()
        mine = np.array([digest(signature), 1 if problem else 0], dtype=np.int64)
        everyone = np.empty((self.size, 2), dtype=np.int64)
        everyone[self.rank] = mine
        peers = [r for r in range(self.size) if r != self.rank]
        recvs = [self.comm.Irecv(everyone[r], source=r, tag=AGREE_TAG) for r in peers]
        sends = [self.comm.Isend(mine, dest=r, tag=AGREE_TAG) for r in peers]
        self.guard.wait(recvs + sends, peers, f"{where} (agreeing on a new call)")
        if (everyone[:, 1] != 0).any() or (everyone[:, 0] != mine[0]).any():
            agree(self.comm, signature, problem, where)   # collective too: names the rank and the field
            raise SpecError(f"{where}: ranks disagree on the call (their signatures' digests differ); "
                            "expected every rank to call the same collective")

    def insert(self, key, make) -> Entry:
        """Insert ``make(slot)`` under ``key``, evicting the least recently used key when full."""
        if len(self.entries) >= self.capacity:
            old = min(self.entries.values(), key=lambda e: e.used)
            del self.entries[old.key]
            old.free()
        used = {e.slot for e in self.entries.values()}
        slot = min(s for s in range(self.capacity) if s not in used)
        entry = make(slot)
        self.clock = entry.used = self.clock + 1
        self.entries[key] = entry
        return entry

    def free(self) -> None:
        """Release every plan and the duplicate communicator (collective over it)."""
        if self.freed:
            return
        self.freed = True
        for entry in self.entries.values():
            entry.free()
        self.entries.clear()
        self.comm.Free()


_KEYVAL = None
_WORLD: PlanCache | None = None


def _delete(comm, keyval, cache) -> None:
    cache.free()


def cache_of(comm, create: bool = True) -> PlanCache | None:
    """The plan cache of ``comm`` (None: ``MPI.COMM_WORLD``; created on first
    use: collective, one ``MPI_Comm_dup``); None when ``create`` is false and
    there is none."""
    global _KEYVAL, _WORLD
    if comm is None and _WORLD is not None:   # the common case, first
        return _WORLD
    MPI = _mpi()
    if comm is None or comm is MPI.COMM_WORLD or comm == MPI.COMM_WORLD:
        if _WORLD is None and create:
            _WORLD = PlanCache(MPI.COMM_WORLD)
        return _WORLD
    if _KEYVAL is None:
        _KEYVAL = MPI.Comm.Create_keyval(delete_fn=_delete)
    found = comm.Get_attr(_KEYVAL)
    if found is None and create:
        found = PlanCache(comm)
        comm.Set_attr(_KEYVAL, found)
    return found


def free_cache(comm) -> None:
    """Free ``comm``'s cached plans now (collective); the next call starts afresh."""
    global _WORLD
    MPI = _mpi()
    if comm is MPI.COMM_WORLD or comm == MPI.COMM_WORLD:
        if _WORLD is not None:
            _WORLD.free()
            _WORLD = None
        return
    if _KEYVAL is not None and comm.Get_attr(_KEYVAL) is not None:
        comm.Delete_attr(_KEYVAL)   # runs _delete
