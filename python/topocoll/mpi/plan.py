"""Plans: one rank's part of a schedule, compiled once, run many times.

``plan(schedule, sendbuf, recvbuf)`` is collective over ``comm``. It checks
that every rank agrees on the collective (collective, algorithm, parameters,
P, count, element type, operator, transport) before any data moves, compiles
this rank's operations (:mod:`.compile`), duplicates the communicator (so
concurrent collectives never mix), allocates the arena and creates one
persistent request per message, like an MPI-4 persistent collective
(``MPI_Allreduce_init``). ``start()`` copies the input blocks in and posts
every receive; ``wait()`` completes the requests with ``Waitsome`` over one
request array and runs each send, reduction and copy as soon as its
dependencies have completed, so reductions overlap the transfers still in
flight wherever the schedule allows (radix-k's out-of-order rounds,
shift-based compositing's overlap). Reductions run NumPy ufuncs, the over
operator runs the Rust kernel (:func:`topocoll.imaging.over`): no
per-element Python.

Split phase (End et al. 2016 §I, GASPI semantics): after ``start()``,
``test()`` advances the collective by at most one round of this rank and
never blocks; the collective makes no progress outside it. With the peers'
data already there, the number of ``test()`` calls to completion equals this
rank's number of rounds (``plan.rounds``).

Failure: disagreement or a bad argument on any rank raises the same
:class:`~topocoll.errors.SpecError` on every rank before data moves (no
hang); an exception once data moves (a user operator raising, an MPI error)
prints ``topocoll: rank R: error: ...`` and aborts the whole job, since the
other ranks may wait for messages that will never come.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import sys
import time
from collections import Counter
from typing import Callable

import numpy as np

from ..errors import SpecError, StateError, TopocollError
from ..schedules.ir import Schedule
from .compile import COPY, RECV, REDUCE, SEND, RankProgram, compile_rank
from .operators import Operator, as_operator, check_operator

TRANSPORTS = ("p2p", "rma")


def _mpi():
    from mpi4py import MPI

    return MPI


def abort(comm, message: str) -> None:
    """Print one line naming this rank and end every rank of the job."""
    MPI = _mpi()
    rank = MPI.COMM_WORLD.Get_rank()
    print(f"topocoll: rank {rank}: error: {message}", file=sys.stderr, flush=True)
    # let the launcher forward the line before the abort tears its stdio down: under load, Hydra's
    # proxy can be killed with the line still in its pipe (seen: a job that ended with no message)
    time.sleep(0.25)
    MPI.COMM_WORLD.Abort(1)
    os._exit(1)   # MPICH's MPI_Abort may return to the caller before the launcher kills it


def _signature(schedule: Schedule, buf: np.ndarray, operator: Operator, transport: str) -> tuple:
    params = sorted((k, repr(v)) for k, v in schedule.params.items())
    return (("collective", schedule.collective), ("algorithm", schedule.algorithm),
            ("parameters", hashlib.sha1(repr(params).encode()).hexdigest()[:12]),
            ("P", schedule.p), ("count", schedule.count), ("blocks", schedule.nblocks),
            ("element", f"{buf.dtype.str}{list(buf.shape[1:])}"),
            ("operator", operator.name), ("transport", transport))


def agree(comm, signature: tuple, problem: str | None, where: str = "plan") -> None:
    """Collective: raise the same one-line error on every rank if any rank has
    a ``problem`` or the ranks' signatures differ; return otherwise."""
    everyone = comm.allgather((problem, signature))
    for r, (prob, _) in enumerate(everyone):
        if prob:
            raise SpecError(f"{where}: rank {r}: {prob}")
    mine = everyone[0][1]
    for r, (_, sig) in enumerate(everyone[1:], start=1):
        if sig != mine:
            for (name, a), (_, b) in zip(mine, sig):
                if a != b:
                    raise SpecError(f"{where}: ranks disagree on {name}: rank 0 has {a}, rank {r} has {b}; "
                                    "expected every rank to call the same collective")


def _check_buffers(schedule: Schedule, sendbuf, recvbuf):
    """The buffers as arrays (sendbuf may be MPI.IN_PLACE), or a problem."""
    MPI = _mpi()
    in_place = sendbuf is MPI.IN_PLACE or sendbuf is None
    if recvbuf is None:
        if in_place:
            return None, None, "recvbuf is required with MPI.IN_PLACE"
        recvbuf = np.empty_like(np.asarray(sendbuf))
    recvbuf = np.asarray(recvbuf)
    if not recvbuf.flags.c_contiguous or not recvbuf.flags.writeable:
        return None, None, "recvbuf must be a writeable C-contiguous array"
    if recvbuf.ndim == 0 or recvbuf.shape[0] != schedule.count:
        return None, None, (f"recvbuf has {recvbuf.shape[0] if recvbuf.ndim else 0} elements, "
                            f"expected count={schedule.count}")
    if in_place:
        return recvbuf, recvbuf, None
    sendbuf = np.asarray(sendbuf)
    if not sendbuf.flags.c_contiguous:
        return None, None, "sendbuf must be C-contiguous (the plan sends from it)"
    if np.shares_memory(sendbuf, recvbuf):
        return None, None, "sendbuf overlaps recvbuf, expected MPI.IN_PLACE or separate buffers"
    if sendbuf.shape != recvbuf.shape or sendbuf.dtype != recvbuf.dtype:
        return None, None, (f"sendbuf {sendbuf.shape}/{sendbuf.dtype} and recvbuf {recvbuf.shape}/{recvbuf.dtype} "
                            "differ, expected the same shape and type")
    return sendbuf, recvbuf, None


class Plan:
    """A compiled, bound collective; see the module docstring. Build with :func:`plan`."""

    def __init__(self, schedule: Schedule, program: RankProgram, comm, sendbuf, recvbuf,
                 operator: Operator, transport: str, progress: str = "auto", *, tag_base: int = 0, guard=None,
                 label: str | None = None):
        self.schedule, self.program, self.comm = schedule, program, comm
        self.label = program.label if label is None else label   # what the guard's errors call this run
        # a plan of the one-shot calls' cache (:mod:`.cache`): its tags start at tag_base on the
        # cache's communicator, and its waits go through the guard that turns mismatches into errors
        self.tag_base, self.guard = tag_base, guard
        self.sendbuf, self.recvbuf = sendbuf, recvbuf
        self.operator, self.transport = operator, transport
        self.tests = 0
        self.first_done: int | None = None
        self._running = False
        row = recvbuf.shape[1:]
        self._arena = np.empty((program.arena_rows,) + row, dtype=recvbuf.dtype)
        spaces = (recvbuf, self._arena, sendbuf)
        view = lambda piece: spaces[piece[0]][piece[1]:piece[2]]   # noqa: E731
        n = len(program)
        self._kind = program.kind
        self._dependents = program.dependents()
        self._round = program.round
        # a receive waits for its deps and for its message: one count more
        self._nwait0 = [len(d) + (k == RECV) for d, k in zip(program.deps, program.kind)]
        self._ready0 = [i for i in range(n) if self._nwait0[i] == 0]
        self._action: list[Callable | None] = [None] * n
        self._transport = _make_transport(transport, self, view)
        for i in range(n):
            k = self._kind[i]
            if k == REDUCE:
                self._action[i] = operator.apply(
                    [(view(d), view(s), view(o)) for d, s, o in program.layout[i]], program.side[i])
            elif k == COPY:
                self._action[i] = _copier([view(s) for s in program.layout[i][0]],
                                          [view(d) for d in program.layout[i][1]])
        self._chan_next, self._chan_prev = _send_channels(program)
        self._per_round = Counter(program.round)   # operations left per round, at a run's start
        self._round_order = sorted(self._per_round)
        self.rounds = len(self._per_round)
        self._script = _script(self, program) if transport == "p2p" and _scripted(program, recvbuf, progress) \
            else None
        self._inputs = [(sendbuf[lo:hi], recvbuf[lo:hi]) for lo, hi in program.input_rows] \
            if sendbuf is not recvbuf else []

    # ---- running -----------------------------------------------------------------------------
    def start(self) -> None:
        """Begin one run: copy the input blocks in, post every receive, start
        what is ready. :class:`~topocoll.errors.StateError` (on this rank
        only, nothing posted) while a run is in progress or after ``free()``."""
        self._expect_idle("start()")
        if self._script is not None:
            self._begin_script()
        else:
            self._begin(split=False)

    def _begin_script(self) -> None:
        try:   # not a `with`: its object per run costs ~0.4 µs on the latency-bound path
            self._running = "script"
            self._copy_inputs()
            self._transport.begin()
        except Exception as exc:   # noqa: BLE001 - any failure once data moves ends the job
            self._abort(exc)

    def wait(self) -> np.ndarray:
        """Complete the run; return ``recvbuf``. :class:`~topocoll.errors.StateError`
        (on this rank only) before ``start()`` or after ``free()``."""
        if not self._running:
            self._expect_open("wait()")
            raise StateError(f"{self.program.label}: wait() with no run in progress, expected start() first")
        if self._running == "script":
            try:   # not a `with`, as in _begin_script
                for step in self._script:
                    step()
            except Exception as exc:   # noqa: BLE001 - any failure once data moves ends the job
                self._abort(exc)
            self._running = False
            return self.recvbuf
        with self._failing_aborts():
            n = len(self._kind)
            self._gate = None   # a split-phase run finished by wait(): no more round gate
            if self._held:
                self._advance(self._release())
            while self._done < n:
                finished = self._transport.wait_some()
                if finished is None:
                    raise RuntimeError(f"{n - self._done} operations cannot start and no transfer is in flight")
                self._complete_transfers(finished)
            self._end()
        return self.recvbuf

    def run(self) -> np.ndarray:
        """``start()`` then ``wait()``."""
        self.start()
        return self.wait()

    def runner(self) -> Callable[[], None]:
        """``start()`` then ``wait()`` as one call without the misuse checks,
        for an owner that never misuses its plan (the one-shot calls' cache):
        a scripted two-sided run is then one Python frame and its steps."""
        if self._script is None or self.transport != "p2p":
            return self.run
        script, inputs, transport = self._script, self._inputs, self._transport

        def run() -> None:
            self._running = "script"
            try:   # not a `with`, as in _begin_script
                for src, dst in inputs:
                    dst[...] = src
                transport.begin()
                for step in script:
                    step()
            except Exception as exc:   # noqa: BLE001 - any failure once data moves ends the job
                self._abort(exc)
            self._running = False
        return run

    def start_split(self) -> None:
        """Begin a split-phase run: only this rank's first round is started;
        each :meth:`test` advances at most one round."""
        self._expect_idle("start_split()")
        self._begin(split=True)

    def test(self) -> bool:
        """Split phase: advance by at most one round, never block; True when done
        (and, as ``MPI_Test`` on an inactive request, when no run was started)."""
        if not self._running:
            self._expect_open("test()")
            return True
        if self._running == "script":
            # start() began a scripted run (small messages): its inputs are in and its transport has
            # begun, but no step ran (steps run in wait()). test() must not block, so the run goes
            # on in the dataflow engine from that state: MPI_Start then MPI_Test polling
            with self._failing_aborts():
                self._dataflow_state(split=False)
                self._advance(list(self._ready0))
        with self._failing_aborts():
            if self._done == len(self._kind):   # nothing left (P = 1): done without a call that counts
                return self._end()
            self.tests += 1
            finished = self._transport.test_some()
            if finished:
                self._complete_transfers(finished)
            if self._gate is not None and self._left[self._gate] == 0:
                self._gate = self._next_round()
                self._advance(self._release())
            if self._done == len(self._kind):
                return self._end()
        return False

    def free(self) -> None:
        """Release the requests, the window and the duplicated communicator
        (collective; again after ``free()`` does nothing)."""
        if self.comm is None:
            return
        if self._running:
            raise StateError(f"{self.program.label}: free() while a run is in progress, expected wait() first")
        self._transport.free()
        self.comm.Free()
        self.comm = None

    def release(self) -> None:
        """Free the requests (and window) but not the communicator, which this
        plan borrows (a cached plan, :mod:`.cache`; local for two-sided plans)."""
        if self.comm is None:
            return
        if self._running:
            raise StateError(f"{self.program.label}: released while a run is in progress, expected wait() first")
        self._transport.free()
        self.comm = None

    # ---- the dependency engine ---------------------------------------------------------------
    def _expect_open(self, call: str) -> None:
        if self.comm is None:
            raise StateError(f"{self.program.label}: {call} after free(), expected a plan not yet freed")

    def _expect_idle(self, call: str) -> None:
        """Misuse is this rank's own mistake: raised here, before anything
        is posted, instead of aborting the job as failures once data moves do."""
        self._expect_open(call)
        if self._running:
            raise StateError(f"{self.program.label}: {call} while a run is in progress, expected wait() first")

    def _copy_inputs(self) -> None:
        for src, dst in self._inputs:
            dst[...] = src

    def _abort(self, exc: BaseException) -> None:
        """End the job with one line naming this plan and the failure."""
        detail = str(exc) if isinstance(exc, TopocollError) else f"{type(exc).__name__}: {exc}"
        abort(self.comm, f"{self.program.label}: {detail}")

    def _begin(self, split: bool) -> None:
        with self._failing_aborts():
            self._copy_inputs()
            self._dataflow_state(split)
            self._transport.begin()
            self._advance(list(self._ready0))

    def _dataflow_state(self, split: bool) -> None:
        """The dependency engine's state at a run's start (nothing done yet)."""
        self._running = True
        self.tests = 0
        self._waiting = list(self._nwait0)
        self._done = 0
        self._sent: set[int] = set()
        self._deferred: set[int] = set()
        self._held: list[int] = []
        self._left = dict(self._per_round)
        self._rounds_ahead = list(self._round_order)
        self._gate = self._next_round() if split else None

    def _end(self) -> bool:
        self._transport.end()
        self._running = False
        self.first_done = self.tests
        return True

    def _next_round(self):
        while self._rounds_ahead:
            r = self._rounds_ahead.pop(0)
            if self._left[r]:
                return r
        return None

    def _failing_aborts(self):
        return _AbortOnError(self)

    def _release(self) -> list[int]:
        held, self._held = self._held, []
        return held

    def _finish(self, i: int, ready: list[int]) -> None:
        waiting = self._waiting
        waiting[i] = -1
        self._done += 1
        self._left[self._round[i]] -= 1
        for j in self._dependents[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)

    def _advance(self, ready: list[int]) -> None:
        """Run ready operations until none is left (sends start, local work runs)."""
        kind, gate = self._kind, self._gate
        while ready:
            i = ready.pop()
            if gate is not None and self._round[i] > gate:
                self._held.append(i)
                continue
            k = kind[i]
            if k == SEND:
                self._start_send(i, ready)
                continue
            if k == RECV:
                self._transport.unpack(i)
            else:
                self._action[i]()
            self._finish(i, ready)

    def _start_send(self, i: int, ready: list[int]) -> None:
        # MPI matches by posting order: sends of one (peer, tag) channel start
        # in operation order even when a later one is ready first
        before = self._chan_prev[i]
        if before is not None and before not in self._sent:
            self._deferred.add(i)
            return
        self._sent.add(i)
        self._transport.start_send(i)
        after = self._chan_next[i]
        if after is not None and after in self._deferred:
            self._deferred.discard(after)
            ready.append(after)

    def _complete_transfers(self, finished: list[int]) -> None:
        ready: list[int] = []
        for i in finished:
            if self._kind[i] == SEND:   # the send buffer may be reused: the op completes
                self._finish(i, ready)
            else:                       # a message arrived: one condition of the receive
                self._waiting[i] -= 1
                if self._waiting[i] == 0:
                    ready.append(i)
        self._advance(ready)


class _AbortOnError:
    """Any exception once a run has begun ends the job with one line."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None:
            self.plan._abort(exc)
        return False


#: largest message (bytes) of a plan that runs as a fixed script by default
SCRIPT_BYTES = 1 << 18
PROGRESS = ("auto", "dataflow", "script")


def _scripted(program: RankProgram, recvbuf: np.ndarray, progress: str) -> bool:
    if progress != "auto":
        return progress == "script"
    row = recvbuf.itemsize * int(np.prod(recvbuf.shape[1:], dtype=np.int64))
    largest = 0
    for k, layout in zip(program.kind, program.layout):
        if k == SEND:
            _, (_, lo, hi) = layout
            largest = max(largest, (hi - lo) * row)
    return largest <= SCRIPT_BYTES


def _script(plan: "Plan", program: RankProgram) -> list[Callable]:
    """The run as a fixed list of calls, for latency-bound plans.

    Python's cost per completion dominates small messages (the dataflow
    engine's bookkeeping is several µs per run at P = 2), so a plan whose
    messages are small replays an order fixed at compile time: the dataflow
    engine run once with every transfer completing in a chosen order. Ready
    sends and local work go first (lowest index first); when only waiting is
    left, it waits for the pending transfer of the lowest (round, index):
    messages of a round depend only on earlier rounds, so this order cannot
    deadlock where the engine would not. Heaps keep the compile O(n log n)
    in the plan's n operations. Nothing is left to decide at run time.
    """
    transport = plan._transport
    requests, request_of = transport.requests, transport.request_of
    kind, rounds, dependents = program.kind, program.round, plan._dependents
    waiting = [len(d) for d in program.deps]   # a receive's message is tracked apart
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    # every receive is posted when a run starts; sends join when they start
    in_flight = [(rounds[i], i) for i, k in enumerate(kind) if k == RECV]
    heapq.heapify(in_flight)
    arrived: set[int] = set()     # receives waited for whose dependencies are not done
    deps_done: set[int] = set()   # receives whose dependencies are done, not yet waited for
    started: set[int] = set()
    deferred: set[int] = set()
    steps: list[Callable] = []
    done = 0

    def finish(i):
        nonlocal done
        done += 1
        for j in dependents[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)

    def complete_receive(i):
        steps.extend(_assign(dst, src) for src, dst in transport.unpacks.get(i, ()))
        finish(i)

    while done < len(kind):
        while ready:
            i = heapq.heappop(ready)
            k = kind[i]
            if k == SEND:
                before = plan._chan_prev[i]
                if before is not None and before not in started:   # MPI's posting order per channel
                    deferred.add(i)
                    continue
                steps.extend(_assign(dst, src) for src, dst in transport.pack.get(i, ()))
                steps.append(requests[request_of[i]].Start)
                started.add(i)
                heapq.heappush(in_flight, (rounds[i], i))
                after = plan._chan_next[i]
                if after in deferred:
                    deferred.discard(after)
                    heapq.heappush(ready, after)
            elif k == RECV:
                if i in arrived:
                    arrived.discard(i)
                    complete_receive(i)
                else:
                    deps_done.add(i)
            else:
                steps.append(plan._action[i])
                finish(i)
        if done == len(kind):
            break
        if not in_flight:
            raise RuntimeError(f"{program.label}: rank {program.rank}: no order completes the schedule")
        _, i = heapq.heappop(in_flight)
        steps.append(requests[request_of[i]].Wait if plan.guard is None
                     else plan.guard.waiter(requests[request_of[i]], program.peer[i], plan.label))
        if kind[i] == SEND:
            finish(i)
        elif i in deps_done:
            deps_done.discard(i)
            complete_receive(i)
        else:
            arrived.add(i)
    leftover = [requests[request_of[i]] for _, i in in_flight]   # sends nothing waited for
    if leftover and plan.guard is not None:
        steps.append(plan.guard.waiter_all(leftover, [program.peer[i] for _, i in in_flight], plan.label))
    elif leftover:
        steps.append(lambda: _waitall(leftover))
    return steps


def _assign(dst: np.ndarray, src: np.ndarray) -> Callable:
    return lambda: np.copyto(dst, src)


def _waitall(requests) -> None:
    from mpi4py import MPI

    MPI.Request.Waitall(requests)


def _send_channels(program: RankProgram):
    """For each send: the previous and the next send of its (peer, tag) channel."""
    n = len(program)
    prev: list[int | None] = [None] * n
    nxt: list[int | None] = [None] * n
    last: dict[tuple[int, int], int] = {}
    for i in range(n):
        if program.kind[i] == SEND:
            key = (program.peer[i], program.tag[i])
            if key in last:
                prev[i], nxt[last[key]] = last[key], i
            last[key] = i
    return nxt, prev


def _copier(src: list[np.ndarray], dst: list[np.ndarray]):
    pairs = list(zip(src, dst))
    if any(np.shares_memory(s, d) for s, d in pairs if s is not d):
        def copy_through():   # overlapping blocks of one buffer: read everything first
            values = [s.copy() for s, _ in pairs]
            for v, (_, d) in zip(values, pairs):
                d[...] = v
        return copy_through

    def copy():
        for s, d in pairs:
            d[...] = s
    return copy


def _make_transport(name: str, plan: Plan, view):
    if name == "p2p":
        from .transport import PointToPoint
        return PointToPoint(plan, view)
    from .rma import OneSided
    return OneSided(plan, view)


def plan(schedule: Schedule, sendbuf, recvbuf=None, *, op="sum", comm=None, transport: str = "p2p",
         progress: str = "auto") -> Plan:
    """Compile this rank's part of ``schedule`` and bind it to the buffers.

    Collective over ``comm`` (default ``MPI.COMM_WORLD``).

    Parameters
    ----------
    schedule : Schedule
        Generated for ``p == comm.size`` ranks (:func:`topocoll.schedules.generate`).
    sendbuf : array or MPI.IN_PLACE
        This rank's input, ``schedule.count`` elements along axis 0 (the
        blocks it has no input for, e.g. a broadcast's non-root, are not read).
    recvbuf : array, optional
        The output (the schedule's ``data`` buffer), like ``sendbuf``;
        allocated when omitted. Refill ``sendbuf`` in place between runs.
    op : str, MPI.Op, callable or Operator
        ``sum``, ``prod``, ``max``, ``min``, ``band``, ``bor``, ``xor``,
        ``over`` (premultiplied RGBA, the Rust kernel), a predefined
        ``MPI.Op``, or ``f(left, right) -> array``.
    transport : {"p2p", "rma"}
        Two-sided persistent requests, or MPI-3 one-sided puts followed by a
        notification the target polls (:mod:`.rma`).
    progress : {"auto", "dataflow", "script"}
        ``dataflow``: each operation runs as soon as its dependencies are
        done (``Waitsome``); ``script``: a completion order fixed at compile
        time (least Python per run); ``auto``: script when every message is
        at most :data:`SCRIPT_BYTES`, else dataflow. Split phase and the
        one-sided transport always run dataflow.

    Examples
    --------
    ``mpiexec -n 4 python -c "..."``::

        s = generate("allreduce", "bruck", comm.size, count=1024)
        pl = plan(s, x, y, op="sum")
        for _ in range(100):
            pl.start(); pl.wait()     # y holds the sum of every rank's x
    """
    MPI = _mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    problem, program = None, None
    operator = None
    try:
        operator = as_operator(op)
        if transport not in TRANSPORTS:
            raise SpecError(f"transport={transport!r}, expected one of {', '.join(TRANSPORTS)}")
        if progress not in PROGRESS:
            raise SpecError(f"progress={progress!r}, expected one of {', '.join(PROGRESS)}")
        if schedule.p != comm.Get_size():
            raise SpecError(f"schedule is for p={schedule.p} ranks, the communicator has {comm.Get_size()}")
        problem = check_operator(schedule, operator)
        if problem is not None:
            raise SpecError(problem)
        sendbuf, recvbuf, problem = _check_buffers(schedule, sendbuf, recvbuf)
        if problem is None:
            operator.check(recvbuf)
            program = compile_rank(schedule, comm.Get_rank(), separate_input=sendbuf is not recvbuf)
            tag_ub = comm.Get_attr(MPI.TAG_UB)
            if program.max_tag > tag_ub:
                problem = (f"tag {program.max_tag} exceeds MPI_TAG_UB={tag_ub} of this MPI library, "
                           "expected a schedule with fewer rounds")
    except TopocollError as exc:
        problem = str(exc)
    except Exception as exc:   # noqa: BLE001 - a malformed schedule: every rank must hear it, not hang
        problem = f"{type(exc).__name__}: {exc}"
    dummy = np.empty((0,), np.uint8) if recvbuf is None else recvbuf
    name = operator.name if operator is not None else repr(op)
    signature = _signature(schedule, dummy, operator or _Named(name), transport)
    agree(comm, signature, problem, where="plan")
    return Plan(schedule, program, comm.Dup(), sendbuf, recvbuf, operator, transport, progress)


class _Named:
    def __init__(self, name):
        self.name = name
