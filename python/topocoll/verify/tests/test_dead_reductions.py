"""Dead reductions are reported as warnings, and the adapted n-way
dissemination performs none (issue 8 §3)."""

import pytest

from topocoll.errors import VerificationError
from topocoll.schedules.dissemination import Circulant, adaptations, adapted_schedule, circulant_schedule
from topocoll.schedules.ir import RIGHT, OperatorNeeds, Schedule, ScheduleBuilder
from topocoll.verify import VerifyReport, VerifyWarning, verify, verify_report


def reduce_with(extra):
    """Rank 1 sends x1 to rank 0, which reduces it into data; ``extra(b)``
    adds more ops to rank 0 after that."""
    b = ScheduleBuilder(2)
    b.send(1, 0, (0,), round=0)
    b.recv(0, 1, (0,), buf="tmp", round=0)
    b.reduce(0, (0,), src="tmp", side=RIGHT, round=0)
    extra(b)
    return Schedule.from_ops("reduce", b.build(), root=0, needs=OperatorNeeds(commutative=True))


def test_clean_schedule_has_no_warnings():
    sched = reduce_with(lambda b: None)
    assert verify_report(sched) == VerifyReport("sum", ())
    found = []
    assert verify(sched, warnings=found) == "sum" and found == []


def test_reduction_into_scratch_never_read_is_a_warning_not_an_error():
    sched = reduce_with(lambda b: b.reduce(0, (0,), src="data", dst="tmp", side=RIGHT, round=0))
    assert verify(sched) == "sum"            # still correct: verify() keeps passing
    found = []
    assert verify(sched, warnings=found) == "sum"
    assert [(w.kind, w.rank, w.index) for w in found] == [("dead reduction", 0, 2)]
    assert isinstance(found[0], VerifyWarning)
    assert str(found[0]) == ("reduce/custom(p=2): rank 0 op 2 (reduce data[0] into tmp, side right): dead reduction, "
                             "its result in tmp[0] never reaches an output (overwritten or never read)")


def test_overwritten_result_is_dead_and_so_is_what_only_fed_it():
    def extra(b):
        b.reduce(0, (0,), src="data", dst="tmp", side=RIGHT, round=1)   # op 2: only feeds op 3
        b.reduce(0, (0,), src="data", dst="tmp", side=RIGHT, round=1)   # op 3: overwritten by op 4
        b.copy(0, (0,), dst="tmp", src="data", round=1)
        b.reduce(0, (0,), src="tmp", side=RIGHT, round=1)               # op 5: x0∘x1∘x0∘x1 (max)
    sched = reduce_with(extra)
    report = verify_report(sched, op="max")
    assert [(w.rank, w.index) for w in report.warnings] == [(0, 2), (0, 3)]
    with pytest.raises(VerificationError, match="counts contribution"):
        verify_report(sched, op="sum")


def test_reduction_sent_to_a_rank_that_drops_it_is_dead():
    b = ScheduleBuilder(3)
    b.send(2, 1, (0,), round=0)
    b.recv(1, 2, (0,), buf="tmp", round=0)
    b.copy(1, (0,), dst="acc", src="data", round=0)
    b.reduce(1, (0,), src="tmp", side=RIGHT, dst="acc", round=0)        # acc = x1∘x2: sent, then dropped
    b.send(1, 0, (0,), buf="acc", round=1)
    b.recv(0, 1, (0,), buf="junk", round=1)
    for src in (1, 2):
        b.send(src, 0, (0,), round=2)
        b.recv(0, src, (0,), buf=f"t{src}", round=2)
        b.reduce(0, (0,), src=f"t{src}", side=RIGHT, round=2)
    sched = Schedule.from_ops("reduce", b.build(), root=0, needs=OperatorNeeds(commutative=True))
    assert [(w.rank, w.index) for w in verify_report(sched, op="sum").warnings] == [(1, 2)]


# ---- the adapted n-way dissemination (End et al. 2016 §III-B, Theorem 1) ----------

def circulant_dead_reductions(rank0_ops, p):
    """Rank 0's reductions whose result never reaches ``data``, for a
    circulant schedule on one block (rank r runs rank 0's ops with every
    peer moved by +r mod p). By that symmetry, rank 0's receive from ``q``
    with tag ``t`` carries what rank 0 itself sends to ``-q`` with tag ``t``
    (in channel order), so one rank's ops decide it: the verifier's
    liveness at the cost of one rank, for the sweep over every (n, P)."""
    cur, sent, made, sources = {}, {}, [], []
    n_sends, n_recvs = {}, {}
    for idx, op in enumerate(rank0_ops):
        if op.kind == "send":
            k = n_sends[(op.peer, op.tag)] = n_sends.get((op.peer, op.tag), -1) + 1
            sent[(op.peer, op.tag, k)] = [cur.get((op.buf, b)) for b in op.blocks]
        elif op.kind == "recv":
            k = n_recvs[(op.peer, op.tag)] = n_recvs.get((op.peer, op.tag), -1) + 1
            for i, b in enumerate(op.into):
                cur[(op.buf, b)] = ((-op.peer) % p, op.tag, k, i)
        elif op.kind == "reduce":
            for b in op.blocks:
                sources.append((cur.get((op.src, b)), cur.get((op.dst, b))))
                cur[(op.dst, b)] = len(made)
                made.append(idx)
        else:
            moved = [cur.get((op.src, b)) for b in op.src_blocks]
            for b, v in zip(op.blocks, moved):
                cur[(op.dst, b)] = v

    def resolve(value):
        while isinstance(value, tuple):          # a received value: what the sender held
            value = sent[value[:3]][value[3]]
        return value

    live = [False] * len(made)
    stack = [resolve(cur.get(("data", 0)))]
    while stack:
        v = stack.pop()
        if v is not None and not live[v]:
            live[v] = True
            stack.extend(resolve(s) for s in sources[v])
    return sorted({made[v] for v in range(len(made)) if not live[v]})


def _with_dead_reduction(p, n):
    """The n-way dissemination barrier pattern plus one reduction into a
    buffer nothing reads (a known dead reduction)."""
    c = Circulant()
    dist = 1
    for t in range(2):
        for j in range(1, n + 1):
            c.send(t, j * dist)
        for j in range(1, n + 1):
            c.recv(t, j * dist, f"r{j}")
        for j in range(1, n + 1):
            c.reduce(t, dst="data", src=f"r{j}")
        dist *= n + 1
    c.reduce(1, dst="r1", src="data")
    return circulant_schedule("allreduce", "dead", p, 1, 8, {"n": n},
                              OperatorNeeds(commutative=True, idempotent=True), c)


def test_one_rank_liveness_agrees_with_the_verifier():
    # a known dead reduction: both find it, on every rank
    for p, n in ((4, 1), (9, 2)):
        sched = _with_dead_reduction(p, n)
        warned = verify_report(sched, op="max").warnings
        dead0 = circulant_dead_reductions(sched.ops_for(0), p)
        assert dead0 == [len(sched.ops_for(0)) - 1]
        assert sorted((w.rank, w.index) for w in warned) == [(r, dead0[0]) for r in range(p)]
    # every adaption of Theorem 1 (not only the cheapest) at small P
    for p in range(2, 14):
        for n in range(1, p):
            for a in adaptations(p, n):
                sched = adapted_schedule(a)
                report = verify_report(sched, op="sum")
                assert report.warnings == (), report.warnings[0]
                assert circulant_dead_reductions(sched.ops_for(0), p) == []


def test_issue_example_p11_n1_has_no_dead_reduction():
    # issue 8: rank 0 op 10 reduced a piece into data that the take-out then overwrote
    sched = adapted_schedule(adaptations(11, 1)[0])
    assert verify_report(sched, op="sum") == VerifyReport("sum", ())


def _check_adaptable_up_to(p_max: int) -> int:
    """Every adaptable (n, P ≤ p_max) schedule is free of dead reductions;
    returns how many were checked."""
    checked = 0
    for p in range(2, p_max + 1):
        for n in range(1, p):
            found = adaptations(p, n)
            if not found:
                continue
            sched = adapted_schedule(found[0])         # what nway_dissemination(p, n=n) builds
            assert circulant_dead_reductions(sched.ops_for(0), p) == [], f"P={p}, n={n}: {found[0].describe()}"
            checked += 1
    return checked


def test_no_adaptable_n_and_p_up_to_64_has_a_dead_reduction():
    assert _check_adaptable_up_to(64) > 1000


@pytest.mark.exhaustive
def test_no_adaptable_n_and_p_up_to_130_has_a_dead_reduction():
    assert _check_adaptable_up_to(130) == 8276    # every adaptable (n, P), n = 1 .. P-1
