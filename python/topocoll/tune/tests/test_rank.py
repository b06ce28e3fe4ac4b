"""rank(): the library behind ``topocoll compare``, the tuner's entry point."""

import pytest

from topocoll.errors import SpecError
from topocoll.schedules import lookup
from topocoll.sim import AlphaBetaGamma, Platform, StaticContention, make_network
from topocoll.tune import rank


def test_rows_are_sorted_per_size_and_match_the_registry_cost():
    platform = Platform(alpha=1e-6, bandwidth=2e9, reduce_bandwidth=4e9)
    rows = rank("allreduce", 16, [8, 1 << 20], platform=platform)
    for size in (8, 1 << 20):
        times = [r.time for r in rows if r.size == size]
        assert times == sorted(times)
        assert [r.position for r in rows if r.size == size] == list(range(1, len(times) + 1))
    for r in rows:
        # the model's terms are the registry's one cost call (closed form or counted)
        assert r.estimate.terms == lookup("allreduce", r.algorithm).cost(16, r.params, r.size)


def test_small_messages_favour_latency_large_ones_bandwidth():
    rows = rank("allreduce", 64, [8, 64 << 20])
    first = {r.size: r.algorithm for r in rows if r.position == 1}
    small = lookup("allreduce", first[8]).cost(64, {}, 8)
    assert small.alpha <= 12                                   # a log-round algorithm
    assert first[64 << 20] in ("ring", "rabenseifner")         # bandwidth-optimal ones


def test_operator_filter_uses_each_schedules_exact_needs():
    names = lambda rows: {r.algorithm for r in rows}
    for_sum = names(rank("allreduce", 6, [8]))
    for_max = names(rank("allreduce", 6, [8], op="max"))
    # P = 6 is not 2^k: the virtual butterfly and unadapted dissemination count inputs twice
    assert "butterfly_virtual" not in for_sum and "butterfly_virtual" in for_max
    assert "nway_dissemination_unadapted" in for_max - for_sum
    ordered = names(rank("allreduce", 6, [8], op="noncommutative"))
    assert "ring" not in ordered and "rabenseifner" in ordered
    # at P = 8 every input arrives once: the virtual butterfly is exact, sum is fine
    assert "butterfly_virtual" in names(rank("allreduce", 8, [8]))


def test_mpi_size_convention_and_barrier():
    rows = rank("alltoall", 144, [4096])
    shift = next(r for r in rows if r.algorithm == "shift")
    assert shift.report.max_bytes_per_rank == 143 * 4096
    barrier = rank("barrier", 8, [8, 64])
    assert {r.size for r in barrier} == {0}        # no message: one table


def test_static_model_through_rank():
    platform = Platform(network=make_network("kary:4,2", 16, routing="d-mod-k"))
    rows = rank("allreduce", 16, [65536], model=StaticContention(), platform=platform)
    assert rows and all(r.estimate.model == "static contention" for r in rows)


@pytest.mark.parametrize("call, fragment", [
    (lambda: rank("nosuch", 8, [8]), "collective 'nosuch'"),
    (lambda: rank("allreduce", 0, [8]), "P=0, expected 1.."),
    (lambda: rank("allreduce", 8, [8], op="frob"), "op='frob'"),
    (lambda: rank("allreduce", 8, [0]), "message size=0"),
    (lambda: rank("allreduce", 8, []), "no message sizes"),
    (lambda: rank("alltoall", 1 << 20, [8]), "no alltoall algorithm runs on P=1048576"),
])
def test_bad_requests_are_one_line_errors(call, fragment):
    with pytest.raises(SpecError, match=None) as err:
        call()
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_default_model_is_alpha_beta_gamma():
    rows = rank("bcast", 5, [100])
    assert rows[0].estimate.model == AlphaBetaGamma.name
