"""Blue Gene/L's deterministic routing in the packet model: dimension order on
one VC with bubble flow control (routing ``dor-bubble``; all-to-all paper §2,
"for deterministic routing the packets have to be routed on the bubble normal
VC"), and the escape route's k/2 tie drawn per packet (``tie=random``).

The Rust side (``src/engine/packet/routing.rs``) checks the escape channel
link by link against the static dimension-order routes and that without the
bubble the same load deadlocks; here: the options, the refusals, and full
load on an 8-ring through the whole stack.
"""

import re

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate
from topocoll.sim.packet import PacketOptions

#: BG/L's packets (all-to-all paper §2: 240 B of payload in 256 B), two-packet VC buffers: the least the
#: bubble allows, so the ring's escape channel runs as full as it can
SMALL = dict(packet_bytes=240, header_bytes=16, buffer_packets=2, router_delay=0.0)


def _run(routing, vcs, sched, shape="8", **kw):
    net = make_network(f"torus:{shape}@bw=175MB/s", sched.p, routing=routing, order="identity")
    cfg = EngineConfig("packet", EngineOptions(packet=PacketOptions(vcs=vcs, **{**SMALL, **kw})))
    return simulate(sched, Platform(alpha=0.0, network=net), cfg), net


def _distance(a, b, k=8):
    d = abs(a - b)
    return min(d, k - d)


@pytest.mark.parametrize("nic", ["simple", "bgl"])
def test_one_bubble_vc_carries_a_full_all_to_all_on_a_ring(nic):
    # 8 ranks on an 8-ring, all sending 4 packets to every other at once: one VC of two packets, no
    # dateline. Every message arrives (no deadlock) and every packet took a minimal route.
    m = 4 * 240
    sched = generate("alltoall", "randomized", 8, count=8 * m, itemsize=1, seed=3)
    sim, _ = _run("dor-bubble", 1, sched, nic=nic)
    assert sim.messages == 8 * 7
    assert sim.packet_hops == 4 * sum(_distance(a, b) for a in range(8) for b in range(8))
    assert sim.max_buffer_packets <= 2


def test_one_vc_refuses_datelines_and_names_the_bubble():
    sched = generate("alltoall", "randomized", 8, count=8 * 240, itemsize=1, seed=3)
    with pytest.raises(SpecError, match=re.escape("vcs=1, expected at least 2 on a torus")) as e:
        _run("dor", 1, sched)
    assert "routing dor-bubble" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("routing, vcs, words", [
    ("dor-bubble", 2, "routing dor-bubble on torus:8@bw=175MB/s: vcs=2, expected 1"),
    ("adaptive", 1, "vcs=1, expected at least 2"),
    ("dor-bubble:tie=negative", 1, "tie='negative', expected positive, random"),
    ("dor-bubble:seed=4", 1, "seed='4' with tie='positive', expected a seed only with tie=random"),
    ("adaptive:tie=source-parity", 3, "tie='source-parity', expected positive or random"),
])
def test_bad_bubble_options_are_one_line(routing, vcs, words):
    sched = generate("alltoall", "randomized", 8, count=8 * 240, itemsize=1, seed=3)
    with pytest.raises(SpecError, match=re.escape(words)) as e:
        _run(routing, vcs, sched)
    assert "\n" not in str(e.value)
    if routing == "adaptive":
        assert "dor-bubble" in str(e.value)


def _directions(sim, net):
    """Bytes on the + and on the − links of the ring."""
    src, dst = np.asarray(net.topology.src), np.asarray(net.topology.dst)
    plus = (dst - src) % 8 == 1
    lb = np.asarray(sim.link_bytes)
    return lb[plus].sum(), lb[~plus].sum()


def test_a_random_tie_sends_half_ring_packets_both_ways():
    # Shift by 4 on an 8-ring: every message is a k/2 tie. With tie=positive every byte goes +; with a
    # draw per packet each direction carries 40-60 % of them, and a seed gives the same run twice.
    sched = generate("alltoall", "shift", 8, count=8 * 64 * 240, itemsize=1)
    sim, net = _run("dor-bubble", 1, sched)
    plus_pos, minus_pos = _directions(sim, net)
    sim_r, _ = _run("dor-bubble:tie=random,seed=5", 1, sched)
    plus_r, minus_r = _directions(sim_r, net)
    # the shift's other rounds are no ties and go the short way in both runs: only the tie's bytes move
    assert plus_pos > plus_r and minus_r > minus_pos
    moved = plus_pos - plus_r
    assert minus_r - minus_pos == pytest.approx(moved)
    tie_bytes = 8 * 64 * (240 + 16) * 4     # round 4: 8 messages of 64 packets over 4 links
    assert 0.4 < moved / tie_bytes < 0.6
    again, _ = _run("dor-bubble:tie=random,seed=5", 1, sched)
    assert again.time == sim_r.time and np.array_equal(again.link_bytes, sim_r.link_bytes)


def test_dor_bubble_is_dimension_order_in_the_static_models():
    # The fluid model has no VCs to keep deadlock free: dor-bubble routes as dor there.
    sched = generate("alltoall", "shift", 16, count=16 * 4096, itemsize=1)
    times = []
    for routing in ("dor", "dor-bubble"):
        net = make_network("torus:4x4@bw=175MB/s", 16, routing=routing, order="identity")
        times.append(simulate(sched, Platform(alpha=0.0, network=net), model="flow").time)
    assert times[0] == times[1]


def test_the_tie_seed_is_in_the_network_label():
    net = make_network("torus:8", 8, routing="dor-bubble:tie=random,seed=5", order="identity")
    assert "routing dor-bubble:tie=random,seed=5" in net.label
    assert "tie=" not in make_network("torus:8", 8, routing="dor-bubble", order="identity").label
