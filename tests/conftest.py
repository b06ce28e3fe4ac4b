"""Shared pytest hooks for tests/: the seed of the catalogue's P sample is
printed with every run (``make test`` samples P; ``make test-all`` runs all)."""

import os
import sys
from pathlib import Path

# helpers shared by test files (mpi_launch.py): importlib mode puts no test folder on the path
sys.path.insert(0, str(Path(__file__).resolve().parent))

SEED_VARIABLE = "TOPOCOLL_TEST_SEED"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    markexpr = config.getoption("markexpr", "")
    scope = "exhaustive sweeps left out" if "not exhaustive" in markexpr else "exhaustive sweeps included"
    terminalreporter.write_line(
        f"catalogue P sample: {SEED_VARIABLE}={os.environ.get(SEED_VARIABLE, '20240')} ({scope})")
