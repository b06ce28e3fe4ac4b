"""`topocoll tune` and `compare --json/--csv` from the command line: outputs, and bad input as one
line with exit 2 and no file left behind."""

import csv
import io
import json
import os

import pytest

from topocoll.cli import main


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_tune_writes_every_view(tmp_path, capsys):
    outs = {name: tmp_path / name for name in ("t.json", "t.csv", "t.png", "ompi.conf", "mpich.json", "tc.json")}
    status, out, err = run(capsys, "tune", "allreduce,alltoall", "-P", "8,12", "--sizes", "8,64K", "--jobs", "1",
                           "--json", str(outs["t.json"]), "--csv", str(outs["t.csv"]), "--plot", str(outs["t.png"]),
                           "--openmpi-rules", str(outs["ompi.conf"]), "--mpich-json", str(outs["mpich.json"]),
                           "--topocoll-json", str(outs["tc.json"]))
    assert status == 0, err
    assert "; seed 0;" in out
    assert "allreduce decision rules" in out and "gain vs mpich-5.0" in out
    doc = json.loads(outs["t.json"].read_text())
    assert doc["format"] == "topocoll-decision-table" and len(doc["points"]) == 2 * 2 * 2
    rows = list(csv.DictReader(io.StringIO(outs["t.csv"].read_text())))
    assert {(r["collective"], r["p"], r["size"]) for r in rows} == \
        {(c, str(p), str(s)) for c in ("allreduce", "alltoall") for p in (8, 12) for s in (8, 65536)}
    assert outs["t.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert outs["ompi.conf"].read_text().startswith("rule-file-version-2\n")
    assert "collective=allreduce" in json.loads(outs["mpich.json"].read_text())
    assert set(json.loads(outs["tc.json"].read_text())) == {"allreduce", "alltoall"}
    assert sorted(os.listdir(tmp_path)) == sorted(outs)          # no temporary file left
    # how to make each library read its file, for the user's own communicator
    assert f"coll_tuned_dynamic_rules_filename {outs['ompi.conf']} --mca coll ^han" in err
    assert f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={outs['mpich.json']} MPIR_CVAR_DEVICE_COLLECTIVES=none" in err
    assert "# load: mpirun --mca coll_tuned_use_dynamic_rules 1" in outs["ompi.conf"].read_text()


def test_tune_explain(capsys):
    status, out, err = run(capsys, "tune", "allreduce", "-P", "16", "--sizes", "8,4M", "--explain", "16", "4M",
                           "--jobs", "1")
    assert status == 0, err
    assert "winner" in out and "wins by" in out and "Open MPI 5.0.x" in out


@pytest.mark.parametrize("argv, message", [
    (["tune", "allreduce", "-P", "64..16"], "range 64..16 is empty"),
    (["tune", "allreduce", "-P", "8", "--sizes", ""], "expected values separated by single commas"),
    (["tune", "allreduce,,bcast", "-P", "8"], "expected names separated by single commas"),
    (["tune", "gather", "-P", "8"], "collective 'gather'"),
    (["tune", "allreduce", "-P", "8", "--libraries", "openmpi-4.1"], "library 'openmpi-4.1'"),
    (["tune", "allreduce", "-P", "8", "--op", "xyz"], "--op 'xyz'"),
    (["tune", "allreduce", "-P", ",".join(map(str, range(1, 70)))], "more than 64 values"),
    (["tune", "allreduce", "-P", "1..1000000"], "expected at most 65536 ranks"),
    (["tune", "allreduce", "-P", "8", "--explain", "9", "8"], "no grid point allreduce P=9"),
    (["tune", "allreduce", "-P", "8", "--plot", "x.gif"], "expected a .png, .svg or .pdf file"),
    (["tune", "allreduce", "-P", "8", "--json", "-", "--csv", "-"], "both write to stdout"),
])
def test_tune_bad_input_is_one_line(capsys, argv, message):
    status, out, err = run(capsys, *argv, "--jobs", "1")
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("topocoll: error: ") and message in err, err


def test_unwritable_output_fails_before_work_and_leaves_nothing(tmp_path, capsys):
    good = tmp_path / "t.json"
    status, out, err = run(capsys, "tune", "allreduce", "-P", "8", "--json", str(good),
                           "--mpich-json", str(tmp_path / "missing" / "m.json"))
    assert status == 2 and "does not exist" in err and "\n" not in err.strip()
    assert not good.exists() and os.listdir(tmp_path) == []
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere (root): a read-only directory cannot be made")
        status, out, err = run(capsys, "tune", "allreduce", "-P", "8", "--csv", str(locked / "t.csv"))
        assert status == 2 and "not writable" in err
    finally:
        locked.chmod(0o700)


def test_compare_json_and_csv(tmp_path, capsys):
    path = tmp_path / "c.json"
    status, out, err = run(capsys, "compare", "allreduce", "-P", "8", "--sizes", "8,4M", "--json", str(path),
                           "--jobs", "1")
    assert status == 0 and "rank  algorithm" in out
    doc = json.loads(path.read_text())
    assert doc["collective"] == "allreduce" and doc["p"] == 8
    first = [r for r in doc["rows"] if r["position"] == 1]
    assert [r["size"] for r in first] == [8, 4 << 20] and first[1]["algorithm"] == "rabenseifner"
    status, out, err = run(capsys, "compare", "allreduce", "-P", "8", "--sizes", "8", "--csv", "-", "--jobs", "1")
    assert status == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["position"] == "1" and len(rows) == len({r["algorithm"] for r in rows})
    status, out, err = run(capsys, "compare", "allreduce", "-P", "8", "--csv", str(tmp_path / "no" / "x.csv"))
    assert status == 2 and "does not exist" in err


# ---- what an answer can be trusted for (sim/caveats.py, tune/recheck.py) --------------------------------

def test_compare_names_the_network_and_the_models_caveats(tmp_path, capsys):
    """--model flow without --topology runs on the engine's ideal crossbar: the header says so. Direct
    send among the candidates: flow lacks head-of-line blocking and finite buffers (shift-based paper §5),
    the 16-rank, 1 MiB problem is tiny, so the candidates within 2.45× are re-ranked by the packet model;
    --json carries the same per size."""
    path = tmp_path / "c.json"
    status, out, err = run(capsys, "compare", "reduce_scatter", "-P", "16", "--sizes", "1M", "--model", "flow",
                           "--jobs", "1", "--json", str(path))
    assert status == 0, err
    head = out.splitlines()[0]
    assert head.startswith("reduce_scatter on P=16, flow model, no preset: ideal crossbar (16 endpoints, 2 GB/s links")
    assert "model: flow: fluid flows" in out and "settings: defaults" in out
    assert "ranked by the packet model" in out and "time (packet)" in out
    doc = json.loads(path.read_text())
    (answer,) = doc["answers"]
    assert answer["size"] == 1 << 20 and answer["model"] == "flow"
    assert [c["family"] for c in answer["caveats"]] == ["many-to-one"]
    assert answer["recheck"]["model"] == "packet" and "direct_send" in answer["recheck"]["times_s"]
    packet = [r["packet_time_s"] for r in doc["rows"] if r["packet_time_s"] is not None]
    assert packet == sorted(packet) and len(packet) >= 2        # the re-ranked rows lead, in the packet order


def test_compare_no_recheck_and_alpha_beta_gamma(capsys):
    status, out, err = run(capsys, "compare", "reduce_scatter", "-P", "16", "--sizes", "1M", "--model", "flow",
                           "--jobs", "1", "--no-recheck")
    assert status == 0 and "ranked by the packet model" not in out
    assert "caveat: flow lacks head-of-line blocking and finite buffers, which decide direct_send" in out
    status, out, err = run(capsys, "compare", "reduce_scatter", "-P", "16", "--sizes", "1M", "--jobs", "1")
    assert status == 0 and "α-β-γ model: no network" in out
    assert "caveat: α-β-γ has no network" in out and "ranked by the packet model" not in out
    status, out, err = run(capsys, "compare", "allreduce", "-P", "8", "--recheck-budget", "0")
    assert status == 2 and "--recheck-budget" in err


def test_tune_prints_the_model_and_caveats_and_json_has_verdicts(tmp_path, capsys):
    path = tmp_path / "t.json"
    status, out, err = run(capsys, "tune", "reduce_scatter", "-P", "12", "--sizes", "64K", "--topology", "kary:12,2",
                           "--routing", "ftree", "--orders", "routing", "--libraries", "", "--jobs", "1",
                           "--json", str(path))
    assert status == 0, err
    assert "model: static contention" in out
    assert "ranked by the packet model at 1 of 1 points" in out and "time (packet)" in out
    doc = json.loads(path.read_text())
    (verdict,) = doc["verdicts"]
    assert verdict["model"] == "static" and verdict["recheck"]["model"] == "packet"
    assert verdict["best"] in verdict["recheck"]["times_s"]
    status, out, err = run(capsys, "tune", "reduce_scatter", "-P", "12", "--sizes", "64K", "--topology", "kary:12,2",
                           "--routing", "ftree", "--orders", "routing", "--libraries", "", "--jobs", "1",
                           "--no-recheck")
    assert status == 0 and "ranked by the packet model" not in out
    assert "caveat: static lacks head-of-line blocking, finite buffers and NIC queue-pair interleaving" in out


def test_tune_with_an_event_model_and_no_network_names_the_crossbar(capsys):
    """`tune --model flow` without --topology runs on the engine's ideal crossbar (it failed with an
    AttributeError in the batch wrapper before); the header says so, and allreduce, whose candidates differ
    by no listed mechanism, says that too."""
    status, out, err = run(capsys, "tune", "allreduce", "-P", "8", "--sizes", "8", "--model", "flow", "--jobs", "1",
                           "--libraries", "")
    assert status == 0, err
    assert "flow model: ideal crossbar (one endpoint per rank, 2 GB/s links, no latency)" in out.splitlines()[0]
    assert "caveats: none (the candidates differ by no mechanism the flow model lacks)" in out
