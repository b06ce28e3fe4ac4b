"""Machine profiles (``topocoll calibrate`` → ``simulate --profile``): JSON
round trip, one-line errors naming file and field, and the numbers reaching
the models in the direction they should."""

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from topocoll.errors import ParseError
from topocoll.schedules import generate
from topocoll.sim import AlphaBetaGamma, Platform
from topocoll.sim.engine import simulate
from topocoll.sim.profile import PROFILE_FORMAT, MachineProfile, load_profile, save_profile

PROFILE = MachineProfile(alpha=2e-6, beta=1e-10, reduce_bandwidth=5e10, fit_residual=0.1,
                         stream_bandwidth=9e9, over_bandwidth=2.5e10, copy_bandwidth=6e10, o_send=0.6e-6,
                         o_recv=0.8e-6, o_per_byte=4e-11, g=1.2e-6, G=1.1e-10, L=0.3e-6, eager=16384,
                         pingpong=[[8, 2e-6], [1048576, 1.1e-4]], meta={"host": "test", "seed": 0})


def test_round_trip(tmp_path):
    path = save_profile(PROFILE, tmp_path / "p.json")
    assert json.loads(path.read_text())["format"] == PROFILE_FORMAT
    assert load_profile(path) == PROFILE


def _write(tmp_path, data) -> str:
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _good() -> dict:
    return PROFILE.as_dict()


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(alpha=-1.0), "alpha"),
    (lambda d: d.update(beta=0), "beta"),
    (lambda d: d.update(reduce_bandwidth="fast"), "reduce_bandwidth"),
    (lambda d: d.update(G=float("nan")), "G"),
    (lambda d: d.pop("beta"), "beta"),
    (lambda d: d.update(format="something/2"), "format"),
    (lambda d: d.update(bandwith=1e9), "bandwith"),
    (lambda d: d.update(eager=-5), "eager"),
    (lambda d: d.update(meta=[1]), "meta"),
])
def test_bad_field_is_one_line_naming_file_and_field(tmp_path, change, field):
    data = _good()
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(ParseError) as err:
        load_profile(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(path) and field in message


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", ""])
def test_not_a_profile_is_one_line(tmp_path, text):
    path = _write(tmp_path, text)
    with pytest.raises(ParseError, match="bad.json") as err:
        load_profile(path)
    assert "\n" not in str(err.value)


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(ParseError, match="nope.json"):
        load_profile(tmp_path / "nope.json")


def test_cli_bad_profile_is_one_error_line_exit_2(tmp_path):
    data = _good()
    data["o_recv"] = -3
    path = _write(tmp_path, data)
    proc = subprocess.run([sys.executable, "-m", "topocoll", "simulate", "allreduce", "ring", "-P", "4", "--size", "8",
                           "--profile", path], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONWARNINGS="error"))
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(err) == 1 and err[0].startswith("topocoll: error:") and "o_recv" in err[0] and path in err[0]


def _simulate_args(*argv):
    """The options `topocoll simulate` parses (its own parser, not the CLI module)."""
    from topocoll.sim.cli import add_simulate_parser

    parser = argparse.ArgumentParser()
    add_simulate_parser(parser.add_subparsers())
    return parser.parse_args(["simulate", "allreduce", "binomial", "-P", "8", "--size", "8", *argv])


def _cli_time(*argv) -> float:
    from topocoll.sim.cli import engine_options, platform_values

    args = _simulate_args(*argv)
    sched = generate("allreduce", "binomial", 8, count=1, itemsize=8)
    platform = Platform(**platform_values(args, model=args.model))
    return simulate(sched, platform, model=args.model, options=engine_options(args)).time


def test_cli_profile_sets_defaults_and_flags_win(tmp_path):
    path = str(save_profile(PROFILE, tmp_path / "p.json"))
    plain = _cli_time()
    profiled = _cli_time("--profile", path)
    assert profiled != plain and profiled == pytest.approx(_loggops(PROFILE))
    # the profile's o_s is the sender overhead; an explicit --alpha replaces it
    slower = _cli_time("--profile", path, "--alpha", "1e-4")
    assert slower > profiled + 5 * 1e-4   # binomial on 8 ranks: 2·log2 8 = 6 sends on the critical path
    # an explicit --latency beats the profile's L in the same way, before or after --profile
    assert _cli_time("--latency", "1e-3", "--profile", path) > profiled + 1e-3
    args = _simulate_args("--profile", path, "--o-recv", "0", "--eager", "7")
    from topocoll.sim.cli import engine_options
    options = engine_options(args)
    assert options.o_recv == 0 and options.eager == 7 and options.G == PROFILE.G


def _loggops(profile, algorithm="binomial", p=8, count=1):
    sched = generate("allreduce", algorithm, p, count=count, itemsize=8)
    return simulate(sched, profile.platform(model="loggops"), model="loggops",
                    options=profile.engine_options(sync="deps")).time


def test_larger_overheads_and_latency_cost_more_when_latency_bound():
    slow_wire = replace(PROFILE, L=3e-6)   # L > g: the engine gets L − g (profile.loggops)
    base = _loggops(slow_wire)
    for field in ("o_send", "o_recv", "L"):
        assert _loggops(replace(slow_wire, **{field: 2 * getattr(slow_wire, field)})) > base, field


def test_a_larger_gap_slows_a_stream_not_a_lone_message():
    """LogGP: g spaces a rank's back-to-back messages (here 7 of them, g > o)."""
    wide = replace(PROFILE, g=5e-6, L=6e-6)
    sched = generate("alltoall", "direct", 8, count=8, itemsize=8)
    def run(profile):
        return simulate(sched, profile.platform(model="loggops"), model="loggops",
                        options=profile.engine_options()).time
    assert run(replace(wide, g=10e-6)) > run(wide) + 5 * 5e-6
    assert _loggops(replace(wide, g=6e-6)) == pytest.approx(_loggops(wide))


def test_executor_layer_reproduces_the_executors_round():
    """The engine's one-way time of a small message is the executor's time
    per exchange round, however the raw overheads split it."""
    sched = _pingpong_schedule()
    for profile in (replace(PROFILE, executor_alpha=5e-6, executor_beta=1.2e-10, executor_call=2e-6),
                    replace(PROFILE, executor_alpha=5e-6, executor_beta=1.2e-10, o_send=1.5e-6)):
        one_way = simulate(sched, profile.platform(model="loggops"), model="loggops",
                           options=profile.engine_options()).time / 2
        assert one_way == pytest.approx(5e-6 + 8 * 1.2e-10, rel=1e-3)
        assert profile.call_overhead() == profile.executor_call
        assert profile.call_overhead("mpi") == 0.0
    mpi = PROFILE.loggops("mpi")
    assert mpi["o_send"] == PROFILE.o_send and mpi["G"] == PROFILE.G


def _pingpong_schedule():
    from topocoll.schedules.ir import Recv, Schedule, Send

    ops = [[Send(1, "data", (0,), 0, 0), Recv(1, "tmp", (0,), (0,), 1, 1, (0,))],
           [Recv(0, "data", (0,), (0,), 0, 0), Send(0, "data", (0,), 1, 1, (0,))]]
    return Schedule.from_ops("bcast", ops, count=1, itemsize=8, root=0)


def test_double_alpha_costs_more_in_the_alpha_beta_gamma_model():
    sched = generate("allreduce", "binomial", 8, count=1, itemsize=8)
    one = AlphaBetaGamma().estimate(sched, PROFILE.platform(model="alpha-beta-gamma")).time
    two = AlphaBetaGamma().estimate(sched, replace(PROFILE, alpha=2 * PROFILE.alpha)
                                    .platform(model="alpha-beta-gamma")).time
    # latency bound: 2⌈log2 8⌉ = 6 rounds of α dominate
    assert two - one == pytest.approx(6 * PROFILE.alpha, rel=1e-3)


def test_slower_bytes_cost_more_when_bandwidth_bound():
    count = (1 << 20) // 8
    base = _loggops(PROFILE, "ring", 4, count)
    assert _loggops(replace(PROFILE, G=2 * PROFILE.G), "ring", 4, count) > base
    assert _loggops(replace(PROFILE, reduce_bandwidth=PROFILE.reduce_bandwidth / 4), "ring", 4, count) > base


def test_models_read_alpha_differently():
    assert PROFILE.platform(model="alpha-beta-gamma").alpha == PROFILE.alpha
    assert PROFILE.platform(model="loggops").alpha == PROFILE.o_send
    assert PROFILE.platform(model="loggops").bandwidth == pytest.approx(1 / PROFILE.G)
    assert PROFILE.engine_options(sync="rounds").sync == "rounds"
    assert PROFILE.engine_options().eager == PROFILE.eager


# ---- format versions and levels (issue 19 §5) ------------------------------------------

def test_a_version_1_profile_still_loads(tmp_path):
    """A file as `topocoll calibrate` wrote it before levels: format /1, no 'levels'."""
    data = {k: v for k, v in _good().items() if k != "levels"}
    data["format"] = "topocoll-machine-profile/1"
    profile = load_profile(_write(tmp_path, data))
    assert profile == PROFILE and profile.levels == {} and profile.level("inter") is None


def test_levels_round_trip_and_leave_the_top_level_alone(tmp_path):
    from topocoll.sim.profile import LevelCosts

    levels = {"intra": LevelCosts(alpha=3e-7, beta=1e-10, pingpong=[[8, 3e-7]], source=["a.txt"]),
              "inter": LevelCosts(alpha=1.2e-6, beta=8e-11, stream_bandwidth=1.2e10, message_rate=1e8,
                                  message_rate_pairs=16, eager=8192)}
    profile = replace(PROFILE, levels=levels)
    loaded = load_profile(save_profile(profile, tmp_path / "p.json"))
    assert loaded == profile and loaded.level("intra").alpha == 3e-7
    # the models read the top level only: levels change nothing they see (yet)
    assert loaded.platform(model="loggops") == PROFILE.platform(model="loggops")
    assert loaded.engine_options() == PROFILE.engine_options()


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(levels={"inter": {"alpha": -1.0}}), "levels.inter.alpha"),
    (lambda d: d.update(levels={"inter": {"alpah": 1.0}}), "levels.inter.alpah"),
    (lambda d: d.update(levels={"socket": {}}), "'socket'"),
    (lambda d: d.update(levels={"inter": [1]}), "levels.inter"),
    (lambda d: d.update(levels=[1]), "levels"),
    (lambda d: d.update(levels={"inter": {"message_rate_pairs": 1.5}}), "levels.inter.message_rate_pairs"),
    (lambda d: d.update(levels={"inter": {}}, format="topocoll-machine-profile/1"), "levels"),
])
def test_bad_level_is_one_line_naming_file_and_field(tmp_path, change, field):
    data = _good()
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(ParseError) as err:
        load_profile(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(path) and field in message, message
