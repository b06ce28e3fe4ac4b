"""n-way dissemination: barrier, unadapted and adapted allreduce (End et al.
2016 §III-B). The paper's Table I written out literally, equation (3)'s double
count, every case of Theorem 1, the adaptability table checked against a
brute-force reading of eq. (8), closed forms at P up to 4096."""

import doctest
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import ScheduleError, SpecError, VerificationError
from topocoll.schedules import dissemination as module
from topocoll.schedules import report
from topocoll.schedules.dissemination import (adaptation, adaptations, adapted_schedule, dissemination,
                                              is_adaptable, nway_dissemination, nway_dissemination_unadapted)
from topocoll.verify import check_against_reference, integer_inputs, verify
from topocoll.verify.testing import assert_views_equal, positive_inputs, rounds_needed, shifted_product

MAX_P = 130
NS = range(1, 7)
# `make test` sweeps these P (all up to 12, powers of n + 1, primes, P next to
# powers of two); `make test-all` adds every other P up to MAX_P (marker `exhaustive`)
SAMPLE_P = {*range(1, 13), 16, 17, 25, 27, 31, 32, 33, 36, 49, 63, 64, 65, 81, 97, 125, 127, 128, 129, 130}


def split_ps(ps):
    """``ps`` as two parameters: the sample ``make test`` runs and the rest."""
    ps = list(ps)
    return [pytest.param([p for p in ps if p in SAMPLE_P], id="sample"),
            pytest.param([p for p in ps if p not in SAMPLE_P], id="rest", marks=pytest.mark.exhaustive)]


# ---- eq. (8) read literally, independent of the code under test ---------------

def boundary_offset(l, j, n):
    """``p - g_l[j]``: n Σ_{i=0}^{l-2} (n+1)^i + j (n+1)^(l-1) (eqs. 5, 6); 0 for l = 0."""
    if l == 0:
        return 0
    return n * sum((n + 1) ** i for i in range(l - 1)) + j * (n + 1) ** (l - 1)


def brute_force_adaptable(p, n):
    if p == 1:
        return True
    k = rounds_needed(p, n)
    d = (n + 1) ** (k - 1)
    bounds = [(0, 0)] + [(l, j) for l in range(1, k) for j in range(1, n + 1)]
    for s in range(1, n + 1):
        for snd in bounds:
            g_snd = s * d + boundary_offset(*snd, n)
            if p - 1 == g_snd:                                   # base border g_B
                return True
            for rcv in bounds:
                if p == g_snd - boundary_offset(*rcv, n):        # eq. (8)
                    if snd[0] == 0 and rcv[0] == 0 and s == 1:  # case 3, s = 1: P = (n+1)^(k-1)
                        continue
                    return True
    return False


# ---- all P, all n ------------------------------------------------------------

def test_most_p_are_adaptable():
    for n in NS:
        assert sum(is_adaptable(p, n) for p in range(1, MAX_P + 1)) >= 60


@pytest.mark.parametrize("ps", split_ps(range(1, MAX_P + 1)))
@pytest.mark.parametrize("n", NS)
def test_adapted_verifies_and_matches_reference(n, ps):
    tried = 0
    for p in ps:
        if not is_adaptable(p, n):
            continue
        tried += 1
        sched = nway_dissemination(p, n=n, count=3)
        assert verify(sched, op="sum") == "sum"
        check_against_reference(sched, integer_inputs(p, 3, seed=p), "sum")
        if p <= 16 or p % 17 == 0:
            check_against_reference(sched, positive_inputs(p, 3, seed=p), shifted_product)
    assert tried >= 10


def counted_inputs(p, n):
    """Inputs reduced into a result, with repeats (eq. 4): each round multiplies
    the count by 1 + the number of distinct peers ``j(n+1)^(l-1) mod P ≠ 0``;
    for P = (n+1)^k that is exactly P."""
    count = 1
    for t in range(rounds_needed(p, n)):
        count *= 1 + len({j * (n + 1) ** t % p for j in range(1, n + 1)} - {0})
    return count


@pytest.mark.parametrize("ps", split_ps(range(1, MAX_P + 1)))
@pytest.mark.parametrize("n", NS)
def test_unadapted_is_right_for_max_and_wrong_for_sum_unless_exact(n, ps):
    for p in ps:
        sched = nway_dissemination_unadapted(p, n=n, count=2)
        assert verify(sched, op="max") == "max"
        if p % 10 == 0 or p in (1, 2, 3):
            check_against_reference(sched, integer_inputs(p, 2, seed=p), "max")
        exact = counted_inputs(p, n) == p
        # the schedule says exactly what it needs: the MPI layer refuses by it
        assert sched.needs.idempotent == (not exact) and sched.needs.commutative == (p > 1)
        if exact:
            assert verify(sched, op="sum") == "sum"
        else:
            with pytest.raises(VerificationError, match="twice"):
                verify(sched, op="sum")


@pytest.mark.parametrize("ps", split_ps(range(1, MAX_P + 1)))
@pytest.mark.parametrize("n", NS)
def test_barrier_every_rank_hears_from_all(n, ps):
    for p in ps:
        sched = dissemination(p, n=n)
        assert sched.collective == "barrier" and sched.itemsize == 0 and sched.nblocks == 1
        assert verify(sched, op="max") == "max"
        rep = report(sched)
        assert rep.rounds == rounds_needed(p, n) and rep.all_ranks_active_every_round and rep.bytes_total == 0


def test_barrier_misses_a_rank_without_its_last_round():
    sched = dissemination(10, n=2)
    last = max(op.round for op in sched.ops[0])
    cut = [[op for op in ops if op.round < last] for ops in sched.ops]
    with pytest.raises(VerificationError, match="misses"):
        verify(sched.with_ops(cut))



@pytest.mark.parametrize("make", [nway_dissemination, nway_dissemination_unadapted, dissemination])
def test_vectorised_program_equals_program_from_ops(make):
    for n in NS:
        for p in range(1, 41):
            if make is nway_dissemination and not is_adaptable(p, n):
                continue
            sched = make(p, n=n, count=5, itemsize=4)
            assert_views_equal(sched)


# ---- Table I and equation (3), End et al. 2016 -----------------------------------
# rank: (inputs of S_1^p, ranks whose S_1 make up S_2^p in the order of eq. (2))

TABLE_I_9 = {
    0: ((0, 8, 7), (0, 6, 3)),
    1: ((1, 0, 8), (1, 7, 4)),
    2: ((2, 1, 0), (2, 8, 5)),
    3: ((3, 2, 1), (3, 0, 6)),
    4: ((4, 3, 2), (4, 1, 7)),
    5: ((5, 4, 3), (5, 2, 8)),
    6: ((6, 5, 4), (6, 3, 0)),
    7: ((7, 6, 5), (7, 4, 1)),
    8: ((8, 7, 6), (8, 5, 2)),
}

TABLE_I_8 = {
    0: ((0, 7, 6), (0, 5, 2)),
    1: ((1, 0, 7), (1, 6, 3)),
    2: ((2, 1, 0), (2, 7, 4)),
    3: ((3, 2, 1), (3, 0, 5)),
    4: ((4, 3, 2), (4, 1, 6)),
    5: ((5, 4, 3), (5, 2, 7)),
    6: ((6, 5, 4), (6, 3, 0)),
    7: ((7, 6, 5), (7, 4, 1)),
}


def contributions(sym):
    return Counter(r for lo, hi in sym.seq for r in range(lo, hi))


def snapshots(sched, op="sum"):
    """Rank -> contributions in ``data`` after each round, and the verifier's verdict."""
    seen = {}

    def on_round_end(rnd, memories):
        seen[rnd] = {rank: contributions(mem[("data", 0)]) for rank, mem in enumerate(memories)}

    try:
        verdict = verify(sched, op=op, on_round_end=on_round_end)
    except VerificationError as err:
        verdict = err
    return seen, verdict


def receive_order(sched, rank, rnd):
    return [op.peer for op in sched.ops[rank] if op.kind == "recv" and op.round == rnd]


@pytest.mark.parametrize("p, table", [(9, TABLE_I_9), (8, TABLE_I_8)])
def test_table_1(p, table):
    sched = nway_dissemination_unadapted(p, n=2)
    seen, verdict = snapshots(sched)
    assert sorted(seen) == [0, 1]
    for rank, (s1, s2) in table.items():
        assert seen[0][rank] == Counter(s1), f"S_1^{rank}"
        assert receive_order(sched, rank, 1) == list(s2[1:]), f"peers of rank {rank} in round 2"
        assert seen[1][rank] == sum((Counter(table[q][0]) for q in s2), Counter()), f"S_2^{rank}"
    if p == 9:
        assert verdict == "sum"
        assert all(seen[1][rank] == Counter(range(9)) for rank in range(9))
    else:
        # eq. (3): S_2^0 = (x0∘x7∘x6)∘(x5∘x4∘x3)∘(x2∘x1∘x0), x0 reduced twice
        assert seen[1][0] == Counter({0: 2, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1})
        assert isinstance(verdict, VerificationError)
        assert "rank 0 data[0] counts contribution x0 twice" in str(verdict)
        assert verify(sched, op="max") == "max"


def test_table_1_adapted_8_ranks():
    """§III-B, Fig. 3: g_B of rank 0 meets g_1^2[1] of rank 2, so rank 5 sends
    its partial result and rank 2 only x2∘x1."""
    sched = nway_dissemination(8, n=2)
    received = {}

    def on_transfer(src, dst, op, payload):
        received[(op.round, dst, src)] = contributions(payload[0])

    seen = {}

    def on_round_end(rnd, memories):
        seen[rnd] = {rank: contributions(mem[("data", 0)]) for rank, mem in enumerate(memories)}

    assert verify(sched, op="sum", on_round_end=on_round_end, on_transfer=on_transfer) == "sum"
    for rank, (s1, _) in TABLE_I_8.items():
        assert seen[0][rank] == Counter(s1)
        assert seen[1][rank] == Counter(range(8))
    assert received[(1, 0, 5)] == Counter((5, 4, 3))
    assert received[(1, 0, 2)] == Counter((2, 1))
    for rank in range(8):   # every rank: the full S_1 from p - 3, the cut one from p - 6
        assert received[(1, rank, (rank - 3) % 8)] == Counter(TABLE_I_8[(rank - 3) % 8][0])
        assert received[(1, rank, (rank - 6) % 8)] == Counter(TABLE_I_8[(rank - 6) % 8][0][:2])


# ---- Theorem 1: every case, eq. (8) ---------------------------------------------

def test_every_case_of_theorem_1_verifies():
    by_case = {}
    for n in NS:
        for p in range(2, 61):
            for a in adaptations(p, n):
                by_case.setdefault(a.case, []).append(a)
    assert set(by_case) == {"base border", "1", "2", "3", "4", "5"}
    for case, found in by_case.items():
        for a in found[:: max(1, len(found) // 12)]:
            sched = adapted_schedule(a, count=2)
            assert verify(sched, op="sum") == "sum", a.describe()
            check_against_reference(sched, positive_inputs(a.p, 2, seed=a.p), shifted_product)
            rep = report(sched)
            assert rep.rounds == a.k and rep.all_ranks_active_every_round


def test_tuples_satisfy_equation_8():
    for n in NS:
        for p in range(2, MAX_P + 1):
            k = rounds_needed(p, n)
            d = (n + 1) ** (k - 1)
            for a in adaptations(p, n):
                assert a.k == k and 1 <= a.s <= n
                g_snd = a.s * d + boundary_offset(a.l_snd, a.j_snd, n)
                if a.case == "base border":
                    assert p - 1 == g_snd, a.describe()
                else:
                    assert p == g_snd - boundary_offset(a.l_rcv, a.j_rcv, n), a.describe()


def test_adaptable_pairs_match_brute_force_of_equation_8():
    for n in NS:
        for p in range(1, MAX_P + 1):
            assert is_adaptable(p, n) == brute_force_adaptable(p, n), (p, n)


def test_adaptability_table_of_the_design_note():
    not_adaptable = {n: [p for p in range(1, MAX_P + 1) if not is_adaptable(p, n)] for n in NS}
    assert not_adaptable[3] == [85, 86, 87, 89, 90, 91, 101, 102, 103, 105, 106, 107]
    assert not_adaptable[2][:4] == [40, 41, 64, 65] and len(not_adaptable[2]) == 33
    assert not_adaptable[1][:4] == [13, 21, 25, 26] and len(not_adaptable[1]) == 64
    assert not_adaptable[4] == not_adaptable[5] == not_adaptable[6] == []


# ---- n = "auto" and errors -------------------------------------------------------

def test_auto_picks_the_smallest_usable_n():
    for p in range(1, MAX_P + 1):
        want = next(n for n in range(1, p + 2) if brute_force_adaptable(p, n))
        assert nway_dissemination(p, n="auto").params["n"] == want
    assert nway_dissemination(13, n="auto").params == {"n": 2}


def test_unadaptable_pair_error_names_usable_n():
    with pytest.raises(ScheduleError) as err:
        nway_dissemination(13, n=1)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("nway_dissemination: n=1 cannot be adapted for p=13")
    assert "usable near it: n=2" in message
    with pytest.raises(ScheduleError, match=r"n=3 cannot be adapted for p=85 .*usable near it: n=2, n=4"):
        nway_dissemination(85, n=3)
    with pytest.raises(ScheduleError):
        adaptation(85, 3)


@pytest.mark.parametrize("make, bad, match", [
    (nway_dissemination, dict(n=0), r"n=0, expected a positive integer or 'auto'"),
    (nway_dissemination, dict(n="two"), r"n='two', expected"),
    (nway_dissemination_unadapted, dict(n="auto"), r"n='auto', expected a positive integer"),
    (dissemination, dict(n=True), r"n=True"),
    (nway_dissemination, dict(count=0), r"count=0"),
])
def test_bad_input(make, bad, match):
    with pytest.raises(SpecError, match=match):
        make(8, **bad)


def test_doctests():
    assert doctest.testmod(module).failed == 0


# ---- closed forms at large P, array view only ---------------------------------------

@settings(max_examples=40, deadline=None)
@given(p=st.integers(min_value=1, max_value=4096), n=st.integers(min_value=1, max_value=6))
def test_array_view_closed_forms(p, n):
    if not is_adaptable(p, n):
        with pytest.raises(ScheduleError, match="cannot be adapted"):
            nway_dissemination(p, n=n)
        n = nway_dissemination(p, n="auto").params["n"]
    m = 24
    sched = nway_dissemination(p, n=n, count=3, itemsize=8)
    rep = report(sched)
    k = rounds_needed(p, n)
    assert rep.rounds == k
    assert rep.all_ranks_active_every_round
    per_rank = [len(rnd) // p for rnd in sched.rounds()]
    assert all(len(rnd) == p * c for rnd, c in zip(sched.rounds(), per_rank))
    if k:
        assert per_rank[:-1] == [n] * (k - 1) and 1 <= per_rank[-1] <= n
    assert rep.messages == p * sum(per_rank) and rep.bytes_total == m * rep.messages
    for rnd in sched.rounds():
        assert (np.bincount(rnd.dst, minlength=p) == len(rnd) // p).all()
        assert (rnd.src != rnd.dst).all()
    unadapted = report(nway_dissemination_unadapted(p, n=n, count=3))
    assert unadapted.rounds == k and unadapted.all_ranks_active_every_round
    # eq. (1) peers p + i(n+1)^(l-1) mod P, each distinct non-self peer once
    distinct = sum(len({i * (n + 1) ** (l - 1) % p for i in range(1, n + 1)} - {0}) for l in range(1, k + 1))
    assert unadapted.messages == p * distinct
