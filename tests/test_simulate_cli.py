"""`topocoll simulate` and `topocoll goal`: one-line errors, JSON with the
seed, sweeps, pictures, and GOAL files that simulate like their schedule."""

import json
from pathlib import Path

import pytest

from topocoll.cli import main
from topocoll.schedules import registry
from topocoll.sim import engine


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv, message", [
    (["simulate", "allreduce", "ring", "-P", "4"], "needs -P N and --size BYTES"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "0"], "size"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--model", "ns3"], "ns3"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--noise", "0.5"], "--noise needs a network"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--runs", "3"], "--runs 3 without --noise"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--topology", "kary:4,2", "--noise", "1.5"],
     "ratio=1.5, expected 0 <= ratio < 1"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--os-noise", "periodic:1e-3"],
     "expected periodic:PERIOD,LENGTH"),
    (["simulate", "allreduce", "ring", "-P", "4,8", "--size", "1K", "--trace", "x.json"], "no lists"),
    (["simulate", "goal", "/nonexistent.goal"], "nonexistent.goal"),
    (["simulate", "allreduce", "ring", "-P", "4,x", "--size", "1K"], "-P '4,x': 'x' is not an integer"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--os-noise", "trace:/nonexistent.txt"],
     "/nonexistent.txt: cannot read (No such file or directory), expected a Netgauge noise trace"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--window", "-2"], "--window: -2 is out of range"),
    (["goal", "allreduce", "ring", "-P", "4", "--size", "1K", "-o", "/nonexistent/x.goal"],
     "-o '/nonexistent/x.goal': directory '/nonexistent' does not exist, expected an existing directory"),
    (["simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--matrix", "/nonexistent/dir/m.png"],
     "--matrix '/nonexistent/dir/m.png': directory '/nonexistent/dir' does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("topocoll: error:") and message in err


def test_json_result_names_model_seed_and_slowdown(capsys):
    code, out, _ = run(capsys, "simulate", "allreduce", "binomial", "-P", "16", "--size", "64K",
                       "--topology", "kary:8,2", "--order", "random", "--model", "congestion",
                       "--noise", "0.5", "--seed", "7", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["model"] == "congestion" and res["seed"] == 7
    assert res["slowdown"] >= 1 and res["clean_time_s"] <= res["time_s"]


def test_noise_runs_report_the_distribution(capsys):
    code, out, _ = run(capsys, "simulate", "allreduce", "binomial", "-P", "16", "--size", "8K",
                       "--topology", "kary:8,2", "--order", "random", "--model", "congestion",
                       "--noise", "0.5", "--runs", "8", "--seed", "3", "--json")
    res = json.loads(out)
    assert res["runs"] == 8 and res["seeds"] == list(range(3, 11))
    s = res["slowdown"]
    assert s["min"] <= s["q1"] <= s["median"] <= s["q3"] <= s["max"] and s["min"] >= 1


def test_a_sweep_prints_one_row_per_p_and_size(capsys):
    code, out, _ = run(capsys, "simulate", "alltoall", "shift", "-P", "4,8", "--size", "8,1K")
    assert code == 0
    rows = [l for l in out.splitlines() if l.startswith("alltoall/shift")]
    assert len(rows) == 4


def test_goal_export_simulates_like_the_schedule(capsys, tmp_path):
    path = tmp_path / "ring.goal"
    assert run(capsys, "goal", "allreduce", "ring", "-P", "6", "--size", "6K", "-o", str(path))[0] == 0
    _, out_goal, _ = run(capsys, "simulate", "goal", str(path), "--model", "loggops", "--json")
    _, out_sched, _ = run(capsys, "simulate", "allreduce", "ring", "-P", "6", "--size", "6K", "--model",
                          "loggops", "--json")
    assert json.loads(out_goal)["time_s"] == json.loads(out_sched)["time_s"]


def test_pictures_are_written(capsys, tmp_path):
    trace, matrix, draw = tmp_path / "t.json", tmp_path / "m.png", tmp_path / "d.svg"
    code, out, _ = run(capsys, "simulate", "alltoall", "shift", "-P", "16", "--size", "4K", "--topology",
                       "kary:4,2", "--model", "flow", "--trace", str(trace), "--matrix", str(matrix),
                       "--draw", str(draw))
    assert code == 0
    assert json.loads(trace.read_text())["traceEvents"]
    assert matrix.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in draw.read_text()


def test_compare_ranks_with_an_event_model(capsys):
    code, out, _ = run(capsys, "compare", "allreduce", "-P", "16", "--sizes", "64K", "--model", "flow",
                       "--topology", "kary:4,2", "--order", "random")
    assert code == 0 and "flow model" in out and "hottest link" in out


MESS = Path(__file__).resolve().parent / "data" / "topology" / "mess"


def test_rail_reaches_the_node_order_of_simulate_and_compare(capsys):
    """``--rail`` maps multi-rail hosts the same way as ``topocoll topo --rail``:
    round-robin places 6 ranks (the label says so); rail 1 is refused for a
    host with one adapter, naming it."""
    hosts = f"hostfile:{MESS}/multirail-hosts.txt"
    code, out, _ = run(capsys, "compare", "allreduce", "-P", "6", "--sizes", "1K", "--topology",
                       f"ibnet:{MESS}/multirail-hdr.topo", "--order", hosts, "--rail", "round-robin")
    assert code == 0 and "rail round-robin" in out.splitlines()[0]
    code, _, err = run(capsys, "simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--topology",
                       f"ibnet:{MESS}/multirail-hdr.topo", "--order", hosts, "--rail", "1")
    assert code == 2 and "host 'node03' has 1 adapter (rail 0 only)" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "simulate", "allreduce", "ring", "-P", "4", "--size", "1K", "--rail", "1")
    assert code == 2 and "--rail given without --topology" in err


def test_lockstep_path_passes_the_per_rank_view_limit(capsys):
    """Shift all-to-all on P=2100 (4,407,900 messages, over the 2^22 limit of a
    per-rank view): the congestion model's lockstep path builds no view and
    runs."""
    argv = ["simulate", "alltoall", "shift", "-P", "2100", "--size", "4K", "--model", "congestion"]
    code, out, err = run(capsys, *argv, "--sync", "rounds")
    assert code == 0, err
    assert "4407900 messages" in out


@pytest.mark.parametrize("model", ["loggops", "flow"])
def test_simulate_asks_for_the_program_view_only(capsys, monkeypatch, model):
    """With the per-rank views' bound lowered to 1,000 messages, the shift
    all-to-all on P = 64 (4,032 messages) is refused by verify, show and goal,
    which build per-rank views or hold the whole text, and runs under
    simulate, which reads its op program streamed round by round (bounded by
    the simulator's memory estimate; issue 26). The direct all-to-all's op
    table is built whole before its first round: it keeps the bound."""
    monkeypatch.setattr(registry, "MAX_PER_RANK_MESSAGES", 1000)
    monkeypatch.setattr(engine, "STREAM_ABOVE", 0)
    for verb in (["verify"], ["show"]):
        code, _, err = run(capsys, *verb, "alltoall", "shift", "-P", "64")
        assert code == 2 and "up to 4032 messages, expected at most 1000 for a per-rank view" in err, err
    code, _, err = run(capsys, "goal", "alltoall", "shift", "-P", "64", "--size", "4K")
    assert code == 2 and "expected at most 1000 for GOAL text held whole" in err, err
    argv = ["alltoall", "-P", "64", "--size", "4K", "--topology", "kary:8,2", "--model", model, "--sync", "rounds"]
    code, out, err = run(capsys, "simulate", argv[0], "shift", *argv[1:], "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["messages"] == 64 * 63 and res["streamed"]["peak_ops"] > 0
    code, out, err = run(capsys, "simulate", argv[0], "shift", *argv[1:])
    assert code == 0 and "streamed round by round" in out, err
    code, _, err = run(capsys, "simulate", argv[0], "direct", *argv[1:])
    assert code == 2 and "expected at most 1000 for an op program built whole before its first round" in err, err
