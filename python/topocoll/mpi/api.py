"""Calls shaped like mpi4py's: ``allreduce(sendbuf, recvbuf, op=SUM, comm=...)``.

Each call names a topocoll algorithm (``algorithm="bruck", n=5``) or
``"auto"``, takes buffers as mpi4py takes them (NumPy arrays, any buffer,
``MPI.IN_PLACE``, ``(buf, count, datatype)``, ``[buf, datatype]``) and runs a
plan (:mod:`.plan`) cached per communicator and arguments (:mod:`.cache`),
so a loop of calls resolves, agrees and compiles once; a plan is bound to the
caller's buffers where they come again (no copies), else the call copies its
input into a plan's own buffer and the result out.

Safety (``check=True``, the default): the first call with given arguments
compares a digest of its signature across ranks, point to point; ranks that
disagree on collective, algorithm, parameters, size, type, operator or P all
raise the same one-line :class:`~topocoll.errors.SpecError` before any data
moves. Later calls run the cached plan with no communication but its own; a
rank whose peer has gone on to another call aborts the job with one line
(:mod:`.cache` says why this is safe and where it stops). ``check=False``
skips the first call's agreement (then disagreeing ranks hang, as they do in
MPI).

``algorithm="auto"`` reads a tuning table (``tuning=`` a JSON file or dict,
see :func:`choose`) when given one, else :data:`DEFAULTS`; a row may name
``"mpi"``, the library's own collective.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ParseError, SpecError, StateError, TopocollError
from ..inputs import read_json
from ..operators import MPI_NAMES, properties_text
from ..schedules.ir import Schedule
from ..schedules.registry import lookup, operator_allows
from ..verify.uniform import catalogue_identical, identical_results
from .cache import Entry, _mpi, cache_of, free_cache
from .compile import compile_rank
from .operators import MpiUserOp, Over, Ufunc, as_operator, check_operator
from .plan import TRANSPORTS, Plan, agree
from .plan import plan as make_plan

#: ``algorithm="auto"`` without a tuning table: per collective, the first row
#: whose limits hold (bytes: MPI's convention, :mod:`topocoll.schedules.sizes`).
#: Chosen like MPICH's defaults: latency-optimal recursive exchanges for short
#: vectors, bandwidth-optimal scatter-then-gather for long ones, and only
#: rank-ordered (non-commutative safe) algorithms for user operators.
DEFAULTS = {
    "allreduce": [{"max_bytes": 2048, "algorithm": "pairwise_exchange"},
                  {"commutative": True, "algorithm": "bruck"},
                  {"algorithm": "rabenseifner"}],
    "reduce_scatter": [{"commutative": True, "algorithm": "ring"},
                       {"algorithm": "radix_k"}],
    "alltoall": [{"max_bytes": 256, "algorithm": "bruck"}, {"algorithm": "shift"}],
    "bcast": [{"algorithm": "binomial"}],
    "barrier": [{"algorithm": "dissemination"}],
    "composite": [{"algorithm": "radix_k"}],
}


#: the algorithm name of the MPI library's own collective (``MPI_Allreduce``, ...)
NATIVE = "mpi"
#: the collectives that can delegate to the library's own
NATIVE_COLLECTIVES = ("allreduce", "reduce_scatter", "alltoall", "bcast", "barrier")




# ---- buffers ----------------------------------------------------------------------------------

def as_array(buf, where: str):
    """An mpi4py buffer argument as a NumPy array (or ``MPI.IN_PLACE``)."""
    MPI = _mpi()
    if buf is MPI.IN_PLACE or buf is None or isinstance(buf, np.ndarray):
        return buf
    if isinstance(buf, (tuple, list)):
        from mpi4py.util.dtlib import to_numpy_dtype

        parts = list(buf)
        if len(parts) == 2 and isinstance(parts[1], MPI.Datatype):
            base, count, datatype = parts[0], None, parts[1]
        elif len(parts) == 3 and isinstance(parts[2], MPI.Datatype):
            base, count, datatype = parts
        else:
            raise SpecError(f"{where}: buffer {type(buf).__name__} of {len(parts)} items, expected "
                            "(buf, count, datatype) or [buf, datatype]")
        array = np.frombuffer(memoryview(base), dtype=to_numpy_dtype(datatype)) \
            if not isinstance(base, np.ndarray) else base.reshape(-1).view(to_numpy_dtype(datatype))
        return array if count is None else array[:int(count)]
    try:
        return np.frombuffer(memoryview(buf), dtype=np.uint8)
    except TypeError:
        raise SpecError(f"{where}: {type(buf).__name__} is not a buffer, expected a NumPy array, "
                        "MPI.IN_PLACE or (buf, count, datatype)") from None


# ---- algorithm choice -------------------------------------------------------------------------

def load_tuning(tuning) -> dict:
    """A tuning table: a dict, or a JSON file ``{collective: [row, ...]}``
    whose rows have ``algorithm`` and optional ``params``, ``max_bytes``,
    ``min_p``, ``max_p``, ``commutative``; the first row that holds wins."""
    if tuning is None or isinstance(tuning, dict):
        return tuning or {}
    path = Path(tuning)
    table = read_json(path, what="a tuning table")
    if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
        raise ParseError(f"{path}: expected {{collective: [rows]}}, got {type(table).__name__}")
    for coll, rows in table.items():
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or "algorithm" not in row:
                raise ParseError(f"{path}: {coll}[{i}] has no 'algorithm', expected a row like "
                                 '{"max_bytes": 2048, "algorithm": "bruck"}')
    return table


def choose(collective: str, p: int, nbytes: int, *, commutative: bool, idempotent: bool = False,
           tuning=None, same_result: Callable[[str], bool] | None = None, native: bool = True) -> tuple[str, dict]:
    """The algorithm ``"auto"`` runs: the tuning table's first matching row,
    else :data:`DEFAULTS`; rows whose algorithm does not exist for ``p``,
    needs more of the operator than it is, or (with ``same_result``, a
    predicate on the algorithm's name) may leave ranks with results that
    differ in the last bits, are skipped. A row ``"algorithm": "mpi"``
    names the MPI library's own collective; it is taken only with
    ``native=True`` (the call can hand its operator and type to the
    library) and for the collectives the library has (:data:`NATIVE_COLLECTIVES`)."""
    table = load_tuning(tuning)
    rows = list(table.get(collective, [])) + DEFAULTS.get(collective, [])
    registry_name = "reduce_scatter" if collective == "composite" else collective
    for row in rows:
        if row["algorithm"] == NATIVE and not (native and collective in NATIVE_COLLECTIVES):
            continue
        if nbytes > row.get("max_bytes", float("inf")) or p < row.get("min_p", 0) \
                or p > row.get("max_p", float("inf")):
            continue
        if row.get("commutative") and not commutative:
            continue
        params = dict(row.get("params", {}))
        if row["algorithm"] == NATIVE:   # the library's own: any P, any operator it was handed
            return NATIVE, {}
        try:
            info = lookup(registry_name, row["algorithm"])
        except TopocollError:
            continue
        if info.supports(p, {**info.sweep[0], **params}) \
                and operator_allows(info.needs, commutative=commutative, idempotent=idempotent) \
                and (same_result is None or same_result(row["algorithm"])):
            return row["algorithm"], params
    raise SpecError(f"algorithm='auto': no {collective} algorithm of the table fits P={p}, "
                    f"{nbytes} B, a {properties_text(commutative, idempotent)} operator")


# ---- the plan cache ---------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _schedule(collective: str, algorithm: str, p: int, count: int, itemsize: int, params: tuple) -> Schedule:
    from ..schedules import generate

    return generate(collective, algorithm, p, count=count, itemsize=itemsize, **dict(params))


def _frozen(params: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def _hash(signature) -> int:
    return int.from_bytes(hashlib.sha1(repr(signature).encode()).digest()[:7], "little")


def _checked(comm, signature: tuple, problem: str | None, where: str) -> None:
    """One small allreduce: every rank's signature hash equal and no problem anywhere
    (the per-call check of one-shot calls over the one-sided transport, whose waits no guard watches)."""
    MPI = _mpi()
    h = _hash(signature)
    mine = np.array([h, -h, 1 if problem else 0], dtype=np.int64)
    top = np.empty_like(mine)
    comm.Allreduce(mine, top, op=MPI.MAX)
    if top[0] != h or top[1] != -h or top[2]:
        agree(comm, signature, problem, where)   # collective too: names the rank and the field
        raise SpecError(f"{where}: ranks disagree (signature hashes differ)")


def _op_key(op):
    """The operator as part of a cache key: its name, a predefined or user
    ``MPI.Op`` by handle (``MPI.Op`` is not hashable), anything else (a
    callable, an :class:`Operator`) by identity: the key holds the object, so
    its ``id`` is never reused by another while the key lives."""
    if isinstance(op, str):
        return op
    if isinstance(op, _mpi().Op):
        return ("MPI.Op", op.py2f())
    return op


def _tuning_key(tuning):
    if tuning is None:
        return None
    if isinstance(tuning, dict):   # by value: a table edited between calls is another key
        return json.dumps(tuning, sort_keys=True, default=repr)
    return ("file", str(tuning))   # read once per key


#: where ``MPI_Allreduce`` with a predefined operator is defined for a NumPy type, by kind
#: (MPI-4.1 §6.9.2: arithmetic on integers, floats and complex; max/min not on complex;
#: bitwise and logical ones on integers and bool)
_NATIVE_KINDS = {"sum": "iufc", "prod": "iufc", "max": "iuf", "min": "iuf", "band": "iub", "bor": "iub",
                 "xor": "iub", "land": "iub", "lor": "iub", "lxor": "iub"}
_NATIVE_CHARS = set("?bBhHiIlLqQfdFD")
_MPI_OP_NAME = {name: mpi for mpi, name in MPI_NAMES.items()}


def _native_op(operator, dtype):
    """The ``MPI.Op`` the library's own reduction would run for ``operator``
    on ``dtype``, or None where it has none (callables, over, odd types)."""
    if isinstance(operator, MpiUserOp):
        return operator.mpi_op
    dtype = np.dtype(dtype)
    if isinstance(operator, Ufunc) and dtype.char in _NATIVE_CHARS \
            and dtype.kind in _NATIVE_KINDS.get(operator.name, ""):
        return getattr(_mpi(), _MPI_OP_NAME[operator.name])
    return None


def _bytes(a: np.ndarray):
    return [a.reshape(-1).view(np.uint8), _mpi().BYTE]


def _native_call(collective: str, comm, mpi_op, params: dict) -> Callable:
    """``f(send, recv)``: the library's own collective on the cache's communicator
    (``send is recv``: in place)."""
    MPI = _mpi()
    if collective == "allreduce":
        def run(send, recv):
            comm.Allreduce(MPI.IN_PLACE if send is recv else send, recv, op=mpi_op)
    elif collective == "reduce_scatter":
        def run(send, recv):
            comm.Reduce_scatter_block(send, recv, op=mpi_op)
    elif collective == "alltoall":
        def run(send, recv):
            comm.Alltoall(MPI.IN_PLACE if send is recv else _bytes(send), _bytes(recv))
    elif collective == "bcast":
        root = params.get("root", 0)

        def run(send, recv):
            comm.Bcast(_bytes(recv), root=root)
    else:
        def run(send, recv):
            comm.Barrier()
    return run


def free_plans(comm=None) -> None:
    """Free the cached plans of ``comm`` (default ``MPI.COMM_WORLD``; collective
    over it). A communicator's cache is also freed with the communicator."""
    free_cache(_mpi().COMM_WORLD if comm is None else comm)


def cache_info(comm=None) -> dict | None:
    """What ``comm``'s plan cache holds (None when it has none): ``keys``,
    ``capacity``, ``plans`` (bound and staging plans alive), ``labels``."""
    cache = cache_of(_mpi().COMM_WORLD if comm is None else comm, create=False)
    if cache is None or cache.freed:
        return None
    plans = sum(len(e.bound) + (e._staging is not None) for e in cache.entries.values())
    return {"keys": len(cache), "capacity": cache.capacity, "plans": plans,
            "labels": [e.label for e in cache.entries.values()]}


# ---- one call -----------------------------------------------------------------------------------

def _operator_kind(operator) -> str:
    """The verifier's name for what ``operator`` is, for :mod:`topocoll.verify.uniform`."""
    if isinstance(operator, Ufunc):
        return operator.name
    return "over" if isinstance(operator, Over) else "noncommutative"


def _may_differ(schedule: Schedule, operator, dtype) -> bool:
    """Whether ranks may end a run of ``schedule`` with results that differ in
    the last bits (a different bracketing per rank: Bruck, the n-way
    disseminations; docs/mpi.md, "Same result on every rank")."""
    kind = _operator_kind(operator)
    known = catalogue_identical(schedule.collective, schedule.algorithm, schedule.p, kind, dtype)
    return not (known if known is not None else identical_results(schedule, kind, dtype))


def _entry(name: str, collective: str, algorithm: str, params: dict, shape: tuple, dtype, op, comm, tuning,
           transport: str, check: bool, local_problem: str | None, identical: bool = False,
           native: bool = True) -> Entry:
    """The cache entry of this call: a hit costs one look-up; a miss resolves
    the algorithm, agrees across ranks once and compiles (:mod:`.cache`).
    ``identical``: ``"auto"`` picks only algorithms that leave every rank the
    same bits (the call broadcasts after any other); ``native``: whether
    ``"auto"`` may delegate to the library's own collective."""
    cache = cache_of(comm)
    key = (name, algorithm, _frozen(params) if params else (), shape, dtype, _op_key(op), transport, identical,
           native, _tuning_key(tuning) if tuning is not None else None)
    entry = cache.get(key) if local_problem is None else None
    if entry is not None:
        if entry.checked and check:   # one-sided: no guard watches its waits, so check every call
            _checked(cache.comm, entry.signature, None, name)
        return entry
    return _new_entry(cache, key, name, collective, algorithm, params, shape, dtype, op, tuning, transport,
                      check, local_problem, identical, native)


def _new_entry(cache, key, name, collective, algorithm, params, shape, dtype, op, tuning, transport, check,
               problem, identical, native) -> Entry:
    p = cache.size
    count, row_shape = shape[0], tuple(shape[1:])
    itemsize = int(np.dtype(dtype).itemsize * int(np.prod(row_shape, dtype=np.int64)))
    schedule = operator = call = program = None
    chosen, chosen_params = algorithm, dict(params)
    try:
        operator = as_operator(op)
        if transport not in TRANSPORTS:
            raise SpecError(f"transport={transport!r}, expected one of {', '.join(TRANSPORTS)}")
        reduction = collective in ("allreduce", "reduce_scatter")
        mpi_op = _native_op(operator, dtype) if reduction else None
        can_native = native and name != "composite" and transport == "p2p" and (mpi_op is not None or not reduction)
        if problem is None and count > 0:
            nbytes = count * itemsize // (p if collective == "alltoall" else 1)
            if algorithm == "auto":
                kind = _operator_kind(operator)
                same = (lambda algo: algo == NATIVE or catalogue_identical(collective, algo, p, kind, dtype)
                        is not False) if identical else None
                chosen, auto_params = choose(name if name == "composite" else collective, p, nbytes,
                                             commutative=operator.commutative, idempotent=operator.idempotent,
                                             tuning=tuning, same_result=same, native=can_native)
                chosen_params = {**auto_params, **params}
            if chosen == NATIVE:
                if not native:
                    raise SpecError(f"algorithm='{NATIVE}' is the library's blocking collective, expected a "
                                    "topocoll algorithm (or 'auto') for a split-phase call")
                if not can_native:
                    raise SpecError(f"algorithm='{NATIVE}' (the library's own collective) needs a predefined "
                                    f"operator on a numeric type or a user MPI.Op, transport='p2p', not composite; "
                                    f"{operator.describe()} on {np.dtype(dtype)} over transport={transport!r} is not")
                call = _native_call(collective, cache.comm, mpi_op, chosen_params)
            else:
                schedule = _schedule(collective, chosen, p, count, itemsize, _frozen(chosen_params))
                problem = check_operator(schedule, operator)
                if problem is None and transport == "p2p":
                    program = compile_rank(schedule, cache.rank, separate_input=False)
                    if program.max_tag >= cache.stride:
                        problem = (f"tag {program.max_tag} exceeds the {cache.stride} tags of a cached plan "
                                   f"(MPI_TAG_UB over {cache.capacity} cache slots), expected a schedule with "
                                   "fewer rounds")
    except TopocollError as exc:
        problem = str(exc)
    except Exception as exc:   # noqa: BLE001 - every rank must hear it, not hang
        problem = f"{type(exc).__name__}: {exc}"
    runs = chosen + "".join(f", {k}={v!r}" for k, v in sorted(chosen_params.items()))
    signature = (("call", name), ("algorithm", algorithm), ("parameters", repr(_frozen(params))), ("P", p),
                 ("count", count), ("element", f"{np.dtype(dtype).str}{list(row_shape)}"),
                 ("operator", getattr(operator, "name", repr(op))), ("transport", transport),
                 ("identical", identical),   # a broadcast after the run: every rank or none
                 ("chosen algorithm", runs))
    if check:
        cache.agree(signature, problem, name)
    elif problem:
        raise SpecError(f"{name}: {problem}")
    may_differ = identical and schedule is not None and _may_differ(schedule, operator, dtype)
    label = schedule.label() if schedule is not None else f"{name}/{runs}(p={p})"
    label = f"{label} count={count} {np.dtype(dtype)}{list(row_shape) if row_shape else ''} op={operator.name}"

    def make(slot: int) -> Entry:
        entry = Entry(cache, key, slot, schedule, operator, label, row_shape=row_shape, dtype=dtype, native=call,
                      broadcast=may_differ and name == "allreduce")
        entry.may_differ, entry.signature, entry.checked = may_differ, signature, transport != "p2p"
        if program is not None:
            entry._programs[False] = program
        elif schedule is not None:   # one-sided: a plan of its own (collective, as every rank is here)
            work = np.zeros((count,) + row_shape, dtype=dtype)
            entry._staging = make_plan(schedule, _mpi().IN_PLACE, work, op=operator, comm=cache.comm,
                                       transport=transport)
        return entry
    return cache.insert(key, make)


def _run(entry: Entry, send: np.ndarray, recv: np.ndarray) -> np.ndarray:
    """Run ``entry``'s collective from ``send`` into ``recv`` (``send is recv``:
    in place): on a plan bound to these buffers, else through the staging plan
    (input copied in, result out); then, with ``identical=True`` after an
    algorithm whose results may differ, rank 0's result to every rank."""
    if entry.native is not None:
        entry.native(send, recv)
        return recv
    if entry.schedule is None:   # a zero-count call: nothing moves (MPI)
        return recv
    staging = entry._staging
    if staging is not None and staging._running:
        raise StateError(f"{entry.label}: a call while a split-phase call with the same arguments is in flight, "
                         "expected its wait() first")
    pl = entry.plan_for(send, recv) if not entry.checked else None
    if pl is not None:
        pl.run_owned()
        if entry.broadcast:
            entry.cache.comm.Bcast(recv, root=0)
        return recv
    pl = entry.staging
    pl.recvbuf[...] = send
    pl.start()
    pl.wait()
    if entry.broadcast:
        entry.cache.comm.Bcast(pl.recvbuf, root=0)
    recv[...] = pl.recvbuf
    return recv


def execute(schedule: Schedule, sendbuf, recvbuf=None, *, op="sum", comm=None, transport: str = "p2p"):
    """Run ``schedule`` once on this rank's buffers; return ``recvbuf``.

    Collective; ``sendbuf`` and ``recvbuf`` as in :func:`~.plan.plan`
    (``MPI.IN_PLACE`` allowed). For repeated runs build a plan once instead.
    """
    pl = make_plan(schedule, as_array(sendbuf, "execute"), as_array(recvbuf, "execute"), op=op, comm=comm,
                   transport=transport)
    try:
        return pl.run()
    finally:
        pl.free()


def _vector(sendbuf, recvbuf, where: str):
    """(input, output) arrays with MPI.IN_PLACE resolved (the same array twice)."""
    if type(sendbuf) is np.ndarray and type(recvbuf) is np.ndarray:   # the common case, first
        return sendbuf, recvbuf
    MPI = _mpi()
    send, recv = as_array(sendbuf, where), as_array(recvbuf, where)
    if send is MPI.IN_PLACE or send is None:
        if recv is None:
            raise SpecError(f"{where}: MPI.IN_PLACE without recvbuf, expected the buffer to work in")
        return recv, recv
    if recv is None:
        recv = np.empty_like(send)
    return send, recv


_P2P = "p2p"   # the default's object: a call that names the default transport compares equal, not identical

#: the last allreduce whose plan was bound to its buffers (or that ran the library's collective):
#: (sendbuf, recvbuf, op, comm, algorithm, shape, dtype, plan or None, entry, run, cache). A call with the same
#: objects skips building and hashing the key, but not the cache's clock: whether it hits the memo
#: depends on this rank's objects, so it must leave the cache exactly as a look-up would (the
#: least recently used key is evicted on every rank alike, :mod:`.cache`).
_LAST = None


def allreduce(sendbuf, recvbuf=None, op="sum", *, comm=None, algorithm: str = "auto", tuning=None,
              transport: str = _P2P, check: bool = True, identical: bool = False, **params):
    """``MPI_Allreduce`` with a topocoll algorithm (``algorithm="bruck", n=5``),
    or the library's own (``algorithm="mpi"``; ``"auto"`` picks it where the
    tuning table or :data:`DEFAULTS` say so).

    Returns ``recvbuf`` (allocated when omitted). Bruck and the n-way
    disseminations bracket the reduction differently on each rank, so with
    floating-point sums ranks may end with results that differ in the last
    bits; ``identical=True`` guarantees the same bits everywhere:
    ``"auto"`` then picks only algorithms that give it, and after any other
    algorithm rank 0's result is broadcast (one ``MPI_Bcast`` more).

    The first call with given arguments agrees across ranks and compiles;
    later ones run the cached plan, bound to ``sendbuf`` and ``recvbuf``
    where they come again (:mod:`.cache`, also for what ``check=False`` and a
    mismatch on a later call do).

    Examples
    --------
    Under ``mpiexec -n 4``::

        y = allreduce(x, op=MPI.SUM, algorithm="nway_dissemination", n=3)
    """
    global _LAST
    last = _LAST
    if last is not None and last[0] is sendbuf and last[1] is recvbuf and last[2] is op and last[3] is comm \
            and last[4] is algorithm and tuning is None and not params and not identical and transport is _P2P \
            and sendbuf.dtype is last[6] and sendbuf.shape == last[5]:   # `is`: a miss only takes the long way
        pl, entry, cache = last[7], last[8], last[10]
        if pl is not None:
            if pl.comm is not None:   # not released: the key was neither evicted nor freed
                cache.clock = entry.used = cache.clock + 1
                last[9]()
                return recvbuf
        elif not cache.freed and entry.key in cache.entries:
            cache.clock = entry.used = cache.clock + 1
            last[9](sendbuf, recvbuf)
            return recvbuf
    _LAST = None
    send, recv = _vector(sendbuf, recvbuf, "allreduce")
    problem = None if send is recv or (send.shape == recv.shape and send.dtype == recv.dtype) \
        else _same_shape(send, recv, "allreduce")
    entry = _entry("allreduce", "allreduce", algorithm, params, send.shape, send.dtype, op, comm, tuning, transport,
                   check, problem, identical)
    _run(entry, send, recv)
    if send is sendbuf and recv is recvbuf and not params and tuning is None and transport == "p2p" \
            and not identical and (entry.native is not None or entry.last is not None and entry.last.sendbuf is send
                                   and entry.last.recvbuf is recv):
        pl = None if entry.native is not None else entry.last
        _LAST = (sendbuf, recvbuf, op, comm, algorithm, send.shape, send.dtype, pl, entry,
                 entry.native if pl is None else pl.run_owned, entry.cache)
    return recv


def iallreduce(sendbuf, recvbuf=None, op="sum", *, comm=None, algorithm: str = "auto", tuning=None,
               transport: str = "p2p", check: bool = True, identical: bool = False, **params) -> "SplitRequest":
    """Split-phase allreduce (End et al. 2016 §I, GASPI semantics): returns a
    request whose :meth:`SplitRequest.test` advances the collective by at most
    one round; nothing progresses between calls. ``recvbuf`` holds the result
    once ``test()`` returned True (or after ``wait()``). ``identical=True``:
    as in :func:`allreduce`, but an algorithm whose results may differ is
    refused (a broadcast would block inside ``test()``). ``"auto"`` never
    delegates to the library here (its rounds are not this call's to advance)."""
    send, recv = _vector(sendbuf, recvbuf, "iallreduce")
    problem = _same_shape(send, recv, "iallreduce")
    entry = _entry("allreduce", "allreduce", algorithm, params, send.shape, send.dtype, op, comm, tuning,
                   transport, check, problem, identical, native=False)
    if entry.schedule is None:
        return SplitRequest(None, recv)
    if identical and entry.may_differ:   # the same schedule and operator everywhere: every rank raises
        raise SpecError(f"iallreduce: {entry.schedule.label()} may leave ranks with results that differ in the last "
                        f"bits for op={entry.operator.name} on {np.dtype(send.dtype)}, expected identical=False or "
                        "an algorithm with the same result on every rank (topocoll algorithms)")
    pl = entry.staging
    pl.recvbuf[...] = send
    pl.start_split()
    return SplitRequest(pl, recv)


class SplitRequest:
    """A split-phase collective in flight: ``test()`` / ``wait()``; ``tests``
    counts the ``test()`` calls, ``rounds`` is this rank's number of rounds."""

    def __init__(self, pl: Plan | None, recv: np.ndarray):
        self.plan, self.recvbuf, self.done = pl, recv, pl is None   # None: a zero-count call

    @property
    def tests(self) -> int:
        return self.plan.tests if self.plan else 0

    @property
    def rounds(self) -> int:
        return self.plan.rounds if self.plan else 0

    def test(self) -> bool:
        if not self.done and self.plan.test():
            self.recvbuf[...] = self.plan.recvbuf
            self.done = True
        return self.done

    def wait(self) -> np.ndarray:
        if not self.done:
            self.plan.wait()
            self.recvbuf[...] = self.plan.recvbuf
            self.done = True
        return self.recvbuf


def reduce_scatter(sendbuf, recvbuf=None, op="sum", *, comm=None, algorithm: str = "auto", tuning=None,
                   transport: str = "p2p", check: bool = True, **params):
    """``MPI_Reduce_scatter_block``: ``sendbuf`` holds P blocks of ``m``
    elements; rank r's ``recvbuf`` (m elements) gets block r reduced over all
    ranks in rank order. Algorithms that leave another block on rank r
    (binary swap leaves block ``bitrev(r)``) are fed a permuted input, so the
    call's semantics never depend on the algorithm."""
    MPI = _mpi()
    comm_ = MPI.COMM_WORLD if comm is None else comm
    p = comm_.Get_size()
    send = as_array(sendbuf, "reduce_scatter")
    recv = as_array(recvbuf, "reduce_scatter")
    problem = None
    if send is MPI.IN_PLACE or send is None:
        problem = "MPI.IN_PLACE is not supported here, expected a sendbuf of P blocks"
        send = np.empty((0,), np.float64)
    elif send.shape[0] % p:
        problem = f"sendbuf has {send.shape[0]} elements, expected P={p} equal blocks"
    m = send.shape[0] // p
    if recv is None:
        recv = np.empty((m,) + send.shape[1:], dtype=send.dtype)
    if problem is None and (recv.shape[0] != m or recv.dtype != send.dtype):
        problem = f"recvbuf has {recv.shape[0]} {recv.dtype} elements, expected {m} {send.dtype} (one block)"
    entry = _entry("reduce_scatter", "reduce_scatter", algorithm, params, send.shape, send.dtype, op, comm, tuning,
                   transport, check, problem)
    if entry.native is not None:
        entry.native(np.ascontiguousarray(send), recv)
        return recv
    if entry.schedule is None:
        return recv
    pl = entry.staging
    if entry.owners is None:
        entry.owners = _result_block(entry.schedule)
    owner = entry.owners
    work = pl.recvbuf
    for r in range(p):   # block owner[r] of the schedule carries the caller's block r
        work[owner[r] * m:(owner[r] + 1) * m] = send[r * m:(r + 1) * m]
    pl.run()
    me = owner[comm_.Get_rank()]
    recv[...] = work[me * m:(me + 1) * m]
    return recv


def _result_block(schedule: Schedule) -> list[int]:
    return [int(list(schedule.result_blocks(r))[0]) for r in range(schedule.p)]


def alltoall(sendbuf, recvbuf=None, *, comm=None, algorithm: str = "auto", tuning=None,
             transport: str = "p2p", check: bool = True, **params):
    """``MPI_Alltoall``: block j of ``sendbuf`` goes to rank j; block s of
    ``recvbuf`` comes from rank s (P equal blocks)."""
    MPI = _mpi()
    comm_ = MPI.COMM_WORLD if comm is None else comm
    send, recv = _vector(sendbuf, recvbuf, "alltoall")
    problem = _same_shape(send, recv, "alltoall")
    if problem is None and send.shape[0] % comm_.Get_size():
        problem = f"sendbuf has {send.shape[0]} elements, expected P={comm_.Get_size()} equal blocks"
    entry = _entry("alltoall", "alltoall", algorithm, params, send.shape, send.dtype, "sum", comm, tuning,
                   transport, check, problem)
    return _run(entry, send, recv)


def bcast(buf, root: int = 0, *, comm=None, algorithm: str = "auto", tuning=None, transport: str = "p2p",
          check: bool = True, **params):
    """``MPI_Bcast`` of ``buf`` (in place) from ``root``."""
    array = as_array(buf, "bcast")
    entry = _entry("bcast", "bcast", algorithm, {**params, "root": root}, array.shape, array.dtype, "sum", comm,
                   tuning, transport, check, None)
    return _run(entry, array, array)


def barrier(*, comm=None, algorithm: str = "auto", tuning=None, transport: str = "p2p", check: bool = False,
            **params) -> None:
    """``MPI_Barrier`` with a topocoll algorithm (one-element messages)."""
    entry = _entry("barrier", "barrier", algorithm, params, (1,), np.dtype(np.uint8), "max", comm, tuning,
                   transport, check, None)
    if entry.native is not None:
        entry.native(None, None)
    else:
        entry.staging.run()


@dataclass
class Piece:
    """One rank's finished pixels of a composited image: rows ``start:stop``
    of the image flattened to ``(height·width, 4)``."""

    start: int
    stop: int
    pixels: np.ndarray


def composite(image, *, comm=None, algorithm: str = "auto", k=None, order=None, gather_to: int | None = None,
              tuning=None, transport: str = "p2p", check: bool = True):
    """Sort-last image compositing: ``over`` of every rank's premultiplied
    RGBA float32 ``image`` in depth ``order`` (ranks front to back, default
    rank order), by a compositing schedule (radix-k, binary swap, 2-3 swap,
    direct send, parallel pipeline, shift-based). Returns this rank's
    :class:`Piece`, or with ``gather_to=R`` the whole image on rank R (None
    elsewhere)."""
    MPI = _mpi()
    comm_ = MPI.COMM_WORLD if comm is None else comm
    array = as_array(image, "composite")
    problem = None
    if array.dtype != np.float32 or array.ndim < 2 or array.shape[-1] != 4:
        problem = f"image {array.shape}/{array.dtype}, expected premultiplied RGBA float32 (..., 4)"
        flat = np.zeros((1, 4), np.float32)
    else:
        flat = np.ascontiguousarray(array.reshape(-1, 4))
    params = {"depth_order": None if order is None else tuple(int(r) for r in order), "gather_root": gather_to}
    if k is not None:
        params["k"] = k
    entry = _entry("composite", "reduce_scatter", algorithm, params, flat.shape, flat.dtype, "over", comm, tuning,
                   transport, check, problem)
    if entry.schedule is None:
        return Piece(0, 0, flat[:0].copy()) if gather_to is None else None
    pl = entry.staging
    pl.recvbuf[...] = flat
    pl.run()
    schedule, rank = entry.schedule, comm_.Get_rank()
    if gather_to is not None:
        return pl.recvbuf.reshape(array.shape).copy() if rank == gather_to else None
    blocks = sorted(schedule.result_blocks(rank))
    lo, hi = int(schedule.bounds[blocks[0]]), int(schedule.bounds[blocks[-1] + 1])
    return Piece(lo, hi, pl.recvbuf[lo:hi].copy())


def _same_shape(send: np.ndarray, recv: np.ndarray, where: str) -> str | None:
    if send.shape != recv.shape or send.dtype != recv.dtype:
        return f"sendbuf {send.shape}/{send.dtype} and recvbuf {recv.shape}/{recv.dtype} differ, expected the same"
    return None
