"""The packet model (``--model packet``) through the library: exact times of
packets alone, agreement with the flow model where nothing contends, the
buffer-depth invariant, and one-line refusals. Expected values are derived
by hand from the model's stated semantics (``src/engine/packet/``, docs
/simulator.md): a packet of ``b`` payload bytes occupies each link for
``(b + header) / bandwidth``; its head reaches the far end of a link after
the link's latency and leaves a switch ``router_delay`` later; with
cut-through a packet alone therefore arrives

    Σ_links λ + (switches on the route) · router_delay + (b + header) / bandwidth

after it is injected, and back-to-back packets of one message follow one
serialisation time apart.
"""

import math
import re

import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.verify.testing import relay
from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate
from topocoll.sim.packet import PacketOptions

US = 1e-6
ALPHA = 0.5 * US


def _fat_tree():
    net = make_network("kary:4,2@bw=1GB/s,lat=1us", 8, routing="d-mod-k", order="identity")
    return Platform(alpha=ALPHA, network=net)


def _packet(**kw):
    return EngineConfig("packet", EngineOptions(packet=PacketOptions(**kw)))


def test_one_packet_alone_pays_every_hop_the_routers_and_one_serialisation():
    """kary:4,2, identity order: 0 → 4 crosses e0→s0→spine→s1→e4 (4 links,
    3 switches), then 4 → 5 crosses e4→s1→e5 (2 links, 1 switch). 1000 B in
    one packet of 1000 + 26 B at 1 GB/s: 1.026 µs of serialisation; router
    delay 0.1 µs; λ = 1 µs per link; α = 0.5 µs per send:

        T = (0.5 + 4·1 + 3·0.1 + 1.026) + (0.5 + 2·1 + 1·0.1 + 1.026) = 5.826 + 3.626 = 9.452 µs
    """
    sim = simulate(relay(8, [(0, 4), (4, 5)], 1000), _fat_tree(), _packet(), )
    assert sim.time == pytest.approx(9.452 * US, rel=1e-9)
    assert sim.packet_hops == 4 + 2


def test_packets_of_one_message_pipeline_one_serialisation_apart():
    """5000 B with 2048 B packets: 3 packets of 2048, 2048 and 904 B payload,
    2074, 2074 and 930 B on the wire. The last one starts 2·2.074 µs after the
    first and arrives 4·1 + 3·0.1 µs + 0.930 µs after it starts:

        T = 0.5 + 4.148 + 4.3 + 0.930 = 9.878 µs
    """
    sim = simulate(relay(8, [(0, 4)], 5000), _fat_tree(), _packet())
    assert sim.time == pytest.approx(9.878 * US, rel=1e-9)
    assert sim.packet_hops == 3 * 4


def test_a_slow_receiver_handles_one_packet_at_a_time():
    """As above (0 → 4, 3 packets), with the receiving NIC taking h = 5 µs per
    packet, more than a packet's 2.074 µs on the wire: the first tail arrives
    at 0.5 + 4·1 + 3·0.1 + 2.074 = 6.874 µs and is handled by 11.874; the
    others have arrived by then (2.074 and 0.930 µs behind it, the credits
    of 8-packet buffers never run out), so each takes h after the previous:

        T = 6.874 + 3·5 = 21.874 µs
    """
    sim = simulate(relay(8, [(0, 4)], 5000), _fat_tree(), _packet(eject_handling=5 * US))
    assert sim.time == pytest.approx(21.874 * US, rel=1e-9)


def test_without_contention_the_packet_model_agrees_with_flow():
    """Ring allreduce (every message on its own links in d-mod-k routing
    order) of 4 MiB on kary:4,2: packet and flow differ by the headers
    (26 B per 2 KiB: 1.3 %) and router delays only, within 2 %; with no
    header and no router delay, within 0.2 %."""
    net = make_network("kary:4,2", 16, routing="d-mod-k")
    platform = Platform(network=net)
    sched = generate("allreduce", "ring", 16, count=1 << 19, itemsize=8)
    flow = simulate(sched, platform, EngineConfig("flow")).time
    packet = simulate(sched, platform, _packet()).time
    bare = simulate(sched, platform, _packet(header_bytes=0, router_delay=0.0)).time
    assert packet == pytest.approx(flow, rel=0.02)
    assert bare == pytest.approx(flow, rel=0.002)
    assert packet > bare


@pytest.mark.parametrize("depth", [1, 2])
def test_no_buffer_ever_holds_more_than_its_depth(depth):
    """All-to-all on a 4×4 torus with shallow buffers: the fullest (link, VC)
    buffer reaches its depth (the network is loaded) and never exceeds it."""
    net = make_network("torus:4x4", 16, order="identity")
    sched = generate("alltoall", "direct", 16, count=16 * 4096, itemsize=1)
    sim = simulate(sched, Platform(network=net), _packet(buffer_packets=depth))
    assert sim.max_buffer_packets == depth
    # the per-buffer summaries agree with it, and a mean never exceeds its maximum
    assert int(sim.buffer_max.max()) == depth and (sim.buffer_mean <= sim.buffer_max + 1e-9).all()
    name, vc, most, mean = sim.fullest_buffers(1)[0]
    assert "→" in name and 0 <= vc < 2 and most <= depth and 0 < mean <= most


@pytest.mark.parametrize("kw, words", [
    (dict(vcs=0), "vcs=0, expected 1..16"),
    (dict(packet_bytes=0), "packet_bytes=0, expected 1..65536"),
    (dict(buffer_packets=10 ** 9), "buffer_packets=1000000000, expected 1..4096"),
    (dict(router_delay=-1e-9), "router_delay=-1e-09, expected 0..0.001 s"),
    (dict(queues="output"), "queues='output', expected one of input, voq"),
    (dict(eject_handling=-1e-9), "eject_handling=-1e-09, expected 0..0.001 s"),
])
def test_bad_packet_options_are_one_line(kw, words):
    with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(".", r"\.")):
        PacketOptions(**kw)


def test_a_torus_needs_the_datelines_second_vc():
    net = make_network("torus:4x4", 16, order="identity")
    sched = generate("alltoall", "direct", 16, count=16 * 64, itemsize=1)
    with pytest.raises(SpecError, match="vcs=1, expected at least 2 on a torus"):
        simulate(sched, Platform(network=net), _packet(vcs=1))


@pytest.mark.parametrize("argv, words", [
    (["--model", "flow", "--vcs", "2"], "--vcs with the flow model, expected --vcs only with --model packet"),
    (["--model", "packet", "--buffer-packets", "0"], "--buffer-packets: 0 is not positive, expected an integer in 1..4096"),
    (["--model", "packet", "--queues", "output"], "queues='output', expected one of input, voq"),
])
def test_cli_packet_flags_are_checked_in_one_line(argv, words, capsys):
    from topocoll.cli import main

    status = main(["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--topology", "kary:2,2", *argv])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and words in err, err


def test_cli_runs_the_packet_model():
    from topocoll.cli import main

    assert main(["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--topology", "kary:2,2",
                 "--model", "packet", "--queues", "voq", "--allocator", "age"]) == 0


def _torus_distance(dims, a, b) -> int:
    """Minimal hops between torus nodes a and b (dimension 0 fastest), from coordinates."""
    hops = 0
    for k in dims:
        d = abs(a % k - b % k)
        hops += min(d, k - d)
        a, b = a // k, b // k
    return hops


def test_adaptive_routing_moves_every_packet_on_a_minimal_route():
    # Packet by packet (JSQ over the dynamic VC, dimension-order escape VC):
    # every packet crosses exactly the minimal number of links, whichever it takes.
    dims, m = (4, 4, 2), 3 * 64
    p = math.prod(dims)
    net = make_network("torus:4x4x2", p, routing="adaptive", order="identity")
    sched = generate("alltoall", "direct", p, count=p * m, itemsize=1)
    sim = simulate(sched, Platform(network=net), _packet(packet_bytes=64, header_bytes=16))
    hops = sum(3 * _torus_distance(dims, a, b) for a in range(p) for b in range(p))
    assert sim.packet_hops == hops
    assert sim.link_bytes.sum() == hops * (64 + 16)


def test_adaptive_routing_beats_dimension_order_on_an_asymmetric_torus():
    # All-to-all paper §3.1, Table 2: on 2n×n×n-like shapes adaptive routing
    # spreads the long dimension's load over the short ones; dimension order cannot.
    shape, m = "4x4x8", 4 * 240
    sched = generate("alltoall", "randomized", 128, count=128 * m, itemsize=1, seed=1)
    bgl = dict(packet_bytes=240, header_bytes=16, vcs=2, buffer_packets=4, router_delay=0.0)
    times = {r: simulate(sched, Platform(network=make_network("torus:" + shape, 128, routing=r, order="identity")),
                         _packet(**bgl)).time for r in ("dor", "adaptive")}
    assert times["adaptive"] < 0.8 * times["dor"], times


@pytest.mark.parametrize("kw, words", [
    (dict(vcs=1), "vcs=1, expected at least 2 (VC 0 is the dimension-order escape channel"),
    (dict(buffer_packets=1), "buffer_packets=1, expected at least 2 (the escape channel's bubble"),
])
def test_adaptive_routing_refuses_what_could_deadlock(kw, words):
    net = make_network("torus:4x4", 16, routing="adaptive", order="identity")
    sched = generate("alltoall", "direct", 16, count=16 * 64, itemsize=1)
    with pytest.raises(SpecError, match=re.escape(words)):
        simulate(sched, Platform(network=net), _packet(**kw))


def test_dragonfly_routings_need_a_vc_class_per_hop_phase():
    # minimal l-g-l: 2 classes; UGAL's Valiant through a group (l g l g l): 3; the static Valiant through a
    # random router (l g l l g l): 4 (src/engine/ugal.rs). Fewer is refused before any work.
    sched = generate("alltoall", "shift", 72, count=72 * 256, itemsize=1)
    for routing, classes in (("minimal", 2), ("ugal", 3), ("valiant", 4)):
        net = make_network("dragonfly:4,2,2,9", 72, routing=routing, order="identity")
        with pytest.raises(SpecError, match=re.escape(f"vcs={classes - 1}, expected at least {classes} (one VC "
                                                      "class per hop phase")):
            simulate(sched, Platform(network=net), _packet(vcs=classes - 1))
        assert simulate(sched, Platform(network=net), _packet(vcs=classes)).time > 0


def test_ugal_takes_valiant_routes_only_when_minimal_queues_build():
    # Group i → group i + 1 (every endpoint's shift by a·p = 8): minimally a group's 8 endpoints share one
    # global cable. UGAL-L diverts part of the traffic over Valiant routes (more packet-hops, less time);
    # the flow model has no queues to choose by and refuses the routing.
    sched = generate("alltoall", "shift", 72, count=72 * 4096, itemsize=1)
    runs = {}
    for routing in ("minimal", "ugal"):
        net = make_network("dragonfly:4,2,2,9", 72, routing=routing, order="identity")
        runs[routing] = simulate(sched, Platform(network=net), _packet(vcs=3))
    assert runs["ugal"].packet_hops > runs["minimal"].packet_hops
    assert runs["ugal"].time < runs["minimal"].time
    with pytest.raises(SpecError, match="the flow model needs a static route, but ugal chooses"):
        simulate(sched, Platform(network=make_network("dragonfly:4,2,2,9", 72, routing="ugal")), EngineConfig("flow"))


def test_one_injection_fifo_per_endpoint_serialises_a_nodes_sends():
    # torus:4, node 0 sends 8 packets to each neighbour (1 and 3) and nothing else moves: with a FIFO per
    # output link both leave together; with one FIFO per endpoint (--ports 1) one after the other.
    sched = relay(4, [(0, 1)], 8 * 2048)
    both = generate("alltoall", "direct", 4, count=4 * 8 * 2048, itemsize=1)
    net = make_network("torus:4", 4, order="identity")
    one = simulate(sched, Platform(network=net), _packet()).time
    per_link = simulate(both, Platform(network=net), _packet()).time
    per_node = simulate(both, Platform(network=net), _packet(injection_fifos=1)).time
    assert per_node > per_link >= one
