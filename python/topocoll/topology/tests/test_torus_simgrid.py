"""``dor:tie=simgrid`` routes as SimGrid's ``TorusZone`` (and so SMPI) does.

SimGrid's rule (``src/kernel/routing/TorusZone.cpp``, ``get_local_route``):
dimensions in order x, y, z, …; in dimension j, from source coordinate m to
target t on a ring of k, go + iff ``(t > m and t <= m + k/2) or (m > k/2 and
(m + k/2) % k >= t)`` (integer k/2), − otherwise. That is the shortest way,
and on a tie (k even, distance k/2) + except from m = k/2 to t = 0.

The cases here are computed by hand from that rule. The comparison with
SimGrid itself needs Debian's ``python3-simgrid``, which ``make test`` does
not install, so it is not a test here but part of the SMPI
benchmark: ``benchmarks/bench_smpi.py`` (``route_check``, through
``benchmarks/smpi/torus_routes.py``) installs the bindings where it can and
reports the hop-by-hop comparison in BENCHMARKS.md, "SMPI".
"""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.topology import make_router, parse_topology, route


def nodes(t, router, s, d):
    """The node sequence of the route s -> d."""
    indptr, links = route(router, [s], [d])
    return [s, *t.dst[links[indptr[0]:indptr[1]]].tolist()]


@pytest.mark.parametrize(("s", "d", "expected"), [
    (4, 0, [4, 3, 2, 1, 0]),      # the one tie broken −
    (0, 4, [0, 1, 2, 3, 4]),
    (5, 1, [5, 6, 7, 0, 1]),      # from m > k/2 the tie wraps +
    (6, 2, [6, 7, 0, 1, 2]),
    (1, 5, [1, 2, 3, 4, 5]),
    (3, 7, [3, 4, 5, 6, 7]),
    (7, 3, [7, 0, 1, 2, 3]),
    (2, 6, [2, 3, 4, 5, 6]),
    (4, 1, [4, 3, 2, 1]),         # no tie: shortest
    (1, 6, [1, 0, 7, 6]),
    (6, 1, [6, 7, 0, 1]),
])
def test_ring_of_8(s, d, expected):
    t = parse_topology("torus:8")
    assert nodes(t, make_router(t, "dor:tie=simgrid"), s, d) == expected


def test_tie_at_half_ring_goes_minus_in_every_dimension():
    t = parse_topology("torus:4x6")           # node = x + 4 y
    r = make_router(t, "dor", tie="simgrid")
    assert nodes(t, r, 2 + 4 * 3, 0) == [14, 13, 12, 8, 4, 0]   # x 2 -> 0 −, then y 3 -> 0 −
    assert nodes(t, r, 0, 2 + 4 * 3) == [0, 1, 2, 6, 10, 14]    # the reverse goes +
    assert nodes(t, r, 2, 4 * 3) == [2, 1, 0, 4, 8, 12]         # x −, y 0 -> 3 +
    assert nodes(t, r, 3 + 4 * 4, 1 + 4 * 1) == [19, 16, 17, 21, 1, 5]   # ties from m > k/2: x 3 -> 1, y 4 -> 1 wrap +
    assert nodes(t, r, 4 * 3, 1) == [12, 13, 9, 5, 1]                    # x 0 -> 1 +, then y 3 -> 0 −


def _differs_from_positive(t, s, d):
    """True where some wrapped dimension has the tie from k/2 to 0."""
    for k, w, stride in zip(t.params["k"], t.params["wrap"], np.cumprod([1, *t.params["k"][:-1]])):
        cs, cd = (s // stride) % k, (d // stride) % k
        if w and k > 2 and k % 2 == 0 and cs == k // 2 and cd == 0:
            return True
    return False


@pytest.mark.parametrize("spec", ["torus:3x5x7", "torus:4x6x2", "torus:8x4m", "mesh:4x4"])
def test_simgrid_equals_positive_except_the_k_half_to_0_ties(spec):
    t = parse_topology(spec)
    n = t.n_endpoints
    s, d = np.divmod(np.arange(n * n), n)
    ip_sg, l_sg = route(make_router(t, "dor:tie=simgrid"), s, d)
    ip_pos, l_pos = route(make_router(t, "dor:tie=positive"), s, d)
    for i in range(n * n):
        a, b = l_sg[ip_sg[i]:ip_sg[i + 1]].tolist(), l_pos[ip_pos[i]:ip_pos[i + 1]].tolist()
        assert len(a) == len(b)                       # minimal either way
        assert (a != b) == _differs_from_positive(t, int(s[i]), int(d[i])), (spec, int(s[i]), int(d[i]))


def test_adaptive_takes_the_rule_and_bad_tie_is_named():
    t = parse_topology("torus:8")
    indptr, links, w = route(make_router(t, "adaptive:tie=simgrid"), [4], [0], weights=True)
    assert sorted(zip(t.src[links].tolist(), t.dst[links].tolist())) == [(1, 0), (2, 1), (3, 2), (4, 3)]
    with pytest.raises(SpecError, match="tie='sg'.*simgrid"):
        make_router(t, "dor:tie=sg")
