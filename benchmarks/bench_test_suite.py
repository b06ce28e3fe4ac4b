"""`make test`'s pytest session: its wall time and its slowest 20 tests (issue 8).

Runs the same selection as `make test` (`pytest -m "not exhaustive"`) with
`--durations=20` and reports what pytest measured. The limit the project
keeps is 6 minutes wall for the whole `make test` on a 2-core machine.
"""

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", "pytest", "-m", "not exhaustive", "-n", "auto", "--durations=20", "-p", "no:cacheprovider"]


def run() -> str:
    start = time.perf_counter()
    proc = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    out = proc.stdout
    summary = next((line.strip("= ") for line in reversed(out.splitlines()) if " in " in line and "passed" in line),
                   "no summary line")
    slow = re.findall(r"^([\d.]+)s (?:call|setup|teardown)\s+(\S+)$", out, flags=re.M)
    rows = ["| time | test |", "|---|---|"] + [f"| {t} s | `{name}` |" for t, name in slow]
    status = "passed" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
    return ("## Test suite: `make test`'s pytest session and its slowest 20 tests (issue 8)\n\n"
            "Command: `python -m pytest -m 'not exhaustive' -n auto --durations=20 -p no:cacheprovider` (the selection `make test` runs after the build "
            "and `cargo test`); `make test-all` adds the `exhaustive` sweeps.\n\n"
            f"Wall: **{wall:.1f} s** for the pytest session ({status}: {summary}); limit for the whole "
            "`make test`: 6 minutes on 2 cores.\n\n" + "\n".join(rows) + "\n")
