"""Exact times with wire latency: every model charges each hop's latency once.

The other exact-time tests run on links without latency (``lat=0s``, or the
ideal crossbar), so they cannot see a latency converted with the wrong unit
or a route whose hops are miscounted. Here every link has λ = 1 µs and
1 GB/s, and the expected times are derived by hand from the models' common
reading of one message alone on its route (docs/simulator.md, "Semantics"
and "Models"): the sender's CPU spends α = ``Platform.alpha`` and the
message enters the network; it arrives

    hops · λ + bytes / bandwidth

later (``loggops``: the head crosses the route, one latency per link, the
tail follows one serialisation time behind; ``flow``: the bandwidth phase,
then the route latency as a pipeline tail; ``congestion``: route latency +
bytes · 1 / bandwidth when no link is shared; ``static``: a round's α + its
longest path's latency + its busiest link's bytes / bandwidth); a received
block is then reduced at γ = 1 / ``reduce_bandwidth`` per byte. Receives
are posted at time 0 and ``o_recv`` is 0, so nothing else costs time. Each
schedule below keeps one message per link at a time, so the hand sums are
exact; every number is also far from what a 1000× shorter latency
(``hops · 1 ns``) or one hop fewer per route would give.
"""

import numpy as np
import pytest

from topocoll.schedules import generate
from topocoll.schedules.ir import Schedule
from topocoll.verify.testing import relay
from topocoll.sim import Platform, make_network, model_named
from topocoll.sim.engine import EngineOptions, simulate
from topocoll.sim.model import Network
from topocoll.topology import make_router, parse_topology

US = 1e-6
ALPHA = 0.5 * US          # sender overhead o = α per message
HOP = 1 * US              # λ: every link's latency (the specs' lat=1us)
GAMMA_BW = 2e9            # reductions at 2 GB/s: 1000 B take 0.5 µs
EVENT_MODELS = ("loggops", "flow", "congestion")


def _models_and_syncs(syncs):
    """Every event model under every sync; the static model is round-synchronous
    whatever the sync, so once."""
    return [pytest.param(m, s, id=f"{m}-{s}") for m in EVENT_MODELS for s in syncs] + \
        [pytest.param("static", "barrier", id="static")]


def _time(model: str, schedule: Schedule, platform: Platform, sync: str = "deps") -> float:
    if model == "static":
        return model_named("static").estimate(schedule, platform).time
    return simulate(schedule, platform, model=model, options=EngineOptions(sync=sync)).time


# ---- fat tree ---------------------------------------------------------------------------------

@pytest.mark.parametrize("model", [*EVENT_MODELS, "static"])
def test_relay_across_a_fat_tree_pays_every_hops_latency(model):
    """kary:4,2 (4 leaves s0..s3 of 4 endpoints, e0..e3 on s0, e4..e7 on
    s1; 4 spines), identity order, d-mod-k. Rank 0 sends 1000 B to rank 4,
    which forwards them to rank 5 once they arrived.

    - 0 → 4 leaves leaf s0: e0→s0, s0→spine, spine→s1, s1→e4 = 4 hops;
    - 4 → 5 stays on leaf s1: e4→s1, s1→e5 = 2 hops.

    Each message: α + hops·λ + 1000 B / 1 GB/s, one after the other:

        T = (0.5 + 4·1 + 1) + (0.5 + 2·1 + 1) = 5.5 + 3.5 = 9 µs

    (latency 1000× too short: 3.006 µs; one hop fewer per route: 7 µs).
    """
    net = make_network("kary:4,2@bw=1GB/s,lat=1us", 8, routing="d-mod-k", order="identity")
    platform = Platform(alpha=ALPHA, reduce_bandwidth=GAMMA_BW, network=net)
    sched = relay(8, [(0, 4), (4, 5)])
    assert _time(model, sched, platform) == pytest.approx(9 * US, rel=1e-9)


@pytest.mark.parametrize("model", EVENT_MODELS)
def test_relay_trace_times_each_message_by_its_hops(model):
    """The same relay, message by message (trace): message 0 is injected
    after α = 0.5 µs and arrives 4·λ + 1 µs later, at 5.5 µs; rank 4's send
    then costs α, so message 1 is injected at 6 µs and arrives 2·λ + 1 µs
    later, at 9 µs."""
    net = make_network("kary:4,2@bw=1GB/s,lat=1us", 8, routing="d-mod-k", order="identity")
    platform = Platform(alpha=ALPHA, network=net)
    sim = simulate(relay(8, [(0, 4), (4, 5)]), platform, model=model, trace=True)
    assert sim.trace["inject"] == pytest.approx(np.array([0.5, 6.0]) * US, rel=1e-9)
    assert sim.trace["arrive"] == pytest.approx(np.array([5.5, 9.0]) * US, rel=1e-9)


@pytest.mark.parametrize("model, sync", _models_and_syncs(("deps", "rounds", "barrier")))
def test_recursive_doubling_allreduce_on_a_two_level_fat_tree(model, sync):
    """Pairwise exchange (recursive doubling, p = 4, one 1000 B block) on
    kary:2,2: leaves s0 = {e0, e1}, s1 = {e2, e3}, spines s2, s3; identity
    order, d-mod-k (the leaf's up port is d mod 2).

    - round 0 pairs 0↔1 and 2↔3: each on its leaf, 2 hops, and the four
      messages use four different directed links;
    - round 1 pairs 0↔2 and 1↔3: 4 hops each; e0→e2 and e2→e0 go up to
      spine s2 (d = 2, 0 even), e1→e3 and e3→e1 to s3: again no directed
      link carries two messages.

    Every rank's round: α, then the message (hops·λ + 1 µs), then the
    reduction of 1000 B at 2 GB/s (0.5 µs); the ranks stay in step, so
    every sync gives

        T = (0.5 + 2·1 + 1 + 0.5) + (0.5 + 4·1 + 1 + 0.5) = 4 + 6 = 10 µs

    (latency 1000× too short: 4.006 µs; one hop fewer per route: 8 µs).
    """
    sched = generate("allreduce", "pairwise_exchange", 4, count=125, itemsize=8)
    assert sched.nblocks == 1 and int(sched.block_bytes[0]) == 1000
    net = make_network("kary:2,2@bw=1GB/s,lat=1us", 4, routing="d-mod-k", order="identity")
    platform = Platform(alpha=ALPHA, reduce_bandwidth=GAMMA_BW, network=net)
    assert _time(model, sched, platform, sync) == pytest.approx(10 * US, rel=1e-9)


# ---- torus ------------------------------------------------------------------------------------

def test_torus_relay_through_wrap_links():
    """torus:8x8 (node e = x + 8y), dimension order x then y, each
    dimension the shorter way round. Ranks 0, 1, 2 sit on e0 = (0, 0),
    e19 = (3, 2) and e59 = (3, 7):

    - e0 → e19: x 0→3 (+3, not −5), y 0→2 (+2): 5 hops;
    - e19 → e59: y 2→7 the short way through the wrap link, 2→1→0→7 (−3,
      not +5): 3 hops.

        T = (0.5 + 5·1 + 1) + (0.5 + 3·1 + 1) = 6.5 + 4.5 = 11 µs

    for every model (latency 1000× too short: 3.008 µs; one hop fewer per
    route: 9 µs)."""
    topo = parse_topology("torus:8x8@bw=1GB/s,lat=1us")
    net = Network(make_router(topo, "dor"), np.array([0, 19, 59]), "torus:8x8, ranks on e0, e19, e59")
    platform = Platform(alpha=ALPHA, network=net)
    sched = relay(3, [(0, 1), (1, 2)])
    for model in (*EVENT_MODELS, "static"):
        assert _time(model, sched, platform) == pytest.approx(11 * US, rel=1e-9), model


@pytest.mark.parametrize("model, sync", _models_and_syncs(("deps", "rounds")))
def test_ring_allreduce_along_a_torus_row(model, sync):
    """Ring allreduce, p = 8 ranks on row y = 0 of torus:8x8 (identity
    order), 8000 B in 8 blocks of 1000 B. Every step each rank sends one
    block to rank r + 1: one +x hop (7 → 0 through the wrap link), each
    directed link used once. 2(p − 1) = 14 steps in lockstep, each α + λ +
    1000 B / 1 GB/s = 2.5 µs; the p − 1 = 7 reduce-scatter steps also reduce
    the block (0.5 µs):

        T = 14 · 2.5 + 7 · 0.5 = 38.5 µs

    (latency 1000× too short: 24.514 µs; no hop at all: 24.5 µs). Under
    ``sync=rounds`` the congestion model takes the lockstep path
    (``lockstep.rs``), which reads the same latencies."""
    sched = generate("allreduce", "ring", 8, count=8 * 125, itemsize=8)
    net = make_network("torus:8x8@bw=1GB/s,lat=1us", 8, order="identity")
    platform = Platform(alpha=ALPHA, reduce_bandwidth=GAMMA_BW, network=net)
    assert _time(model, sched, platform, sync) == pytest.approx(38.5 * US, rel=1e-9)
    if model == "congestion":
        sim = simulate(sched, platform, model=model, options=EngineOptions(sync=sync))
        assert sim.lockstep == (sync == "rounds")
