"""Run every benchmark module `benchmarks/bench_*.py` and write BENCHMARKS.md.

Each module defines ``run() -> str`` returning one Markdown section (a ``##``
heading, the command that reproduces it, and a table of measured numbers).
Usage: ``python benchmarks/run.py --out BENCHMARKS.md [--only NAME ...]``.
"""

import argparse
import importlib.util
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--only", nargs="*", default=None,
                        help="module names without the bench_ prefix")
    args = parser.parse_args(argv)
    sections = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if args.only and name not in args.only:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        sections.append(module.run())
        print(f"[bench] {name} done in {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)
    header = (
        "# Benchmarks\n\n"
        "Measured by `make bench` (which runs `python benchmarks/run.py --out BENCHMARKS.md`) on "
        f"{platform.machine()} with {platform.python_implementation()} {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Each section names the command that reproduces it.\n"
    )
    Path(args.out).write_text(header + "\n" + "\n".join(sections))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
