"""README.md is tested: every transcript in it runs and prints what it shows.

A *transcript* is a fenced code block of README.md with lines that start with
``$ `` (a shell prompt). Each ``$ `` line is a command (a line ending in ``\\``
continues on the next one); the lines after it, up to the next ``$ `` line or
the end of the block, are its output (stdout and stderr together, in the order
a terminal shows them). The commands of one block run in order, each in a
fresh ``bash -c``, from the repository root, with the venv's ``bin`` first on
``PATH`` (so ``topocoll``, ``python`` and ``mpiexec`` are the venv's); a
block is one pytest case, so pytest-xdist spreads the blocks.

Matching, line by line after stripping trailing spaces and trailing blank
lines:

* a line that is exactly ``...`` stands for any lines (none included);
* ``‹…›`` inside a line stands for one run of non-space characters. It marks a
  value that genuinely varies between runs (wall-clock measurements); model
  outputs and seeded results are deterministic and are shown in full;
* every other character must match exactly.

The exit status is checked too: 2 where the output has a ``topocoll: error:``
line, 1 where a line starts with ``FAILED `` (a refuted verification), else 0.

A comment on the line before a block's opening fence may mark it:
``<!-- readme-test: exhaustive (why) -->`` runs it only under
``pytest -m exhaustive`` (``make test-all``); ``<!-- readme-test: not checked
(why) -->`` reports it as skipped with its reason. Transcripts write files
only under ``out/`` (gitignored); every ``out/...`` path a command names is
removed before and after its block runs.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
BIN = Path(sys.executable).parent
VARIABLE = "‹…›"
ANY_LINES = "..."
COMMAND_TIMEOUT_S = 100
MARKER = re.compile(r"<!--\s*readme-test:\s*(exhaustive|not checked)\b\s*(.*?)\s*-->")
OUT_PATH = re.compile(r"(?<![\w./-])out/[\w.-]+")


@dataclass(frozen=True)
class Command:
    text: str                   # as typed after `$ `, continuation lines joined with their backslash-newline
    expected: tuple[str, ...]   # the output lines shown under it


@dataclass(frozen=True)
class Transcript:
    line: int                   # README line of the opening fence
    commands: tuple[Command, ...]
    mark: str | None            # None, "exhaustive" or "not checked"
    reason: str

    @property
    def id(self) -> str:
        shown = [c.text for c in self.commands if c.expected] or [self.commands[0].text]
        words = shown[0].split("#")[0].replace("\\\n", " ").split()
        text = " ".join(words)
        return text if len(text) <= 70 else text[:67] + "..."


def parse_transcripts(text: str) -> list[Transcript]:
    """Every fenced block of ``text`` with ``$ `` lines, with the mark of the line before it."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start, j = i, i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = lines[start + 1:j]
        i = j + 1
        if not any(line.startswith("$ ") for line in body):
            continue
        if not body[0].startswith("$ "):
            raise ValueError(f"README.md:{start + 2}: a transcript must start with a `$ ` line: {body[0]!r}")
        commands, k = [], 0
        while k < len(body):
            command = [body[k][2:]]
            while command[-1].endswith("\\") and k + 1 < len(body):
                k += 1
                command.append(body[k])
            k += 1
            output = []
            while k < len(body) and not body[k].startswith("$ "):
                output.append(body[k].rstrip())
                k += 1
            while output and not output[-1]:
                output.pop()
            commands.append(Command("\n".join(command), tuple(output)))
        before = next((lines[b] for b in range(start - 1, -1, -1) if lines[b].strip()), "")
        m = MARKER.search(before) if before.lstrip().startswith("<!--") else None
        found.append(Transcript(start + 1, tuple(commands), m and m.group(1), (m.group(2) if m else "").strip("() ")))
    return found


def line_pattern(line: str) -> re.Pattern:
    return re.compile("".join(r"\S+" if part == VARIABLE else re.escape(part)
                              for part in re.split(f"({re.escape(VARIABLE)})", line)))


def matches(expected, actual) -> bool:
    """Whether ``actual`` lines fit ``expected``: ``...`` lines take any lines, ``‹…›`` any non-space run."""
    expected = [e.rstrip() for e in expected]
    actual = [a.rstrip() for a in actual]
    for lines in (expected, actual):
        while lines and not lines[-1]:
            lines.pop()
    patterns = [None if e == ANY_LINES else line_pattern(e) for e in expected]
    # reachable[j]: the expected lines so far can consume exactly actual[:j]
    reachable = [True] + [False] * len(actual)
    for pattern in patterns:
        nxt = [False] * (len(actual) + 1)
        for j, ok in enumerate(reachable):
            if not ok:
                continue
            if pattern is None:
                for jj in range(j, len(actual) + 1):
                    nxt[jj] = True
                break
            if j < len(actual) and pattern.fullmatch(actual[j]):
                nxt[j + 1] = True
        reachable = nxt
    return reachable[-1]


def expected_status(expected) -> int:
    if any(line.startswith("topocoll: error: ") for line in expected):
        return 2
    if any(line.startswith("FAILED ") for line in expected):
        return 1
    return 0


def scratch_paths(transcript: Transcript) -> list[Path]:
    """The ``out/...`` paths the commands name (files or directories they write)."""
    names = {m.group(0).rstrip("/.") for c in transcript.commands for m in OUT_PATH.finditer(c.text)}
    return [REPO / name for name in sorted(names)]


def remove(paths) -> None:
    for path in paths:
        assert path.resolve().is_relative_to(REPO / "out"), path
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


TRANSCRIPTS = parse_transcripts(README.read_text(encoding="utf-8"))


def _case(t: Transcript):
    marks = [pytest.mark.exhaustive] if t.mark == "exhaustive" else []
    if any("mpiexec" in c.text for c in t.commands):
        marks.append(pytest.mark.mpi)
    return pytest.param(t, id=t.id, marks=marks)


def test_the_readme_has_transcripts():
    # a parser that silently found nothing would pass every case below
    assert len(TRANSCRIPTS) >= 10, [t.id for t in TRANSCRIPTS]
    assert len({t.id for t in TRANSCRIPTS}) == len(TRANSCRIPTS), "two README transcripts share an id"
    assert sum(len(t.commands) for t in TRANSCRIPTS) >= 15
    checked = [t for t in TRANSCRIPTS if t.mark is None]
    assert len(checked) >= 0.8 * len(TRANSCRIPTS), "the default suite must check most README transcripts"
    for t in TRANSCRIPTS:
        assert t.mark is None or t.reason, f"README.md:{t.line}: a readme-test mark needs its reason"


@pytest.mark.parametrize("transcript", [_case(t) for t in TRANSCRIPTS])
def test_readme_transcript(transcript: Transcript):
    if transcript.mark == "not checked":
        pytest.skip(f"README.md:{transcript.line}: not checked: {transcript.reason}")
    assert shutil.which("topocoll", path=str(BIN)), f"no topocoll in {BIN}: run `make build`"
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    scratch = scratch_paths(transcript)
    remove(scratch)
    try:
        for command in transcript.commands:
            began = time.monotonic()
            proc = subprocess.run(["bash", "-c", command.text], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
            took = time.monotonic() - began
            actual = proc.stdout.decode("utf-8", errors="replace").splitlines()
            where = f"README.md:{transcript.line}: $ {command.text}  (exit {proc.returncode}, {took:.1f} s)"
            if not matches(command.expected, actual):
                diff = "\n".join(difflib.unified_diff(list(command.expected), actual, "README", "actual",
                                                      lineterm=""))
                pytest.fail(f"{where}\noutput differs from the README:\n{diff}", pytrace=False)
            want = expected_status(command.expected)
            assert proc.returncode == want, f"{where}: exit status {proc.returncode}, expected {want}"
    finally:
        remove(scratch)


# ---- the matcher can fail ------------------------------------------------------------------------

def test_matcher_exact_lines():
    shown = ["OK allreduce/ring(p=8) verified for op=sum"]
    assert matches(shown, ["OK allreduce/ring(p=8) verified for op=sum", ""])
    assert not matches(shown, ["OK allreduce/ring(p=9) verified for op=sum"])
    assert not matches(shown, [])
    assert not matches(shown, shown + ["an extra line"])        # no `...`: the output must end there
    assert not matches([], ["unexpected output"])
    assert matches(["a  ", ""], ["a"]) and not matches(["a"], [" a"])


def test_matcher_any_lines():
    shown = ["round 1", "...", "round 2", "..."]
    assert matches(shown, ["round 1", "round 2"])                     # `...` may stand for no line
    assert matches(shown, ["round 1", "x", "y", "round 2", "z"])
    assert not matches(shown, ["round 2", "round 1"])
    assert not matches(["a", "...", "b"], ["a", "x", "b", "c"])      # a last line that is not `...` ends it
    assert matches(["...", "b"], ["a", "b", "c", "b"])
    assert not matches(["a", "...", "b"], ["a"])
    assert not matches(["a", "..", "b"], ["a", "x", "b"])          # only exactly `...` is a wildcard


def test_matcher_variable_values():
    shown = [f"measured {VARIABLE} µs per call (seed 1)"]
    assert matches(shown, ["measured 12.5 µs per call (seed 1)"])
    assert not matches(shown, ["measured 12.5 µs per call (seed 2)"])  # the rest of the line is exact
    assert not matches(shown, ["measured  µs per call (seed 1)"])       # at least one character
    assert not matches(shown, ["measured 1 2 µs per call (seed 1)"])    # one run, no spaces
    assert not matches(["time 8398.691 µs"], ["time 8398.692 µs"])    # unmarked numbers are exact


def test_parser_and_exit_status():
    text = "\n".join([
        "intro", "<!-- readme-test: exhaustive (slow) -->", "```",
        "$ topocoll a \\", "    --b", "out 1", "", "$ mkdir -p out/x && touch out/y.json", "```",
        "```", "plain command, no prompt", "```", "```python", "x = 1", "```"])
    (t,) = parse_transcripts(text)
    assert t.mark == "exhaustive" and t.reason == "slow" and t.line == 3
    assert t.commands == (Command("topocoll a \\\n    --b", ("out 1",)),
                          Command("mkdir -p out/x && touch out/y.json", ()))
    assert t.id == "topocoll a --b"
    assert scratch_paths(t) == [REPO / "out/x", REPO / "out/y.json"]
    assert expected_status(["topocoll: error: routing 'foo'"]) == 2
    assert expected_status(["FAILED allreduce/x(p=8)"]) == 1 and expected_status(["OK"]) == 0
