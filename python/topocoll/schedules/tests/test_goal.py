"""GOAL (LogGOPSim's text format): schedules round-trip through it column for
column, the text stays within what LogGOPSim's txt2bin accepts, foreign GOAL
(irequires, cpu/nic, comments, labels out of order) reads as documented, the
simulator runs what it reads, and every malformed input is one line naming
file:line, the bad text and what was expected."""

import re

import numpy as np
import pytest

from topocoll.errors import ParseError, ScheduleError, SpecError
from topocoll.schedules import generate
from topocoll.schedules.goal import GoalProgram, read_goal, to_goal, write_goal
from topocoll.schedules.program import COPY, RECV, REDUCE, SEND, concatenate

CASES = [("allreduce", "ring", 5), ("allreduce", "pairwise_exchange", 8), ("allreduce", "rabenseifner", 6),
         ("alltoall", "bruck", 6), ("bcast", "binomial", 7), ("reduce_scatter", "radix_k", 12),
         ("barrier", "dissemination", 5)]


def _schedule(collective, algorithm, p):
    if collective == "barrier":
        return generate(collective, algorithm, p)
    return generate(collective, algorithm, p, count=4 * p, itemsize=8)


def _by_rank(schedule):
    """The schedule's program reordered by rank (then id), dependencies renumbered."""
    ch = concatenate(list(schedule.program()))
    order = np.argsort(ch.rank, kind="stable")
    new_id = np.empty_like(order)
    new_id[order] = np.arange(len(order))
    cols = {k: np.asarray(getattr(ch, k))[order] for k in ("rank", "kind", "peer", "tag", "nbytes")}
    deps = [new_id[ch.dep_idx[ch.dep_ptr[i]:ch.dep_ptr[i + 1]]].tolist() for i in order]
    return cols, deps


def _deps(g):
    return [g.dep_idx[g.dep_ptr[i]:g.dep_ptr[i + 1]].tolist() for i in range(len(g))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_round_trip_gives_the_schedules_program(case):
    sched = _schedule(*case)
    g = read_goal(to_goal(sched))
    cols, deps = _by_rank(sched)
    assert g.p == sched.p
    for name, col in cols.items():
        assert np.array_equal(getattr(g, name), col), name
    assert _deps(g) == deps
    (chunk,) = list(g.program())
    assert chunk.round == 0 and chunk.first_id == 0 and len(chunk) == len(g)
    assert np.array_equal(chunk.run_ptr, np.zeros(len(g) + 1)) and chunk.run_dst.size == 0
    assert (chunk.buf == -1).all() and (chunk.side == -1).all()
    # A second trip writes the same text, but for the title line.
    assert to_goal(g).splitlines()[1:] == to_goal(sched).splitlines()[1:]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_written_text_is_what_loggopsim_txt2bin_reads(case):
    """One statement per line from txt2bin's grammar, labels defined before a
    ``requires`` names them, and comments only on lines of their own."""
    text = to_goal(_schedule(*case))
    grammar = [r"num_ranks \d+", r"rank \d+ \{", r"\}", r"l\d+: send \d+b to \d+ tag \d+",
               r"l\d+: recv \d+b from \d+ tag \d+", r"l\d+: calc \d+", r"(l\d+) requires (l\d+)", r"//.*", r""]
    defined = set()
    for line in text.splitlines():
        assert any(re.fullmatch(g, line) for g in grammar), line
        if line.startswith("rank "):
            defined = set()
        m = re.match(r"(l\d+):", line)
        if m:
            defined.add(m.group(1))
        m = re.fullmatch(r"(l\d+) requires (l\d+)", line)
        if m:
            assert {m.group(1), m.group(2)} <= defined, line
    assert text.splitlines()[1].startswith("num_ranks ")


def test_copies_and_reductions_become_calc_at_the_given_cost():
    sched = generate("alltoall", "bruck", 6, count=24, itemsize=8)
    text = to_goal(sched, reduce_cost_per_byte=2.5)
    cols, _ = _by_rank(sched)
    local = np.isin(cols["kind"], (REDUCE, COPY))
    calcs = [int(v) for v in re.findall(r": calc (\d+)", text)]
    assert calcs == np.rint(cols["nbytes"][local] * 2.5).astype(int).tolist()
    assert np.array_equal(read_goal(text).kind, cols["kind"])        # the comments restore the ops
    plain = read_goal("\n".join(line for line in text.splitlines() if not line.startswith("//")))
    assert (plain.kind[local] == REDUCE).all()                        # without them: calc N = reduce of N bytes
    assert plain.nbytes[local].tolist() == calcs


def test_foreign_goal_reads_as_documented(tmp_path):
    text = """/* written by hand, Schedgen style */
num_ranks 3
// rank 0 sends twice, after a computation it needs first
rank 0 {
  l2: send 16b to 1 tag 4 cpu 0 nic 1
  l2 requires l1
  l3: send 16b to 2
  l3 irequires l1
  l1: calc 250 cpu 0
}
rank 1 {
l1: recv 16b from 0 tag 4 nic 0
recv 0b from 2 tag 9
}

rank 2 { l1: recv 16b from 0
l2: send 0b to 1 tag 9
l2 requires l1
}
"""
    path = tmp_path / "hand.goal"
    path.write_text(text)
    g = read_goal(path)
    assert g.p == 3 and g.label() == "goal:hand.goal(p=3)"
    # rank 0: l1 (the calc) moves first, then l2 and l3 in file order.
    assert g.rank.tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert g.kind.tolist() == [REDUCE, SEND, SEND, RECV, RECV, RECV, SEND]
    assert g.peer.tolist() == [-1, 1, 2, 0, 2, 0, 1]
    assert g.tag.tolist() == [-1, 4, 0, 4, 9, 0, 9]                   # tag defaults to 0
    assert g.nbytes.tolist() == [250, 16, 16, 16, 0, 16, 0]
    assert _deps(g) == [[], [0], [0], [], [], [], [5]]                # irequires read as requires
    assert read_goal(str(path)).rank.tolist() == g.rank.tolist()      # a path given as str


def test_the_simulator_runs_what_it_reads():
    from topocoll.sim.engine import EngineOptions, simulate

    for case in [("allreduce", "ring", 5), ("alltoall", "bruck", 6), ("reduce_scatter", "radix_k", 12)]:
        sched = _schedule(*case)
        g = read_goal(to_goal(sched))
        for options in (EngineOptions(), EngineOptions(eager=0)):
            assert simulate(g, options=options).time == pytest.approx(simulate(sched, options=options).time,
                                                                       rel=1e-12)
    traced = simulate(g, trace=True).trace
    assert np.array_equal(traced["rank"], g.rank) and (traced["round"] == 0).all()


def test_write_goal(tmp_path):
    sched = generate("bcast", "binomial", 4, count=8, itemsize=8)
    path = write_goal(sched, tmp_path / "b.goal")
    assert path.read_text() == to_goal(sched)
    assert isinstance(read_goal(path), GoalProgram)


GOOD_HEAD = "num_ranks 2\nrank 0 {\n"

ERRORS = [
    # (text, line, regex for the rest of the message)
    (GOOD_HEAD + "l1: send 8b to 1\nl1 requires l7\n}\n", 4,
     r"'l1 requires l7' names l7, which rank 0 does not define, expected a label of rank 0"),
    (GOOD_HEAD + "l1: calc 5\nl2: calc 5\nl1 requires l2\nl2 requires l1\n}\n", 5,
     r"'l1 requires l2' closes a cycle in rank 0: l\d requires l\d requires l\d, expected dependencies "
     r"without a cycle"),
    (GOOD_HEAD + "l1: calc 5\nl1 requires l1\n}\n", 4, r"closes a cycle in rank 0: l1 requires l1"),
    (GOOD_HEAD + "l1: send 8b to 2 tag 0\n}\n", 3, r"'l1: send 8b to 2 tag 0', expected a rank in 0\.\.1 "
                                                 r"\(num_ranks 2\)"),
    (GOOD_HEAD + "l1: send 8b to -1\n}\n", 3, r"expected a rank in 0\.\.1"),
    ("rank 0 {\nl1: calc 1\n}\n", 1, r"'rank 0 \{' comes before num_ranks, expected 'num_ranks N' before the "
                                     r"first rank block"),
    ("// nothing here\n", None, r"no 'num_ranks N' line, expected one before the rank blocks"),
    (GOOD_HEAD + "l1: calc 1\n", 2, r"'rank 0 \{' is never closed, expected '\}' to close rank 0"),
    (GOOD_HEAD + "l1: calc 1\n}\n}\n", 5, r"'\}' closes no rank block, expected 'rank N \{' before it"),
    (GOOD_HEAD + "l1: calc 1\nrank 1 {\n}\n}\n", 4, r"opens a rank block inside another, expected '\}' to "
                                                    r"close rank 0 \(line 2\) first"),
    (GOOD_HEAD + "l1: send 8 to 1\n}\n", 3, r"'l1: send 8 to 1', expected 'send Nb to RANK'"),
    (GOOD_HEAD + "l1: recv 8b from -1\n}\n", 3, r"receives from any source \(-1\), expected a rank in 0\.\.1"),
    (GOOD_HEAD + "l1: recv 8b from 1 tag -1\n}\n", 3, r"receives any tag \(-1\), expected a tag >= 0"),
    (GOOD_HEAD + "l1: put 8b to 1\n}\n", 3, r"'put' in 'l1: put 8b to 1', expected send, recv or calc"),
    (GOOD_HEAD + "l1: send 8b to 1 tag 0 color 3\n}\n", 3, r"'color' in .*, expected 'cpu N' or 'nic N' or "
                                                           r"the line end"),
    (GOOD_HEAD + "l1: calc 1\nl1: calc 2\n}\n", 4, r"redefines l1, expected a label new to rank 0"),
    (GOOD_HEAD + "}\nrank 0 {\n}\n", 4, r"repeats rank 0 \(line 2\), expected one block per rank"),
    ("num_ranks 2\nrank 2 {\n}\n", 2, r"'rank 2 \{', expected a rank in 0\.\.1 \(num_ranks 2\)"),
    ("num_ranks 2\nl1: calc 1\n", 2, r"is outside any rank block, expected 'rank N \{' before operations"),
    ("num_ranks 0\n", 1, r"expected num_ranks >= 1"),
    (GOOD_HEAD + "l1: calc 1 /* open\n}\n", 3, r"has an unterminated /\*, expected '\*/' to close the comment"),
    (GOOD_HEAD + "l1: calc 1 $\n}\n", 3, r"'\$' in 'l1: calc 1 \$', expected a statement"),
    (GOOD_HEAD + "l1 requires\n}\n", 3, r"'l1 requires', expected 'LABEL requires LABEL'"),
    (GOOD_HEAD + "// topocoll l9 copy 8b\nl1: calc 8\n}\n", 3, r"annotates no calc, expected a calc label"),
]


@pytest.mark.parametrize("text, line, message", ERRORS, ids=[f"e{i}" for i in range(len(ERRORS))])
def test_bad_goal_is_one_line_naming_where_what_and_what_was_expected(text, line, message):
    with pytest.raises(ParseError) as info:
        read_goal(text)
    msg = str(info.value)
    assert "\n" not in msg
    where = "<string>:" + (f"{line}: " if line is not None else " ")
    assert msg.startswith(where), msg
    assert re.search(message, msg), msg
    assert isinstance(info.value, ValueError)


def test_errors_in_a_file_name_the_file(tmp_path):
    path = tmp_path / "bad.goal"
    path.write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 5\n}\n")
    with pytest.raises(ParseError, match=rf"^{re.escape(str(path))}:3: 'l1: send 8b to 5', expected a rank"):
        read_goal(path)
    with pytest.raises(SpecError, match=r"^read_goal: 'missing\.goal' names no file, expected a GOAL file or "
                                        r"GOAL text$"):
        read_goal("missing.goal")


def test_to_goal_rejects_what_goal_cannot_say():
    sched = generate("allreduce", "ring", 3, count=6, itemsize=8)
    with pytest.raises(SpecError, match=r"^to_goal: reduce_cost_per_byte=-1, expected a finite number >= 0$"):
        to_goal(sched, reduce_cost_per_byte=-1)
    # A dependency across ranks (no GOAL `requires` can say it).
    g = GoalProgram(2, [0, 1], [REDUCE, REDUCE], [-1, -1], [-1, -1], [4, 4], [0, 0, 1], [0])
    with pytest.raises(ScheduleError, match=r"^to_goal: op 1 of rank 1 depends on op 0 of rank 0, expected "
                                            r"dependencies within a rank"):
        to_goal(g)
