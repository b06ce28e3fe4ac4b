"""The CLI's manners (issue 28): ``--json [FILE]`` one way on every verb, ``tune --profile``,
``calibrate --spec``, outputs refused before any work, examples in every ``--help``, ``algorithms``
wrapped on a terminal. Expected values come from the command's own other view (the text beside
the JSON) or from the profile file, never from numbers written here."""

import contextlib
import io
import json
import os
import re
from pathlib import Path

import pytest

from topocoll.cli import main

OSU = Path(__file__).resolve().parent / "data" / "osu"

#: the verbs with --json [FILE]
JSON_VERBS = ("simulate", "topo", "compare", "tune", "bench", "calibrate", "synthesize")


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def refused(argv, fragment):
    code, out, err = run(*argv)
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("topocoll: error: ") and err.count("\n") == 1, err
    assert fragment in err, err
    return err


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    """A two-level profile from the synthetic OSU files (intra and inter ping-pong, bw, bibw, mbw_mr)."""
    path = tmp_path_factory.mktemp("profile") / "cluster.json"
    files = ["intra:synthetic-intra-latency-v7.3.txt", "inter:synthetic-inter-latency-v5.6.txt",
             "inter:synthetic-inter-bw-v7.5.txt", "inter:synthetic-inter-bibw-v5.6.txt",
             "inter:synthetic-inter-mbw_mr-v5.6.txt"]
    code, _, err = run("calibrate", "--from-osu", *[f.replace(":", f":{OSU}/", 1) for f in files], "-o", path)
    assert code == 0, err
    return path


# ---- 1. --json [FILE] ------------------------------------------------------------------------

def test_simulate_json_has_the_texts_numbers_and_file_equals_stdout(tmp_path):
    argv = ["simulate", "allreduce", "ring", "-P", "4", "--size", "1M"]
    code, text, _ = run(*argv)
    assert code == 0
    code, out, _ = run(*argv, "--json")
    doc = json.loads(out)                       # stdout holds the JSON alone
    shown = float(re.search(r"^time ([0-9.]+) µs", text, re.M).group(1))
    assert shown == pytest.approx(doc["time_s"] * 1e6, abs=5e-4)
    # --json FILE: the same JSON in the file, and the text still printed
    code, out, _ = run(*argv, "--json", tmp_path / "s.json")
    assert code == 0 and out == text
    assert json.loads((tmp_path / "s.json").read_text()) == doc
    assert os.listdir(tmp_path) == ["s.json"]                       # written whole: no temporary file left


def test_topo_and_compare_json_have_the_texts_numbers(tmp_path):
    code, text, _ = run("topo", "kary:4,2")
    doc = json.loads(run("topo", "kary:4,2", "--json")[1])
    counts = re.search(r"endpoints\s+(\d+)\s+switches\s+(\d+)\s+links\s+(\d+)", text).groups()
    assert tuple(map(int, counts)) == (doc["endpoints"], doc["switches"], doc["links"])
    argv = ["compare", "allreduce", "-P", "8", "--sizes", "8,64K"]
    text = run(*argv)[1]
    doc = json.loads(run(*argv, "--json")[1])
    # the table's rows, size after size, in the JSON's order: rank, algorithm, ..., time
    shown = [(int(m.group(1)), m.group(2), float(m.group(3)))
             for m in re.finditer(r"^(\d+)\s+(\S+)\s.*?([0-9.]+) µs\s*$", text, re.M)]
    assert len(shown) == len(doc["rows"]) > 4
    for (position, algorithm, micros), row in zip(shown, doc["rows"]):
        assert (position, algorithm) == (row["position"], row["algorithm"])
        assert micros == pytest.approx(row["time_s"] * 1e6, abs=5e-3)


def test_tune_json_to_stdout_or_file_is_one_document(tmp_path):
    argv = ["tune", "allreduce", "-P", "8", "--sizes", "8,1K", "--jobs", "1", "--libraries", ""]
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    code, text, _ = run(*argv, f"--json={tmp_path / 't.json'}")
    saved = json.loads((tmp_path / "t.json").read_text())
    assert text.startswith("tune: allreduce")                     # the text beside the file
    for d in (doc, saved):
        d.pop("elapsed_s")
    assert saved == doc


def test_calibrate_spec_json_matches_its_text(profile):
    code, text, _ = run("calibrate", "--spec", profile, "--ppn", "4")
    doc = json.loads(run("calibrate", "--spec", profile, "--ppn", "4", "--json")[1])
    assert code == 0 and text.strip() == doc["spec"] and doc["node"]["ppn"] == 4


@pytest.mark.parametrize("verb", JSON_VERBS)
def test_every_json_verb_documents_json_file_and_the_positional_trap(verb, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(verb, "--help")
    assert code == 0
    assert "--json [FILE]" in out and "prints it on stdout instead of the text" in out
    assert "write --json=FILE" in out


def test_a_bare_json_before_a_positional_says_it_took_it_as_file():
    err = refused(["topo", "--json", "kary:4,2"], "--json took 'kary:4,2' as its FILE")
    assert "after the positional arguments" in err
    refused(["compare", "--json", "allreduce", "-P", "4"], "--json took 'allreduce' as its FILE")
    # a FILE meant as one, and another error: no hint
    code, _, err = run("topo", "kary:4,2", "--json", "out.json", "--bogus")
    assert code == 2 and "--bogus" in err and "--json took" not in err


# ---- 2. tune --profile, and the profile named ------------------------------------------------

def test_tune_profile_gives_the_profiles_costs_and_flags_win(profile, tmp_path):
    values = json.loads(Path(profile).read_text())
    alpha, bandwidth = values["alpha"], 1 / values["beta"]
    grid = ["tune", "allreduce,alltoall", "-P", "8", "--sizes", "8,64K", "--jobs", "1", "--libraries", ""]

    def points(*extra):
        code, out, err = run(*grid, *extra, "--json")
        assert code == 0, err
        return [(p["collective"], p["size"], p["time_s"]) for p in json.loads(out)["points"]]

    by_hand = points("--alpha", repr(alpha), "--bandwidth", repr(bandwidth))
    assert points("--profile", profile) == by_hand
    assert by_hand != points()                                     # the profile changed the answer
    assert points("--profile", profile, "--alpha", "5e-6") == points("--alpha", "5e-6", "--bandwidth",
                                                                     repr(bandwidth))


def test_tune_profile_with_an_event_model_agrees_with_compare(profile):
    net = ["--model", "loggops", "--topology", "crossbar:4+ppn=2", "--profile", profile]
    code, out, err = run("tune", "allreduce", "-P", "8", "--sizes", "8", "--jobs", "1", "--libraries", "",
                         "--orders", "routing", *net, "--json")
    assert code == 0, err
    doc = json.loads(out)
    tuned = doc["points"][0]
    code, out, err = run("compare", "allreduce", "-P", "8", "--sizes", "8", "--jobs", "1", *net, "--json")
    ranked = json.loads(out)["rows"][0]
    assert tuned["time_s"] == pytest.approx(ranked["time_s"], rel=1e-9)
    assert doc["profile"] == str(profile)
    code, out, _ = run("tune", "allreduce", "-P", "8", "--sizes", "8", "--jobs", "1", "--libraries", "",
                       "--orders", "routing", "--model", "loggops", "--topology", "crossbar:4+ppn=2", "--json")
    assert json.loads(out)["points"][0]["time_s"] != tuned["time_s"]


def test_compare_and_tune_name_the_profile(profile):
    code, out, _ = run("compare", "allreduce", "-P", "4", "--sizes", "8", "--profile", profile)
    assert code == 0 and out.splitlines()[0].endswith(f"; profile {profile}")
    assert json.loads(run("compare", "allreduce", "-P", "4", "--sizes", "8", "--profile", profile,
                          "--json")[1])["profile"] == str(profile)
    code, out, _ = run("tune", "allreduce", "-P", "4", "--sizes", "8", "--jobs", "1", "--profile", profile)
    assert out.splitlines()[0].endswith(f"; profile {profile}")


# ---- 3. calibrate --spec -----------------------------------------------------------------------

GOAL_PING = "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\nl1: recv 8b from 0 tag 0\n}\n"


@pytest.mark.parametrize("model", ["loggops", "flow"])
@pytest.mark.parametrize("ppn, level", [(1, "inter"), (2, "intra")])
def test_spec_gives_the_profiles_ping_latency(profile, tmp_path, ppn, level, model):
    """An 8-byte ping between ranks 0 and 1, on the printed network with the profile: two nodes
    (one rank each) cost the inter-node fit α + 8 β, one node (two ranks) the intra-node one — with
    either event model (the links carry no latency: both charge the profile's L between hosts)."""
    code, spec, err = run("calibrate", "--spec", profile, "--nodes", "2", "--ppn", ppn)
    assert code == 0, err
    spec = spec.strip()
    assert ("+ppn=" in spec) == (ppn > 1)
    (tmp_path / "ping.goal").write_text(GOAL_PING)
    code, out, err = run("simulate", "goal", tmp_path / "ping.goal", "--topology", spec, "--profile", profile,
                         "--model", model, "--json")
    assert code == 0, err
    costs = json.loads(Path(profile).read_text())["levels"][level]
    expected = costs["alpha"] + 8 * costs["beta"]
    assert json.loads(out)["time_s"] == pytest.approx(expected, rel=0.01)


def test_a_profile_l_the_model_does_not_charge_is_said(profile, tmp_path):
    """The packet model prices the wire by link latencies: a profile's L is named as not charged, not dropped
    silently; loggops and flow charge it and say nothing."""
    (tmp_path / "ping.goal").write_text(GOAL_PING)
    for model, said in (("packet", True), ("flow", False), ("loggops", False)):
        code, out, err = run("simulate", "goal", tmp_path / "ping.goal", "--profile", profile, "--model", model)
        assert code == 0, err
        assert ("is not charged (the packet model prices the wire" in out) == said, out


def test_spec_values_are_the_profiles(profile):
    from topocoll.topology.spec import parse_topology
    code, spec, _ = run("calibrate", "--spec", profile, "--ppn", "8", "--mem", "80GB/s",
                        "--topology", "crossbar:3@lat=0us")
    assert code == 0
    levels = json.loads(Path(profile).read_text())["levels"]
    text = spec.strip()
    assert parse_topology(text).n_endpoints == 3 * 8
    lat = float(re.search(r"\+ppn=8,lat=([0-9.e-]+)us", text).group(1)) * 1e-6
    bw = float(re.search(r",bw=([0-9.e]+)GB/s,mem=80GB/s$", text).group(1)) * 1e9
    assert lat == pytest.approx(levels["intra"]["alpha"], rel=1e-5)
    assert bw == pytest.approx(1 / levels["intra"]["beta"], rel=1e-5)
    nic = float(re.search(r"@lat=0us,bw=([0-9.e]+)GB/s\+", text).group(1)) * 1e9
    inter = levels["inter"]
    assert nic == pytest.approx(max(inter["stream_bandwidth"], inter["bidirectional_bandwidth"] / 2,
                                    inter["message_rate_bandwidth"]), rel=1e-5)


def test_from_osu_writes_the_network_with_the_profile(profile, tmp_path):
    """--from-osu with the --spec options writes the +ppn network into the profile (meta.network) and prints
    it; it is what `calibrate --spec` prints for the same options, and `--check` keeps its --mem."""
    files = [f"inter:{OSU}/synthetic-inter-latency-v5.6.txt", f"inter:{OSU}/synthetic-inter-bw-v7.5.txt",
             f"p=16,ppn=8:{OSU}/synthetic-alltoall-16-v7.5.txt"]
    out_path = tmp_path / "p.json"
    code, out, err = run("calibrate", "--from-osu", *files, "--mem", "40GB/s", "-o", out_path)
    assert code == 0, err
    stored = json.loads(out_path.read_text())["meta"]["network"]
    assert stored["spec"].startswith("crossbar:2@") and stored["spec"].endswith("+ppn=8,mem=40GB/s")
    assert f"network    {stored['spec']} (the profile's stored collectives: 16 ranks, 8 per node)" in out
    code, spec, _ = run("calibrate", "--spec", out_path, "--mem", "40GB/s")
    assert code == 0 and spec.strip() == stored["spec"]
    from topocoll.mpi.osu_check import check
    assert check(out_path).networks["osu_alltoall"] == stored["spec"]


def test_spec_refusals(profile, tmp_path):
    refused(["calibrate", "--spec", profile, "-o", tmp_path / "p.json"], "-o with --spec, expected")
    refused(["calibrate", "--nodes", "3", "-o", tmp_path / "p.json"], "--nodes without --spec")
    refused(["calibrate", "--spec", profile, "--topology", "kary:4,2+ppn=2"], "has +ppn= already")
    refused(["calibrate", "--spec", profile, "--mem", "fast"], "--mem 'fast'")
    refused(["calibrate", "--spec", profile, "--ppn", "1", "--mem", "80GB/s"], "with ppn=1")
    refused(["calibrate", "--spec", profile, "--json", profile], "is also an input (--spec)")
    refused(["calibrate", "--quick"], "calibrate needs -o FILE")
    assert os.listdir(tmp_path) == []


def test_fabric_options_after_ppn_say_where_they_go():
    refused(["topo", "kary:4,2+ppn=2,host.lat=200ns"], "the fabric's @ options go before +ppn=")
    code, _, _ = run("topo", "kary:4,2@host.lat=200ns+ppn=2")
    assert code == 0


# ---- 5. outputs checked before any work, never two to one file ------------------------------

@pytest.mark.parametrize("argv, fragment", [
    (["tune", "allreduce", "-P", "8", "--json", "{d}/f", "--csv", "{d}/f"], "--json and --csv both write '{d}/f'"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--json", "{d}/f", "--trace", "{d}/./f"],
     "both write"),
    (["compare", "allreduce", "-P", "4", "--json", "{d}/f", "--csv", "{d}/f"], "--json and --csv both write"),
    (["topo", "crossbar:4", "--draw", "{d}/f.svg", "--json", "{d}/f.svg"], "--draw and --json both write"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--json", "{d}/no/such/x.json"],
     "does not exist"),
])
def test_outputs_to_one_path_or_a_bad_place_are_refused_before_work(argv, fragment, tmp_path):
    d = str(tmp_path)
    refused([a.replace("{d}", d) for a in argv], fragment.replace("{d}", d))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("verb", [["tune", "allreduce", "-P", "4"], ["compare", "allreduce", "-P", "4"],
                                  ["simulate", "allreduce", "ring", "-P", "4", "--size", "8"]])
def test_json_onto_the_profile_it_reads_is_refused(verb, profile, tmp_path):
    copy = tmp_path / "p.json"
    copy.write_bytes(Path(profile).read_bytes())
    refused([*verb, "--profile", copy, f"--json={copy}"], "is also an input (--profile)")
    assert copy.read_bytes() == Path(profile).read_bytes()


def test_calibrate_from_osu_does_not_overwrite_its_input(tmp_path):
    src = tmp_path / "lat.txt"
    src.write_bytes((OSU / "synthetic-inter-latency-v5.6.txt").read_bytes())
    before = src.read_bytes()
    refused(["calibrate", "--from-osu", f"inter:{src}", "-o", src], "is also an input (--from-osu inter:")
    assert src.read_bytes() == before and os.listdir(tmp_path) == ["lat.txt"]


# ---- 6. examples and widths --------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_algorithms_on_a_terminal_fits_its_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    out = _Terminal()
    with contextlib.redirect_stdout(out):
        assert main(["algorithms"]) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) > 20 and max(map(len, lines)) <= 100, max(lines, key=len)
