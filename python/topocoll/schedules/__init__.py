"""Collective algorithms as explicit schedules (see :mod:`.ir`)."""

from .ir import LEFT, RIGHT, Copy, OperatorNeeds, Recv, Reduce, RoundArrays, Schedule, ScheduleBuilder, Send
from .metrics import report
from .registry import catalogue, generate, lookup, mpi_schedule

__all__ = [
    "Schedule", "ScheduleBuilder", "Send", "Recv", "Reduce", "Copy", "RoundArrays", "OperatorNeeds",
    "LEFT", "RIGHT", "report", "catalogue", "generate", "lookup", "mpi_schedule",
]
