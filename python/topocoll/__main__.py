"""``python -m topocoll`` is the ``topocoll`` command (also what ``mpiexec -n N
python -m mpi4py.futures -m topocoll simulate ... --executor mpi`` runs)."""

import sys

from .entry import main

if __name__ == "__main__":
    sys.exit(main())
