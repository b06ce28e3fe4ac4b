"""IMB-MPI1 point-to-point tables read as OSU tables (``calibrate --from-osu LEVEL,ppn=K:FILE``):
which blocks ran where, the numbers read off the synthetic fixture (tests/data/imb, README there; the
closed forms in make_synthetic.py), what the intra-node level gives the node model, and one-line
refusals."""

from pathlib import Path

import pytest

from topocoll.errors import SpecError
from topocoll.mpi.calibrate import profile_from_osu
from topocoll.mpi.imb import ImbBlock, imb_tables, pair_level, parse_imb, read_imb
from topocoll.mpi.osu import OsuFormatError

ROOT = Path(__file__).parents[4] / "tests" / "data"
IMB = ROOT / "imb" / "synthetic-imb-16-ppn8.txt"
OSU = ROOT / "osu"
INTER = [f"inter:{OSU / n}" for n in ("synthetic-inter-latency-v5.6.txt", "synthetic-inter-bw-v7.5.txt")]


def test_blocks_and_where_their_pairs_ran():
    blocks, warnings = read_imb(IMB)
    assert [(b.name, b.processes) for b in blocks] == [("pingpong", 2)] + [
        (name, n) for name in ("uniband", "biband") for n in (2, 4, 8, 16)]
    assert any("IMB allreduce not read" in w for w in warnings)
    # 8 ranks per node in blocks: ranks 0..7 on node 0, so pairs (i, i + N/2) stay there up to N = 8
    assert [pair_level(b, 8) for b in blocks] == ["intra"] + ["intra", "intra", "intra", "inter"] * 2
    # 16 processes, 4 per node: (0, 8) .. (7, 15) all cross; 12 per node: (0, 8) stays, (4, 12) crosses
    sixteen = ImbBlock("f", 1, "uniband", 16, None, None, None, None)
    assert (pair_level(sixteen, 4), pair_level(sixteen, 12)) == ("inter", "mixed")


def test_tables_read_off_the_closed_forms():
    """make_synthetic.py: one pair 10 GB/s and 8 M messages/s, the node 30 GB/s; PingPong 0.3 µs + m / 10 GB/s."""
    blocks, _ = read_imb(IMB)
    warnings = []
    intra = imb_tables(blocks, "intra", 8, warnings)
    assert sorted(intra) == ["bibw", "bw", "latency", "mbw_mr"]
    assert intra["latency"].values[0] == pytest.approx(0.30e-6)
    assert intra["bw"].values.max() == pytest.approx(10e9, rel=1e-6)                 # one pair
    assert intra["mbw_mr"].pairs == 4                                               # the most pairs: 8 processes
    assert intra["mbw_mr"].values.max() == pytest.approx(30e9, rel=1e-6)             # the node's 30 GB/s
    assert intra["mbw_mr"].rates.max() == pytest.approx(32e6, rel=1e-6)             # 4 pairs × 8 M/s
    assert intra["bibw"].values.max() == pytest.approx(16e9, rel=1e-6)               # 1.6 × one direction
    # not used: the two 16-process (inter) blocks, Uniband on 4 (8 has more pairs), Biband on 4 and 8 (one pair read)
    assert sum("not used" in w for w in warnings) == 2 + 1 + 2
    inter = imb_tables(blocks, "inter", 8, [])
    assert sorted(inter) == ["mbw_mr"] and inter["mbw_mr"].pairs == 8
    assert inter["mbw_mr"].values.max() == pytest.approx(12e9, rel=1e-6)


def test_the_node_model_gets_bw_and_mem_from_the_intra_node_pairs():
    prof = profile_from_osu(INTER + [f"intra,ppn=8:{IMB}"]).profile
    opts = prof.node_options()
    assert opts["bw"] == pytest.approx(1 / prof.levels["intra"].beta)   # with a PingPong: its α-β fit
    assert opts["lat"] == pytest.approx(0.30e-6, abs=0.02e-6)
    assert opts["mem"] == pytest.approx(30e9, rel=1e-6)
    spec = prof.network_spec(nodes=2, ppn=8)
    assert ",mem=30GB/s" in spec.spec
    assert not any("lower bound" in n for n in spec.notes)                # 30 < 4 pairs × 10 GB/s: saturated


def test_a_stream_alone_gives_bw_and_no_lat(tmp_path):
    """Uniband only (no PingPong): bw = one pair's plateau, lat left to the node's default (said)."""
    text = IMB.read_text()
    rule = "#---------------------------------------------------\n"
    start = text.index(rule + "# Benchmarking PingPong")
    end = text.index(rule + "# Benchmarking Uniband")
    only = tmp_path / "uniband.txt"
    only.write_text(text[:start] + text[end:])
    prof = profile_from_osu(INTER + [f"intra,ppn=8:{only}"]).profile
    assert prof.node_options() == {"bw": pytest.approx(10e9, rel=1e-6), "mem": pytest.approx(30e9, rel=1e-6)}
    notes = prof.network_spec(nodes=2, ppn=8).notes
    assert any("node's lat is topocoll's default" in n for n in notes)


@pytest.mark.parametrize("qualifiers, message", [
    ("", "IMB output, expected intra,ppn=K:"),
    ("intra:", "IMB output, expected intra,ppn=K:"),
    ("ppn=8:", "IMB output, expected intra,ppn=K:"),
    ("intra,ppn=1:", "no PingPong, Uniband or Biband block of this file has its pairs intra-node with ppn=1"),
])
def test_refusals_are_one_line(qualifiers, message):
    with pytest.raises(SpecError) as e:
        profile_from_osu(INTER + [f"{qualifiers}{IMB}"])
    assert message in str(e.value) and "\n" not in str(e.value)


def test_two_tables_for_one_level_are_refused():
    with pytest.raises(SpecError, match="two osu_bw files for level intra"):
        profile_from_osu(INTER + [f"intra,ppn=8:{IMB}", f"intra:{OSU / 'synthetic-inter-bw-v7.5.txt'}"])


@pytest.mark.parametrize("text, message", [
    ("no banner\n", "no 'Intel(R) MPI Benchmarks' banner"),
    ("# Intel(R) MPI Benchmarks 2019\n# Benchmarking Uniband\n# #processes = 2\n  1 1000 9.15 91\n",
     "a row before the '#bytes #repetitions ...' header"),
    ("# Intel(R) MPI Benchmarks 2019\n# Benchmarking Uniband\n# #processes = 2\n#bytes #repetitions Mbytes/sec "
     "Msg/sec\n 1 1000 9.15\n", "3 values, expected 4"),
    ("# Intel(R) MPI Benchmarks 2019\n# Benchmarking Uniband\n# #processes = 2\n#bytes #repetitions Mbytes/sec "
     "Msg/sec\n 2 1000 9.15 9\n 1 1000 9.15 9\n", "size 1 after 2, expected sizes that grow"),
    ("# Intel(R) MPI Benchmarks 2019\n# Benchmarking Uniband\n# #processes = 0\n", "#processes '0'"),
    ("# Intel(R) MPI Benchmarks 2019\n# Benchmarking Uniband\n# #processes = 2\n#bytes #repetitions Mbytes/sec "
     "Msg/sec\n 1 1000 nan 9\n", "expected a size up to"),
    ("# Intel(R) MPI Benchmarks 2019\n# Benchmarking Allreduce\n# #processes = 2\n", "no PingPong, Uniband or "
     "Biband table"),
])
def test_bad_imb_text_fails_in_one_line(text, message):
    with pytest.raises(OsuFormatError) as e:
        parse_imb(text, path="x.txt")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_pairs_that_scale_linearly_give_mem_as_a_lower_bound():
    """4 pairs moving 39 GB/s at 10 GB/s a pair did not show the node's limit: the note says so."""
    from topocoll.sim.profile import LevelCosts, MachineProfile
    intra = LevelCosts(stream_bandwidth=10e9, message_rate=4e6, message_rate_pairs=4, message_rate_bandwidth=39e9)
    prof = MachineProfile(alpha=1e-6, beta=1e-10, reduce_bandwidth=4e9, levels={"intra": intra})
    notes = prof.network_spec(nodes=2, ppn=8).notes
    assert any("may not have filled it: a lower bound" in n for n in notes), notes
