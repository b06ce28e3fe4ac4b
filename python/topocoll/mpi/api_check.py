"""Checks of the mpi4py-shaped calls against the MPI library's own
collectives, and of split-phase round counts (``python -m topocoll.mpi.check --suite``)."""

from __future__ import annotations

import numpy as np

from .compile import RECV


def _algorithms(collective: str, p: int, *, commutative: bool = True, depth_order: bool = False):
    """Names of the algorithms the calls are checked with; ``depth_order``:
    only those that composite in a given depth order (what ``composite`` runs)."""
    from ..schedules import catalogue

    for info in catalogue().values():
        if info.collective == collective and info.supports(p, info.sweep[0]) and not info.needs.idempotent \
                and (commutative or not info.needs.commutative) \
                and (not depth_order or "depth_order" in info.params):
            yield info.name


def check_api(report, seed: int) -> None:
    """Each call beside the library's collective on the same data."""
    from mpi4py import MPI

    from . import api

    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(seed + rank)
    x = rng.integers(-1000, 1000, size=2 * p + 3).astype(np.float64)   # integers: sums are exact in float64
    want = np.empty_like(x)
    comm.Allreduce(x, want, op=MPI.SUM)
    for name in [*_algorithms("allreduce", p), "auto"]:
        got = api.allreduce(x, op=MPI.SUM, comm=comm, algorithm=name)
        report.case(f"api allreduce({name}) == MPI_Allreduce", [] if np.array_equal(got, want) else ["differs"])
    y = x.copy()
    name, params = ("bruck", {"n": 2}) if p > 2 else ("pairwise_exchange", {})
    api.allreduce(MPI.IN_PLACE, y, op="sum", comm=comm, algorithm=name, **params)
    report.case(f"api allreduce(MPI.IN_PLACE, {name} {params}) == MPI_Allreduce", [] if np.array_equal(y, want) else [1])
    raw = bytearray(x.tobytes())
    got = api.allreduce((raw, x.size, MPI.DOUBLE), op=MPI.SUM, comm=comm, algorithm="rabenseifner")
    report.case("api allreduce((buf, count, MPI.DOUBLE)) == MPI_Allreduce", [] if np.array_equal(got, want) else [1])

    m = 3
    blocks = rng.integers(-50, 50, size=p * m).astype(np.float64)
    want_rs = np.empty(m)
    comm.Reduce_scatter_block(blocks, want_rs, op=MPI.SUM)
    for name in _algorithms("reduce_scatter", p):
        got = api.reduce_scatter(blocks, op=MPI.SUM, comm=comm, algorithm=name)
        report.case(f"api reduce_scatter({name}) == MPI_Reduce_scatter_block",
                    [] if np.array_equal(got, want_rs) else ["differs"])

    send = rng.integers(0, 1 << 30, size=p * 4).astype(np.int64)
    want_a2a = np.empty_like(send)
    comm.Alltoall(send, want_a2a)
    for name in [*_algorithms("alltoall", p), "auto"]:
        got = api.alltoall(send, comm=comm, algorithm=name)
        report.case(f"api alltoall({name}) == MPI_Alltoall", [] if np.array_equal(got, want_a2a) else ["differs"])

    root = p - 1
    buf = rng.integers(0, 100, size=9).astype(np.int32) if rank == root else np.zeros(9, np.int32)
    want_b = buf.copy()
    comm.Bcast(want_b, root=root)
    api.bcast(buf, root=root, comm=comm, algorithm="binomial")
    report.case("api bcast(binomial, root=P-1) == MPI_Bcast", [] if np.array_equal(buf, want_b) else ["differs"])
    for name in _algorithms("barrier", p):
        api.barrier(comm=comm, algorithm=name)
    report.case("api barrier(every algorithm) completes", [])
    check_composite(report, seed)


def check_composite(report, seed: int) -> None:
    """``composite`` against the serial over-composition (float64), per algorithm."""
    from ..composite import tolerance_for
    from ..imaging import serial_composite
    from . import api

    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    images = np.random.default_rng(seed).random((p, 6, 5, 4)).astype(np.float32)
    images[..., :3] *= images[..., 3:]
    order = list(reversed(range(p)))
    want = serial_composite(list(images), order, dtype=np.float64).reshape(-1, 4)
    tol = tolerance_for(np.float32, p)
    for name in _algorithms("reduce_scatter", p, commutative=False, depth_order=True):
        piece = api.composite(images[rank], comm=comm, algorithm=name, order=order)
        err = float(np.abs(piece.pixels - want[piece.start:piece.stop]).max()) if piece.stop > piece.start else 0.0
        pieces = comm.allgather((piece.start, piece.stop))
        covered = sorted(pieces) == sorted(set(pieces)) and sum(b - a for a, b in pieces) == want.shape[0]
        report.case(f"api composite({name}, order=reversed) pieces == serial over",
                    [] if err <= tol and covered else [f"error {err:.2e}, covered={covered}"])
    full = api.composite(images[rank], comm=comm, algorithm="radix_k", order=order, gather_to=0)
    bad = [] if rank != 0 or float(np.abs(full.reshape(-1, 4) - want).max()) <= tol else ["gathered image differs"]
    report.case("api composite(radix_k, gather_to=0) == serial over", bad)


def check_identical(report, seed: int) -> None:
    """``identical=True``: every rank ends with the same bits (float32 sums
    by Bruck and the n-way dissemination bracket differently per rank, so
    without it they may not); ``iallreduce`` refuses such an algorithm."""
    from ..errors import SpecError
    from . import api

    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    x = np.random.default_rng(seed + rank).standard_normal(1000).astype(np.float32)
    for name, params in (("bruck", {"n": 1}), ("nway_dissemination", {"n": 1}), ("auto", {})):
        plain = api.allreduce(x, op="sum", comm=comm, algorithm=name, **params)
        same = api.allreduce(x, op="sum", comm=comm, algorithm=name, identical=True, **params)
        everyone = comm.allgather(same.tobytes())
        plains = comm.allgather(plain.tobytes())
        differing = sum(b != plains[0] for b in plains)
        bad = [] if len(set(everyone)) == 1 and np.allclose(same, plain, rtol=1e-4, atol=1e-3) else ["bits differ"]
        report.case(f"api allreduce({name}, float32 sum, identical=True): the same bits on every rank "
                    f"(without: {differing} of {p} ranks differ from rank 0)", bad)
    try:
        api.iallreduce(x, op="sum", comm=comm, algorithm="bruck", identical=True).wait()
        bad = [] if p <= 2 else ["accepted"]
    except SpecError as exc:
        bad = [] if p > 2 and "differ in the last bits" in str(exc) else [str(exc)]
    report.case("iallreduce(bruck, identical=True) refused where ranks' bits may differ (P > 2)", bad)


def check_split(report, seed: int) -> None:
    """Split phase: with every peer's data there before each call (a barrier
    on another communicator between calls), ``test()`` finishes in exactly
    this rank's number of rounds; the result equals MPI_Allreduce."""
    from mpi4py import MPI

    from . import api

    comm = report.comm
    p = comm.Get_size()
    side = comm.Dup()
    x = np.arange(6, dtype=np.float64) * (comm.Get_rank() + 1)
    want = np.empty_like(x)
    comm.Allreduce(x, want, op=MPI.SUM)
    for name in _algorithms("allreduce", p):
        req = api.iallreduce(x, comm=comm, algorithm=name)
        done = False
        while not done:
            side.Barrier()   # every rank has started this round's sends
            done = req.test()
            done = side.allreduce(done, op=MPI.LAND)   # loop until everyone is done
        bad = []
        if not np.array_equal(req.recvbuf, want):
            bad.append("result differs")
        program = req.plan.program
        mine = set(program.round)
        everyone = len(set().union(*side.allgather(mine)))   # the schedule's rounds, all ranks
        calls = req.plan.first_done
        # a round of sends alone (no receive: a synthesized reduce-scatter's leaves, or an all-gather's
        # last forward) waits for no other rank: it can end within start() or within the call that
        # released it, so each such round may save one call
        receiving = {int(r) for k, r in zip(program.kind, program.round) if k == RECV}
        free = len(mine - receiving)
        # one round per call: a rank in every round finishes in exactly that many
        # calls; one that waits for others' rounds (trees) in at most the schedule's
        if not (len(mine) - free <= calls <= everyone) or (len(mine) == everyone and calls not in
                                                           range(everyone - free, everyone + 1)):
            bad.append(f"done after {calls} test() calls with {len(mine)} own rounds of {everyone}")
        report.case(f"iallreduce({name}): test() calls to completion == rounds, result == MPI_Allreduce", bad)
    side.Free()
