"""Synthetic traffic through the packet model (``topocoll.sim.traffic``):
results of the literature and closed forms, derived here independently of
the model.

- Head-of-line blocking (Karol, Hluchyj & Morgan, "Input versus output
  queueing on a space-division packet switch", IEEE Trans. Commun. 35(12),
  1987): an N×N input-queued switch under saturated uniform traffic delivers
  2 − √2 ≈ 0.586 packets per output per slot as N → ∞, more at finite N
  (their Table I: 0.6553 at N = 4, 0.6184 at N = 8). The reference for
  N = 32 is their slotted model, simulated below in NumPy.
- The bisection bound of a k-ary n-cube under uniform traffic (Dally &
  Towles, *Principles and Practices of Interconnection Networks*, 2004,
  §3.3), see :func:`test_uniform_torus_stays_under_the_bisection_bound`.
- The zero-load latency of a packet of ``h`` links (``src/engine/packet/``):
  ``h·λ + (h − 1)·router_delay + serialisation``, averaged over the hop
  counts of uniform traffic computed from ring distances.
"""

import math

import numpy as np
import pytest

from topocoll.cli import main
from topocoll.errors import SpecError
from topocoll.sim.packet import PacketOptions
from topocoll.sim.traffic import MAX_SLOTS, traffic

pytestmark = pytest.mark.timeout(60)


def _slotted_hol(n: int, slots: int, seed: int) -> float:
    """Karol et al. §III: N always-backlogged FIFO inputs whose heads go to
    uniform outputs; each slot every output serves one of the heads addressed
    to it (uniformly), and a served input draws a new head. Packets per output
    per slot, the first tenth of the slots discarded."""
    rng = np.random.default_rng(seed)
    head = rng.integers(0, n, n)
    served = 0
    for slot in range(slots):
        order = rng.permutation(n)   # a uniform winner per output: the first in a random order
        outputs, first = np.unique(head[order], return_index=True)
        winners = order[first]
        head[winners] = rng.integers(0, n, len(winners))
        if slot >= slots // 10:
            served += len(outputs)
    return served / (n * (slots - slots // 10))


def test_the_slotted_reference_matches_karol_table_one():
    # Karol et al. Table I, N = 4: 0.6553; the asymptote 2 − √2 below N = 32's value.
    assert abs(_slotted_hol(4, 20000, 1) - 0.6553) < 0.01
    assert 2 - math.sqrt(2) < _slotted_hol(32, 4000, 2) < 0.61


def test_head_of_line_blocking_and_virtual_output_queues():
    """Uniform traffic at load 1.0 through one 32-port crossbar (`crossbar:32`, one VC: a FIFO per input)
    saturates near the slotted model's value; virtual output queues (with room for many outputs) remove the
    blocking; two VCs per input are two FIFOs, in between (packets alternate VCs, so two heads may compete)."""
    reference = _slotted_hol(32, 4000, 3)
    fifo = traffic("uniform", [1.0], "crossbar:32", PacketOptions(vcs=1), warmup=500, measure=3000)[0]
    assert 0.55 < fifo.accepted < 0.65 and abs(fifo.accepted - reference) < 0.03, (fifo.accepted, reference)
    assert fifo.saturated and fifo.created == 1.0
    voq = traffic("uniform", [1.0], "crossbar:32", PacketOptions(vcs=1, queues="voq", buffer_packets=64),
                  warmup=500, measure=3000)[0]
    assert voq.accepted >= 0.9
    two = traffic("uniform", [1.0], "crossbar:32", PacketOptions(vcs=2), warmup=500, measure=3000)[0]
    assert fifo.accepted + 0.03 < two.accepted < voq.accepted


def test_uniform_torus_stays_under_the_bisection_bound():
    """k-ary n-cube, k = 8, n = 2, dimension-order routing with datelines.

    Bisection: cutting the torus across one dimension cuts every one of the
    k^(n−1) rings of that dimension twice (middle and wrap-around), each cut a
    pair of channels: 4·k^(n−1) unidirectional channels, 2·k^(n−1) each way.
    Under uniform traffic half of the N = k^n nodes' packets go to the other
    half, so λ·N/4 packets per slot cross each way, each channel carrying at
    most one packet per slot (load is in units of one link's bandwidth):
    λ ≤ 2·k^(n−1)·4 / k^n = 8/k = 1.0 packets per node per slot.
    """
    k = 8
    bound = 8 / k
    low, high = traffic("uniform", [0.1, 1.0], "torus:8x8", warmup=300, measure=2000, seed=4)
    assert high.accepted <= bound and high.saturated
    assert high.accepted > 0.3   # and the network does carry traffic
    # minimal adaptive routing (JSQ, bubble escape VC) moves the same packets over the same channel counts
    adaptive = traffic("uniform", [1.0], "torus:8x8", routing="adaptive", warmup=300, measure=2000, seed=4)[0]
    assert adaptive.accepted <= bound and adaptive.saturated and adaptive.accepted > 0.3
    # low load: everything offered is accepted (64 × 2000 × 0.1 = 12,800 packets: ±0.9 % is one σ)
    assert abs(low.created - 0.1) < 0.004 and abs(low.accepted - low.created) < 0.02 * low.created
    assert not low.saturated and low.delivered == low.measured


def _mean_ring_hops(dims) -> float:
    """Mean minimal hop count between distinct nodes of a torus: Σ over
    dimensions of the mean ring distance min(d, k − d), over all pairs, then
    excluding the N self-pairs (distance 0)."""
    n = math.prod(dims)
    all_pairs = sum(sum(min(d, k - d) for d in range(k)) / k for k in dims)
    return all_pairs * n / (n - 1)


@pytest.mark.parametrize("spec,dims", [("torus:8x8", (8, 8)), ("torus:6x4", (6, 4))])
def test_low_load_latency_is_the_zero_load_formula(spec, dims):
    # 64 B packets, no header, at the torus default 175 MB/s and 100 ns links, 100 ns router delay: at 2 % load
    # queueing adds well under 2 % (a link is busy 2 %·k/8 of the time).
    options = PacketOptions(packet_bytes=64, header_bytes=0)
    row = traffic("uniform", [0.02], spec, options, warmup=200, measure=10000, seed=5)[0]
    h = _mean_ring_hops(dims)
    lam, delay, ser = 100e-9, options.router_delay, 64 / 175e6
    zero_load = h * lam + (h - 1) * delay + ser
    assert row.slot == pytest.approx(ser, rel=1e-6)
    assert zero_load <= row.mean_latency < zero_load * 1.025, (row.mean_latency, zero_load)


def test_crossbar_zero_load_latency_is_exact_when_alone():
    # `crossbar:8`: 2 GB/s, 1 µs links, one switch: up, router delay, down, one serialisation
    # of 2048 + 26 B. At load 0.01 the 8 sources rarely meet, so the median packet is alone.
    row = traffic("uniform", [0.01], "crossbar:8", warmup=100, measure=3000, seed=6)[0]
    alone = 2 * 1e-6 + 100e-9 + 2074 / 2e9
    assert alone <= row.mean_latency < alone * 1.02


def test_patterns_at_low_load_accept_what_they_create():
    rows = {p: traffic(p, [0.1], "torus:8x8", warmup=200, measure=2000, seed=7)[0]
            for p in ("transpose", "bit-complement", "tornado", "hot-spot")}
    for p, r in rows.items():
        assert not r.saturated and abs(r.accepted - r.created) < 0.05 * r.created, p
    # transpose silences the 8 diagonal nodes of the 8 × 8 matrix: 0.1 · 56/64 created
    assert abs(rows["transpose"].created - 0.1 * 56 / 64) < 0.004
    assert abs(rows["tornado"].created - 0.1) < 0.004


def test_a_hot_spot_saturates_its_node():
    # half of every packet to node 0 of 16 at load 0.2: node 0 is offered 15 · 0.2 · 0.5 = 1.5 > 1 per slot
    r = traffic("hot-spot", [0.2], "crossbar:16", hot_fraction=0.5, warmup=200, measure=2000)[0]
    assert r.saturated and r.accepted < r.created


def test_a_seed_fixes_the_run():
    a = traffic("uniform", [0.3, 0.9], "crossbar:8", warmup=100, measure=1000, seed=11)
    b = traffic("uniform", [0.3, 0.9], "crossbar:8", warmup=100, measure=1000, seed=11)
    c = traffic("uniform", [0.3, 0.9], "crossbar:8", warmup=100, measure=1000, seed=12)
    assert a == b and a != c and a[0].seed == 11


@pytest.mark.parametrize("args,kw,message", [
    (("nope", [0.5], "crossbar:8"), {}, "pattern 'nope', expected one of"),
    (("uniform", [0.0], "crossbar:8"), {}, "load 0.0, expected an offered load in (0, 1]"),
    (("uniform", [1.01], "crossbar:8"), {}, "load 1.01"),
    (("uniform", [float("nan")], "crossbar:8"), {}, "load nan"),
    (("transpose", [0.5], "crossbar:32"), {}, "32 endpoints, expected an even power of two"),
    (("bit-complement", [0.5], "crossbar:12"), {}, "12 endpoints, expected a power of two"),
    (("tornado", [0.5], "kary:4,2"), {}, "not a torus"),
    (("tornado", [0.5], "mesh:4x4"), {}, "not a torus"),
    (("hot-spot", [0.5], "crossbar:8"), {"hot_node": 8}, "hot node 8"),
    (("uniform", [0.5], "crossbar:8"), {"measure": 0}, "measure=0, expected 1.."),
    (("uniform", [0.5], "crossbar:8"), {"warmup": MAX_SLOTS + 1}, "warmup=1000001"),
    (("uniform", [1.0], "torus:32x32"), {"measure": 100_000}, "expected at most 33554432"),
    (("uniform", [0.5], "torus:4x4", PacketOptions(vcs=1)), {}, "vcs=1, expected at least 2 on a torus"),
])
def test_bad_input_is_one_line(args, kw, message):
    with pytest.raises(SpecError) as e:
        traffic(*args, **kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def _cli(capsys, *argv):
    status = main(["simulate", "traffic", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_the_command_prints_the_table_and_the_seed(capsys):
    status, stdout, stderr = _cli(capsys, "uniform", "--load", "0.2,1", "--topology", "crossbar:8", "--vcs", "1",
                                  "--seed", "9", "--param", "measure=1000")
    assert status == 0, stderr
    assert "seed 9" in stdout and "accepted" in stdout and "saturated" in stdout
    lines = stdout.splitlines()
    assert lines[3].split()[0] == "0.2" and lines[3].split()[-1] == "no" and lines[4].split()[-1] == "yes"


@pytest.mark.parametrize("argv,message", [
    (("transpose", "--load", "0.5", "--topology", "crossbar:8"), "expected an even power of two"),
    (("uniform", "--load", "2", "--topology", "crossbar:8"), "load 2.0"),
    (("uniform", "--load", "x", "--topology", "crossbar:8"), "--load 'x'"),
    (("uniform", "--topology", "crossbar:8"), "needs --load"),
    (("uniform", "--load", "0.5", "--topology", "crossbar:8", "--model", "flow"), "expected the packet model"),
    (("uniform", "--load", "0.5", "--topology", "crossbar:8", "--param", "k=2"), "--param k with simulate traffic"),
])
def test_the_command_refuses_bad_input_in_one_line(argv, message, capsys):
    status, _, stderr = _cli(capsys, *argv)
    assert status == 2 and message in stderr and len(stderr.strip().splitlines()) == 1, stderr


def test_load_is_refused_outside_traffic(capsys):
    status = main(["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--load", "0.5"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "--load only with simulate traffic" in err and len(err.splitlines()) == 1


# --- flit routers, ties, latency threshold (issue 27) ---

#: BookSim-like 8×8 torus of the comparison: 32 B flits at 32 GB/s (1 ns cycles), 2 ns links, 8-flit packets
_FLIT_TORUS = "torus:8x8@bw=32GB/s,lat=2ns"
_FLIT = PacketOptions(packet_bytes=256, header_bytes=0, flit_bytes=32)


def test_flit_routers_zero_load_latency_is_the_pipeline_formula():
    # Per router 4 stages of 1 cycle: a head arriving at cycle a leaves at a + 3 and is at the next router
    # L = 2 cycles later; terminal channels of 1 cycle each way; H links cross H + 1 routers; the tail
    # follows P − 1 = 7 cycles behind: T0 = 1 + 3(H + 1) + 2H + 1 + 7 cycles, averaged over the hop counts
    # of uniform traffic. At 1 % load queueing adds little (a link is busy ≈ 1 % · H/4 of the time).
    row = traffic("uniform", [0.01], _FLIT_TORUS, _FLIT, warmup=200, measure=3000, seed=3)[0]
    h = _mean_ring_hops((8, 8))
    t0 = (1 + 3 * (h + 1) + 2 * h + 1 + 7) * 1e-9
    assert row.cycle == pytest.approx(1e-9)
    assert t0 <= row.mean_latency < t0 * 1.03, (row.mean_latency, t0)


def test_ties_pick_dimension_order_and_random_prints_its_seed(capsys):
    # Uniform on a 4-ring: offsets 1, 2, 3 with probability 1/3 each; offset 2 is a tie. Per node and slot at
    # load 0.6, positive puts 0.6 · (1/3 + 2 · 1/3) = 0.6 packets on each + link and 0.6 · 1/3 = 0.2 on each −
    # link; source-parity and random split the ties: 0.6 · (1/3 + 1/3) = 0.4 each way. Neither saturates, but
    # positive's + links are busier, so its mean latency is higher.
    rows = {tie: traffic("uniform", [0.6], "torus:4", PacketOptions(packet_bytes=64, header_bytes=0), tie=tie,
                         warmup=200, measure=3000, seed=2)[0] for tie in ("positive", "source-parity", "random")}
    assert all(not r.saturated for r in rows.values())
    assert rows["positive"].mean_latency > rows["source-parity"].mean_latency
    assert rows["positive"].mean_latency > rows["random"].mean_latency
    status = main(["simulate", "traffic", "uniform", "--load", "0.2", "--topology", "torus:4", "--tie", "random",
                   "--seed", "4", "--param", "measure=500"])
    out = capsys.readouterr().out
    assert status == 0 and "ties random (seed 4)" in out


def test_the_latency_threshold_fires_and_is_named():
    # Flit routers past saturation: the backlog grows and the mean latency passes 500 cycles (BookSim's
    # default); below it neither fires.
    lo, hi = traffic("uniform", [0.2, 0.9], _FLIT_TORUS, _FLIT, tie="source-parity", warmup=300, measure=1500,
                     seed=1)
    assert not lo.saturated and lo.saturated_by == ""
    assert lo.latency_threshold == pytest.approx(500e-9)
    assert hi.saturated and "latency" in hi.saturated_by and hi.mean_latency > 500e-9
    # packet-granular model: no threshold unless given (then in slots); 1 slot is below any latency
    r = traffic("uniform", [0.1], "crossbar:8", warmup=100, measure=500, latency_thres=1)[0]
    assert r.saturated and r.saturated_by == "latency" and r.latency_threshold == pytest.approx(r.slot)


@pytest.mark.parametrize("kw,message", [
    ({"switching": "store"}, "switching='store', expected one of wormhole, cut-through"),
    ({"sw_allocator": "wavefront"}, "sw_allocator='wavefront', expected one of islip"),
    ({"pipeline": (1, 0, 1, 1)}, "pipeline=(1, 0, 1, 1), expected 4 cycle counts"),
    ({"flit_bytes": -1}, "flit_bytes=-1, expected 0..65536"),
    ({"speculative": 1}, "speculative=1, expected True or False"),
])
def test_bad_flit_options_are_one_line(kw, message):
    with pytest.raises(SpecError) as e:
        PacketOptions(**kw)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_ties_are_refused_off_a_torus_or_with_a_routing():
    with pytest.raises(SpecError, match="expected a torus"):
        traffic("uniform", [0.1], "crossbar:8", tie="random")
    with pytest.raises(SpecError, match="with a routing given"):
        traffic("uniform", [0.1], "torus:4", tie="random", routing="dor")
