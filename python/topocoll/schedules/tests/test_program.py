"""The op program contract (docs/ir.md) for every generator of the catalogue.

Each generator has one pattern; its op program (vectorised where the pattern
is circulant) must equal the program derived column by column from every
rank's operations, satisfy the contract's invariants, and rebuild those
operations exactly. At large P the circulant programs are checked against
``ops_for(rank)`` for sampled ranks without building every rank's ops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from topocoll.schedules import catalogue, generate
from topocoll.schedules.pattern import CirculantPattern
from topocoll.schedules.program import RECV, SEND, concatenate, ops_from_chunk_rows
from topocoll.verify.testing import assert_views_equal

CASES = [(info, params) for info in catalogue().values() for params in info.sweep]
SMALL_P = (1, 2, 3, 5, 8, 12)


def case_id(case) -> str:
    info, params = case
    shown = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{info.collective}/{info.name}" + (f"[{shown}]" if shown else "")


def count_for(info, p: int) -> int:
    """Uneven blocks wherever the collective allows them, so that a size slip
    between blocks shows (all-to-all blocks are equal by definition)."""
    return 3 * p if info.collective == "alltoall" else 3 * p + 1


def schedules(info, params, ps=SMALL_P):
    for p in ps:
        if info.supports(p, params):
            yield generate(info.collective, info.name, p, count=count_for(info, p), **params)


def check_contract(schedule) -> None:
    """The invariants docs/ir.md promises, on the whole program."""
    chunks = list(schedule.program())
    nxt = 0
    for chunk in chunks:   # dense ids, round-major
        assert chunk.first_id == nxt, f"{schedule.label()} round {chunk.round}: ids not dense"
        nxt += len(chunk)
    assert [c.round for c in chunks] == sorted({c.round for c in chunks}), "rounds not increasing"
    prog = concatenate(chunks)
    ids = prog.ids
    owner = np.repeat(ids, np.diff(prog.dep_ptr))
    assert (prog.dep_idx < owner).all(), f"{schedule.label()}: a dependency points forward"
    assert (prog.rank[prog.dep_idx] == prog.rank[owner]).all(), f"{schedule.label()}: a dependency crosses ranks"
    prefix = np.concatenate(([0], np.cumsum(schedule.block_bytes)))
    for row in range(len(prog)):
        runs = prog.runs_of(row)
        assert prog.nbytes[row] == sum(prefix[d + n] - prefix[d] for d, _, n in runs)
        assert all(0 <= d and d + n <= schedule.nblocks for d, _, n in runs)
    # every channel has as many receives as sends, each matched pair of equal size
    send, recv = prog.kind == SEND, prog.kind == RECV
    sends = sorted(zip(prog.rank[send], prog.peer[send], prog.tag[send], ids[send]))
    recvs = sorted(zip(prog.peer[recv], prog.rank[recv], prog.tag[recv], ids[recv]))
    assert [s[:3] for s in sends] == [r[:3] for r in recvs], f"{schedule.label()}: unmatched channel"
    for s, r in zip(sends, recvs):
        assert prog.nbytes[s[3]] == prog.nbytes[r[3]], f"{schedule.label()}: message size differs"


def rebuilt_ops(schedule) -> list[list]:
    """Per-rank ops rebuilt from the program, dependencies back to local indices."""
    out = [[] for _ in range(schedule.p)]
    local = {}
    buffers = schedule.program().buffers
    for chunk in schedule.program():
        for rank, gid, op in ops_from_chunk_rows(chunk, buffers):
            local[gid] = len(out[rank])
            out[rank].append(op)
    return [[type(op)(**{**{f: getattr(op, f) for f in op.__dataclass_fields__},
                         "deps": tuple(local[d] for d in op.deps)}) for op in rank_ops] for rank_ops in out]


def normalised(ops):
    """Op lists with block lists as tuples (``range`` and tuple compare unequal)."""
    def norm(op):
        fields = {f: getattr(op, f) for f in op.__dataclass_fields__}
        return type(op)(**{k: tuple(v) if isinstance(v, range) else v for k, v in fields.items()})
    return [[norm(op) for op in rank_ops] for rank_ops in ops]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_program_is_the_ops_view(case):
    info, params = case
    tried = 0
    for sched in schedules(*case):
        assert_views_equal(sched)
        check_contract(sched)
        assert rebuilt_ops(sched) == normalised(sched.ops), f"{sched.label()}: program does not rebuild the ops"
        tried += 1
    assert tried, f"{case_id(case)} supports none of P = {SMALL_P}"


def test_round_summary_counts_the_programs_sends_and_reductions():
    sched = generate("allreduce", "ring", 5, count=11)
    for chunk, rnd in zip(sched.program(), sched.rounds()):
        assert len(rnd) == int((chunk.kind == SEND).sum())
        assert rnd.reduced_per_rank(5).sum() == chunk.nbytes[chunk.kind == 2].sum()


# ---- large P: circulant programs against one rank's ops --------------------

def _circulant(case) -> bool:
    info, params = case
    p = next(p for p in range(8, 300) if info.supports(p, params))
    return isinstance(generate(info.collective, info.name, p, **params).pattern, CirculantPattern)


CIRCULANT = [c for c in CASES if _circulant(c)]
MAX_OPS = 200_000   # per example: the first chunks only, for P² patterns
# Bruck's all-to-all sends P/2 scattered blocks per rank and round: as strided
# runs its chunks hold one run per op, so it is drawn from the full range too
MAX_P: dict = {}


def supported_ps(info, params, lo, hi, cap=64):
    """Up to ``cap`` supported P in ``[lo, hi]``, spread over the range."""
    out, p = [], lo
    while p <= hi and len(out) < cap:
        if info.supports(p, params):
            out.append(p)
        p = p + 1 if p < 2 * lo else int(p * 1.37) + 1
    return out


@pytest.mark.parametrize("case", CIRCULANT, ids=[case_id(c) for c in CIRCULANT])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_circulant_program_matches_ops_for_at_large_p(case, data):
    info, params = case
    ps = supported_ps(info, params, 200, MAX_P.get((info.collective, info.name), 2**16))
    assert ps, f"{case_id(case)}: no supported P in 200..2^16"
    p = data.draw(st.sampled_from(ps), label="p")
    rank = data.draw(st.integers(0, p - 1), label="rank")
    sched = generate(info.collective, info.name, p, **params)
    mine, local, budget = [], {}, MAX_OPS
    buffers = sched.program().buffers
    last_round = None
    for chunk in sched.program():
        for _, gid, op in ops_from_chunk_rows(chunk, buffers, np.flatnonzero(chunk.rank == rank)):
            local[gid] = len(mine)
            mine.append(type(op)(**{**{f: getattr(op, f) for f in op.__dataclass_fields__},
                                    "deps": tuple(local[d] for d in op.deps)}))
        last_round = chunk.round
        budget -= len(chunk)
        if budget <= 0:
            break
    want = [op for op in sched.ops_for(rank) if op.round <= last_round]
    assert mine == normalised([want])[0], f"{sched.label()} rank {rank}: program rows differ from ops_for"


def test_nway_program_at_65536_streams_without_per_op_objects():
    """The whole program of nway_dissemination at P = 2^16 as arrays: every
    op is a row, dependencies exact (rank 0's, tiled)."""
    sched = generate("allreduce", "nway_dissemination", 2**16, n=1)
    total = sum(len(c) for c in sched.program())
    per_rank = len(sched.ops_for(12345))
    assert total == per_rank * 2**16


# ---- the data flow itself, against a per-block oracle ----------------------

def naive_deps(rank_ops) -> list[tuple[int, ...]]:
    """Data-flow dependencies recomputed block by block (the IR v1 builder):
    last writer of every block read; last writer and readers since, of every
    block written."""
    writer, readers, out = {}, {}, []
    for idx, op in enumerate(rank_ops):
        if op.kind == "send":
            reads, writes = [(op.buf, b) for b in op.blocks], []
        elif op.kind == "recv":
            reads, writes = [], [(op.buf, b) for b in op.into]
        elif op.kind == "reduce":
            reads = [(op.src, b) for b in op.blocks] + [(op.dst, b) for b in op.blocks]
            writes = [(op.dst, b) for b in op.blocks]
        else:
            reads, writes = [(op.src, b) for b in op.src_blocks], [(op.dst, b) for b in op.blocks]
        deps = {writer[k] for k in reads + writes if k in writer}
        for k in writes:
            deps.update(readers.get(k, ()))
        out.append(tuple(sorted(deps)))
        for k in reads:
            readers.setdefault(k, []).append(idx)
        for k in writes:
            writer[k], readers[k] = idx, []
    return out


# generators that add control dependencies on purpose: shift-based compositing
# runs its rounds in lockstep (shift-based-compositing-fat-tree §3); synthesized schedules declare port
# chains (a port's transfers in the planned order: synth/schedule.py)
LOCKSTEP = {"shift_based", "synthesized"}


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_dependencies_are_exactly_the_data_flow(case):
    """Every generator's dependencies equal the per-block data flow: none
    missing (a race) and none extra (lost overlap) — beyond the declared
    control dependencies of lockstep algorithms."""
    for sched in schedules(*case, ps=(3, 8, 13)):
        for rank, rank_ops in enumerate(sched.ops):
            for idx, (op, want) in enumerate(zip(rank_ops, naive_deps(rank_ops))):
                where = f"{sched.label()} rank {rank} op {idx}"
                assert set(want) <= set(op.deps), f"{where}: misses data dependencies {set(want) - set(op.deps)}"
                if sched.algorithm not in LOCKSTEP:
                    assert op.deps == want, f"{where}: dependencies {op.deps}, data flow gives {want}"


# ---- strided block runs (issue 18 item 3) ------------------------------------

def expand_runs(runs, nblocks):
    """The block lists a strided-run list stands for, piece by piece."""
    dst, src = [], []
    for d, s, n, count, sd, ss in runs:
        for c in range(count):
            dst += [(d + c * sd + i) % nblocks for i in range(n)]
            src += [(s + c * ss + i) % nblocks for i in range(n)]
    return dst, src


@settings(max_examples=60, deadline=None)
@given(nb=st.integers(1, 12), data=st.data())
def test_strided_runs_stand_for_their_blocks_and_move_with_a_circulant_shift(nb, data):
    """strided_runs loses no block, and (the property the circulant program
    relies on) the runs of lists moved by a constant modulo nblocks are the
    runs of the original lists, moved; canonical_runs (vectorised over rows)
    agrees with it row by row."""
    from topocoll.schedules.program import canonical_runs, strided_runs
    length = data.draw(st.integers(0, 3 * nb))
    dst = data.draw(st.lists(st.integers(0, nb - 1), min_size=length, max_size=length))
    src = data.draw(st.lists(st.integers(0, nb - 1), min_size=length, max_size=length))
    runs = strided_runs(dst, src, nb)
    assert expand_runs(runs, nb) == (dst, src)
    assert all(0 <= r[0] < nb and 0 <= r[1] < nb and r[2] >= 1 and r[3] >= 1 for r in runs)
    a, b = data.draw(st.integers(0, nb - 1)), data.draw(st.integers(0, nb - 1))
    moved = strided_runs([(x + a) % nb for x in dst], [(x + b) % nb for x in src], nb)
    assert moved == [((d + a) % nb, (s + b) % nb, n, c, sd, ss) for d, s, n, c, sd, ss in runs]
    if length:
        rows = np.array([dst, [(x + a) % nb for x in dst]]), np.array([src, [(x + b) % nb for x in src]])
        counts, cols = canonical_runs(rows[0], rows[1], np.ones_like(rows[0]), nb)
        flat = list(zip(*(c.tolist() for c in cols)))
        assert counts.tolist() == [len(runs), len(moved)]
        assert flat == [tuple(r) for r in runs + moved]


def test_run_bytes_of_strided_runs_over_uneven_blocks():
    """Bytes of strided runs over MPI-style uneven blocks equal the block sizes
    summed one by one (wrap past the last block included)."""
    from topocoll.schedules.program import run_bytes, strided_runs
    sizes = np.array([9, 9, 9, 8, 8, 8, 8], dtype=np.int64)   # count = 59 over 7 blocks
    lists = [((6, 0, 1), (2, 3, 4)), ((1, 3, 5), (1, 3, 5)), ((5, 6, 2, 3, 6, 0), (0, 1, 2, 3, 4, 5)), ((), ())]
    runs = [strided_runs(d, s, 7) for d, s in lists]
    flat = np.array([r for rs in runs for r in rs], dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum([len(r) for r in runs])))
    got = run_bytes(sizes, ptr, flat[:, 0], flat[:, 2], flat[:, 3], flat[:, 4])
    assert got.tolist() == [int(sizes[list(d)].sum()) for d, _ in lists] == [26, 25, 50, 0]


def test_bruck_alltoall_streams_at_20480_ranks():
    """BENCHMARKS.md had Bruck's all-to-all at P = 20,480 a MemoryError in its
    first round (P²/2 single-block runs). With strided runs every op is one
    run: 15 rounds, P·47 ops; each send of round x carries the positions
    j < P whose bit x is set (counted here independently), and rank 12,345's
    rows rebuild its ops_for."""
    p = 20480
    sched = generate("alltoall", "bruck", p, k=1, count=p, itemsize=1)
    ops = runs = 0
    rounds = []
    mine, local = [], {}
    buffers = sched.program().buffers
    for chunk in sched.program():
        ops += len(chunk)
        runs += len(chunk.run_len)
        rounds.append(chunk.round)
        sends = chunk.kind == SEND
        x = chunk.round
        want = sum(1 for j in range(1, p) if (j >> x) & 1)
        assert (chunk.nbytes[sends] == want).all(), f"round {x}: send sizes"
        for _, gid, op in ops_from_chunk_rows(chunk, buffers, np.flatnonzero(chunk.rank == 12345)):
            local[gid] = len(mine)
            mine.append(type(op)(**{**{f: getattr(op, f) for f in op.__dataclass_fields__},
                                    "deps": tuple(local[d] for d in op.deps)}))
    assert rounds == list(range(15)) and ops == runs == 47 * p
    assert mine == normalised([sched.ops_for(12345)])[0]
