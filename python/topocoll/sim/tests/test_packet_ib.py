"""The packet model's InfiniBand HCA endpoint (``PacketOptions(nic="ib")``,
``src/engine/packet/nic.rs``) through the library and the command line.

Expected values are derived by hand. Direct send on one crossbar, every rank
posting its p − 1 messages at once in shift order (rank r to r + 1, r + 2, …):

- ``nic="simple"`` sends each rank's messages one after another in posting
  order, so at any moment every rank sends to r + s for the same s: a
  permutation, no output taken twice, (p − 1)·M packet times in all;
- ``nic="ib"`` interleaves the p − 1 queue pairs packet by packet with a
  random pick: the packets at the heads of the switch's input FIFOs have
  independent destinations, uniform over the p − 1 other ranks. Were a blocked
  head to draw again every packet time, an output would be taken with
  probability 1 − (1 − 1/(p − 1))^(p − 1) (0.660 at p = 8); FIFOs keep the
  blocked heads and do worse (Karol, Hluchyj & Morgan 1987, Table I: 0.6184 at
  N = 8 against the fresh-draw 0.656). So the interleaved run takes at least
  1/0.66 ≈ 1.5× the permutations' time once saturated; the tests ask for 1.3×.
"""

import json

import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate
from topocoll.sim.packet import PacketOptions

#: 8 ranks on one 8-port crossbar at 1 GB/s, M = 24 full packets per message (no header: T = 2.048 µs)
P, M = 8, 24
PIECE = M * 2048


def _direct_send(**packet):
    net = make_network("crossbar:8@bw=1GB/s,lat=0s", P, order="identity")
    sched = generate("reduce_scatter", "direct_send", P, count=P * PIECE // 16, itemsize=16)
    opts = PacketOptions(header_bytes=0, vcs=1, router_delay=0.0, **packet)
    return simulate(sched, Platform(alpha=0.0, reduce_bandwidth=1e18, network=net),
                    EngineConfig("packet", EngineOptions(packet=opts)))


def test_simple_sends_permutations_and_ib_meets_head_of_line_blocking():
    t = 2048 / 1e9
    simple = _direct_send()
    # (p − 1)·M packet times, up to the first packet's cut-through across the switch (zero latency)
    assert (P - 1) * M * t <= simple.time < (P - 1) * M * t * 1.001
    ib = _direct_send(nic="ib")
    assert ib.packet_hops == simple.packet_hops == 2 * P * (P - 1) * M
    assert ib.time / simple.time > 1.3, (ib.time, simple.time)


def test_the_seed_changes_the_interleaving_and_one_qp_is_the_simple_nic():
    a, b = _direct_send(nic="ib", ib_seed=1), _direct_send(nic="ib", ib_seed=2)
    assert a.packet_hops == b.packet_hops and a.time != b.time
    assert _direct_send(nic="ib", ib_seed=1).time == a.time               # same seed, same run
    # one QP served at a time: the messages in posting order, each whole, as nic="simple"
    assert _direct_send(nic="ib", ib_qps=1).time == _direct_send().time
    # a round-robin HCA rotates in posting order on every rank alike: still permutations
    assert _direct_send(nic="ib", ib_arbiter="round-robin").time == _direct_send().time


@pytest.mark.parametrize("kw, words", [
    (dict(nic="fast"), "nic='fast', expected one of simple, ib, bgl"),
    (dict(nic="bgl", ib_qps=2), "ib_qps=2 with nic='bgl', expected the ib_ options only with nic='ib'"),
    (dict(nic="ib", ib_qps=0), "ib_qps=0, expected 1..4096 queue pairs the HCA serves at once"),
    (dict(nic="ib", ib_qps=4097), "ib_qps=4097, expected 1..4096"),
    (dict(nic="ib", ib_arbiter="fifo"), "ib_arbiter='fifo', expected one of random, round-robin"),
    (dict(nic="ib", ib_seed=-1), "ib_seed=-1, expected 0..18446744073709551615"),
    (dict(ib_seed=3), "ib_seed=3 with nic='simple', expected the ib_ options only with nic='ib'"),
])
def test_bad_nic_options_are_one_line(kw, words):
    with pytest.raises(SpecError) as e:
        PacketOptions(**kw)
    assert words in str(e.value) and "\n" not in str(e.value)


_ARGS = ["simulate", "reduce_scatter", "direct_send", "-P", "4", "--size", "64K", "--topology", "kary:2,2"]


@pytest.mark.parametrize("argv, words", [
    (["--model", "flow", "--nic", "ib"], "--nic with the flow model, expected --nic only with --model packet"),
    (["--model", "packet", "--ib-qps", "3"], "ib_qps=3 with nic='simple', expected the ib_ options only with"),
    (["--model", "packet", "--nic", "bgl"], "nic='bgl' on kary:2,2, expected a torus or mesh"),
])
def test_cli_nic_flags_are_checked_in_one_line(argv, words, capsys):
    from topocoll.cli import main

    assert main(_ARGS + argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err


def test_cli_prints_the_hca_and_its_seed(capsys):
    from topocoll.cli import main

    assert main(_ARGS + ["--model", "packet", "--nic", "ib", "--ib-seed", "7"]) == 0
    assert "packet model, no preset, nic ib (random arbiter, seed 7, up to 4096 QPs), sync=deps" in capsys.readouterr().out
    assert main(_ARGS + ["--model", "packet", "--nic", "ib", "--ib-seed", "7", "--ib-qps", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nic"] == {"model": "ib", "arbiter": "random", "seed": 7, "qps": 2}
