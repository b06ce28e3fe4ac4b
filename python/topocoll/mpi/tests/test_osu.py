"""``topocoll calibrate --from-osu``: the OSU Micro-Benchmarks' text formats
(fixtures in tests/data/osu, README there), fits that recover the α and β a
formula in the test generated, one-line refusals naming file:line, and the
CLI round trip into ``simulate --profile``."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from topocoll.errors import ParseError, SpecError
from topocoll.mpi.calibrate import DEFAULT_REDUCE_BANDWIDTH, profile_from_osu
from topocoll.mpi.osu import MAX_ROWS, OsuFormatError, parse_osu, parse_spec, read_osu
from topocoll.sim.profile import load_profile, save_profile

DATA = Path(__file__).parents[4] / "tests" / "data" / "osu"
SIZES = [1 << k for k in range(23)]


# ---- the formats, one fixture each (expected numbers read off the files) --------------

@pytest.mark.parametrize("name, benchmark, version, rows, first, last", [
    ("synthetic-intra-latency-v7.3.txt", "latency", "7.3", 23, (1, 0.30e-6), (4194304, 420.53e-6)),
    ("synthetic-inter-latency-v5.6.txt", "latency", "5.6.2", 24, (0, 1.20e-6), (4194304, 352.73e-6)),
    ("synthetic-inter-bw-v7.5.txt", "bw", "7.5", 23, (1, 53.10e6), (4194304, 11999.36e6)),
    ("synthetic-inter-bibw-v5.6.txt", "bibw", "5.6.2", 23, (1, 95.58e6), (4194304, 21598.84e6)),
    ("synthetic-inter-mbw_mr-v5.6.txt", "mbw_mr", "5.6.2", 23, (1, 40.00e6), (4194304, 12000.00e6)),
    ("synthetic-allreduce-16-full-v6.2.txt", "allreduce", "6.2", 21, (4, 9.60e-6), (4194304, 724.65e-6)),
    ("synthetic-alltoall-16-v7.5.txt", "alltoall", "7.5", 21, (1, 18.00e-6), (1048576, 1358.72e-6)),
])
def test_each_format_parses_to_si_units(name, benchmark, version, rows, first, last):
    t = read_osu(DATA / name)
    assert (t.benchmark, t.version, len(t.sizes)) == (benchmark, version, rows)
    assert (t.sizes[0], t.sizes[-1]) == (first[0], last[0])
    assert t.values[0] == pytest.approx(first[1], rel=1e-9)
    assert t.values[-1] == pytest.approx(last[1], rel=1e-9)
    assert np.all(np.diff(t.sizes) > 0)


def test_message_rate_columns_and_pairs():
    t = read_osu(DATA / "synthetic-inter-mbw_mr-v5.6.txt")
    assert (t.pairs, t.window) == (4, 64)
    assert t.rates[0] == pytest.approx(40e6) and t.rates[-1] == pytest.approx(2861.02)


def test_datatype_line_of_omb7_is_read_and_extra_columns_are_a_warning():
    assert read_osu(DATA / "synthetic-inter-bw-v7.5.txt").datatype == "MPI_CHAR"
    full = read_osu(DATA / "synthetic-allreduce-16-full-v6.2.txt")
    assert full.column == "Avg Latency(us)"
    (warning,) = full.warnings
    assert warning.startswith(f"{DATA / 'synthetic-allreduce-16-full-v6.2.txt'}:3: columns Min Latency(us), "
                              "Max Latency(us), Iterations not used")


def test_launcher_noise_is_a_warning_naming_the_line():
    text = ("[node01:1234] SET UCX_NET_DEVICES=mlx5_2:1\n\n# OSU MPI Latency Test v7.5\n# Datatype: MPI_CHAR.\n"
            "# Size       Avg Latency(us)\n1                       1.67\n2     1.70\n$\n")
    t = parse_osu(text, path="lat.txt")
    assert t.sizes.tolist() == [1, 2]
    assert t.warnings == ("lat.txt:1: ignored '[node01:1234] SET UCX_NET_DEVICES=mlx5_2:1' (before OSU's title line)",
                          "lat.txt:8: ignored '$' (neither a '#' line nor a table row)")


def test_failed_validation_row_is_left_out_with_a_warning():
    text = ("# OSU MPI Latency Test v7.3\n# Size          Latency (us)          Validation\n"
            "1    1.50    Pass\n2    9.99    Fail\n4    1.55    Pass\n")
    t = parse_osu(text, path="v.txt")
    assert t.sizes.tolist() == [1, 4]
    assert "v.txt:4: row left out: OSU's validation says Fail" in t.warnings


# ---- fits: α and β a formula made, recovered -------------------------------------

def _latency_text(alpha, beta, *, decimals=2, version="7.3"):
    """osu_latency's text (OMB 7.3 layout) of t(m) = α + m·β, rounded as OSU prints."""
    rows = "".join(f"{m:<10d}{(alpha + m * beta) * 1e6:>20.{decimals}f}\n" for m in SIZES)
    return f"# OSU MPI Latency Test v{version}\n# Size          Latency (us)\n# Datatype: MPI_CHAR.\n{rows}"


def _bw_text(alpha, beta, window=64):
    """osu_bw's text: a window of messages hides all but α/window per message."""
    rows = "".join(f"{m:<10d}{m / (m * beta + alpha / window) / 1e6:>20.2f}\n" for m in SIZES)
    return f"# OSU MPI Bandwidth Test v7.3\n# Size      Bandwidth (MB/s)\n{rows}"


@pytest.mark.parametrize("alpha, beta", [(1.5e-6, 1 / 12.5e9), (0.25e-6, 1 / 30e9), (4e-6, 1 / 1.2e9)])
def test_latency_fit_recovers_alpha_beta(tmp_path, alpha, beta):
    exact = tmp_path / "exact.txt"
    exact.write_text(_latency_text(alpha, beta, decimals=6))
    rounded = tmp_path / "rounded.txt"
    rounded.write_text(_latency_text(alpha, beta))
    for path, rel in ((exact, 1e-4), (rounded, 1e-2)):   # OSU's %.2f µs: 5 ns of rounding on α
        level = profile_from_osu([f"inter:{path}"]).profile.level("inter")
        assert level.alpha == pytest.approx(alpha, rel=rel)
        assert level.beta == pytest.approx(beta, rel=rel)
    assert profile_from_osu([f"inter:{exact}"]).profile.fit_residual < 1e-4


def test_levels_are_kept_apart_and_the_network_is_the_inter_level(tmp_path):
    files = {"intra-lat": _latency_text(0.4e-6, 1 / 20e9), "inter-lat": _latency_text(1.3e-6, 1 / 11e9),
             "inter-bw": _bw_text(1.3e-6, 1 / 12e9)}
    for name, text in files.items():
        (tmp_path / f"{name}.txt").write_text(text)
    result = profile_from_osu([f"intra:{tmp_path / 'intra-lat.txt'}", f"inter:{tmp_path / 'inter-lat.txt'}",
                               f"inter:{tmp_path / 'inter-bw.txt'}"])
    p = result.profile
    assert p.level("intra").alpha == pytest.approx(0.4e-6, rel=1e-2)
    assert p.level("intra").beta == pytest.approx(1 / 20e9, rel=1e-2)
    assert p.alpha == pytest.approx(1.3e-6, rel=1e-2) and p.beta == pytest.approx(1 / 11e9, rel=1e-2)
    # osu_bw's plateau: its largest size, m / (m·β + α/64)
    plateau = SIZES[-1] / (SIZES[-1] / 12e9 + 1.3e-6 / 64)
    assert p.stream_bandwidth == pytest.approx(plateau, rel=1e-6) and p.G == pytest.approx(1 / plateau, rel=1e-6)
    assert p.L == p.alpha and p.o_send == p.o_recv == 0
    assert p.reduce_bandwidth == DEFAULT_REDUCE_BANDWIDTH
    assert any(line.startswith("γ          not identifiable") for line in result.summary)
    assert p.meta["network_level"] == "inter"


def test_intra_only_becomes_the_network_with_a_note(tmp_path):
    (tmp_path / "lat.txt").write_text(_latency_text(0.4e-6, 1 / 20e9))
    p = profile_from_osu([f"intra:{tmp_path / 'lat.txt'}"]).profile
    assert p.alpha == pytest.approx(0.4e-6, rel=1e-2) and p.meta["network_level"] == "intra"
    assert any("intra-node level's" in n for n in p.meta["notes"])


def test_message_rate_gives_the_gap_of_one_pair():
    p = profile_from_osu([f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}",
                          f"inter:{DATA / 'synthetic-inter-mbw_mr-v5.6.txt'}"]).profile
    # 4 pairs at 40 M messages/s together (the fixture's generator): one pair every 100 ns
    assert p.level("inter").message_rate == pytest.approx(40e6) and p.level("inter").message_rate_pairs == 4
    assert p.g == pytest.approx(4 / 40e6)


def test_eager_threshold_is_the_synthetic_jump():
    """The synthetic inter-node machine jumps by 2 µs above 8 KiB (make_synthetic.py)."""
    p = profile_from_osu([f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}"]).profile
    assert p.eager == 8192


def test_gamma_from_local_profile(tmp_path):
    from topocoll.sim.profile import MachineProfile

    local = MachineProfile(alpha=1e-6, beta=1e-10, reduce_bandwidth=7.5e9, copy_bandwidth=9e9, over_bandwidth=3e9)
    result = profile_from_osu([f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}"], local=local, local_path="here.json")
    assert result.profile.reduce_bandwidth == 7.5e9 and result.profile.copy_bandwidth == 9e9
    assert "kept from --local here.json" in result.profile.meta["gamma"]


def test_collectives_are_kept_for_comparison():
    p = profile_from_osu([f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}",
                          f"p=16,ppn=4:{DATA / 'synthetic-allreduce-16-full-v6.2.txt'}"]).profile
    (coll,) = p.meta["collectives"]
    assert (coll["benchmark"], coll["p"], coll["ppn"]) == ("osu_allreduce", 16, 4)
    assert coll["points"][-1] == [4194304, pytest.approx(724.65e-6)]


def test_profile_with_levels_round_trips(tmp_path):
    p = profile_from_osu([f"intra:{DATA / 'synthetic-intra-latency-v7.3.txt'}",
                          f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}",
                          f"inter:{DATA / 'synthetic-inter-bw-v7.5.txt'}"]).profile
    path = save_profile(p, tmp_path / "p.json")
    assert json.loads(path.read_text())["format"] == "topocoll-machine-profile/2"
    assert load_profile(path) == p


# ---- bad input: one line naming file:line and what was expected -------------------------

TITLE = "# OSU MPI Latency Test v7.3\n"
HEADER = "# Size          Latency (us)\n"


@pytest.mark.parametrize("text, line, expected", [
    ("hello world\nthis is not OSU\n", 1, "no '# OSU MPI ... Test' title line"),
    ("size,latency\n1,1.5\n", 1, "no '# OSU MPI ... Test' title line"),
    (TITLE, 1, "no '# Size ...' column header"),
    (TITLE + HEADER, 2, "no rows after the column header at line 2"),
    (TITLE + HEADER + "1    1.50\n2    1.52\n4\n", 5, "1 fields in '4', expected 2 (Size, Latency (us))"),
    (TITLE + HEADER + "1    1.50\n4    1.52\n2    1.51\n", 5, "size 2 after 4 (line 4), expected sizes increasing"),
    (TITLE + HEADER + "1    1.50\n1    1.52\n", 4, "size 1 after 1"),
    (TITLE + "# Size          Latency\n1    1.50\n", 2, "column 'Latency' has no unit, expected a latency in (us)"),
    (TITLE + "# Size      Bandwidth (MB/s)\n1    1.50\n", 2, "column 'Bandwidth (MB/s)' for osu_latency"),
    (TITLE + "1    1.50\n" + HEADER, 2, "a row before the '# Size ...' column header"),
    (TITLE + HEADER + "1    -1.50\n", 3, "Latency (us) '-1.50' at size 1, expected a positive number"),
    (TITLE + HEADER + "1    nan\n", 3, "expected a positive number"),
    (TITLE + HEADER + "1x    1.5\n", 3, "size '1x', expected a whole number of bytes"),
    ("# OSU MPI Gather Latency Test v7.3\n# Size  Avg Latency(us)\n1  3.0\n", 1,
     "'OSU MPI Gather Latency Test v7.3' is not read here"),
    (TITLE + HEADER + "1    1.50\n" + TITLE, 4, "a second title"),
    (TITLE + HEADER + "1    1.50\n" + HEADER + "1    1.50\n", 4, "a second '# Size' header"),
    ("# OSU MPI Multiple Bandwidth / Message Rate Test v5.6.2\n# [ pairs: 2 ] [ window size: varied ]\n", 2,
     "window size varied"),
])
def test_bad_input_is_one_line_naming_file_line_and_expectation(tmp_path, text, line, expected):
    path = tmp_path / "osu.txt"
    path.write_text(text)
    with pytest.raises(OsuFormatError) as err:
        read_osu(path)
    message = str(err.value)
    assert isinstance(err.value, SpecError) and isinstance(err.value, ParseError)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: "), message
    assert expected in message


def test_too_many_rows_is_refused_not_read_without_bound():
    rows = "".join(f"{m} 1.0\n" for m in range(1, MAX_ROWS + 3))
    with pytest.raises(OsuFormatError, match=f"x:{MAX_ROWS + 3}: more than {MAX_ROWS} rows"):
        parse_osu(TITLE + HEADER + rows, path="x")


def test_unreadable_files_are_one_line(tmp_path):
    with pytest.raises(OsuFormatError, match=r"nope\.txt: No such file"):
        read_osu(tmp_path / "nope.txt")
    (tmp_path / "bin.txt").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(OsuFormatError, match=r"bin\.txt: byte 0 is not UTF-8 text"):
        read_osu(tmp_path / "bin.txt")


@pytest.mark.parametrize("specs, expected", [
    (["{lat}"], "osu_latency output without a level, expected intra:"),
    (["inter,p=64:{lat}"], "p/ppn for osu_latency output"),
    (["inter:{lat}", "{ar}"], "osu_allreduce output without p, expected p=N[,ppn=N]:"),
    (["inter:{lat}", "inter:{ar}"], "level inter for osu_allreduce output"),
    (["inter:{lat}", "inter:{lat}"], "two osu_latency files for level inter"),
    (["inter:{bw}"], "no osu_latency file, expected at least one"),
    (["p=0:{ar}"], "p='0', expected a whole number of ranks"),
    (["p=4,ppn=8:{ar}"], "ppn=8 > p=4"),
    (["inter,intra:{lat}"], "level given twice"),
    (["inter:"], "no file after 'inter:'"),
])
def test_bad_specs_are_one_line(specs, expected):
    names = dict(lat=DATA / "synthetic-inter-latency-v5.6.txt", ar=DATA / "synthetic-allreduce-16-full-v6.2.txt",
                 bw=DATA / "synthetic-inter-bw-v7.5.txt")
    with pytest.raises(SpecError) as err:
        profile_from_osu([s.format(**names) for s in specs])
    assert "\n" not in str(err.value) and expected in str(err.value), str(err.value)


def test_a_colon_in_a_plain_file_name_is_kept():
    assert parse_spec("run:3/lat.txt").path == "run:3/lat.txt"


# ---- the command line --------------------------------------------------------------

def _topocoll(*argv):
    return subprocess.run([sys.executable, "-m", "topocoll", *argv], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONWARNINGS="error"))


def test_cli_round_trip_into_simulate(tmp_path):
    out = tmp_path / "prof.json"
    noisy = tmp_path / "bw.txt"   # the fixture with a job's trailing prompt line: a warning, not a failure
    noisy.write_text((DATA / "synthetic-inter-bw-v7.5.txt").read_text() + "$\n")
    proc = _topocoll("calibrate", "--from-osu", f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}", f"inter:{noisy}",
                     f"intra:{DATA / 'synthetic-intra-latency-v7.3.txt'}", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [f"topocoll: warning: {noisy}:27: ignored '$' (neither a '#' line nor a "
                                        "table row)"]
    assert f"wrote {out}" in proc.stdout and "γ          not identifiable" in proc.stdout
    assert load_profile(out).level("intra") is not None
    # one 8-byte message between two nodes: the synthetic machine's α + 8 B at its streaming bandwidth
    # (make_synthetic.py: α = 1.2 µs, 12 GB/s; the fit sees OSU's rounding, hence 1 %)
    sim = _topocoll("simulate", "bcast", "binomial", "-P", "2", "--size", "8", "--profile", str(out))
    assert sim.returncode == 0, sim.stderr
    (time,) = re.findall(r"^time ([\d.]+) µs$", sim.stdout, re.M)
    assert float(time) * 1e-6 == pytest.approx(1.2e-6 + 8 / 12e9, rel=1e-2)


def test_cli_bad_file_is_one_error_line_exit_2(tmp_path):
    bad = tmp_path / "lat.txt"
    bad.write_text(TITLE + HEADER + "1    1.50\n4    1.52\n2    1.51\n")
    proc = _topocoll("calibrate", "--from-osu", f"inter:{bad}", "-o", str(tmp_path / "p.json"))
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(err) == 1 and err[0].startswith(f"topocoll: error: {bad}:5: size 2 after 4")
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("extra, expected", [
    (["--quick"], "--quick with --from-osu"),
    (["--seed", "0"], "--seed with --from-osu"),
])
def test_measuring_flags_with_from_osu_are_refused(tmp_path, extra, expected):
    from topocoll.mpi.calibrate import main

    with pytest.raises(SpecError, match=expected):
        main(["--from-osu", f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}", "-o", str(tmp_path / "p.json"), *extra])
    assert not (tmp_path / "p.json").exists()


def test_flat_latency_curve_is_one_line(tmp_path):
    path = tmp_path / "flat.txt"
    path.write_text(TITLE + HEADER + "1    2.00\n2    1.50\n4    1.00\n")
    with pytest.raises(SpecError, match=rf"{path}: 1 µs at 4 B is not slower than 2 µs at 1 B, expected "
                                        "osu_latency times that grow"):
        profile_from_osu([f"inter:{path}"])


def test_osu_allgather_is_read_as_a_kept_collective(tmp_path):
    """OMB 5.6's osu_allgather layout (a blank first line, the title, Avg Latency(us)): a collective table in
    seconds, kept with its p and ppn (sizes are bytes per rank, as osu_allgather's -m sizes)."""
    text = "\n# OSU MPI Allgather Latency Test v5.6.2\n# Size       Avg Latency(us)\n1      5.31\n1024     78.37\n"
    t = parse_osu(text, path="ag.txt")
    assert (t.benchmark, t.sizes.tolist()) == ("allgather", [1, 1024])
    assert t.values.tolist() == pytest.approx([5.31e-6, 78.37e-6])
    (tmp_path / "ag.txt").write_text(text)
    prof = profile_from_osu([f"inter:{DATA / 'synthetic-inter-latency-v5.6.txt'}",
                             f"p=64,ppn=32:{tmp_path / 'ag.txt'}"]).profile
    kept = prof.meta["collectives"][0]
    assert (kept["benchmark"], kept["p"], kept["ppn"], len(kept["points"])) == ("osu_allgather", 64, 32, 2)
