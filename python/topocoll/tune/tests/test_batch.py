"""The tuner's batches: a rank-wise schedule's op program derived once serves every size
exactly (every op, its bytes and the round summary equal a fresh derivation's), and a batch's
results are those of one evaluation at a time."""

import numpy as np
import pytest

from topocoll.schedules.pattern import RankwisePattern
from topocoll.schedules.registry import catalogue
from topocoll.schedules.sizes import from_bytes
from topocoll.sim import AlphaBetaGamma, Platform, StaticContention, make_network
from topocoll.tune.batch import Batch, Job, estimate_seconds, rounds_once, run_batch, share_program
from topocoll.tune.rank import _evaluate, _Task

SIZES = (8, 24, 4096, 1 << 20 | 8, 3 << 20)   # uneven and even block splits, one element per block and fewer


def _rankwise_cases():
    """Every registered algorithm whose schedule is built rank by rank, with its sweep's parameters."""
    cases = []
    for info in catalogue().values():
        for p in (6, 16):
            for params in info.sweep:
                if not info.supports(p, params):
                    continue
                try:
                    sched = info.generate(p, **params, **from_bytes(info.collective, p, 4096, itemsize=8))
                except Exception:    # noqa: BLE001 - parameter sets refused at this P take no part
                    continue
                if type(sched.pattern) is RankwisePattern:
                    cases.append(pytest.param(info, p, params, id=f"{info.collective}-{info.name}-{p}-{params}"))
    return cases


def _chunks(sched):
    return [(c.round, c.rank.tolist(), c.kind.tolist(), c.peer.tolist(), c.nbytes.tolist(), c.run_dst.tolist(),
             c.dep_idx.tolist()) for c in sched.program()]


@pytest.mark.parametrize("info, p, params", _rankwise_cases())
def test_one_program_serves_every_size_exactly(info, p, params):
    known: dict = {}
    reused = 0
    for size in SIZES:
        try:
            fresh = info.generate(p, **params, **from_bytes(info.collective, p, size, itemsize=8))
        except Exception:        # noqa: BLE001 - a size this algorithm refuses
            continue
        before = dict(known)
        shared = rounds_once(share_program(info.generate(p, **params, **from_bytes(info.collective, p, size,
                                                                                     itemsize=8)), known))
        reused += bool(before) and before.keys() == known.keys()
        assert _chunks(shared) == _chunks(fresh), size
        for a, b in zip(shared.rounds(), fresh.rounds()):
            assert a.round == b.round
            for field in ("src", "dst", "nbytes", "reduce_rank", "reduce_bytes"):
                assert np.array_equal(getattr(a, field), getattr(b, field)), (size, field)
        assert shared.pattern.all_ops() == fresh.pattern.all_ops()
    assert reused >= 1, "no size reused the first program"


@pytest.mark.parametrize("model, topology", [(AlphaBetaGamma(), None), (StaticContention(), "kary:4,2")])
def test_a_batch_gives_what_one_evaluation_at_a_time_gives(model, topology):
    p, orders = 16, ("routing", "identity")
    platforms = {(p, order): Platform(network=make_network(topology, p, order=order) if topology else None)
                 for order in orders}
    for info in (catalogue()["alltoall", "direct"], catalogue()["allreduce", "ring"]):
        sizes = [64, 4096, 1 << 20]
        args = tuple(from_bytes(info.collective, p, s, itemsize=8) for s in sizes)
        jobs = tuple(Job((info.collective, p, s), i, order) for i, s in enumerate(sizes) for order in orders)
        batch = Batch(info.collective, info.name, p, {}, args, True, False, "sum", 0, jobs)
        for job, (row, why) in zip(jobs, run_batch(batch, model, platforms)):
            task = _Task(info.collective, info.name, p, {}, args[job.size], True, False, "sum")
            (t, name, resolved, rep, est), _ = _evaluate(task, model, platforms[p, job.order])
            assert why is None and row[0] == t and row[1] == name and row[3] == rep


def test_the_estimate_counts_messages(monkeypatch):
    import os
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    jobs = tuple(Job(("alltoall", 16, 8), 0, "routing") for _ in range(4))
    small = Batch("alltoall", "direct", 16, {}, ({},), True, True, "tune", 0, jobs, work=240, rankwise=True)
    big = Batch("alltoall", "direct", 256, {}, ({},), True, True, "tune", 0, jobs, work=65280, rankwise=True)
    assert 0 < estimate_seconds([small], 1) < estimate_seconds([big], 1)
    assert estimate_seconds([big, big], 2) == pytest.approx(estimate_seconds([big], 1))
