"""The event-driven models (loggops, flow, congestion) against the α-β-γ
formulas, the papers' qualitative results, and their own contracts: noise
off means no slowdown, seeds reproduce, bad input is one line."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import catalogue, generate, report
from topocoll.schedules.ir import Recv, Schedule, Send
from topocoll.sim import AlphaBetaGamma, Platform, make_network, model_named
from topocoll.sim.engine import EngineOptions, NetworkNoise, OsNoise, simulate

MODELS = ("loggops", "flow", "congestion")
ABG = Platform(alpha=1e-6, bandwidth=1e9, reduce_bandwidth=2e9)


def _one_message_per_round(sched) -> bool:
    """Every rank sends at most one and receives at most one message per round."""
    for rnd in sched.rounds():
        if len(rnd) and (np.bincount(rnd.src).max() > 1 or np.bincount(rnd.dst).max() > 1):
            return False
    return True


def _cases():
    for info in catalogue().values():
        for p in (5, 8):
            try:
                info.generate(p, **info.compare)
            except SpecError:
                continue
            yield pytest.param(info, p, id=f"{info.collective}-{info.name}-{p}")


@pytest.mark.parametrize("info, p", list(_cases()))
def test_synchronous_rounds_on_a_crossbar_are_the_alpha_beta_gamma_model(info, p):
    """Barrier-synchronous rounds on an ideal crossbar: every model reproduces
    Σ rounds (max msgs·α + max bytes·β + max reduced·γ) exactly where each rank
    sends and receives at most one message per round (the contention-free case);
    where a rank sends several, loggops and flow overlap their overheads with
    the transfers and are never slower than the formula."""
    sched = generate(info.collective, info.name, p, count=96 * p, itemsize=8, **info.compare)
    formula = AlphaBetaGamma().estimate(sched, ABG).time
    single = _one_message_per_round(sched)
    for model in MODELS:
        t = simulate(sched, ABG, model=model, options=EngineOptions(sync="barrier")).time
        if single:
            assert t == pytest.approx(formula, rel=1e-9, abs=1e-12), model
        elif model != "congestion":
            assert t <= formula * (1 + 1e-9), model


@pytest.mark.parametrize("name, params", [("ring", {}), ("bruck", {})])
def test_symmetric_allreduces_need_no_barrier_to_match_the_formula(name, params):
    """Circulant schedules with one message per rank and round keep every rank
    in step by their data alone."""
    sched = generate("allreduce", name, 12, count=12 * 64, itemsize=8, **params)
    formula = AlphaBetaGamma().estimate(sched, ABG).time
    for model in MODELS:
        assert simulate(sched, ABG, model=model).time == pytest.approx(formula, rel=1e-9), model


def _k_pairs(k: int, big: int = 1 << 20) -> Schedule:
    """k independent pairs (2i → 2i+1): pair 0 moves ``big`` bytes, the others 8 B."""
    nblocks = big // 8 + 1
    ops = []
    for i in range(k):
        blocks = range(0, nblocks - 1) if i == 0 else (nblocks - 1,)
        ops.append([Send(2 * i + 1, "data", blocks, 0, 0)])
        ops.append([Recv(2 * i, "data", blocks, blocks, 0, 0)])
    return Schedule.from_ops("bcast", ops, count=nblocks * 8, itemsize=1, nblocks=nblocks)


@pytest.mark.parametrize("k", [2, 8])
def test_flow_gives_independent_pairs_the_large_pairs_time(k):
    """All pairs cross the same two spine links (12-ary 2-tree, d-mod-k, a
    random order): flow lets the 8 B messages finish and the 1 MiB one then
    runs alone; the round-synchronous static model charges the shared link's
    whole load to the round."""
    alone = _k_pairs(1)
    many = _k_pairs(k)
    order = "routing"
    net1 = Platform(alpha=0, network=make_network("crossbar:32@bw=1GB/s,lat=0s", 2, order=order))
    netk = Platform(alpha=0, network=make_network("crossbar:32@bw=1GB/s,lat=0s", 2 * k, order=order))
    t1 = simulate(alone, net1, model="flow").time
    tk = simulate(many, netk, model="flow").time
    assert tk == pytest.approx(t1, rel=1e-6)
    assert t1 == pytest.approx((1 << 20) / 1e9, rel=1e-6)


def test_flow_shares_a_bottleneck_but_small_flows_do_not_slow_the_large_one_much():
    # two-level tree, all pairs leave their leaf switch: they share up/down links
    k = 6
    sched = _k_pairs(k)
    net = make_network("kary:6,2", 2 * k, routing="d-mod-k", order="identity")
    plat = Platform(alpha=0, network=net)
    big_alone = simulate(_k_pairs(1), Platform(alpha=0, network=make_network("kary:6,2", 2, routing="d-mod-k",
                                                                             order="identity")), model="flow")
    t = simulate(sched, plat, model="flow").time
    static = model_named("static").estimate(sched, plat).time
    assert t <= big_alone.time * 1.001
    assert static >= t


@pytest.mark.parametrize("model", MODELS)
def test_shift_permutations_are_contention_free_in_routing_order_only(model):
    """Cavin & Demengeon §2.2, §5: on a full k-ary 2-tree with d-mod-k, shift
    permutations in routing order use every link at most once; a seeded random
    order congests them (Figs 5 vs 6). Rounds are synchronous here: the
    property is one of each round's permutation (with ranks drifting apart,
    messages of neighbouring rounds meet on the links, on any network)."""
    sched = generate("reduce_scatter", "shift_based", 144, count=144 * 4096, itemsize=4)
    times = {}
    sync = EngineOptions(sync="barrier")
    for order in ("routing", "random"):
        net = make_network("kary:12,2@lat=0s", 144, routing="d-mod-k", order=order, seed=4)
        times[order] = simulate(sched, Platform(network=net), model=model, options=sync)
    ideal = simulate(sched, Platform(network=make_network("crossbar:144@lat=0s", 144, order="identity")),
                     model=model, options=sync)
    assert times["routing"].time == pytest.approx(ideal.time, rel=1e-6)
    assert times["random"].time > 1.2 * times["routing"].time
    if model == "congestion":
        assert times["routing"].congestion.max() == 1 and times["random"].congestion.max() > 1


@pytest.mark.parametrize("model", MODELS)
def test_noise_ratio_zero_is_no_slowdown_and_seeds_reproduce(model):
    sched = generate("allreduce", "binomial", 32, count=4096, itemsize=8)
    net = make_network("kary:8,2", 32, routing="d-mod-k", order="random", seed=2)
    plat = Platform(network=net)
    clean = simulate(sched, plat, model=model)
    zero = simulate(sched, plat, model=model, noise=NetworkNoise(0.0, seed=5))
    assert zero.time == clean.time and zero.background_messages == 0
    a = simulate(sched, plat, model=model, noise=NetworkNoise(0.5, seed=5))
    b = simulate(sched, plat, model=model, noise=NetworkNoise(0.5, seed=5))
    assert a.time == b.time and a.seed == 5
    assert a.time >= clean.time


def test_binomial_slowdown_grows_with_fat_tree_size():
    """Network-noise paper Fig. 10: at perturbation ratio 0.5 the binomial
    allreduce's slowdown grows with the Table 1 network's size (mean over
    seeded runs, application placed at random)."""
    from topocoll.sim.noise import noise_runs
    slowdowns = []
    for n in (144, 1152):
        p = n // 2
        sched = generate("allreduce", "binomial", p, count=1024, itemsize=8)
        net = make_network(f"table1:{n}", p, order="random", seed=1)
        runs = noise_runs(sched, Platform(network=net), model="congestion", noise=NetworkNoise(0.5, seed=1),
                          runs=12)
        slowdowns.append(runs.mean)
    assert 1.0 < slowdowns[0] < slowdowns[1]


def test_os_noise_stretches_cpu_work_by_its_duty_cycle():
    sched = generate("allreduce", "ring", 4, count=4 << 20, itemsize=1)
    plat = Platform(alpha=0, bandwidth=1e12, reduce_bandwidth=1e8)   # reduction-bound
    clean = simulate(sched, plat, model="loggops")
    noisy = simulate(sched, plat, model="loggops", os_noise=OsNoise("periodic", period=1e-4, length=1e-5, seed=3))
    assert noisy.time == pytest.approx(clean.time / 0.9, rel=0.05)
    assert noisy.os_stolen > 0


def test_netgauge_trace_is_read_and_bad_lines_are_named(tmp_path):
    good = tmp_path / "noise.txt"
    good.write_text("# start\tduration (ns)\n1000\t500\n5000\t250\n")
    noise = OsNoise.from_netgauge(good, seed=1)
    assert noise.start == pytest.approx((1e-6, 5e-6)) and noise.lengths == pytest.approx((5e-7, 2.5e-7))
    bad = tmp_path / "bad.txt"
    bad.write_text("1000\t500\n2000 x\n")
    with pytest.raises(SpecError, match=r"bad.txt:2: '2000 x', expected 'start<TAB>duration'"):
        OsNoise.from_netgauge(bad)


@pytest.mark.parametrize("kwargs, message", [
    (dict(model="ns3"), "model 'ns3', expected one of loggops, flow, congestion"),
    (dict(options=None), None),
])
def test_bad_model_is_one_line(kwargs, message):
    sched = generate("allreduce", "ring", 4, count=16, itemsize=8)
    if message is None:
        with pytest.raises(SpecError, match="sync='sometimes'"):
            EngineOptions(sync="sometimes")
        return
    with pytest.raises(SpecError, match=message):
        simulate(sched, **kwargs)


def test_trace_times_are_consistent_with_the_dependencies():
    sched = generate("allreduce", "rabenseifner", 8, count=8 * 128, itemsize=8)
    sim = simulate(sched, ABG, model="loggops", trace=True)
    tr = sim.trace
    assert (tr["start"] <= tr["end"]).all() and tr["end"].max() == pytest.approx(sim.time)
    chunk = sched.program().concatenated()
    for i in range(len(chunk)):
        for d in chunk.deps_of(i):
            assert tr["end"][d] <= tr["start"][i] + 1e-15
    assert (tr["arrive"] >= tr["inject"]).all()
    assert sim.bytes_total == report(sched).bytes_total


@pytest.mark.parametrize("collective, name, p", [
    ("alltoall", "shift", 12), ("alltoall", "pairwise_exchange", 8), ("allreduce", "ring", 12),
    ("allgather", "ring", 8), ("reduce_scatter", "ring", 12), ("allreduce", "bruck", 12),
    ("barrier", "dissemination", 12),
])
@pytest.mark.parametrize("sync", ["rounds", "barrier"])
def test_lockstep_path_equals_the_event_loop(collective, name, p, sync):
    """The congestion model's lockstep path (no op program) gives the event
    loop's times exactly, per rank, eager and rendezvous, with and without
    network noise."""
    from topocoll.sim.engine import compile_program
    net = make_network("kary:4,2", p, order="random", seed=2)
    for size in (96, 96 * 1024):
        sched = generate(collective, name, p, count=p * size, itemsize=8)
        for noise in (None, NetworkNoise(0.5, seed=3)):
            opts = EngineOptions(sync=sync)
            fast = simulate(sched, Platform(network=net), model="congestion", options=opts, noise=noise)
            slow = simulate(sched, Platform(network=net), model="congestion", options=opts, noise=noise,
                            program=compile_program(sched))
            assert not slow.lockstep
            if not fast.lockstep:   # e.g. local work waiting for a rendezvous send: the event loop ran
                assert size > opts.eager
                continue
            assert fast.time == slow.time
            assert np.array_equal(fast.rank_done, slow.rank_done)
            assert fast.max_congestion == slow.max_congestion
            np.testing.assert_allclose(fast.link_bytes, slow.link_bytes)


def test_direct_alltoall_on_a_symmetric_torus_reaches_the_peak_of_eq_2():
    """Kumar & Heidelberger eq. 2: an all-to-all of m bytes per pair on a torus
    whose longest dimension is M takes at least P·(M/8)·m·β. All messages posted
    at once (the shift order of MPI's basic linear algorithm), shortest-path
    routing with ties split: the flow model reaches it on 4×4×4 (Table 1: over
    90 % of peak); dimension-order routing that sends every tie the positive
    way loads the positive links 3:1 and reaches only 2/3 of it."""
    m, p = 16384, 64
    sched = generate("alltoall", "shift", p, count=p * m, itemsize=1)
    peak = {}
    for routing in ("shortest", "dor"):
        net = make_network("torus:4x4x4@lat=0s", p, routing=routing)
        bound = p * (4 / 8) * m / float(net.topology.bandwidth[0])
        peak[routing] = bound / simulate(sched, Platform(alpha=0, network=net), model="flow").time
    assert peak["shortest"] >= 0.9
    assert peak["dor"] == pytest.approx(2 / 3, rel=1e-3)


def test_throttling_window_limits_messages_in_flight():
    sched = generate("alltoall", "shift", 8, count=8 * 4096, itemsize=1)
    free = simulate(sched, ABG, model="loggops", trace=True)
    one = simulate(sched, ABG, model="loggops", options=EngineOptions(window=1), trace=True)
    tr = one.trace
    for r in range(8):   # a rank's messages never overlap in flight
        mine = np.sort(np.flatnonzero(tr["rank"][tr["send"]] == r))
        inject, arrive = tr["inject"][mine], tr["arrive"][mine]
        order = np.argsort(inject)
        assert (inject[order][1:] >= arrive[order][:-1] - 1e-15).all()
    assert one.time >= free.time
    with pytest.raises(SpecError, match="window=-1"):
        EngineOptions(window=-1)


def test_noise_without_free_endpoints_is_refused_not_ignored():
    sched = generate("allreduce", "ring", 4, count=16, itemsize=8)
    full = Platform(network=make_network("crossbar:5", 4))
    with pytest.raises(SpecError, match=r"leaves 1 endpoint\(s\) for background traffic .* expected at least 2"):
        simulate(sched, full, noise=NetworkNoise(0.5))
    assert simulate(sched, full, noise=NetworkNoise(0.0)).background_messages == 0


@pytest.mark.parametrize("info, p", [c for c in _cases() if c.values[1] == 8])
def test_every_algorithm_runs_under_every_model_sync_and_protocol(info, p):
    """No deadlock, no lost op: every model, sync and eager/rendezvous choice
    completes every op, after its dependencies, on a congested tree with
    background traffic; a rank is done when its last op is."""
    sched = generate(info.collective, info.name, p, count=p * 3000, itemsize=8, **info.compare)
    net = make_network("kary:4,3", p, order="random", seed=1)
    chunk = sched.program().concatenated()
    for model in MODELS:
        for sync in ("deps", "rounds", "barrier"):
            for eager in (0, 65536):
                noise = NetworkNoise(0.3, seed=2) if model != "flow" else None
                sim = simulate(sched, Platform(network=net), model=model, noise=noise,
                               options=EngineOptions(sync=sync, eager=eager), trace=True)
                tr = sim.trace
                assert len(tr["end"]) == len(chunk) and (tr["end"] >= tr["start"]).all()
                done = np.zeros(p)
                np.maximum.at(done, tr["rank"], tr["end"])
                np.testing.assert_allclose(sim.rank_done, done, rtol=0, atol=1e-15)
                for i in range(len(chunk)):
                    deps = chunk.deps_of(i)
                    if len(deps):
                        assert tr["end"][deps].max() <= tr["start"][i] + 1e-15


def test_the_engine_takes_the_dataclasses_themselves_and_returns_a_typed_outcome():
    """The configuration crosses as Python's dataclasses, read attribute by
    attribute (``src/bindings/config.rs``): something else is refused by
    type, a named choice the engine does not know in one line naming it;
    the result is typed, read by attribute, not by key."""
    import dataclasses
    from topocoll import _core
    from topocoll.sim import EngineConfig
    from topocoll.sim.engine import compile_program, platform_network

    sched = generate("allreduce", "ring", 4, count=4, itemsize=8)
    with pytest.raises((TypeError, AttributeError)):
        _core.EngineConfig("flow", ABG)
    with pytest.raises(TypeError):
        _core.EngineConfig(EngineConfig("flow"))   # no platform
    config = EngineConfig("flow", EngineOptions(sync="rounds"))
    bad = dataclasses.replace(config, options=object.__new__(EngineOptions))
    object.__setattr__(bad.options, "__dict__", {**config.options.__dict__, "sync": "lockstep"})
    with pytest.raises(TypeError, match="Config.options") as err:
        _core.EngineConfig(bad, ABG)
    causes, e = [], err.value
    while e is not None:
        causes.append(str(e))
        e = e.__cause__
    assert 'sync="lockstep", expected one of deps, rounds, barrier' in causes[-1], causes
    net, bandwidth, latency = platform_network(ABG, 4)
    core = config.core(ABG, net)
    assert "Flow" in repr(core) and "Rounds" in repr(core)
    out = _core.engine_run(compile_program(sched), net.router.engine, bandwidth, latency,
                           np.ascontiguousarray(net.order, dtype=np.uint32), core)
    assert isinstance(out, _core.EngineOutcome) and out.congestion is None
    assert out.time_ps == round(simulate(sched, ABG, config).time * 1e12)
    assert out.rank_done_ps.shape == (4,) and out.app_messages == 2 * (4 - 1) * 4   # 2(P-1) rounds, P ranks
    with pytest.raises(SpecError, match="config and model given, expected one of them"):
        simulate(sched, ABG, config, model="flow")
    with pytest.raises(SpecError, match="model 'packets', expected one of"):
        EngineConfig("packets")


def test_detached_small_sends_move_when_both_sides_have_posted():
    """SimGrid's detached sends (``small_sends="detached"``): a send up to the
    eager threshold completes when posted, but its data enters the network at
    max(send posted, receive posted); eager data enters at the send's post.
    Ring allreduce of unequal blocks (count not a multiple of P) under
    ``sync=rounds`` with slow reductions posts some receives after their
    sends, so the two differ there."""
    import numpy as np
    from topocoll.schedules import generate
    from topocoll.sim import EngineConfig, EngineOptions, Platform, simulate

    sched = generate("allreduce", "ring", 6, count=6 * 64 + 1, itemsize=8)
    runs = {}
    for small in ("eager", "detached"):
        sim = simulate(sched, Platform(reduce_bandwidth=1e8),
                       EngineConfig("flow", EngineOptions(sync="rounds", small_sends=small), trace=True))
        tr = sim.trace
        posted = tr["end"][tr["send"]]        # an eager-sized send completes when posted
        receive = tr["start"][tr["recv"]]     # posting a receive takes no CPU
        runs[small] = (tr["inject"], posted, receive)
    inject, posted, receive = runs["eager"]
    assert np.array_equal(inject, posted) and (receive > posted).any()
    inject, posted, receive = runs["detached"]
    assert np.array_equal(inject, np.maximum(posted, receive))
