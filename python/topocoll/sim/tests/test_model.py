"""The Model seam: both models answer estimate(schedule, platform) -> Estimate;
static contention reduces to α-β-γ on an ideal crossbar; platforms reject
values that are not finite and positive."""

import math

import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate, report
from topocoll.sim import AlphaBetaGamma, Estimate, Platform, StaticContention, make_network, model_named


@pytest.mark.parametrize("collective, name, p", [
    ("allreduce", "ring", 6), ("allreduce", "bruck", 9), ("alltoall", "shift", 5),
    ("reduce_scatter", "radix_k", 12), ("bcast", "binomial", 7),
])
def test_both_models_through_one_seam_agree_on_an_ideal_crossbar(collective, name, p):
    sched = generate(collective, name, p, count=12 * p, itemsize=8)
    ideal = Platform(alpha=2e-6, bandwidth=1e9, reduce_bandwidth=1e10,
                     network=make_network("crossbar:16@bw=1GB/s,lat=0s", p, order="identity"))
    a = AlphaBetaGamma().estimate(sched, ideal)
    s = StaticContention().estimate(sched, ideal)
    assert isinstance(a, Estimate) and isinstance(s, Estimate)
    assert a.terms == report(sched).cost
    assert a.time == pytest.approx(a.terms.time(2e-6, 1e-9, 1e-10), rel=1e-12)
    assert s.time == pytest.approx(a.time, rel=1e-9)
    assert s.congestion == 1.0 and a.model != s.model


def test_static_contention_names_a_hot_link_in_a_random_order():
    sched = generate("allreduce", "ring", 64, count=64 * 1024, itemsize=4)
    good = Platform(network=make_network("kary:8,2", 64, routing="d-mod-k", order="routing"))
    bad = Platform(network=make_network("kary:8,2", 64, routing="d-mod-k", order="random", seed=3))
    g, b = StaticContention().estimate(sched, good), StaticContention().estimate(sched, bad)
    assert g.congestion == 1.0 < b.congestion and b.time > g.time
    assert "→" in b.hot_link and "(seed 3)" in bad.network.label


@pytest.mark.parametrize("field, value", [
    ("alpha", -1.0), ("alpha", math.nan), ("alpha", math.inf), ("bandwidth", 0.0), ("bandwidth", math.nan),
    ("bandwidth", -2e9), ("reduce_bandwidth", 0.0), ("reduce_bandwidth", math.inf), ("alpha", "fast"),
])
def test_platform_rejects_bad_values(field, value):
    with pytest.raises(SpecError, match=f"Platform: {field}="):
        Platform(**{field: value})


def test_static_model_needs_a_network_and_models_have_names():
    with pytest.raises(SpecError, match="the platform has no network"):
        StaticContention().estimate(generate("allreduce", "ring", 4), Platform())
    assert isinstance(model_named("static"), StaticContention)
    with pytest.raises(SpecError, match="model 'nosuch', expected one of alpha-beta-gamma, static"):
        model_named("nosuch")


def test_local_only_rounds_cost_gamma_in_both_models():
    # Bruck's allreduce ends with a local reduction (eq. 24); both models charge its γ
    sched = generate("allreduce", "bruck", 5, count=10, itemsize=8)
    net = Platform(alpha=0.0, bandwidth=1e9, reduce_bandwidth=1e6,
                   network=make_network("crossbar:8@bw=1GB/s,lat=0s", 5, order="identity"))
    assert StaticContention().estimate(sched, net).time == pytest.approx(
        AlphaBetaGamma().estimate(sched, net).time, rel=1e-9)
