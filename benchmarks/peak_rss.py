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
