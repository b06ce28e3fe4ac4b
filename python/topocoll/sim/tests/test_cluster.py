"""The cluster model's costs (issue 28 items 1–3), each time derived by hand:
intra-node messages pay the node's path and not the NIC; a host's NIC (its
link, its LogGP gap) is shared by its ranks and limits a single stream;
ranks dealt cyclically over every host; the fabric's ``@`` options on either
side of ``+ppn``; the envelope, the eager threshold's SMPI rule, the
rendezvous handshake and the presets."""

import pytest

from topocoll.errors import SpecError
from topocoll.schedules.goal import read_goal
from topocoll.sim import EngineOptions, Platform, make_network, simulate
from topocoll.sim.presets import PRESETS, apply_preset
from topocoll.topology import parse_topology

MIB = 1 << 20


def goal(p: int, ranks: dict) -> object:
    """A GOAL program of ``p`` ranks; ``ranks[r]`` is rank r's statements."""
    return read_goal(f"num_ranks {p}\n" + "".join(
        f"rank {r} {{\n" + "\n".join(ranks.get(r, [])) + "\n}\n" for r in range(p)))


def one_message(p: int, src: int, dst: int, nbytes: int):
    return goal(p, {src: [f"l1: send {nbytes}b to {dst}"], dst: [f"l1: recv {nbytes}b from {src}"]})


#: a NIC slower than the node's copy path, with a gap and a latency (a calibrated profile's kind of values);
#: nic_bandwidth is the flow model's injection limit
NIC = dict(g=0.1e-6, G=1 / 3e9, L=1.11e-6, nic_bandwidth=3e9)


@pytest.mark.parametrize("model", ["loggops", "flow"])
def test_an_intra_node_message_pays_the_node_path_not_the_nic(model):
    """Ranks 0 and 1 on host 0 of crossbar:2+ppn=2 (block). The message goes
    slot → hub (lat/2) → memory → hub → slot (lat/2) at min(bw, mem) =
    8 GB/s: T = 0.4 µs + 1 MiB / 8 GB/s = 131.472 µs. The NIC's G (3 GB/s:
    349.5 µs for 1 MiB), g and L (loggops) and its injection limit (flow)
    never apply to it, nor the crossbar's links."""
    net = make_network("crossbar:2+ppn=2,lat=0.4us,bw=8GB/s,mem=50GB/s", 2)
    assert net.order.tolist() == [0, 1]
    sim = simulate(one_message(2, 0, 1, MIB), Platform(alpha=0.0, network=net), model=model,
                   options=EngineOptions(**NIC))
    assert sim.time == pytest.approx(0.4e-6 + MIB / 8e9, rel=1e-9)


def _two_hosts(model, program, **nic):
    """4 ranks, block: 0, 1 on host 0; 2, 3 on host 1. NIC links 12 GB/s and
    1 µs each way (e → switch → e: 2 µs); each rank's copy bandwidth 8 GB/s."""
    net = make_network("crossbar:2@bw=12GB/s,lat=1us+ppn=2,bw=8GB/s,lat=0.4us", 4)
    return simulate(program, Platform(alpha=0.0, network=net), model=model, options=EngineOptions(**nic)).time


@pytest.mark.parametrize("model", ["loggops", "flow"])
def test_a_single_inter_node_stream_is_limited_by_the_nic_link_not_the_copy_bandwidth(model):
    """Rank 0 → rank 2: the fabric's two links alone, 2 µs + 1 MiB / 12 GB/s
    (the node's bw= 8 GB/s caps shared-memory copies, not the NIC's DMA)."""
    t = _two_hosts(model, one_message(4, 0, 2, MIB))
    assert t == pytest.approx(2e-6 + MIB / 12e9, rel=1e-9)


def test_the_hosts_ranks_share_its_nic_link():
    """Ranks 0 → 2 and 1 → 3 at once share host 0's link (6 GB/s each):
    2 µs + 2 MiB / 12 GB/s."""
    prog = goal(4, {0: [f"l1: send {MIB}b to 2"], 1: [f"l1: send {MIB}b to 3"],
                    2: [f"l1: recv {MIB}b from 0"], 3: [f"l1: recv {MIB}b from 1"]})
    assert _two_hosts("flow", prog) == pytest.approx(2e-6 + 2 * MIB / 12e9, rel=1e-9)


def test_the_nics_gap_is_the_hosts_not_each_ranks():
    """LogGOPS g = 1 µs is the host NIC's gap between any two messages (its
    message rate, 1 M messages/s): ranks 0 and 1 each send 8 B to host 1 at
    t = 0; the second leaves the NIC 1 µs after the first: 1 µs + 2 µs of
    links + 8 B at 12 GB/s (667 ps, rounded up)."""
    prog = goal(4, {0: ["l1: send 8b to 2"], 1: ["l1: send 8b to 3"],
                    2: ["l1: recv 8b from 0"], 3: ["l1: recv 8b from 1"]})
    assert _two_hosts("loggops", prog, g=1e-6) == pytest.approx(1e-6 + 2e-6 + 667e-12, abs=1e-12)


def test_cyclic_deals_the_ranks_over_every_host():
    """P = 6 on 4 hosts × 2 slots, dist=cyclic (Slurm: rank r on host r mod
    4): hosts 0, 1, 2, 3, 0, 1, slots 0, 0, 0, 0, 1, 1 → slot ids
    2·host + slot = 0, 2, 4, 6, 1, 3. Block fills hosts 0–2."""
    assert make_network("crossbar:4+ppn=2,dist=cyclic", 6).order.tolist() == [0, 2, 4, 6, 1, 3]
    assert make_network("crossbar:4+ppn=2", 6).order.tolist() == [0, 1, 2, 3, 4, 5]


def test_the_fabrics_options_may_follow_the_node_options():
    after, before = (parse_topology(s) for s in ("crossbar:2+ppn=2,lat=0.2us@bw=1GB/s,lat=3us",
                                                 "crossbar:2@bw=1GB/s,lat=3us+ppn=2,lat=0.2us"))
    assert after.bandwidth.tolist() == before.bandwidth.tolist()
    assert after.latency.tolist() == before.latency.tolist()
    with pytest.raises(SpecError) as err:
        parse_topology("crossbar:2@lat=1us+ppn=2@bw=1GB/s")
    assert "both before and after +ppn=" in str(err.value) and "\n" not in str(err.value)


def test_the_envelope_goes_on_the_wire_not_into_the_application_bytes():
    """4096 B + 16 B of envelope at 2 GB/s, no latency: 2056 ns."""
    sim = simulate(one_message(2, 0, 1, 4096), Platform(alpha=0.0, bandwidth=2e9), model="flow",
                   options=EngineOptions(envelope_bytes=16))
    assert sim.time == pytest.approx(4112 / 2e9, rel=1e-12)
    assert sim.bytes_total == 4096 and sim.link_bytes.max() == 4112


@pytest.mark.parametrize("nbytes, sender_done", [(65535, 0.0), (65536, 10e-6 + 65536e-9)])
def test_the_default_eager_threshold_is_smpis_strictly_below_65536(nbytes, sender_done):
    """Rank 1 posts its receive after 10 µs of work (calc 10000 at 1 GB/s).
    Below 65,536 B the send completes at once (buffered); at 65,536 B it is
    a rendezvous and completes when its data has arrived: 10 µs + 65,536 B
    at 1 GB/s."""
    prog = goal(2, {0: [f"l1: send {nbytes}b to 1"],
                    1: ["l1: calc 10000", f"l2: recv {nbytes}b from 0", "l2 requires l1"]})
    plat = Platform(alpha=0.0, bandwidth=1e9, reduce_bandwidth=1e9)
    assert EngineOptions().eager == 65535
    sim = simulate(prog, plat, model="loggops")
    assert sim.rank_done[0] == pytest.approx(sender_done, abs=1e-12)


def _pingpong(nbytes):
    return goal(2, {0: [f"l1: send {nbytes}b to 1", f"l2: recv {nbytes}b from 1"],
                    1: [f"l1: recv {nbytes}b from 0", f"l2: send {nbytes}b to 0", "l2 requires l1"]})


def test_the_handshake_costs_a_16k_pingpong_two_latencies_per_message():
    """The synthetic OSU profile (tests/data/osu): L = α_inter, g, G = 1/12
    GB/s, eager 8 KiB; no links' latency. A 16 KiB message is a rendezvous.
    Direct: each message D = m·G + (L − g) after its send; the round trip 2D.
    Handshake: a request (0 B: g on the NIC, then L − g) and an answer before
    each data message: 2D + 4·L, i.e. one-way (half the round trip) 2 L more."""
    from pathlib import Path
    from topocoll.mpi.calibrate import profile_from_osu
    d = Path(__file__).resolve().parents[4] / "tests" / "data" / "osu"
    prof = profile_from_osu([f"inter:{d / 'synthetic-inter-latency-v5.6.txt'}",
                             f"inter:{d / 'synthetic-inter-bw-v7.5.txt'}",
                             f"inter:{d / 'synthetic-inter-mbw_mr-v5.6.txt'}"]).profile
    assert prof.eager < 16384
    plat = prof.platform(model="loggops", layer="mpi")
    times = {}
    for how in ("direct", "handshake"):
        opts = prof.engine_options(layer="mpi", rendezvous=how)
        times[how] = simulate(_pingpong(16384), plat, model="loggops", options=opts).time
    m_g = 16384 * prof.G
    assert times["direct"] == pytest.approx(2 * (m_g + prof.L - prof.g), abs=4e-12)
    assert times["handshake"] - times["direct"] == pytest.approx(4 * prof.L, abs=4e-12)


def test_the_handshake_is_refused_by_the_congestion_model():
    with pytest.raises(SpecError, match="handshake.*congestion model"):
        simulate(_pingpong(1 << 20), Platform(), model="congestion", options=EngineOptions(rendezvous="handshake"))


def test_smpi_preset_prices_a_one_byte_message_as_smpi_measured_it():
    """BENCHMARKS.md, "SMPI (SimGrid) and topocoll's simulator side by side":
    1 B from rank 0 to rank 1 on crossbar:144@bw=2GB/s,lat=1us takes
    2.0085 µs in SMPI. CM02 with the 16-B envelope: 2 × 1 µs of latency, then
    17 B at 2 GB/s = 2.0085 µs (the TCP window bound 4 MiB / 4 µs is far above)."""
    net = make_network("crossbar:144@bw=2GB/s,lat=1us", 2, order="routing")
    opts = apply_preset(EngineOptions(), "smpi")
    sim = simulate(one_message(2, 0, 1, 1), Platform(alpha=0.0, network=net), model="flow", options=opts)
    assert sim.time == pytest.approx(2e-6 + 17 / 2e9, rel=1e-12)
    assert f"{sim.time * 1e6:.4f}" == "2.0085"


def test_presets_hold_only_engine_fields_and_explicit_values_win():
    fields = set(EngineOptions.__dataclass_fields__)
    for name, values in PRESETS.items():
        assert set(values) <= fields, name
        EngineOptions(**values)
    kept = apply_preset(EngineOptions(eager=100), "smpi", keep=("eager",))
    assert (kept.eager, kept.sharing, kept.envelope_bytes) == (100, "cm02", 16)
    with pytest.raises(SpecError, match="--preset 'simgrid', expected one of smpi, mpi"):
        apply_preset(EngineOptions(), "simgrid")


def test_simulate_prints_its_model_and_preset(capsys):
    from topocoll.cli import main
    argv = ["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--model", "flow"]
    assert main(argv + ["--preset", "smpi", "--eager", "100"]) == 0
    out = capsys.readouterr().out
    assert ("flow model, preset smpi (sharing cm02, detached sends up to 100 B, rendezvous direct, envelope 16 B)"
            in out)
    assert main(argv) == 0
    assert "flow model, no preset, sync=deps" in capsys.readouterr().out
    assert main(["compare", "allreduce", "-P", "4", "--sizes", "1K", "--preset", "mpi"]) == 2
    err = capsys.readouterr().err
    assert "--preset mpi with the alpha-beta-gamma model, expected an event-driven model" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["tune", "allreduce", "-P", "4", "--sizes", "8", "--preset", "smpi"]) == 2
    err = capsys.readouterr().err
    assert "--preset smpi with the default model, expected an event-driven model" in err
    assert len(err.strip().splitlines()) == 1


def _osu_profile(*files):
    from pathlib import Path
    from topocoll.mpi.calibrate import profile_from_osu
    d = Path(__file__).resolve().parents[4] / "tests" / "data" / "osu"
    return profile_from_osu([f"{level}:{d / name}" for level, name in files]).profile


def test_a_profiles_intra_node_level_prices_intra_node_messages(tmp_path, capsys):
    """The synthetic OSU files (tests/data/osu): the intra-node ping-pong
    fits α_intra, β_intra; inter-node α, 12 GB/s, g. A 1 MiB message between
    two ranks of one host costs α_intra + 1 MiB · β_intra (the node's link
    latency and copy bandwidth from the intra level; memory at 100 GB/s does
    not bind), not the NIC's G, g, L."""
    from topocoll.cli import main
    from topocoll.sim.profile import save_profile
    prof = _osu_profile(("intra", "synthetic-intra-latency-v7.3.txt"), ("inter", "synthetic-inter-latency-v5.6.txt"),
                        ("inter", "synthetic-inter-bw-v7.5.txt"), ("inter", "synthetic-inter-mbw_mr-v5.6.txt"))
    path = save_profile(prof, tmp_path / "cluster.json")
    intra = prof.levels["intra"]
    assert main(["simulate", "bcast", "binomial", "-P", "2", "--size", "1M", "--topology", "crossbar:2+ppn=2",
                 "--profile", str(path), "--json"]) == 0
    import json
    out = json.loads(capsys.readouterr().out)
    assert out["time_s"] == pytest.approx(intra.alpha + MIB * intra.beta, rel=1e-5)


def test_a_shared_nics_gap_is_one_over_its_message_rate():
    """osu_mbw_mr: 4 pairs together 40 M messages/s. One endpoint per NIC:
    g = 4 / 40e6 = 100 ns (one pair's); a NIC shared by a host's ranks: its
    own gap 1 / 40e6 = 25 ns, L − g keeping a lone message's latency L."""
    prof = _osu_profile(("inter", "synthetic-inter-latency-v5.6.txt"), ("inter", "synthetic-inter-mbw_mr-v5.6.txt"))
    assert prof.loggops("mpi")["g"] == pytest.approx(100e-9, rel=1e-9)
    shared = prof.loggops("mpi", shared_nic=True)
    assert shared["g"] == pytest.approx(25e-9, rel=1e-9)
    assert shared["L"] + shared["g"] == pytest.approx(prof.L, rel=1e-12)
