"""Tuning files from a decision table, and matchers that read them back as the library does.

Three targets, each from one :class:`~.tuner.DecisionTable`:

``openmpi``
    Open MPI's ``coll_tuned`` dynamic rules, classic format version 2
    (``rule-file-version-2``, 5 columns: ``msg_size alg faninout seg_size
    max_requests``; Open MPI ≥ 5.0.7), read with
    ``--mca coll_tuned_use_dynamic_rules 1 --mca
    coll_tuned_dynamic_rules_filename FILE``. Collective ids of
    ``coll_base_functions.h`` (allgather 0, allreduce 2, alltoall 3, bcast 7,
    reduce_scatter 12). A communicator of P ranks takes the block with the
    largest size key ≤ P, a call of ``m`` bytes the last rule with
    ``msg_size ≤ m`` (``ompi_coll_tuned_get_com_rule_ptr``,
    ``ompi_coll_tuned_get_target_method_params``); ``m`` is ``dsize·count``,
    times P for alltoall and allgather. Algorithm 0 falls back to the fixed
    rules. Open MPI cannot test commutativity: a table tuned for a
    commutative operator may name ring or Rabenseifner, which the file's
    header comment says.
``mpich``
    MPICH's ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``: the MPIR default
    tree of MPICH 5.0.2 (``data/mpich-5.0.2-mpir-default.json``, read from
    its ``libmpi.so.12``) with the tuned collectives' subtrees replaced, so
    that every collective keeps a subtree. Guards: ``is_commutative=no``
    first (the default's non-commutative choice) when the table was tuned
    for a commutative operator, ``is_op_built_in``/``count<pow2`` around
    ``reduce_scatter_allgather``, ``comm_size=pow2`` around algorithms that
    need a power of two; every list ends in ``=any``; ``comm_size<=N``
    only.
``topocoll``
    The table ``algorithm="auto"`` of :mod:`topocoll.mpi` reads
    (:func:`topocoll.mpi.api.load_tuning`): ``{collective: [row, ...]}``,
    the first row whose ``min_p``/``max_p``/``max_bytes``/``commutative``
    hold wins; ``order`` is informational (the launcher places ranks).

Only algorithms a library has can be written: at each grid point the file
names the fastest evaluated candidate that has an equivalent in that library
(:func:`library_pick`); where the overall winner has none, the table says
which it names instead and what that costs.
"""

from __future__ import annotations

import json
import os  # noqa: F401 - emit.os is the os module the tests patch (os.replace of write_atomic)
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import ParseError, SpecError
from ..outputs import check_output, write_text
from .libdefaults import check_library, mpich_default, openmpi_default
from ..text import human_bytes
from .tuner import Choice, DecisionTable, GridPoint, PBlock

#: Open MPI collective ids (``COLLTYPE`` of ``ompi/mca/coll/base/coll_base_functions.h``)
OMPI_IDS = {"allgather": 0, "allreduce": 2, "alltoall": 3, "bcast": 7, "reduce_scatter": 12}
#: emit targets
TARGETS = ("openmpi", "mpich", "topocoll")
#: the registry's name of schedules made for one network (:mod:`topocoll.schedules.synthesized`): only
#: topocoll's executor runs them
SYNTHESIZED = "synthesized"

__all__ = ["OMPI_IDS", "SYNTHESIZED", "TARGETS", "LibraryPick", "synthesized_skips", "emit", "library_pick", "match_mpich", "match_openmpi",
           "mpich_json", "openmpi_rules", "topocoll_json", "topocoll_pick", "write_atomic"]


@dataclass(frozen=True)
class LibraryPick:
    """What a tuning file names at one grid point.

    ``algorithm`` is the library's name (Open MPI: its number in ``number``),
    ``params`` the parameters the file carries, ``choice`` the topocoll
    candidate it stands for (None: nothing modelled has an equivalent, the
    library's default is kept), ``loss`` its time over the tuned best (1.0:
    the tuned choice itself).
    """

    algorithm: str
    number: int | None
    params: dict
    choice: Choice | None
    loss: float | None


def _is_pof2(p: int) -> bool:
    return p & (p - 1) == 0


def openmpi_equivalent(collective: str, choice: Choice, p: int, params: dict,
                       commutative: bool = True) -> tuple[int, dict] | None:
    """Open MPI 5.0.x's algorithm number (and ``faninout``/``segsize``/``max_requests``) for a topocoll
    choice. For a non-commutative operator only what Open MPI runs as written: its ring and
    Rabenseifner allreduce and every reduce_scatter but the non-overlapping one need a commutative
    operator (Rabenseifner switches to the basic linear allreduce without one)."""
    name = choice.algorithm
    if not commutative and (collective == "reduce_scatter" or (collective, name) in
                            (("allreduce", "ring"), ("allreduce", "rabenseifner"))):
        return None
    table = {
        "allreduce": {"pairwise_exchange": 3 if params.get("leftover", "neighbours") == "neighbours" else None,
                      "ring": 4, "rabenseifner": 6},
        "alltoall": {"shift": 2, "bruck": 3 if params.get("k", 1) == 1 else None},
        "allgather": {"ring": 4},
        "bcast": {"binomial": 6 if params.get("root", 0) == 0 else None},
        "reduce_scatter": {"ring": 3, "binary_swap": 2 if _is_pof2(p) else None},
    }
    number = table.get(collective, {}).get(name)
    return None if number is None else (number, {"faninout": 0, "segsize": 0, "max_requests": 0})


def mpich_equivalent(collective: str, choice: Choice, p: int, params: dict, commutative: bool, *,
                     count: int = 1 << 62) -> tuple[str, dict] | None:
    """MPICH 5.0.2's algorithm name and JSON parameters for a topocoll choice (``count``: elements
    of the vector, for reduce_scatter_allgather's restriction ``count >= pof2``; a non-commutative
    operator is a user-defined one, which that algorithm does not take)."""
    name = choice.algorithm
    if collective == "allreduce":
        if name == "pairwise_exchange" and params.get("leftover", "neighbours") == "neighbours":
            return "MPIR_Allreduce_intra_recursive_doubling", {}
        if name == "rabenseifner" and commutative and count >= 1 << (p.bit_length() - 1):
            return "MPIR_Allreduce_intra_reduce_scatter_allgather", {}
        if name == "ring" and commutative:
            return "MPIR_Allreduce_intra_ring", {}
    elif collective == "alltoall":
        if name == "bruck":
            return "MPIR_Alltoall_intra_k_brucks", {"k": int(params.get("k", 1)) + 1}
        if (name == "shift" and not _is_pof2(p)) or (name == "pairwise_exchange" and _is_pof2(p)):
            return "MPIR_Alltoall_intra_pairwise", {}
    elif collective == "allgather":
        if name == "ring":
            return "MPIR_Allgather_intra_ring", {}
    elif collective == "bcast":
        if name == "binomial" and params.get("root", 0) == 0:
            return "MPIR_Bcast_intra_binomial", {}
    elif collective == "reduce_scatter":
        if name == "shift_based" and commutative:
            return "MPIR_Reduce_scatter_intra_pairwise", {}
        if name == "binary_swap" and _is_pof2(p):
            return ("MPIR_Reduce_scatter_intra_recursive_halving" if commutative
                    else "MPIR_Reduce_scatter_intra_noncommutative"), {}
    return None


def library_pick(table: DecisionTable, point: GridPoint, library: str) -> LibraryPick:
    """The fastest evaluated candidate at ``point`` that ``library`` has (its default if none)."""
    from ..schedules.registry import lookup
    library = check_library(library)
    best = point.best.time
    for choice in point.choices:
        if choice.order != point.best.order and choice.order != "-":
            continue          # a tuning file cannot place ranks: compare in the winner's order
        params = {**lookup(point.collective, choice.algorithm).params, **choice.params}
        if library == "openmpi-5.0":
            found = openmpi_equivalent(point.collective, choice, point.p, params, table.commutative)
            if found is not None:
                from .libdefaults import OMPI_NAMES
                return LibraryPick(OMPI_NAMES[point.collective][found[0]], found[0], found[1], choice,
                                   choice.time / best if best > 0 else None)
        else:
            found = mpich_equivalent(point.collective, choice, point.p, params, table.commutative,
                                     count=point.size // table.itemsize)
            if found is not None:
                return LibraryPick(found[0], None, found[1], choice, choice.time / best if best > 0 else None)
    if library == "openmpi-5.0":
        return LibraryPick("fixed rules", 0, {"faninout": 0, "segsize": 0, "max_requests": 0}, None, None)
    default = mpich_default(point.collective, point.p, point.size, commutative=table.commutative,
                            itemsize=table.itemsize)
    return LibraryPick(default.algorithm, None, dict(default.params) if "k" in default.params else {}, None, None)


def synthesized_skips(table: DecisionTable, library: str) -> list[str]:
    """One line per grid point whose tuned winner is a synthesized schedule, which ``library`` cannot
    run (only topocoll's executor reads schedule files): what the library's file names there instead
    (the next fixed algorithm it has, :func:`library_pick`) and at what cost by the model."""
    out = []
    for (coll, p, size), pt in table.points.items():
        if pt.best.algorithm != SYNTHESIZED:
            continue
        pick = library_pick(table, pt, library)
        cost = f", {pick.loss:.2f}× the synthesized time" if pick.loss is not None else ""
        out.append(f"{coll} P={p} {human_bytes(size)}: the tuned {pt.best.label()} skipped ({library} cannot run a "
                   f"synthesized schedule): {pick.algorithm} written instead"
                   + (f" (← {pick.choice.label()}{cost})" if pick.choice is not None else " (its default)"))
    return out


# ---- Open MPI ------------------------------------------------------------------------------

def _ompi_size(collective: str, size: int, p: int) -> int:
    """The message size Open MPI's dynamic rules compare: ``dsize·count``, times P for alltoall and allgather."""
    return size * p if collective in ("alltoall", "allgather") else size


def openmpi_rules(table: DecisionTable) -> str:
    """The dynamic-rules file (classic format, version 2) for Open MPI 5.0.x."""
    lines = ["rule-file-version-2",
             f"# topocoll tune: {table.model} model, {table.platform}",
             "# load: " + how_to_load("openmpi", "THIS_FILE"),
             f"# tuned for a {'commutative' if table.commutative else 'non-commutative'} operator"
             + ("; Open MPI cannot test commutativity: use this file only if every reduction operator of "
                "the application is commutative" if table.commutative else ""),
             *[f"# {line}" for line in synthesized_skips(table, "openmpi-5.0")],
             f"{len(table.collectives)}                # collectives in this file"]
    for coll in table.collectives:
        blocks = table.rules(coll, pick=lambda pt: _PickChoice(library_pick(table, pt, "openmpi-5.0")))
        lines.append(f"{OMPI_IDS[coll]}                # collective {coll}")
        lines.append(f"{len(blocks)}                # communicator-size blocks")
        for block in blocks:
            lines.append(f"{block.lo}                # communicator size >= {block.lo} (tuned at P={block.p})")
            rules = []
            for rule in block.rules:
                pick = rule.choice.pick
                lo = _ompi_size(coll, rule.lo, block.p)
                if rules and rules[-1][0] == lo:
                    rules.pop()
                rules.append((lo, pick))
            lines.append(f"{len(rules)}                # message-size rules")
            for lo, pick in rules:
                what = pick.algorithm + (f" ← {pick.choice.label()}" if pick.choice is not None else "")
                lines.append(f"{lo} {pick.number} {pick.params['faninout']} {pick.params['segsize']} "
                             f"{pick.params['max_requests']}    # {what}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _PickChoice:
    """A library pick dressed as a Choice for :meth:`DecisionTable.rules` (merging equal neighbours)."""

    pick: LibraryPick

    def key(self):
        return self.pick.algorithm, json.dumps(self.pick.params, sort_keys=True)

    def label(self):
        return self.pick.algorithm

    @property
    def algorithm(self):
        return self.pick.algorithm


def _ompi_tokens(text: str, where: str) -> list[int]:
    tokens = []
    lines = text.splitlines()
    start = 1 if lines and lines[0].strip().startswith("rule-file-version") else 0
    for lineno, line in enumerate(lines[start:], start + 1):
        body = line.split("#", 1)[0]
        for word in body.split():
            if not re.fullmatch(r"-?[1-9][0-9]*|0", word):
                raise ParseError(f"{where}:{lineno}: {word!r} is not a decimal integer, expected the rule file's "
                                 "numbers (no leading zeros)")
            tokens.append(int(word))
    return tokens


def parse_openmpi_rules(text: str, where: str = "rules") -> dict:
    """``{collective id: [(comm size, [(msg size, alg, faninout, segsize, max_requests)])]}``."""
    version2 = text.lstrip().startswith("rule-file-version-2")
    tokens = _ompi_tokens(text, where)
    pos = [0]

    def take():
        if pos[0] >= len(tokens):
            raise ParseError(f"{where}: the file ends early, expected more numbers")
        pos[0] += 1
        return tokens[pos[0] - 1]

    rules = {}
    for _ in range(take()):
        coll = take()
        blocks = []
        for _ in range(take()):
            comm = take()
            msgs = []
            for _ in range(take()):
                msgs.append((take(), take(), take(), take(), take() if version2 else 0))
            blocks.append((comm, msgs))
        rules[coll] = blocks
    return rules


def match_openmpi(text: str, collective: str, p: int, size: int, *, commutative: bool = True) -> int:
    """The algorithm number Open MPI 5.0.x runs for this call with the rules file ``text``
    loaded (0 in the file: the fixed rules' number)."""
    rules = parse_openmpi_rules(text)
    blocks = rules.get(OMPI_IDS[collective])
    number = 0
    if blocks:
        chosen = None
        for comm, msgs in blocks:
            if comm > p:
                break
            chosen = msgs
        if chosen:
            m = _ompi_size(collective, size, p)
            best = chosen[0]
            for rule in chosen:
                if rule[0] <= m:
                    best = rule
                else:
                    break
            number = best[1]
    if number == 0:
        return openmpi_default(collective, p, size, commutative=commutative).number
    return number


# ---- MPICH ---------------------------------------------------------------------------------

def mpich_default_tree() -> dict:
    """MPICH 5.0.2's MPIR default selection tree (read from its ``libmpi.so.12``)."""
    text = resources.files("topocoll.tune").joinpath("data/mpich-5.0.2-mpir-default.json").read_text()
    return json.loads(text)


def _mpich_algorithm_node(collective: str, name: str, params: dict, p_range: tuple[int, int | None]) -> dict:
    node = {f"algorithm={name}": {f"{k}={v}": {} for k, v in params.items()}}
    if name == "MPIR_Allreduce_intra_reduce_scatter_allgather":
        rd = {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
        return {"is_op_built_in=yes": {"count<pow2": rd, "count=any": node}, "is_op_built_in=no": rd}
    if name in ("MPIR_Reduce_scatter_intra_noncommutative", "MPIR_Reduce_scatter_intra_recursive_halving"):
        fallback = ("MPIR_Reduce_scatter_intra_recursive_doubling" if name.endswith("noncommutative")
                    else "MPIR_Reduce_scatter_intra_pairwise")
        return {"comm_size=pow2": node, "comm_size=any": {f"algorithm={fallback}": {}}}
    return node


def mpich_json(table: DecisionTable) -> dict:
    """The selection JSON for MPICH 5.0.x (the default tree, tuned collectives replaced)."""
    tree = mpich_default_tree()
    for coll in table.collectives:
        key = f"collective={coll}"
        default = tree.get(key, {})
        intra: dict = {}
        if table.commutative and coll in ("allreduce", "reduce_scatter"):
            noncomm = default.get("comm_type=intra", {}).get("is_commutative=no")
            intra["is_commutative=no"] = noncomm or {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
        blocks = table.rules(coll, pick=lambda pt: _PickChoice(library_pick(table, pt, "mpich-5.0")))
        for i, block in enumerate(blocks):
            sizes: dict = {}
            measure = "total_msg_size" if coll in ("allgather", "reduce_scatter") else "avg_msg_size"
            scale = block.p if coll == "allgather" else 1
            for j, rule in enumerate(block.rules):
                pick = rule.choice.pick
                node = _mpich_algorithm_node(coll, pick.algorithm, pick.params, (block.lo, block.hi))
                cond = f"{measure}<={rule.hi * scale}" if j + 1 < len(block.rules) else f"{measure}=any"
                sizes[cond] = node
            cond = f"comm_size<={block.hi}" if i + 1 < len(blocks) else "comm_size=any"
            intra[cond] = sizes
        new = {"comm_type=intra": intra}
        if "comm_type=inter" in default:
            new["comm_type=inter"] = default["comm_type=inter"]
        tree[key] = new
    return tree


#: operators csel.c's prune_tree decides when the communicator is made (with ``collective=``,
#: which MPIR_Csel_prune steps over; ``is_multi_threaded`` is left to the search on purpose)
_PRUNED_KEYS = ("collective=", "comm_type=", "comm_size", "comm_hierarchy=", "is_node_consecutive=",
                "comm_avg_ppn")


def match_mpich(tree: dict, collective: str, p: int, size: int, *, commutative: bool = True,
                builtin_op: bool | None = None, itemsize: int = 8) -> tuple[str, dict]:
    """The algorithm (and its parameters) MPICH 5.0.2 selects from ``tree`` for this call,
    evaluated as ``csel.c`` does (intra-communicator, no node hierarchy, not in place,
    regular blocks).

    ``comm_size<N`` has two meanings in 5.0.2: ``MPIR_Csel_prune`` decides the communicator's
    operators when the communicator is made, walking from the collective's root through
    communicator operators (``comm_type``, ``comm_size``, ``comm_hierarchy``, ``*=any``) and
    stopping at the first other one, and there ``comm_size<N`` is ``P < N``; a ``comm_size``
    node met after that is decided per call by the search, which evaluates ``<`` as ``<=``.
    Measured with the ``mpich`` wheel (``tests/test_tune_libraries.py``,
    ``test_mpich_comm_size_prune_and_search``): ``comm_size<4`` under ``comm_type=intra``
    fails at P = 4; under ``avg_msg_size<=1000000`` it holds at P = 4."""
    builtin = commutative if builtin_op is None else builtin_op
    count = size // itemsize
    pof2 = 1 << (p.bit_length() - 1)
    avg = size
    total = size * p if collective in ("allgather", "alltoall", "allreduce", "bcast") else size

    def holds(key: str) -> bool:
        name, op, value = re.fullmatch(r"([a-z_]+)(<=|<|=)(.*)", key).groups()
        if value == "any":
            return True
        if name == "collective":
            return value == collective
        if name == "comm_type":
            return value == "intra"
        if name == "comm_size":
            if value == "pow2":
                return _is_pof2(p)
            if value == "node_comm_size":
                return False
            return p < int(value) if op == "<" and pruning else p <= int(value)
        if name in ("avg_msg_size", "total_msg_size", "count"):
            x = {"avg_msg_size": avg, "total_msg_size": total, "count": count}[name]
            if value == "pow2":
                return x < pof2
            return x <= int(value) if op == "<=" else x < int(value)
        flags = {"is_commutative": commutative, "is_op_built_in": builtin, "is_sendbuf_inplace": False,
                 "is_block_regular": True, "is_multi_threaded": False, "is_node_consecutive": True,
                 "comm_hierarchy": None}
        if name == "comm_hierarchy":
            return False                     # 'parent' only: no node hierarchy emulated
        if name in flags:
            return flags[name] == (value == "yes")
        raise ParseError(f"MPICH selection JSON: unknown key {key!r}")

    node = tree
    pruning = True          # still on the path MPIR_Csel_prune decides (see the docstring)
    for _ in range(64):
        for key, child in node.items():
            if key.startswith(("algorithm=", "composition=")):
                return key.split("=", 1)[1], {k.split("=", 1)[0]: k.split("=", 1)[1] for k in child}
            if not key.startswith(_PRUNED_KEYS) and not key.endswith("=any"):
                pruning = False
            if holds(key):
                node = child
                break
        else:
            raise ParseError(f"MPICH selection JSON: no branch holds for {collective} P={p} size={size}")
    raise ParseError("MPICH selection JSON: deeper than 64 levels")


# ---- topocoll ------------------------------------------------------------------------------

def topocoll_pick(table: DecisionTable, point: GridPoint, *, synthesized: bool = True) -> Choice:
    """The fastest candidate ``algorithm="auto"`` will accept: :func:`topocoll.mpi.api.choose`
    checks the registry's needs (for any P) where the tuner checked the schedule's own (exact
    at this P), e.g. butterfly_virtual needs idempotence only where P is not a power of two.
    ``synthesized=False``: the fastest fixed one (for the P a synthesized schedule was not made for)."""
    from ..schedules.registry import lookup, operator_allows
    for choice in point.choices:
        if choice.order != point.best.order or (not synthesized and choice.algorithm == SYNTHESIZED):
            continue
        info = lookup(point.collective, choice.algorithm)
        reduction = point.collective in ("allreduce", "reduce_scatter")
        if operator_allows(info.needs, commutative=table.commutative or not reduction,
                           idempotent=table.idempotent or not reduction) \
                and info.supports(point.p, {**info.sweep[0], **choice.params}):
            return choice
    return point.best


def _own_p_blocks(table: DecisionTable, collective: str) -> list:
    """The blocks of the ``algorithm="auto"`` table: a block whose rules name a synthesized schedule
    (made for its grid P and network only) split into that P alone and the P around it, where the
    fastest fixed algorithm at that grid P rules."""
    out = []
    for block in table.rules(collective, pick=lambda pt: topocoll_pick(table, pt)):
        if block.lo == block.hi or not any(r.choice.algorithm == SYNTHESIZED for r in block.rules):
            out.append(block)
            continue
        fixed = table.size_rules(collective, block.p, lambda pt: topocoll_pick(table, pt, synthesized=False))
        if block.lo < block.p:
            out.append(PBlock(block.lo, block.p - 1, block.p, fixed))
        out.append(PBlock(block.p, block.p, block.p, block.rules))
        if block.hi is None or block.hi > block.p:
            out.append(PBlock(block.p + 1, block.hi, block.p, fixed))
    return out


def topocoll_json(table: DecisionTable) -> dict:
    """The tuning table of ``algorithm="auto"`` (:func:`topocoll.mpi.api.load_tuning`); a synthesized
    winner is named by its file with ``min_p = max_p`` = the P it was made for (:func:`_own_p_blocks`)."""
    out: dict = {}
    for coll in table.collectives:
        rows = []
        for block in _own_p_blocks(table, coll):
            for rule in block.rules:
                row = {"algorithm": rule.choice.algorithm}
                if rule.choice.params:
                    row["params"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in rule.choice.params.items()}
                if block.lo > 1 or block.hi == block.lo:
                    row["min_p"] = block.lo
                if block.hi is not None:
                    row["max_p"] = block.hi
                if rule.hi is not None:
                    row["max_bytes"] = rule.hi
                if table.commutative and coll in ("allreduce", "reduce_scatter"):
                    row["commutative"] = True
                if rule.choice.order != "-":
                    row["order"] = rule.choice.order
                rows.append(row)
        out[coll] = rows
    return out


# ---- writing -------------------------------------------------------------------------------

def write_atomic(path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file renamed into place (:mod:`topocoll.outputs`):
    a failure leaves no partial file. A directory that does not exist or cannot be written is a one-line
    SpecError."""
    check_output("output", path)
    return write_text(path, text)


def how_to_load(target: str, path: str) -> str:
    """The exact environment and ``mpirun`` options that make the library read a written file for
    the user's own communicator, with why each is needed (one line per target)."""
    if target == "openmpi":
        return (f"mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename {path} "
                "--mca coll ^han ...   (Open MPI 5.0: coll/han, priority 35 above tuned's 30, takes a "
                "communicator that spans nodes and leaves tuned only its sub-communicators; '^han' lets "
                "the rules decide the user's communicator)")
    if target == "mpich":
        return (f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={path} MPIR_CVAR_DEVICE_COLLECTIVES=none "
                "mpiexec ...   (MPICH 5.0: without the second variable the ch4 device runs its own "
                "selection first and ignores the file for communicators it handles, e.g. every "
                "allreduce on one node)")
    if target == "topocoll":
        return (f"topocoll.mpi.load_tuning('{path}') then algorithm='auto'   (topocoll's executor; no "
                "library setting involved)")
    raise SpecError(f"emit: target {target!r}, expected one of {', '.join(TARGETS)}")


def emit(table: DecisionTable, target: str) -> str:
    """The text of one tuning file: ``openmpi``, ``mpich`` or ``topocoll``."""
    if target == "openmpi":
        return openmpi_rules(table)
    if target == "mpich":
        return json.dumps(mpich_json(table), indent=1) + "\n"
    if target == "topocoll":
        return json.dumps(topocoll_json(table), indent=1) + "\n"
    raise SpecError(f"emit: target {target!r}, expected one of {', '.join(TARGETS)}")
