"""The streamed event loop (issue 18 item 4; ``src/engine/stream.rs``): the
op program read round by round gives bit for bit the whole program's run,
for every event model and sync; where it cannot guarantee that, ``auto``
runs the whole program and ``always`` says why in one line."""

import os

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.sim import Platform, make_network
from topocoll.sim import engine
from topocoll.sim.engine import EngineConfig, EngineOptions, NetworkNoise, simulate

MODELS = ("loggops", "flow", "congestion", "packet")
# (collective, algorithm, P, params, syncs whose runs stream exactly)
CASES = [
    ("alltoall", "shift", 24, {}, ("rounds", "barrier")),
    ("alltoall", "bruck", 27, {"k": 2}, ("deps", "rounds")),
    ("allreduce", "ring", 12, {}, ("deps", "rounds", "barrier")),
    ("allreduce", "nway_dissemination", 12, {"n": 2}, ("deps", "barrier")),
    ("alltoall", "direct", 10, {}, ("rounds",)),
]


def same_run(a, b) -> None:
    assert a.time == b.time
    assert np.array_equal(a.rank_done, b.rank_done)
    assert np.array_equal(a.link_bytes, b.link_bytes)
    assert (a.events, a.messages, a.bytes_total, a.packet_hops) == (b.events, b.messages, b.bytes_total, b.packet_hops)
    assert a.max_congestion == b.max_congestion
    if a.buffer_max is not None:
        assert np.array_equal(a.buffer_max, b.buffer_max) and np.array_equal(a.buffer_mean, b.buffer_mean)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("coll, name, p, params, syncs", CASES, ids=[c[1] for c in CASES])
def test_a_streamed_run_is_the_whole_programs_run(model, coll, name, p, params, syncs):
    """Same times, link loads, event and message counts, congestion and
    buffer occupancy, on a fat tree in a random order (contention), with
    detached and rendezvous messages (4 KiB and 128 KiB per block; eager ones
    in the other tests). Detached sends keep the congestion model off its
    lockstep path, which needs no program at all."""
    sched = generate(coll, name, p, count=p * 512, itemsize=8, **params)
    big = generate(coll, name, p, count=p * 16384, itemsize=8, **params)
    platform = Platform(network=make_network("kary:4,3", p, order="random", seed=3))
    for s in (sched, big):
        for sync in syncs:
            opts = EngineOptions(sync=sync, small_sends="detached")
            whole = simulate(s, platform, EngineConfig(model, opts, stream="never"))
            streamed = simulate(s, platform, EngineConfig(model, opts, stream="always"))
            assert streamed.streamed and not whole.streamed
            same_run(streamed, whole)


def test_the_congestion_models_network_noise_streams_too():
    """Its background permutation is drawn per round, routed with each
    round as the store loads it."""
    sched = generate("alltoall", "shift", 16, count=16 * 512, itemsize=8)
    platform = Platform(network=make_network("kary:4,3", 16))
    noise = NetworkNoise(ratio=0.5, seed=4)
    opts = EngineOptions(sync="rounds", small_sends="detached")
    whole = simulate(sched, platform, EngineConfig("congestion", opts, noise=noise, stream="never"))
    streamed = simulate(sched, platform, EngineConfig("congestion", opts, noise=noise, stream="always"))
    same_run(streamed, whole)
    quiet = simulate(sched, platform, EngineConfig("congestion", opts, stream="always"))
    assert quiet.link_bytes.sum() < streamed.link_bytes.sum()   # the background was routed with the rounds


@pytest.mark.parametrize("model", ("loggops", "flow", "packet"))
def test_background_traffic_and_traces_stream_too(model):
    """One loop (``src/engine/core.rs``) over both op stores: the event
    models' background traffic and per-op traces are the loop's, so the
    streamed window gives the whole program's run, trace for trace."""
    sched = generate("alltoall", "shift", 12, count=12 * 512, itemsize=8)
    platform = Platform(network=make_network("kary:4,2", 12, order="random", seed=5))
    noise = NetworkNoise(ratio=0.2, bytes=2048, seed=7)
    opts = EngineOptions(sync="rounds")
    whole = simulate(sched, platform, EngineConfig(model, opts, noise=noise, trace=True, stream="never"))
    streamed = simulate(sched, platform, EngineConfig(model, opts, noise=noise, trace=True, stream="always"))
    assert streamed.streamed and whole.background_messages > 0
    same_run(streamed, whole)
    assert streamed.background_messages == whole.background_messages
    assert whole.trace.keys() == streamed.trace.keys()
    for k in whole.trace:
        assert np.array_equal(whole.trace[k], streamed.trace[k]), k
    quiet = simulate(sched, platform, EngineConfig(model, opts, stream="always"))
    assert quiet.link_bytes.sum() < streamed.link_bytes.sum()   # the background moved on the same network


def test_what_cannot_stream_exactly_runs_whole_or_is_refused(monkeypatch):
    """A binomial tree's ranks idle for rounds under sync=rounds: a rank's
    next round would be loaded after its gate opened (module note of
    stream.rs). ``auto`` runs the whole program (same result), ``always``
    refuses in one line."""
    sched = generate("allreduce", "binomial", 13, count=13 * 64)
    opts = EngineOptions(sync="rounds")
    monkeypatch.setattr(engine, "STREAM_ABOVE", 0)
    auto = simulate(sched, Platform(), EngineConfig("loggops", opts))
    whole = simulate(sched, Platform(), EngineConfig("loggops", opts, stream="never"))
    assert not auto.streamed
    same_run(auto, whole)
    with pytest.raises(SpecError, match=r"binomial\(p=13\): stream='always' cannot stream it exactly \(op \d+ of rank"):
        simulate(sched, Platform(), EngineConfig("loggops", opts, stream="always"))


def test_rounds_retire_so_the_window_stays_small(monkeypatch):
    """The shift all-to-all under sync=rounds holds a few rounds, not its
    P(2P − 1) ops; ``auto`` streams above STREAM_ABOVE ops only."""
    p = 96
    sched = generate("alltoall", "shift", p, count=p * 64, itemsize=8)
    opts = EngineOptions(sync="rounds")
    total = engine.estimated_ops(sched)
    assert total == sum(len(c) for c in sched.program()) == p + 2 * p * (p - 1)
    assert not simulate(sched, Platform(), EngineConfig("loggops", opts)).streamed
    monkeypatch.setattr(engine, "STREAM_ABOVE", total - 1)
    sim = simulate(sched, Platform(), EngineConfig("loggops", opts))
    assert sim.streamed and sim.peak_ops < total / 10, sim.peak_ops


def test_stream_takes_named_values_only():
    with pytest.raises(SpecError, match="stream='yes', expected one of auto, always, never"):
        EngineConfig(stream="yes")


def test_a_run_larger_than_the_memory_is_refused_before_any_work(monkeypatch):
    """The estimate (ops counted from the pattern, not built) against the
    memory available: one line with both, before the program is compiled."""
    p = 64
    sched = generate("alltoall", "shift", p, count=p * 8, itemsize=8)
    ops = p + 2 * p * (p - 1)   # the staging copy, then a send and a receive per peer, per rank
    need = p * engine.RANK_BYTES + ops * engine.WHOLE_OP_BYTES
    assert engine.memory_estimate(sched, streamed=False) == (need, f"{ops:,} ops held whole")
    # the largest round is the first: the copy, the first send and receive of every rank
    assert engine.memory_estimate(sched, streamed=True)[0] == p * engine.RANK_BYTES + 2 * 3 * p * engine.STREAM_OP_BYTES

    program = type(sched).program
    monkeypatch.setattr(engine, "available_memory", lambda: need - 1)
    with monkeypatch.context() as m:
        def built(_):
            raise AssertionError("the program was built before the refusal")

        m.setattr(type(sched), "program", built)
        with pytest.raises(SpecError, match=r"^simulate alltoall/shift\(p=64\): needs about 0\.0 GiB \(8,128 ops "
                                            r"held whole\), 0\.0 GiB available, expected an estimate within the "
                                            r"available memory; stream it"):
            simulate(sched, Platform(), EngineConfig("loggops", EngineOptions(sync="rounds"), stream="never"))
        with pytest.raises(SpecError, match="needs about"):
            engine.compile_program(sched)
    assert type(sched).program is program
    # streamed, it needs only its window: runs
    sim = simulate(sched, Platform(), EngineConfig("loggops", EngineOptions(sync="rounds"), stream="always"))
    assert sim.streamed
    monkeypatch.setattr(engine, "available_memory", lambda: 1000)
    with pytest.raises(SpecError, match="at least 384 ops of its two largest rounds held at once"):
        simulate(sched, Platform(), EngineConfig("loggops", EngineOptions(sync="rounds"), stream="always"))


def test_available_memory_reads_the_machine():
    have = engine.available_memory()
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < have <= total


@pytest.mark.parametrize("coll, name, params", [("allreduce", "binomial", {}), ("allreduce", "ring", {}),
                                                ("alltoall", "direct", {}), ("allreduce", "rabenseifner", {})])
def test_op_counts_without_the_program_are_the_programs(coll, name, params):
    """estimated_ops (array classes, circulant templates, rank 0's ops times
    P where every rank has as many) and the largest round against the
    program itself."""
    sched = generate(coll, name, 12, count=12 * 4, **params)
    chunks = list(sched.program())
    assert engine.estimated_ops(sched) == sum(len(c) for c in chunks)
    if name != "direct":   # rank-wise patterns give the mean round
        assert engine.largest_round_ops(sched) == max(len(c) for c in chunks)
