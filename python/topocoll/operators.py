"""Reduction operators by name, with the properties an algorithm may need of them.

One table for every consumer: the symbolic verifier proves a schedule for an
operator's properties, the reference executor and the MPI layer apply the
operator's NumPy ufunc, and the MPI layer refuses an algorithm whose
:class:`~topocoll.schedules.ir.OperatorNeeds` the operator does not meet.
The properties are MPI's (MPI-4.1 §6.9.2): every predefined operator is
associative and commutative; ``max``, ``min``, the bitwise and logical
``and`` / ``or`` are also idempotent (``x ∘ x = x``), so an algorithm that
lets a contribution arrive twice (``butterfly_virtual``, the unadapted n-way
dissemination) is correct for them only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True, slots=True)
class NamedOperator:
    """A predefined operator: its ufunc and its algebra."""

    name: str
    ufunc: Callable
    commutative: bool
    idempotent: bool


#: the predefined operators, by the names topocoll uses (MPI's in :data:`MPI_NAMES`)
NAMED: dict[str, NamedOperator] = {op.name: op for op in (
    NamedOperator("sum", np.add, True, False),
    NamedOperator("prod", np.multiply, True, False),
    NamedOperator("max", np.maximum, True, True),
    NamedOperator("min", np.minimum, True, True),
    NamedOperator("band", np.bitwise_and, True, True),
    NamedOperator("bor", np.bitwise_or, True, True),
    NamedOperator("xor", np.bitwise_xor, True, False),
    NamedOperator("land", np.logical_and, True, True),
    NamedOperator("lor", np.logical_or, True, True),
    NamedOperator("lxor", np.logical_xor, True, False),
)}

#: MPI's predefined operators (mpi4py's attribute names) -> topocoll's names
MPI_NAMES = {"SUM": "sum", "PROD": "prod", "MAX": "max", "MIN": "min", "BAND": "band", "BOR": "bor",
             "BXOR": "xor", "LAND": "land", "LOR": "lor", "LXOR": "lxor"}

#: MPI's predefined operators topocoll cannot apply, and why
MPI_UNSUPPORTED = {"MAXLOC": "it needs (value, index) pair types", "MINLOC": "it needs (value, index) pair types",
                   "REPLACE": "it is for one-sided accumulates only", "NO_OP": "it is for one-sided accumulates only"}


def properties_text(commutative: bool, idempotent: bool) -> str:
    """``"commutative, idempotent"``, ``"commutative, not idempotent"``, ..."""
    return f"{'commutative' if commutative else 'not commutative'}, {'idempotent' if idempotent else 'not idempotent'}"

