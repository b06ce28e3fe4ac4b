"""Blue Gene/L's endpoint in the packet model (``nic="bgl"``, ``--nic bgl``):
refusals in one line, the simple endpoint unchanged, and the endpoint's
effect on the randomized all-to-all against a bound derived by hand.
The FIFO assignment, several FIFOs feeding several links, the core's copy
rate and the reception drain have exact hand-derived tests in
``src/engine/packet/bgl.rs``.
"""

import re

import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate
from topocoll.sim.packet import PacketOptions

#: BG/L's packets and links (all-to-all paper §2): 240 B of payload + 16 B, 175 MB/s
BGL = dict(packet_bytes=240, header_bytes=16, buffer_packets=4, router_delay=0.0)
T = 256 / 175e6


def _packet(**kw):
    return EngineConfig("packet", EngineOptions(packet=PacketOptions(**kw)))


@pytest.mark.parametrize("kw, words", [
    (dict(nic="ib", bgl_burst=2), "bgl_burst=2 with nic='ib', expected the bgl_ options only with nic='bgl'"),
    (dict(nic="dma"), "nic='dma', expected one of simple, ib, bgl"),
    (dict(nic="bgl", bgl_fifos=0), "bgl_fifos=0, expected 1..64 BG/L injection FIFOs per node"),
    (dict(nic="bgl", bgl_fifo_packets=5000), "bgl_fifo_packets=5000, expected 1..4096"),
    (dict(nic="bgl", bgl_placement="random"), "bgl_placement='random', expected one of direction, any"),
    (dict(nic="bgl", bgl_cpu_links=-1.0), "bgl_cpu_links=-1.0, expected 0..64 links' bandwidth"),
    (dict(nic="bgl", injection_fifos=2), "injection_fifos=2 with nic='bgl', expected 0"),
    (dict(nic="bgl", eject_handling=1e-9), "eject_handling=1e-09 with nic='bgl', expected 0"),
])
def test_bad_bgl_options_are_one_line(kw, words):
    with pytest.raises(SpecError, match=re.escape(words)) as e:
        PacketOptions(**kw)
    assert "\n" not in str(e.value)


def test_the_bgl_endpoint_needs_a_torus():
    net = make_network("kary:2,2", 4, order="identity")
    sched = generate("alltoall", "direct", 4, count=4 * 64, itemsize=1)
    with pytest.raises(SpecError, match=re.escape("nic='bgl' on kary:2,2, expected a torus or mesh")):
        simulate(sched, Platform(network=net), _packet(nic="bgl"))


@pytest.mark.parametrize("argv, words", [
    (["--bgl-fifos", "3"], "--bgl-fifos without --nic bgl, expected --bgl-fifos only with --nic bgl"),
    (["--nic", "ib", "--bgl-fifos", "3"], "--bgl-fifos without --nic bgl, expected --bgl-fifos only with --nic bgl"),
    (["--nic", "bgl", "--bgl-fifos", "0"], "--bgl-fifos: 0 is not positive"),
])
def test_cli_bgl_flags_are_checked_in_one_line(argv, words, capsys):
    from topocoll.cli import main

    status = main(["simulate", "alltoall", "randomized", "-P", "8", "--size", "1K", "--topology", "torus:2x2x2",
                   "--model", "packet", *argv])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and words in err, err


def test_cli_runs_the_bgl_endpoint():
    from topocoll.cli import main

    assert main(["simulate", "alltoall", "randomized", "-P", "16", "--size", "2K", "--topology", "torus:4x4",
                 "--model", "packet", "--routing", "adaptive", "--vcs", "3", "--nic", "bgl",
                 "--bgl-placement", "any", "--bgl-burst", "2", "--bgl-cpu-links", "4"]) == 0


def test_the_simple_endpoint_is_the_default_and_unchanged():
    # nic="simple" is PacketOptions' default: the same run to the picosecond, link by link.
    net = make_network("torus:4x4", 16, routing="adaptive", order="identity")
    sched = generate("alltoall", "randomized", 16, count=16 * 960, itemsize=1, seed=3)
    a = simulate(sched, Platform(alpha=0.0, network=net), _packet(vcs=3, **BGL))
    b = simulate(sched, Platform(alpha=0.0, network=net), _packet(vcs=3, nic="simple", **BGL))
    assert a.time == b.time and a.packet_hops == b.packet_hops and (a.link_bytes == b.link_bytes).all()


def test_bgl_beats_the_simple_endpoint_on_a_randomized_all_to_all():
    """torus:2x2 (one link per neighbour pair, 2 per node), adaptive routing,
    8 packets per pair. Node 0 sends 8 packets to 1 (one x hop), 8 to 2 (one y
    hop) and 8 to 3 (one x and one y hop): 32 packet-hops per node over its 2
    links, so no run beats 16 serialisations T plus one link latency (the
    link-load bound, BG/L's 100 ns hop latency). With the simple endpoint the
    messages to 1 and 3 (dimension order starts both in x) wait in one FIFO,
    one after the other, and the y link idles once the message to 2 is out;
    BG/L's core interleaves them packet by packet, so packets to 3 take the y
    link while x is busy. Both are valid (at or above the bound); BG/L's is
    within 10 % of it, the simple endpoint's more than 10 % above it."""
    net = make_network("torus:2x2", 4, routing="adaptive", order="identity")
    sched = generate("alltoall", "randomized", 4, count=4 * 8 * 240, itemsize=1, seed=1)
    bound = 16 * T + 100e-9
    runs = {nic: simulate(sched, Platform(alpha=0.0, network=net), _packet(vcs=3, nic=nic, **BGL)).time
            for nic in ("simple", "bgl")}
    assert bound <= runs["bgl"] <= 1.1 * bound, (runs, bound)
    assert runs["simple"] > 1.1 * bound, (runs, bound)
