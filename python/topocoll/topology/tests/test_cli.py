"""The ``topo`` verb, driven through its own argparse registration."""

import argparse
import json

import pytest

from topocoll.errors import TopocollError
from topocoll.topology.cli import add_topo_parser, topo_command


def run(argv, capsys):
    parser = argparse.ArgumentParser()
    add_topo_parser(parser.add_subparsers())
    args = parser.parse_args(["topo", *argv])
    assert args.func is topo_command
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_text_output(capsys):
    out = run(["kary:12,2", "--pattern", "shift:5", "--ebb", "20", "--seed", "7"], capsys)
    assert "endpoints  144   switches 24   links 576" in out
    assert "max link load 1;" in out
    assert "20 random bisections, seed 7" in out


def test_json_output_and_random_order(capsys):
    out = run(["kary:12,2", "--order", "random", "--seed", "3", "--pattern", "shift:5", "--json"], capsys)
    data = json.loads(out)
    assert data["patterns"][0]["max_link_load"] > 1
    assert sum(data["patterns"][0]["histogram"].values()) == 576


def test_draw(tmp_path, capsys):
    svg = tmp_path / "t.svg"
    run(["torus:4x4", "--pattern", "shift:1", "--draw", str(svg)], capsys)
    text = svg.read_text()
    assert "<svg" in text and text.count('id="cable-') == 32 and 'id="endpoints"' in text   # 4x4 torus: 32 cables
    assert "link load" in text


@pytest.mark.parametrize("argv", [["kary:0,2"], ["kary:4,2", "--routing", "dor"], ["kary:4,2", "--ranks", "17"],
                                  ["kary:4,2", "--pattern", "shift:99"], ["table1:20736", "--draw", "x.svg"]])
def test_bad_input_raises_topocoll_errors(argv, capsys):
    parser = argparse.ArgumentParser()
    add_topo_parser(parser.add_subparsers())
    args = parser.parse_args(["topo", *argv])
    with pytest.raises(TopocollError):
        topo_command(args)
