"""Run every benchmark module `benchmarks/bench_*.py` and write BENCHMARKS.md.

Each module defines ``run() -> str`` returning one Markdown section (a ``##``
heading, the command that reproduces it, and a table of measured numbers).
Usage: ``python benchmarks/run.py --out BENCHMARKS.md [--only NAME ...]``;
with ``--only`` the other sections already in ``--out`` are kept as they are
(each section is preceded by a ``<!-- bench: NAME -->`` marker).
"""

import argparse
import importlib.util
import platform
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


MARK = "<!-- bench: {} -->"


def _existing_sections(path: Path) -> dict[str, str]:
    """Sections of an earlier run, by benchmark name (empty if none)."""
    if not path.exists():
        return {}
    parts = re.split(r"^<!-- bench: (\S+) -->\n", path.read_text(), flags=re.M)
    texts = parts[2::2]
    # main's "\n".join put one newline after every section but the last: take it off again, so
    # that a run with --only leaves the other sections byte for byte as they were
    texts = [t[:-1] if i < len(texts) - 1 and t.endswith("\n") else t for i, t in enumerate(texts)]
    return dict(zip(parts[1::2], texts))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--only", nargs="*", default=None,
                        help="module names without the bench_ prefix")
    args = parser.parse_args(argv)
    sections = {}
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if args.only and name not in args.only:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        sections[name] = module.run()
        print(f"[bench] {name} done in {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)
    header = (
        "# Benchmarks\n\n"
        "Measured by `make bench` (which runs `python benchmarks/run.py --out BENCHMARKS.md`) on "
        f"{platform.machine()} with {platform.python_implementation()} {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Each section names the command that reproduces it.\n"
    )
    if args.only:   # read now, not at the start: keeps what another run wrote meanwhile
        sections = {**_existing_sections(Path(args.out)), **sections}
    body = "\n".join(f"{MARK.format(name)}\n{text}" for name, text in sorted(sections.items()))
    Path(args.out).write_text(header + "\n" + body)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
