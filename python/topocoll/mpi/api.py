"""Calls shaped like mpi4py's: ``allreduce(sendbuf, recvbuf, op=SUM, comm=...)``.

Each call names a topocoll algorithm (``algorithm="bruck", n=5``) or
``"auto"``, takes buffers as mpi4py takes them (NumPy arrays, any buffer,
``MPI.IN_PLACE``, ``(buf, count, datatype)``, ``[buf, datatype]``) and runs a
plan (:mod:`.plan`) cached per communicator and signature, so a loop of calls
compiles once. The call copies its input into the plan's buffer and the
result out (the one-shot form; bind a :func:`~.plan.plan` to your own buffers
to avoid both copies).

Safety (``check=True``, the default): every call first compares a hash of
its signature across ranks with one 24-byte ``MPI_Allreduce``; ranks that
disagree on collective, algorithm, parameters, size, type, operator or P all
raise the same one-line :class:`~topocoll.errors.SpecError` before any data
moves. ``check=False`` skips that allreduce (then disagreeing ranks hang, as
they do in MPI).

``algorithm="auto"`` reads a tuning table (``tuning=`` a JSON file or dict,
see :func:`choose`) when given one, else :data:`DEFAULTS`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ParseError, SpecError, TopocollError
from ..operators import properties_text
from ..schedules.ir import Schedule
from ..schedules.registry import lookup, operator_allows
from ..verify.uniform import catalogue_identical, identical_results
from .operators import Over, Ufunc, as_operator, check_operator
from .plan import Plan, agree
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


def _mpi():
    from mpi4py import MPI

    return MPI


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
    try:
        table = json.loads(path.read_text())
    except OSError as exc:
        raise ParseError(f"{path}: cannot read the tuning table ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"{path}:{exc.lineno}: not JSON ({exc.msg}), expected a tuning table") from None
    if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
        raise ParseError(f"{path}: expected {{collective: [rows]}}, got {type(table).__name__}")
    for coll, rows in table.items():
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or "algorithm" not in row:
                raise ParseError(f"{path}: {coll}[{i}] has no 'algorithm', expected a row like "
                                 '{"max_bytes": 2048, "algorithm": "bruck"}')
    return table


def choose(collective: str, p: int, nbytes: int, *, commutative: bool, idempotent: bool = False,
           tuning=None, same_result: Callable[[str], bool] | None = None) -> tuple[str, dict]:
    """The algorithm ``"auto"`` runs: the tuning table's first matching row,
    else :data:`DEFAULTS`; rows whose algorithm does not exist for ``p``,
    needs more of the operator than it is, or (with ``same_result``, a
    predicate on the algorithm's name) may leave ranks with results that
    differ in the last bits, are skipped."""
    table = load_tuning(tuning)
    rows = list(table.get(collective, [])) + DEFAULTS.get(collective, [])
    registry_name = "reduce_scatter" if collective == "composite" else collective
    for row in rows:
        if nbytes > row.get("max_bytes", float("inf")) or p < row.get("min_p", 0) \
                or p > row.get("max_p", float("inf")):
            continue
        if row.get("commutative") and not commutative:
            continue
        params = dict(row.get("params", {}))
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


_PLANS: dict[tuple, Plan] = {}


def _hash(signature) -> int:
    return int.from_bytes(hashlib.sha1(repr(signature).encode()).digest()[:7], "little")


def _checked(comm, signature: tuple, problem: str | None, where: str) -> None:
    """One small allreduce: every rank's signature hash equal and no problem anywhere."""
    MPI = _mpi()
    h = _hash(signature)
    mine = np.array([h, -h, 1 if problem else 0], dtype=np.int64)
    top = np.empty_like(mine)
    comm.Allreduce(mine, top, op=MPI.MAX)
    if top[0] != h or top[1] != -h or top[2]:
        agree(comm, signature, problem, where)   # collective too: names the rank and the field
        raise SpecError(f"{where}: ranks disagree (signature hashes differ)")


def _cached_plan(comm, schedule: Schedule, row_shape: tuple, dtype, op, transport: str) -> Plan:
    operator = as_operator(op)
    op_key = operator.name if isinstance(op, str) or isinstance(operator, Ufunc) else id(op)
    key = (comm.py2f(), schedule.label(), schedule.count, row_shape, np.dtype(dtype).str, op_key, transport)
    found = _PLANS.get(key)
    if found is None:
        work = np.zeros((schedule.count,) + tuple(row_shape), dtype=dtype)
        found = make_plan(schedule, _mpi().IN_PLACE, work, op=operator, comm=comm, transport=transport)
        found.signature_key = key
        _PLANS[key] = found
    return found


def free_plans() -> None:
    """Free every cached plan (collective over each plan's communicator)."""
    while _PLANS:
        _, pl = _PLANS.popitem()
        pl.free()


# ---- one call -----------------------------------------------------------------------------------

def _operator_kind(operator) -> str:
    """The verifier's name for what ``operator`` is, for :mod:`topocoll.verify.uniform`."""
    if isinstance(operator, Ufunc):
        return operator.name
    return "over" if isinstance(operator, Over) else "noncommutative"


def _results_may_differ(pl: Plan) -> bool:
    """Whether ranks may end a run of ``pl`` with results that differ in the
    last bits (a different bracketing per rank: Bruck, the n-way
    disseminations; docs/mpi.md, "Same result on every rank")."""
    sched, kind, dtype = pl.schedule, _operator_kind(pl.operator), pl.recvbuf.dtype
    known = catalogue_identical(sched.collective, sched.algorithm, sched.p, kind, dtype)
    return not (known if known is not None else identical_results(sched, kind, dtype))


def _prepare(name: str, collective: str, algorithm: str, params: dict, count: int, row_shape, dtype,
             op, comm, tuning, transport: str, check: bool, local_problem: str | None,
             identical: bool = False) -> Plan:
    """Resolve the algorithm, check agreement, return the cached plan.
    ``identical``: ``"auto"`` picks only algorithms that leave every rank
    the same bits (the caller broadcasts after any other)."""
    MPI = _mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    p = comm.Get_size()
    where = name
    problem = local_problem
    schedule = None
    itemsize = int(np.dtype(dtype).itemsize * int(np.prod(row_shape, dtype=np.int64)))
    operator = None
    try:
        operator = as_operator(op)
        if problem is None and count > 0:
            nbytes = count * itemsize // (p if collective == "alltoall" else 1)
            if algorithm == "auto":
                kind = _operator_kind(operator)
                same = (lambda algo: catalogue_identical(collective, algo, p, kind, dtype) is not False) \
                    if identical else None
                algorithm, auto_params = choose(name if name == "composite" else collective, p, nbytes,
                                                commutative=operator.commutative,
                                                idempotent=operator.idempotent, tuning=tuning,
                                                same_result=same)
                params = {**auto_params, **params}
            schedule = _schedule(collective, algorithm, p, count, itemsize, _frozen(params))
            problem = check_operator(schedule, operator)
    except TopocollError as exc:
        problem = str(exc)
    except Exception as exc:   # noqa: BLE001 - every rank must hear it, not hang
        problem = f"{type(exc).__name__}: {exc}"
    signature = (("call", name), ("algorithm", algorithm), ("parameters", repr(_frozen(params))), ("P", p),
                 ("count", count), ("element", f"{np.dtype(dtype).str}{list(row_shape)}"),
                 ("operator", getattr(operator, "name", repr(op))), ("transport", transport),
                 ("identical", identical))   # a broadcast after the run: every rank or none
    if check or problem:
        if check:
            _checked(comm, signature, problem, where)
        else:
            agree(comm, signature, problem, where)
    if count == 0:   # MPI: a zero-count collective moves nothing
        return None
    return _cached_plan(comm, schedule, tuple(row_shape), dtype, op, transport)


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
    """(input, output) arrays with MPI.IN_PLACE resolved; a problem string or None."""
    MPI = _mpi()
    send, recv = as_array(sendbuf, where), as_array(recvbuf, where)
    if send is MPI.IN_PLACE or send is None:
        if recv is None:
            raise SpecError(f"{where}: MPI.IN_PLACE without recvbuf, expected the buffer to work in")
        return recv, recv
    if recv is None:
        recv = np.empty_like(send)
    return send, recv


def allreduce(sendbuf, recvbuf=None, op="sum", *, comm=None, algorithm: str = "auto", tuning=None,
              transport: str = "p2p", check: bool = True, identical: bool = False, **params):
    """``MPI_Allreduce`` with a topocoll algorithm (``algorithm="bruck", n=5``).

    Returns ``recvbuf`` (allocated when omitted). Bruck and the n-way
    disseminations bracket the reduction differently on each rank, so with
    floating-point sums ranks may end with results that differ in the last
    bits; ``identical=True`` guarantees the same bits everywhere:
    ``"auto"`` then picks only algorithms that give it, and after any other
    algorithm rank 0's result is broadcast (one ``MPI_Bcast`` more).

    Examples
    --------
    Under ``mpiexec -n 4``::

        y = allreduce(x, op=MPI.SUM, algorithm="nway_dissemination", n=3)
    """
    send, recv = _vector(sendbuf, recvbuf, "allreduce")
    problem = _same_shape(send, recv, "allreduce")
    pl = _prepare("allreduce", "allreduce", algorithm, params, send.shape[0], send.shape[1:], send.dtype, op,
                  comm, tuning, transport, check, problem, identical)
    return _run_through(pl, send, recv, broadcast=identical and pl is not None and _results_may_differ(pl))


def _run_through(pl: Plan | None, send: np.ndarray, recv: np.ndarray, broadcast: bool = False) -> np.ndarray:
    """The one-shot form: input into the plan's buffer, run, result out
    (``broadcast``: rank 0's result replaces every rank's first)."""
    if pl is not None:   # None: a zero-count call, nothing moves
        pl.recvbuf[...] = send
        pl.run()
        if broadcast:
            pl.comm.Bcast(pl.recvbuf, root=0)
        recv[...] = pl.recvbuf
    return recv


def iallreduce(sendbuf, recvbuf=None, op="sum", *, comm=None, algorithm: str = "auto", tuning=None,
               transport: str = "p2p", check: bool = True, identical: bool = False, **params) -> "SplitRequest":
    """Split-phase allreduce (End et al. 2016 §I, GASPI semantics): returns a
    request whose :meth:`SplitRequest.test` advances the collective by at most
    one round; nothing progresses between calls. ``recvbuf`` holds the result
    once ``test()`` returned True (or after ``wait()``). ``identical=True``:
    as in :func:`allreduce`, but an algorithm whose results may differ is
    refused (a broadcast would block inside ``test()``)."""
    send, recv = _vector(sendbuf, recvbuf, "iallreduce")
    problem = _same_shape(send, recv, "iallreduce")
    pl = _prepare("allreduce", "allreduce", algorithm, params, send.shape[0], send.shape[1:], send.dtype, op,
                  comm, tuning, transport, check, problem, identical)
    if pl is None:
        return SplitRequest(None, recv)
    if identical and _results_may_differ(pl):   # the same schedule and operator everywhere: every rank raises
        raise SpecError(f"iallreduce: {pl.schedule.label()} may leave ranks with results that differ in the last "
                        f"bits for op={pl.operator.name} on {pl.recvbuf.dtype}, expected identical=False or an "
                        "algorithm with the same result on every rank (topocoll algorithms)")
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
    pl = _prepare("reduce_scatter", "reduce_scatter", algorithm, params, send.shape[0], send.shape[1:],
                  send.dtype, op, comm, tuning, transport, check, problem)
    if pl is None:
        return recv
    owner = _result_block(pl.schedule)
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
    pl = _prepare("alltoall", "alltoall", algorithm, params, send.shape[0], send.shape[1:], send.dtype, "sum",
                  comm, tuning, transport, check, problem)
    return _run_through(pl, send, recv)


def bcast(buf, root: int = 0, *, comm=None, algorithm: str = "auto", tuning=None, transport: str = "p2p",
          check: bool = True, **params):
    """``MPI_Bcast`` of ``buf`` (in place) from ``root``."""
    array = as_array(buf, "bcast")
    pl = _prepare("bcast", "bcast", algorithm, {**params, "root": root}, array.shape[0], array.shape[1:],
                  array.dtype, "sum", comm, tuning, transport, check, None)
    if pl is None:
        return array
    pl.recvbuf[...] = array
    pl.run()
    array[...] = pl.recvbuf
    return array


def barrier(*, comm=None, algorithm: str = "auto", tuning=None, transport: str = "p2p", check: bool = False,
            **params) -> None:
    """``MPI_Barrier`` with a topocoll algorithm (one-element messages)."""
    pl = _prepare("barrier", "barrier", algorithm, params, 1, (), np.uint8, "max", comm, tuning, transport,
                  check, None)
    pl.run()


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
    pl = _prepare("composite", "reduce_scatter", algorithm, params, flat.shape[0], (4,), np.float32, "over",
                  comm, tuning, transport, check, problem)
    if pl is None:
        return Piece(0, 0, flat[:0].copy()) if gather_to is None else None
    pl.recvbuf[...] = flat
    pl.run()
    schedule, rank = pl.schedule, comm_.Get_rank()
    if gather_to is not None:
        return pl.recvbuf.reshape(array.shape).copy() if rank == gather_to else None
    blocks = sorted(schedule.result_blocks(rank))
    lo, hi = int(schedule.bounds[blocks[0]]), int(schedule.bounds[blocks[-1] + 1])
    return Piece(lo, hi, pl.recvbuf[lo:hi].copy())


def _same_shape(send: np.ndarray, recv: np.ndarray, where: str) -> str | None:
    if send.shape != recv.shape or send.dtype != recv.dtype:
        return f"sendbuf {send.shape}/{send.dtype} and recvbuf {recv.shape}/{recv.dtype} differ, expected the same"
    return None
