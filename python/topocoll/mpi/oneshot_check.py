"""Checks of the one-shot calls' plan cache (:mod:`.cache`) under ``mpiexec``.

``python -m topocoll.mpi.check --oneshot``: repeated calls with changing
contents, buffers, counts and algorithms against the serial reference (every
rank derives every rank's input from the seed; integers, so float sums are
exact); buffers the plans were bound to are never written by a call on other
buffers; the cache stays within its bound and is freed with its
communicator. ``--mismatch FIELD``: every rank makes two calls (both agreed
and cached), then rank P-1 makes the other one, or a new one: the job must
end with one line naming both calls, not hang.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np

from . import api, cache


def _inputs(seed: int, call: int, p: int, count: int) -> np.ndarray:
    """Every rank's input of one call, (p, count): small integers."""
    rng = np.random.default_rng([seed, call, count])
    return rng.integers(-1000, 1000, size=(p, count)).astype(np.float64)


def check_oneshot(report, seed: int) -> None:
    from mpi4py import MPI

    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    algorithms = ["auto", api.NATIVE, "pairwise_exchange", "rabenseifner", "binomial"]
    if p > 1:
        algorithms.append("ring")
    big = cache.BIND_BYTES // 8 + 5   # binds on first sight
    call = 0
    for count in (0, 1, 7, 37, 1000, big):
        for name in algorithms:
            bad = []
            pairs = [(np.zeros(count), np.zeros(count)) for _ in range(cache.BINDINGS + 1)]
            # the same buffers (a plan binds), new ones each call (staging), more pairs than bindings (rebinds),
            # in place, and recvbuf=None; contents change every call
            for form in ["same"] * 3 + ["new"] * 2 + ["cycle"] * (2 * len(pairs)) + ["in_place", "none", "same"]:
                call += 1
                everyone = _inputs(seed, call, p, count)
                want = everyone.sum(axis=0)
                if form == "same":
                    x, y = pairs[0]
                elif form == "cycle":
                    x, y = pairs[call % len(pairs)]
                else:
                    x, y = np.empty(count), np.empty(count)
                others = [b.copy() for pair in pairs for b in pair if b is not x and b is not y]
                x[...] = everyone[rank]
                if form == "in_place":
                    got = api.allreduce(MPI.IN_PLACE, x, comm=comm, algorithm=name)
                elif form == "none":
                    got = api.allreduce(x, comm=comm, algorithm=name)
                else:
                    got = api.allreduce(x, y, comm=comm, algorithm=name)
                if not np.array_equal(got, want):
                    bad.append(f"{form} call {call}: result differs")
                if form != "in_place" and not np.array_equal(x, everyone[rank]):
                    bad.append(f"{form} call {call}: sendbuf changed")
                after = [b for pair in pairs for b in pair if b is not x and b is not y]
                if any(not np.array_equal(a, b) for a, b in zip(others, after)):
                    bad.append(f"{form} call {call}: a buffer of an earlier call was written (stale binding)")
            report.case(f"oneshot allreduce({name}) count={count}: 16 calls, changing contents and buffers "
                        "(same, new, cycling, in place, none) == serial sum", bad)
    _check_other_collectives(report, seed)
    _check_tuning(report)
    _check_bounded_and_freed(report, seed)
    _check_eviction_alike(report, seed)


def _check_eviction_alike(report, seed: int) -> None:
    """Ranks that pass their buffers differently (the same objects every call
    on even ranks, new ones on odd ranks) still evict the same keys: one
    allreduce called every iteration, a broadcast of a new size after it each
    time, three times the capacity. A rank whose cache evicted another key than its peers' would
    miss where they hit, and the job would end with the mismatch line."""
    comm = report.comm.Dup()
    rank, p = comm.Get_rank(), comm.Get_size()
    x, y = np.zeros(5), np.zeros(5)
    bad = []
    for i in range(3 * cache.CACHE_SIZE):
        everyone = _inputs(seed, 20_000 + i, p, 5)
        if rank % 2:
            x, y = np.zeros(5), np.zeros(5)
        x[...] = everyone[rank]
        if not np.array_equal(api.allreduce(x, y, comm=comm, algorithm="pairwise_exchange"), everyone.sum(axis=0)):
            bad.append(f"iteration {i}: result differs")
        api.bcast(np.ones(100 + i), comm=comm, algorithm="binomial")   # another collective: a new key each time
    labels = api.cache_info(comm)["labels"]
    if not any("count=5 " in label for label in labels):
        bad.append("the key used every iteration was evicted")
    comm.Free()
    report.case(f"oneshot cache: the same keys evicted on every rank whether or not a call reuses its buffers "
                f"({3 * cache.CACHE_SIZE} new keys around one used every time)", bad)


def _check_other_collectives(report, seed: int) -> None:
    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    bad = []
    for i, m in enumerate((1, 3, 5, 3)):
        everyone = _inputs(seed, 10_000 + i, p, p * m)
        got = api.reduce_scatter(everyone[rank], comm=comm)
        if not np.array_equal(got, everyone.sum(axis=0)[rank * m:(rank + 1) * m]):
            bad.append(f"reduce_scatter m={m}")
        got = api.alltoall(everyone[rank], comm=comm)
        if not np.array_equal(got, everyone[:, rank * m:(rank + 1) * m].reshape(-1)):
            bad.append(f"alltoall m={m}")
        for algorithm in ("binomial", api.NATIVE):
            buf = everyone[rank].copy()
            api.bcast(buf, root=p - 1, comm=comm, algorithm=algorithm)
            if not np.array_equal(buf, everyone[p - 1]):
                bad.append(f"bcast({algorithm}) m={m}")
    report.case("oneshot reduce_scatter, alltoall, bcast: repeated calls with changing sizes == serial reference", bad)


def _check_tuning(report) -> None:
    """A tuning row naming the library's collective: ``auto`` delegates to it, then to the table's next row."""
    comm = report.comm
    table = {"allreduce": [{"max_bytes": 64, "algorithm": api.NATIVE}, {"algorithm": "pairwise_exchange"}]}
    x = np.full(8, comm.Get_rank() + 1.0)
    small = api.allreduce(x, comm=comm, tuning=table)
    large = api.allreduce(np.tile(x, 4), comm=comm, tuning=table)
    labels = api.cache_info(comm)["labels"]
    total = comm.Get_size() * (comm.Get_size() + 1) / 2
    bad = [] if (small == total).all() and (large == total).all() else ["result differs"]
    if not any(label.startswith("allreduce/mpi(") and "count=8 " in label for label in labels) \
            or not any(label.startswith("allreduce/pairwise_exchange") and "count=32 " in label for label in labels):
        bad.append(f"cached: {labels}")
    report.case("oneshot auto with a tuning row 'mpi' runs MPI_Allreduce up to 64 B, the next row above", bad)


def _check_bounded_and_freed(report, seed: int) -> None:
    from mpi4py import MPI

    comm = report.comm
    sub = comm.Dup()
    bad = []
    for count in range(1, 2 * cache.CACHE_SIZE + 2):   # twice as many keys as the cache holds
        x = np.full(count, 1.0)
        if not (api.allreduce(x, comm=sub, algorithm="pairwise_exchange") == sub.Get_size()).all():
            bad.append(f"count={count}: result differs")
        info = api.cache_info(sub)
        if info["keys"] > info["capacity"] or info["plans"] > info["capacity"] * (cache.BINDINGS + 1):
            bad.append(f"count={count}: {info['keys']} keys, {info['plans']} plans over capacity {info['capacity']}")
    found = cache.cache_of(sub, create=False)
    held = found.comm
    alive = weakref.ref(found)
    del found
    sub.Free()   # the attribute's delete callback frees the cache
    gc.collect()
    if alive() is not None and not alive().freed:
        bad.append("the cache outlived its communicator")
    if held != MPI.COMM_NULL:
        bad.append("the cache's communicator was not freed")
    report.case(f"oneshot cache: {2 * cache.CACHE_SIZE + 1} keys on one communicator keep at most "
                f"{cache.CACHE_SIZE}; freed with the communicator", bad)
    api.free_plans(comm)   # and on demand: the next call starts afresh
    report.case("oneshot free_plans(comm): the cache is gone until the next call",
                [] if api.cache_info(comm) is None else ["still cached"])


def mismatch(comm, field: str) -> None:
    """Two calls agreed and cached on every rank; then rank P-1 calls the
    other one (``count``, ``algorithm``) or one nobody has made (``new``):
    the job must end with one line, not hang."""
    rank, p = comm.Get_rank(), comm.Get_size()
    x = np.arange(16, dtype=np.float64)
    calls = {"count": [dict(sendbuf=x[:8]), dict(sendbuf=x)],
             "algorithm": [dict(sendbuf=x[:8]), dict(sendbuf=x[:8], algorithm="rabenseifner")],
             "new": [dict(sendbuf=x[:8]), dict(sendbuf=x[:4])]}[field]
    for kwargs in calls:
        kwargs.setdefault("algorithm", "pairwise_exchange")
    for kwargs in calls[:2 if field != "new" else 1]:   # agreed once, cached everywhere
        api.allreduce(comm=comm, **kwargs)
    mine = calls[1] if rank == p - 1 else calls[0]
    api.allreduce(comm=comm, **mine)
    comm.Barrier()
    if rank == 0:
        print("UNDETECTED: every rank completed", flush=True)
