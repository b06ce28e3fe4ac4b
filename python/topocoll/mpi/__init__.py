"""Real execution of schedules over MPI (mpi4py), and its safety net."""

from .executor import execute_mpi

__all__ = ["execute_mpi"]
