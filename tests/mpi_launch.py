"""Starting ``python -m topocoll.mpi.check`` under the mpich wheel's
``mpiexec``, for every test file that runs real MPI jobs (``conftest.py``
puts this folder on ``sys.path``: pytest's importlib mode does not)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


def mpirun(n, *args, timeout=120):
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "topocoll.mpi.check", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
