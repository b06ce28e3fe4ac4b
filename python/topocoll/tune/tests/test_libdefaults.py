"""The MPI libraries' default choice, emulated (libdefaults.py).

Expected values come from elsewhere than the code under test: MPICH's from
its own selection JSON as compiled into libmpi.so.12 (tune/data, evaluated
by the csel.c rules of emit.match_mpich), Open MPI's from the C source
(coll_tuned_decision_fixed.c of 5.0.x) read by hand, point by point below.
The real libraries are asked in tests/test_tune_libraries.py.
"""

import pytest

from topocoll.errors import SpecError
from topocoll.schedules.registry import lookup
from topocoll.tune.emit import match_mpich, mpich_default_tree
from topocoll.tune.libdefaults import COLLECTIVES, check_library, library_default, mpich_default, \
    openmpi_default

SIZES = [8, 16, 64, 256, 264, 4096, 8192, 12288, 12296, 32768, 32776, 81920, 524288, 524296, 1 << 20, 4 << 20]


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_mpich_emulation_follows_the_librarys_own_json(collective):
    tree = mpich_default_tree()
    for p in [1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 128, 144, 512, 1000]:
        for size in SIZES:
            for commutative in (True, False):
                expected = match_mpich(tree, collective, p, size, commutative=commutative)[0]
                assert mpich_default(collective, p, size, commutative=commutative).algorithm == expected, \
                    (collective, p, size, commutative)


# (collective, P, bytes, commutative) -> Open MPI algorithm number, read from
# coll_tuned_decision_fixed.c (5.0.x) by hand; comparisons are strict '<'
OPENMPI_POINTS = [
    ("allreduce", 2, 4, True, 4), ("allreduce", 2, 8, True, 3), ("allreduce", 2, 4096, True, 4),
    ("allreduce", 2, 65536, True, 5), ("allreduce", 2, 262144, True, 6), ("allreduce", 16, 32, True, 5),
    ("allreduce", 144, 65536, True, 2), ("allreduce", 144, 131072, True, 3), ("allreduce", 144, 1 << 20, True, 6),
    ("allreduce", 5000, 8192, True, 5), ("allreduce", 2, 131072, False, 1), ("allreduce", 10, 1 << 20, False, 2),
    ("allreduce", 200, 200000, False, 3),
    ("alltoall", 2, 1, True, 2), ("alltoall", 2, 3, True, 5), ("alltoall", 2, 100000, True, 4),
    ("alltoall", 20, 100, True, 3), ("alltoall", 144, 1500, True, 4), ("alltoall", 144, 300000, True, 2),
    ("bcast", 2, 600, True, 7), ("bcast", 20, 2 << 20, True, 8), ("bcast", 144, 1, True, 6),
    ("bcast", 144, 20000, True, 1), ("bcast", 600, 20000, True, 4),
    ("reduce_scatter", 4, 4, True, 1), ("reduce_scatter", 16, 100, True, 2), ("reduce_scatter", 16, 1 << 20, True, 3),
    ("reduce_scatter", 144, 4096, True, 4), ("reduce_scatter", 144, 64, False, 1),
    ("allgather", 2, 8, True, 6), ("allgather", 16, 1 << 20, True, 3), ("allgather", 144, 100, True, 3),
    ("allgather", 144, 1000, True, 5), ("allgather", 300, 64, True, 2), ("allgather", 144, 300000, True, 4), ("allgather", 144, 600000, True, 5),
]


@pytest.mark.parametrize("collective, p, size, commutative, number", OPENMPI_POINTS)
def test_openmpi_emulation_matches_the_source(collective, p, size, commutative, number):
    assert openmpi_default(collective, p, size, commutative=commutative).number == number


@pytest.mark.parametrize("library", ["openmpi-5.0", "mpich-5.0"])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_every_modelled_choice_is_a_schedule_that_exists_and_every_other_says_why(library, collective):
    for p in [2, 3, 8, 12, 16, 144, 512]:
        for size in SIZES:
            for commutative in (True, False):
                choice = library_default(library, collective, p, size, commutative=commutative)
                assert choice.source and choice.algorithm
                if choice.schedule is None:
                    assert choice.fidelity.startswith("cannot be modelled: ")
                else:
                    info = lookup(collective, choice.schedule)
                    assert info.supports(p, choice.schedule_params), (library, collective, p, choice)
                    assert choice.fidelity.startswith(("exact", "approximate: "))


def test_library_names_and_versions():
    assert check_library("OpenMPI") == "openmpi-5.0" and check_library("mpich") == "mpich-5.0"
    for bad in ("openmpi-4.1", "mvapich", None):
        with pytest.raises(SpecError, match="expected one of openmpi-5.0, mpich-5.0"):
            check_library(bad)
    with pytest.raises(SpecError, match="collective 'barrier'"):
        library_default("mpich", "barrier", 4, 8)
    with pytest.raises(SpecError, match="P=0"):
        library_default("openmpi", "allreduce", 0, 8)
