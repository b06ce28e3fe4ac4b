"""The caveat table (sim/caveats.py) and the packet-model re-rank (tune/recheck.py).

Expected values come from the sources the table cites, not from the code: the shift-based paper (§5) saw
direct send 1.38–2.45× slower than shift-based on a fat tree, so a fluid model ranking direct send must say
it lacks what makes incast (head-of-line blocking, finite buffers); the packet model has those; the α-β-γ
model has no network at all (radix-k paper §2.2, assumption 5)."""

import dataclasses

import pytest

from topocoll.sim import EventModel, Platform, make_network
from topocoll.sim.caveats import caveats, has_nic_field, lacks, nic_for, recheck_packet_options, topology_kind
from topocoll.sim.engine import EngineOptions
from topocoll.sim.packet import PacketOptions
from topocoll.topology import parse_topology

DS = ("reduce_scatter", "direct_send", {})
SB = ("reduce_scatter", "shift_based", {})
BS = ("reduce_scatter", "binary_swap", {})


def families(found):
    return [c.family for c in found]


def test_flow_with_direct_send_among_candidates_has_the_incast_caveat():
    found = caveats("flow", [DS, SB, BS], "fat-tree")
    assert families(found) == ["many-to-one"]
    assert set(found[0].mechanisms) == {"hol-blocking", "finite-buffers"}
    assert found[0].affected == ("direct_send",)
    assert "shift-based paper §5" in found[0].source


def test_no_caveat_when_the_candidates_do_not_differ_by_the_mechanism():
    assert caveats("flow", [SB, BS], "fat-tree") == []                 # no many-to-one candidate
    assert caveats("flow", [DS], "fat-tree") == []                     # nothing to rank it against


def test_packet_model_has_incast_but_not_an_hca_interleaving_its_queue_pairs():
    """The packet model has HOL blocking and finite buffers; without nic="ib" its NIC sends one message
    at a time per link (BENCHMARKS "Packet model against the compositing papers"), which is the one gap."""
    found = caveats("packet", [DS, SB], "fat-tree", options=EngineOptions())
    assert all("hol-blocking" not in c.mechanisms and "finite-buffers" not in c.mechanisms for c in found)
    assert [c.mechanisms for c in found] == [("qp-interleaving",)]


@pytest.mark.skipif(not has_nic_field(), reason="PacketOptions has no nic field in this build (added by the "
                                                "NIC-model branch); the re-rank then uses the defaults")
def test_packet_model_with_an_ib_nic_has_no_incast_caveat_and_the_rerank_picks_it():
    ib = EngineOptions(packet=dataclasses.replace(PacketOptions(), nic="ib"))
    assert caveats("packet", [DS, SB], "fat-tree", options=ib) == []
    assert recheck_packet_options("fat-tree").nic == "ib"
    assert recheck_packet_options("crossbar").nic == "ib"
    assert recheck_packet_options("ib-map").nic == "ib"
    assert recheck_packet_options("torus").nic == "bgl"
    assert recheck_packet_options("mesh").nic == "bgl"


def test_nic_choice_without_the_field_leaves_the_defaults():
    assert nic_for("fat-tree") == "ib" and nic_for("torus-asymmetric") == "bgl" and nic_for("dragonfly") is None
    if not has_nic_field():
        assert recheck_packet_options("fat-tree") == PacketOptions()


def test_alpha_beta_gamma_has_the_contention_caveat():
    found = caveats("alpha-beta-gamma", [SB, BS], "none")
    assert families(found) == ["contention"]
    assert "contention" in lacks("alpha-beta-gamma")


def test_asymmetric_torus_all_to_all_and_randomized_injection():
    """All-to-all paper §3.2: direct strategies lose on asymmetric tori (finite buffers); §2, §3.1: the
    randomized all-to-all needs BG/L's injection FIFOs and adaptive routing."""
    cands = [("alltoall", "randomized", {}), ("alltoall", "two_phase_schedule", {"shape": "4x4x8"})]
    assert set(families(caveats("flow", cands, "torus-asymmetric"))) == {"alltoall-asymmetric-torus",
                                                                         "randomized-alltoall"}
    assert families(caveats("flow", cands, "torus")) == ["randomized-alltoall"]     # symmetric: §3.1 only
    assert families(caveats("flow", cands, "fat-tree")) == []


def test_radix_k_overlap_matters_only_for_models_that_serialise_compositing():
    rk = ("reduce_scatter", "radix_k", {"k": [8, 8]})
    assert "radix-k-overlap" in families(caveats("static", [rk, BS], "torus"))
    assert "radix-k-overlap" not in families(caveats("static", [rk, BS], "torus", reduces=False))
    assert "radix-k-overlap" not in families(caveats("flow", [rk, BS], "torus"))
    assert "radix-k-overlap" not in families(caveats("static", [("reduce_scatter", "radix_k", {"k": [2, 2]}), BS],
                                                     "torus"))                 # radix 2 is binary swap


def test_topology_kinds():
    assert topology_kind(None) == "none"
    assert topology_kind(parse_topology("kary:4,2")) == "fat-tree"
    assert topology_kind(parse_topology("crossbar:8")) == "crossbar"
    assert topology_kind(parse_topology("torus:4x4x4")) == "torus"
    assert topology_kind(parse_topology("torus:8x4x4")) == "torus-asymmetric"
    assert topology_kind(parse_topology("mesh:4x4x4")) == "mesh"


# ---- the re-rank ---------------------------------------------------------------------------------

def _ranked(p, size, model, platform):
    from topocoll.tune import rank
    from topocoll.tune.recheck import Candidate
    rows = rank("reduce_scatter", p, [size], model=model, platform=platform, op="noncommutative", itemsize=16,
                workers=1)
    return rows, [Candidate(r.algorithm, dict(r.params), r.time, r.algorithm, report=r.report) for r in rows]


def test_rerank_runs_the_packet_model_on_the_candidates_at_stake():
    """12 nodes on one leaf switch (Fig. 4's setting, small image): flow lacks incast, the run is tiny, so the
    candidates within 2.45× are re-ranked by the packet model; each re-ranked time is the packet model's own
    time for that schedule (checked by simulating it here)."""
    from topocoll.schedules import generate
    from topocoll.sim import simulate
    from topocoll.sim.engine import EngineConfig
    from topocoll.tune.recheck import Budget, judge
    net = make_network("kary:12,2", 12, routing="ftree", order="routing")
    plat = Platform(alpha=1e-6, reduce_bandwidth=1e18, network=net)
    size = 96 * 64 * 16
    rows, cands = _ranked(12, size, EventModel("flow"), plat)
    budget = Budget(20.0)
    v = judge("reduce_scatter", 12, size, cands, EventModel("flow"), plat, itemsize=16, budget=budget)
    assert v.by_packet and "direct_send" in v.rechecked and budget.spent > 0
    ds = generate("reduce_scatter", "direct_send", 12, count=96 * 64, itemsize=16)
    alone = simulate(ds, plat, EngineConfig("packet", EngineOptions(packet=recheck_packet_options("fat-tree"))))
    assert v.rechecked["direct_send"] == alone.time
    ordered = [k for k in v.order if k in v.rechecked]
    assert [v.rechecked[k] for k in ordered] == sorted(v.rechecked[k] for k in ordered)


def test_no_rerank_when_the_budget_is_too_small_and_the_caveat_stays():
    """The estimate is checked before any run: Σ ⌈bytes/2048⌉ × hops at 2 M packet-hops/s. Direct send on
    12 ranks of one leaf (2 hops each way through the leaf: e→s→e) with a 12 MiB image sends 11 messages of
    1 MiB per rank: 12·11·512 packets × 2 hops = 135,168 packet-hops ≈ 0.068 s."""
    from topocoll.schedules import generate
    from topocoll.tune.recheck import Budget, judge, packet_hops
    net = make_network("kary:12,2", 12, routing="ftree", order="routing")
    ds = generate("reduce_scatter", "direct_send", 12, count=12 << 16, itemsize=16)
    assert packet_hops(ds, net, 2048) == 12 * 11 * 512 * 2
    plat = Platform(alpha=1e-6, reduce_bandwidth=1e18, network=net)
    rows, cands = _ranked(12, 12 << 20, EventModel("flow"), plat)
    v = judge("reduce_scatter", 12, 12 << 20, cands, EventModel("flow"), plat, itemsize=16, budget=Budget(0.01))
    assert not v.by_packet and "over the" in v.skipped and families(v.caveats) == ["many-to-one"]
    assert v.order == [c.key for c in cands]
    v = judge("reduce_scatter", 12, 12 << 20, cands, EventModel("flow"), plat, itemsize=16, budget=None)
    assert not v.by_packet and not v.skipped and families(v.caveats) == ["many-to-one"]


def test_nic_logic_with_a_stand_in_for_the_nic_field():
    """The same choice as above, run in every build: options with a ``nic`` attribute (a stand-in for the
    field the NIC-model branch adds) are read with getattr, and the re-rank's options get ``nic`` set."""
    stand_in = dataclasses.make_dataclass("P", [("nic", str, "simple"), ("injection_fifos", int, 0),
                                                ("queues", str, "input")], frozen=True)
    opts = type("O", (), {"packet": stand_in(nic="ib")})()
    assert caveats("packet", [DS, SB], "fat-tree", options=opts) == []
    opts = type("O", (), {"packet": stand_in(nic="simple")})()
    assert [c.mechanisms for c in caveats("packet", [DS, SB], "fat-tree", options=opts)] == [("qp-interleaving",)]
    assert recheck_packet_options("fat-tree", stand_in()).nic == "ib"
    assert recheck_packet_options("torus", stand_in()).nic == "bgl"
    assert recheck_packet_options("dragonfly", stand_in()).nic == "simple"
