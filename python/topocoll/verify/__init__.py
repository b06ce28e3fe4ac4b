"""Verification of schedules: symbolic proof and a serial reference executor."""

from .reference import execute, serial_reference
from .symbolic import OPERATORS, verify

__all__ = ["verify", "execute", "serial_reference", "OPERATORS"]
