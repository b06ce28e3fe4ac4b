"""Peak resident memory of *this* process, for the benchmarks' child processes.

``getrusage(RUSAGE_SELF).ru_maxrss`` survives ``execve`` on Linux, so a child
started by a large parent would report the parent's peak; ``VmHWM`` belongs
to the process image and starts afresh at ``exec``.
"""


def peak_rss() -> int:
    """Bytes: the high-water mark of this process's resident set."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


# prepended to the code the benchmarks run in fresh interpreters
CHILD_PRELUDE = f"import sys; sys.path.insert(0, {__file__.rsplit('/', 1)[0]!r}); from peak_rss import peak_rss\n"


def run_child(code: str, args, *, timeout_s: int, memory_bytes: int) -> tuple[dict | None, str | None]:
    """Run ``CHILD_PRELUDE + code`` with ``argv[1] = json(args)`` in a fresh
    interpreter, capped in address space and time; return the JSON it printed
    last, or why there is none (one line)."""
    import json
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    try:
        proc = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + code, json.dumps(args)],
                              capture_output=True, text=True, timeout=timeout_s, preexec_fn=limit,
                              cwd=Path(__file__).resolve().parent.parent)
    except subprocess.TimeoutExpired:
        return None, f"over {timeout_s} s"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        if proc.returncode < 0:
            return None, f"killed by signal {-proc.returncode} {last}".strip()
        return None, last or f"exit {proc.returncode}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None
