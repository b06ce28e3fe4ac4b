"""End, Yahyapour, Simmendinger & Alrutz, "Butterfly-like Algorithms for
GASPI Split Phase Allreduce", IJASM 9(3–4), 2016 (seed
``butterfly-allreduce-gaspi.txt``).

What the paper states as numbers: the communication rounds of each algorithm
(§III-D: pairwise exchange ⌊log2 P⌋ + 2 — log2 P for a power of two —, the
adapted n-way dissemination and Bruck's algorithm ⌈log_{n+1} P⌉, the binomial
spanning tree 2⌈log2 P⌉ for reduce + broadcast), and Table I, the partial
results of the 2-way dissemination on 9 ranks after each round. topocoll's
schedules are generated and counted (``schedules.report``) and replayed by the
symbolic verifier, whose per-round memories give Table I's partial results.
"""

from __future__ import annotations

import math

from .common import Claim, Result, Row, Timer

NAME = "butterfly"
TITLE = "Butterfly-like allreduce algorithms (End, Yahyapour, Simmendinger & Alrutz 2016)"
PAPER = ("V. End, R. Yahyapour, C. Simmendinger, T. Alrutz, \"Butterfly-like Algorithms for GASPI Split Phase "
         "Allreduce\", IJASM 9(3–4), 2016 — seed `butterfly-allreduce-gaspi.txt`")

PS_QUICK = [8, 9, 24, 100]
PS_FULL = [5, 8, 9, 13, 24, 27, 64, 100, 243, 1000]


def _log_ceil(p: int, base: int) -> int:
    """⌈log_base p⌉ in integers."""
    k, reach = 0, 1
    while reach < p:
        reach *= base
        k += 1
    return k


def expected_rounds(algorithm: str, p: int, n: int = 1) -> int:
    """The paper's round counts (§III-D, §I)."""
    if algorithm == "pairwise_exchange":
        return int(math.log2(p)) if p & (p - 1) == 0 else int(math.floor(math.log2(p))) + 2
    if algorithm in ("nway_dissemination", "bruck"):
        return _log_ceil(p, n + 1)
    if algorithm == "binomial":
        return 2 * _log_ceil(p, 2)
    raise ValueError(algorithm)


def _contributions(seq) -> set[int]:
    return {x for lo, hi in seq for x in range(lo, hi)}


def table1(p: int = 9, n: int = 2) -> list[list[set[int]]]:
    """Contributions held in ``data`` by every rank after each round of the
    adapted ``n``-way dissemination on ``p`` ranks (the verifier's memories)."""
    from ..schedules import generate
    from ..verify import verify
    sched = generate("allreduce", "nway_dissemination", p, n=n)
    rounds: list[list[set[int]]] = []

    def on_round_end(rnd, memories):
        rounds.append([_contributions(mem[("data", 0)].seq) for mem in memories])

    verify(sched, on_round_end=on_round_end)
    return rounds


def run(out, *, quick: bool, progress=lambda what: None) -> Result:
    from ..errors import TopocollError
    from ..schedules import generate, report
    clock = Timer()
    res = Result(NAME, TITLE, PAPER, "schedules generated and counted (`schedules.report`), replayed by the "
                                     "symbolic verifier (no timing model)", quick=quick)
    cases = [("pairwise_exchange", {}), ("nway_dissemination", {"n": 1}), ("nway_dissemination", {"n": 2}),
             ("bruck", {"n": 1}), ("bruck", {"n": 3}), ("binomial", {})]
    measured: dict[tuple[str, int], int] = {}    # (algorithm shown, P) → rounds the schedule has
    for p in (PS_QUICK if quick else PS_FULL):
        for algorithm, params in cases:
            try:
                sched = generate("allreduce", algorithm, p, **params)
            except TopocollError:
                continue      # n-way dissemination is not adaptable for every (n, P): the paper says so (§III-D)
            got = report(sched).rounds
            want = expected_rounds(algorithm, p, params.get("n", 1))
            shown = algorithm + (f" n={params['n']}" if params else "")
            measured[(shown, p)] = got
            res.rows.append(Row(f"{shown}, P={p}: communication rounds", "§III-D" if algorithm != "binomial"
                                else "§I (reduce + broadcast)", want, got, "rounds", got == want))
        progress(f"rounds P={p}")
    rounds = table1()
    p = 9
    first = [rounds[0][r] == {(r - j) % p for j in range(3)} for r in range(p)]
    full = [rounds[1][r] == set(range(p)) for r in range(p)]
    res.rows.append(Row("2-way dissemination, P=9: ranks holding S¹_r = x_r ∘ x_{r−1} ∘ x_{r−2} after round 1",
                        "Table I", 9, sum(first), "ranks", all(first)))
    res.rows.append(Row("2-way dissemination, P=9: ranks holding all of x_0..x_8 after round 2", "Table I", 9,
                        sum(full), "ranks", all(full)))
    progress("Table I")
    # the claim compares the schedules' own round counts, P by P (not the formulas)
    pairs = [(shown, p, got, measured[("pairwise_exchange", p)]) for (shown, p), got in measured.items()
             if shown.startswith(("nway", "bruck")) and ("pairwise_exchange", p) in measured]
    # the pairwise exchange's two extra rounds exist only where P is not a power of two; at a power of two the
    # claim is "never more"
    worse = [f"{shown} at P={p} ({got} against {pe})" for shown, p, got, pe in pairs
             if got > pe or (got == pe and p & (p - 1))]
    res.claims.append(Claim(
        "the adapted n-way dissemination and Bruck's algorithm need fewer rounds (⌈log_{n+1} P⌉) than the pairwise "
        "exchange (⌊log2 P⌋ + 2 where P is not a power of two)", "§III-D",
        bool(pairs) and not worse,
        f"Model: the generated schedules' round counts, compared P by P on {len(pairs)} (algorithm, P) pairs: "
        + (f"not fewer for {'; '.join(worse)}." if worse else
           "fewer at every P that is not a power of two, never more at a power of two.")))
    refused = {"nway_dissemination": [], "bruck": []}
    for p in (PS_QUICK if quick else PS_FULL) + [13]:
        for n in (1, 2, 3):
            for algorithm in refused:
                try:
                    generate("allreduce", algorithm, p, n=n)
                except TopocollError:
                    refused[algorithm].append((n, p))
    res.claims.append(Claim(
        "n-way dissemination cannot be adapted for every (n, P), Bruck's algorithm can", "§III-D",
        bool(refused["nway_dissemination"]) and not refused["bruck"],
        f"Model: of n = 1, 2, 3 on the P tried and 13, the adapted n-way dissemination refuses "
        f"{', '.join(f'n={n} P={p}' for n, p in refused['nway_dissemination']) or 'none'} (one line naming the "
        f"usable n), Bruck's algorithm refuses {len(refused['bruck'])}."))
    res.not_done.append("Figs. 7–14 (times of 1 int and 255 doubles against process count on QDR and FDR10 "
                        "clusters with GPI-2): measured times of a split-phase runtime, whose overheads the seeds do "
                        "not give; `topocoll bench allreduce` measures topocoll's own plans on this machine instead")
    res.seconds = clock()
    return res
