"""Every reduction algorithm with every operator, against the MPI library
(``python -m topocoll.mpi.check --operators``).

For each allreduce and reduce-scatter algorithm (and its main parameter
sets) and each operator — MPI's predefined ones and user operators that are
non-commutative (2×2 integer matrix products, as a callable and as a user
``MPI.Op``), non-commutative but idempotent (``first``), commutative but not
idempotent, and commutative and idempotent — the call either returns exactly
what ``MPI_Allreduce`` / ``MPI_Reduce_scatter_block`` return with the same
operator (rank order for non-commutative ones), or is refused on every rank
with one line naming what the algorithm needs. Nothing is filtered out
before the call: the refusal is what is tested. ``algorithm="auto"`` with
a tuning table that lists algorithms needing more of the operator first
(:data:`AUTO_TUNING`) must run, with the library's result, for every operator.

Rank 0 prints one line per pair, ``OK operators <collective> <algorithm>
params=<json> op=<name> ran|refused ...`` (``MISMATCH`` when the result
differs, the refusal was not the operator's, or ranks heard different
errors), so that a test can hold every decision against the symbolic
verifier's (``tests/test_mpi.py``).
"""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

from ..errors import SpecError
from ..schedules.registry import catalogue
from . import api
from .operators import Operator

#: (collective, algorithm) parameter sets beyond the defaults: the ones whose
#: operator needs differ (pairwise leftover=last) or whose structure does
EXTRA_PARAMS = {"bruck": [{"n": 2}], "nway_dissemination": [{"n": 2}], "nway_dissemination_unadapted": [{"n": 2}],
                "pairwise_exchange": [{"leftover": "last"}], "radix_k": [{"k": "primes"}]}

#: predefined operators: (name, MPI.Op, values drawn from)
PREDEFINED = [("SUM", MPI.SUM, (-50, 50)), ("PROD", MPI.PROD, (-2, 3)), ("MAX", MPI.MAX, (-50, 50)),
              ("MIN", MPI.MIN, (-50, 50)), ("BAND", MPI.BAND, (0, 64)), ("BOR", MPI.BOR, (0, 64)),
              ("BXOR", MPI.BXOR, (0, 64)), ("LAND", MPI.LAND, (0, 2)), ("LOR", MPI.LOR, (0, 2)),
              ("LXOR", MPI.LXOR, (0, 2))]

#: which verifier operator (:data:`topocoll.verify.OPERATORS`) each tested operator is
VERIFIER_OP = {"SUM": "sum", "PROD": "prod", "MAX": "max", "MIN": "min", "BAND": "band", "BOR": "bor",
               "BXOR": "xor", "LAND": "land", "LOR": "lor", "LXOR": "lxor", "matmul": "noncommutative",
               "matmul_mpi_op": "noncommutative", "add_callable": "noncommutative",
               "first": "noncommutative_idempotent", "add_commutative": "sum",
               "max_commutative_idempotent": "max"}


def _matrices(mem) -> np.ndarray:
    return np.frombuffer(mem, dtype=np.int64).reshape(-1, 2, 2)


def _mpi_matmul(inmem, inoutmem, datatype):
    """``inout = in @ inout`` on 2×2 int64 matrices (MPI's ``in ∘ inout``, in first)."""
    left, right = _matrices(inmem), _matrices(inoutmem)
    right[...] = left @ right


def _mpi_first(inmem, inoutmem, datatype):
    _matrices(inoutmem)[...] = _matrices(inmem)


def _matmul(left, right):
    return left @ right


def _first(left, right):
    return left.copy()


def _cases(p: int):
    yield "allreduce", "auto", {}
    yield "reduce_scatter", "auto", {}
    for info in catalogue().values():
        if info.collective not in ("allreduce", "reduce_scatter"):
            continue
        for extra in [{}, *EXTRA_PARAMS.get(info.name, [])]:
            params = {**info.sweep[0], **extra}
            params.pop("gather_root", None)
            params.pop("depth_order", None)
            if info.supports(p, params):
                yield info.collective, info.name, params


#: ``algorithm="auto"`` with a tuning table whose first rows need more than
#: most operators are: "auto" must skip them, never refuse or run them wrongly
AUTO_TUNING = {"allreduce": [{"algorithm": "butterfly_virtual"}, {"algorithm": "ring"}, {"algorithm": "bruck"}],
               "reduce_scatter": [{"algorithm": "ring"}]}


def _call(collective: str, send: np.ndarray, op, comm, algorithm: str, params: dict) -> np.ndarray:
    call = api.allreduce if collective == "allreduce" else api.reduce_scatter
    if algorithm == "auto":
        return call(send, op=op, comm=comm, algorithm="auto", tuning=AUTO_TUNING)
    return call(send, op=op, comm=comm, algorithm=algorithm, **params)


def _library(collective: str, send: np.ndarray, op, comm, datatype=None) -> np.ndarray:
    p = comm.Get_size()
    if collective == "allreduce":
        want = np.empty_like(send)
        comm.Allreduce(send if datatype is None else [send, datatype], want if datatype is None else [want, datatype],
                       op=op)
        return want
    want = np.empty((send.shape[0] // p,) + send.shape[1:], dtype=send.dtype)
    comm.Reduce_scatter_block(send if datatype is None else [send, datatype],
                              want if datatype is None else [want, datatype], op=op)
    return want


def _one(report, collective, name, params, op_name, ours, send, want) -> None:
    comm = report.comm
    label = f"operators {collective} {name} params={json.dumps(params, sort_keys=True)} op={op_name}"
    try:
        got = _call(collective, send, ours, comm, name, params)
    except SpecError as exc:
        heard = comm.allgather(str(exc))
        ok = len(set(heard)) == 1 and " needs " in heard[0]
        report.case(f"{label} refused: {heard[0]}", [] if ok else [f"refusal not the operator's: {heard}"])
        return
    report.case(f"{label} ran == MPI", [] if np.array_equal(got, want) else ["differs from the library"])


def check_operators(report, seed: int, count: int = 3) -> None:
    """Every (algorithm, operator) pair: the library's result, or refused."""
    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(seed + rank)
    matrix_type = MPI.INT64_T.Create_contiguous(4).Commit()
    user_ops = {"matmul": MPI.Op.Create(_mpi_matmul, commute=False),
                "first": MPI.Op.Create(_mpi_first, commute=False)}
    try:
        for collective, name, params in _cases(p):
            n = count * p if collective == "reduce_scatter" else count
            for op_name, mpi_op, (lo, hi) in PREDEFINED:
                send = rng.integers(lo, hi, size=n).astype(np.int64)
                _one(report, collective, name, params, op_name, mpi_op, send, _library(collective, send, mpi_op, comm))
            for op_name, ours, reference in (
                    ("add_commutative", Operator(np.add, commutative=True, name="add_commutative"), MPI.SUM),
                    ("add_callable", np.add, MPI.SUM),
                    ("max_commutative_idempotent", Operator(np.maximum, commutative=True, idempotent=True,
                                                            name="max_commutative_idempotent"), MPI.MAX)):
                send = rng.integers(-50, 50, size=n).astype(np.int64)
                _one(report, collective, name, params, op_name, ours, send, _library(collective, send, reference, comm))
            mats = rng.integers(-1, 2, size=(n, 2, 2)).astype(np.int64)
            for op_name, ours, reference in (("matmul", _matmul, user_ops["matmul"]),
                                             ("matmul_mpi_op", user_ops["matmul"], user_ops["matmul"]),
                                             ("first", Operator(_first, idempotent=True, name="first"),
                                              user_ops["first"])):
                want = _library(collective, mats, reference, comm, matrix_type)
                _one(report, collective, name, params, op_name, ours, mats, want)
            api.free_plans()   # a communicator per cached plan: keep MPI's context ids few
    finally:
        for op in user_ops.values():
            op.Free()
        matrix_type.Free()
