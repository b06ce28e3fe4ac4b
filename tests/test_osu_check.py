"""topocoll.mpi.osu_check and `topocoll calibrate --check`: a profile's kept collectives against the
prediction of the library's default algorithm (synthetic OSU files, tests/data/osu/; hand-derived times)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from topocoll.errors import SpecError
from topocoll.mpi.calibrate import profile_from_osu
from topocoll.mpi.osu_check import WITHIN, CheckPoint, OsuCheck, check, format_check, openmpi40_default
from topocoll.sim.profile import LevelCosts, MachineProfile, save_profile
from topocoll.tune.libdefaults import library_default

DATA = Path(__file__).parent / "data" / "osu"
ALPHA, BETA = 2e-6, 1e-9          # the hand-made profile: 2 µs, 1 GB/s


def _two_ranks(**extra) -> MachineProfile:
    """One rank per node, two nodes; α all on the wire (as --from-osu writes it: o = 0, L = α, G = β)."""
    meta = dict(collectives=[dict(benchmark="osu_alltoall", p=2, ppn=None, points=[[8, 4e-6], [4096, 12e-6]]),
                             dict(benchmark="osu_allreduce", p=2, ppn=None, points=[[8, 4e-6]])])
    return MachineProfile(alpha=ALPHA, beta=BETA, reduce_bandwidth=4e9, L=ALPHA, G=BETA, meta=meta, **extra)


@pytest.mark.parametrize("model", ["loggops", "flow"])
def test_two_ranks_exchange_costs_alpha_plus_bytes_over_bandwidth(model):
    # P = 2: Open MPI's alltoall and allreduce each exchange one message of m bytes both ways at once
    # (full-duplex links), so the time is one message's, α + m·β (+ γ per element reduced for allreduce)
    result = check(_two_ranks(), model=model)
    a2a = [p for p in result.points if p.benchmark == "osu_alltoall"]
    assert [p.predicted for p in a2a] == pytest.approx([ALPHA + 8 * BETA, ALPHA + 4096 * BETA], rel=1e-6)
    (ar,) = [p for p in result.points if p.benchmark == "osu_allreduce"]
    assert ar.predicted == pytest.approx(ALPHA + 8 * BETA + 8 / 4e9, rel=1e-6)
    for p in result.points:
        assert p.ratio == pytest.approx(p.predicted / p.measured)
    assert result.networks["osu_alltoall"].startswith("crossbar:2@bw=1GB/s")


def test_the_algorithm_is_the_libraries_choice():
    result = check(_two_ranks(), library="mpich")
    for p in result.points:
        collective = p.benchmark.removeprefix("osu_")
        assert p.choice == library_default("mpich-5.0", collective, 2, p.size,
                                           itemsize=4 if collective == "allreduce" else 1).text()
    assert result.library == "mpich-5.0"


def test_summary_is_median_and_share_within_the_factor():
    ratios = [0.5, 1.0, 1.4, 2.0]
    points = tuple(CheckPoint("osu_alltoall", 4, None, 1 << k, 1.0, r, "x") for k, r in enumerate(ratios))
    points += (CheckPoint("osu_alltoall", 4, None, 99, 1.0, None, "not modelled"),)
    s = OsuCheck(points, "openmpi-5.0", "loggops", (), {}).summary()
    assert s["median_ratio"] == pytest.approx(1.2)
    inside = [r for r in ratios if 1 / WITHIN <= r <= WITHIN]
    assert (s["within_count"], s["points"], s["unmodelled"]) == (len(inside), 4, 1)
    assert s["within"] == pytest.approx(len(inside) / 4)


def _synthetic_profile(tmp_path) -> Path:
    specs = [f"inter:{DATA / name}" for name in ("synthetic-inter-latency-v5.6.txt", "synthetic-inter-bw-v7.5.txt",
                                                 "synthetic-inter-bibw-v5.6.txt", "synthetic-inter-mbw_mr-v5.6.txt")]
    specs += [f"p=16,ppn=8:{DATA / 'synthetic-allreduce-16-full-v6.2.txt'}",
              f"p=16,ppn=8:{DATA / 'synthetic-alltoall-16-v7.5.txt'}"]
    path = tmp_path / "cluster.json"
    save_profile(profile_from_osu(specs).profile, path)
    return path


def test_every_kept_size_is_predicted_on_the_ppn_network(tmp_path):
    path = _synthetic_profile(tmp_path)
    result = check(path)
    assert result.benchmarks() == ["osu_allreduce", "osu_alltoall"]
    assert all("crossbar:2@" in spec and "+ppn=8" in spec for spec in result.networks.values())
    assert all(p.predicted is not None and p.predicted > 0 for p in result.points)
    assert any("no intra-node level" in n for n in result.notes)
    # the synthetic osu_mbw_mr ran 4 pairs, the collectives 8 ranks per node: the overhead's source is named
    assert not any("osu_mbw_mr ran" in n for n in result.notes)
    assert any("osu_mbw_mr ran 4 pairs, the collectives 8 ranks per node" in n
               for n in check(path, mechanisms="overhead").notes)


def test_overhead_keeps_a_lone_message_and_loads_the_cpu_of_many():
    level = LevelCosts(alpha=ALPHA, beta=BETA, message_rate=2e6, message_rate_pairs=1)   # o = 1 / 2e6 = 0.5 µs
    o = 0.5e-6
    base = _two_ranks(levels={"inter": level})
    # one message each way: o_s + (L − 2o) + o_r = α, unchanged
    assert [p.predicted for p in check(base, mechanisms=["overhead"]).points] == \
        pytest.approx([p.predicted for p in check(base).points], rel=1e-6)
    # 1 B all-to-all on 16 ranks, one per node (Open MPI: linear_sync → shift): every rank's CPU sends 15
    # and receives 15 messages, 30·o = 15 µs, against α + 1 B·β without the overheads
    many = dict(collectives=[dict(benchmark="osu_alltoall", p=16, ppn=None, points=[[1, 1e-5]])])
    wide = MachineProfile(alpha=ALPHA, beta=BETA, reduce_bandwidth=4e9, L=ALPHA, G=BETA, meta=many,
                          levels={"inter": level})
    assert check(wide).points[0].predicted == pytest.approx(ALPHA + BETA, rel=1e-2)
    with_o = check(wide, mechanisms="overhead").points[0].predicted
    assert 30 * o * (1 - 1e-9) <= with_o <= 30 * o + ALPHA


@pytest.mark.parametrize("kwargs, expected", [
    (dict(library="intelmpi"), "library 'intelmpi', expected one of openmpi-5.0, mpich-5.0, openmpi-4.0"),
    (dict(model="packet"), "model 'packet', expected one of loggops, flow"),
    (dict(mechanisms=["shm"]), "mechanism 'shm', expected one of overhead, both-ways, rendezvous"),
    (dict(mechanisms=["both-ways"]), "mechanism 'both-ways' needs the network level's osu_bibw"),
    (dict(mechanisms=["overhead"]), "mechanism 'overhead' needs the network level's osu_mbw_mr"),
])
def test_bad_options_are_one_line(kwargs, expected):
    with pytest.raises(SpecError, match=re.escape(expected)):
        check(_two_ranks(), **kwargs)


def test_a_profile_without_collectives_is_refused():
    with pytest.raises(SpecError, match="keeps no collective measurement, expected a profile from calibrate "
                                        "--from-osu with p=N"):
        check(MachineProfile(alpha=ALPHA, beta=BETA, reduce_bandwidth=4e9))


def test_report_has_an_osu_like_table_and_the_summary():
    text = format_check(check(_two_ranks()))
    assert "# Size        Measured(us)   Predicted(us)   Ratio  Algorithm" in text
    assert re.search(r"^8 +4\.00 +2\.01 +0\.50 +pairwise \(2\) → shift$", text, re.M)
    assert "# summary all: median ratio" in text and "Open MPI 5.0.x" in text and "loggops model" in text


def _topocoll(*argv):
    return subprocess.run([sys.executable, "-m", "topocoll", *argv], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONWARNINGS="error"))


def test_cli_check_prints_the_table(tmp_path):
    path = _synthetic_profile(tmp_path)
    proc = _topocoll("calibrate", "--check", str(path), "--library", "mpich", "--model", "flow")
    assert proc.returncode == 0, proc.stderr
    assert "# osu_alltoall, 16 ranks, 8 per node" in proc.stdout and "MPICH 5.0.x" in proc.stdout
    assert "flow model" in proc.stdout and "# Size" in proc.stdout


@pytest.mark.parametrize("argv, expected", [
    (["--check", "{p}", "-o", "{p}.out"], "-o with --check, expected --check PROFILE"),
    (["--model", "flow"], "--model without --check, expected it only with --check PROFILE"),
    (["--check", "{p}", "--library", "x"], "library 'x', expected one of"),
    ([], "calibrate needs -o FILE"),
])
def test_cli_misuse_is_one_line_exit_2(tmp_path, argv, expected):
    path = tmp_path / "p.json"
    save_profile(_two_ranks(), path)
    proc = _topocoll("calibrate", *[a.format(p=path) for a in argv])
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and expected in err[0], proc.stderr


def test_overhead_keeps_a_lone_intra_node_message_at_its_measured_alpha():
    # two ranks on one node: the intra-node α (1 µs) is o_s + lat + o_r with the overheads on
    intra = LevelCosts(alpha=1e-6, beta=1e-10)
    level = LevelCosts(alpha=ALPHA, beta=BETA, message_rate=4e6, message_rate_pairs=1)   # o = 0.25 µs
    meta = dict(collectives=[dict(benchmark="osu_alltoall", p=2, ppn=2, points=[[8, 4e-6]])])
    prof = MachineProfile(alpha=ALPHA, beta=BETA, reduce_bandwidth=4e9, L=ALPHA, G=BETA, meta=meta,
                          levels={"inter": level, "intra": intra})
    plain, with_o = check(prof).points[0].predicted, check(prof, mechanisms=["overhead"]).points[0].predicted
    assert plain == pytest.approx(1e-6 + 8 * 1e-10, rel=1e-3)
    assert with_o == pytest.approx(plain, rel=1e-6)


@pytest.mark.parametrize("collective, p, size, algorithm", [
    # coll_tuned_decision_fixed.c before 4.1: allreduce below 10000 B recursive doubling, then the ring
    # (segmented above P · 1 MiB); alltoall Bruck below 200 B per peer on more than 12 ranks, basic linear
    # below 3000 B, then pairwise; two ranks two_procs
    ("allreduce", 64, 9996, "recursivedoubling"), ("allreduce", 64, 10000, "ring"),
    ("allreduce", 4, 8 << 20, "ring_segmented"), ("allreduce", 4096, 4 * 4096, "nonoverlapping"),
    ("alltoall", 64, 199, "bruck"), ("alltoall", 64, 200, "basic_linear"), ("alltoall", 12, 8, "basic_linear"),
    ("alltoall", 64, 2999, "basic_linear"), ("alltoall", 64, 3000, "pairwise"), ("alltoall", 2, 8, "two_procs"),
    # allgather: total P · size below 50000 B recursive doubling on 2^k ranks (Bruck otherwise), then
    # neighbor exchange on even P, the ring on odd
    ("allgather", 64, 781, "recursivedoubling"), ("allgather", 64, 782, "neighborexchange"),
    ("allgather", 48, 1000, "bruck"), ("allgather", 49, 1100, "ring"), ("allgather", 2, 8, "two_procs"),
])
def test_open_mpi_4_0_rules_at_their_thresholds(collective, p, size, algorithm):
    assert openmpi40_default(collective, p, size, itemsize=4 if collective == "allreduce" else 1).algorithm == \
        algorithm


def test_open_mpi_4_0_is_a_library_of_the_check():
    result = check(_two_ranks(), library="openmpi-4.0")
    assert result.library == "openmpi-4.0" and "Open MPI 3.x/4.0.x" in format_check(result)
    assert [p.choice for p in result.points if p.benchmark == "osu_alltoall"] == ["two_procs → shift"] * 2


@pytest.mark.parametrize("points, expected", [
    ([["a", 1e-6]], "expected [bytes 1..2^40, seconds > 0]"),
    ([[8, -1.0]], "expected [bytes 1..2^40, seconds > 0]"),
    ([[8]], "expected [bytes 1..2^40, seconds > 0]"),
    ([], "expected a non-empty list of [bytes, seconds]"),
    ("x", "expected a non-empty list of [bytes, seconds]"),
])
def test_a_hand_edited_collective_is_one_line(points, expected):
    meta = dict(collectives=[dict(benchmark="osu_alltoall", p=2, ppn=None, points=points)])
    with pytest.raises(SpecError, match=re.escape(expected)):
        check(MachineProfile(alpha=ALPHA, beta=BETA, reduce_bandwidth=4e9, L=ALPHA, G=BETA, meta=meta))


def test_mechanisms_may_be_a_comma_list():
    level = LevelCosts(alpha=ALPHA, beta=BETA, message_rate=4e6, message_rate_pairs=1)
    assert check(_two_ranks(levels={"inter": level}), mechanisms=["overhead,rendezvous"]).mechanisms == \
        ("overhead", "rendezvous")


@pytest.mark.parametrize("entry, expected", [
    (dict(benchmark="osu_bcast", p=2, ppn=None), "kept collective 'osu_bcast' on p=2, expected osu_allreduce or"),
    (dict(benchmark="osu_alltoall", p=1, ppn=None), "on p=1, expected"),
    (dict(benchmark="osu_alltoall", p=4, ppn="2"), "ppn='2', expected a whole number of ranks per node in 1..p=4"),
    (dict(benchmark="osu_alltoall", p=4, ppn=8), "ppn=8, expected"),
])
def test_a_bad_kept_entry_is_one_line(entry, expected):
    meta = dict(collectives=[dict(entry, points=[[8, 1e-6]])])
    with pytest.raises(SpecError, match=re.escape(expected)):
        check(MachineProfile(alpha=ALPHA, beta=BETA, reduce_bandwidth=4e9, L=ALPHA, G=BETA, meta=meta))


@pytest.mark.parametrize("model", ["loggops", "flow"])
def test_both_ways_prices_bytes_at_half_the_bidirectional_bandwidth(model):
    # two ranks exchange 4096 B at once, both directions busy: α + m / (osu_bibw / 2)
    level = LevelCosts(alpha=ALPHA, beta=BETA, stream_bandwidth=1e9, bidirectional_bandwidth=1.6e9)
    result = check(_two_ranks(levels={"inter": level}), model=model, mechanisms=["both-ways"])
    (big,) = [p for p in result.points if p.benchmark == "osu_alltoall" and p.size == 4096]
    assert big.predicted == pytest.approx(ALPHA + 4096 / 0.8e9, rel=1e-6)
    assert "bw=0.8GB/s" in result.networks["osu_alltoall"]
