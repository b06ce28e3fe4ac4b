"""Verification of schedules: symbolic proof and a serial reference executor."""

from .reference import execute, serial_reference
from .symbolic import OPERATORS, VerifyReport, VerifyWarning, verify, verify_report
from .testing import affine, affine_inputs, check_against_reference, integer_inputs

__all__ = [
    "verify", "verify_report", "VerifyReport", "VerifyWarning", "execute", "serial_reference", "OPERATORS",
    "affine", "affine_inputs", "integer_inputs", "check_against_reference",
]
