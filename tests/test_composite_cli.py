"""``topocoll composite`` and :func:`topocoll.composite.composite`: real pictures, checked
against a serial over-composition; bad input is one line and exit 2."""

import subprocess
import sys

import numpy as np
import pytest

from topocoll.cli import main
from topocoll.composite import composite, tolerance_for
from topocoll.errors import SpecError


def run(*argv):
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli", *argv], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_help_lists_composite():
    code, out, _ = run("--help")
    assert code == 0 and "composite" in out


@pytest.mark.parametrize("argv", [
    ["-P", "12", "--algorithm", "radix_k", "--k", "4,3"],
    ["-P", "12", "--algorithm", "radix_k", "--k", "primes", "--pattern", "random", "--seed", "7"],
    ["-P", "8", "--algorithm", "binary_swap"],
    ["-P", "7", "--algorithm", "two_three_swap", "--pattern", "sphere"],
    ["-P", "5", "--algorithm", "parallel_pipeline"],
    ["-P", "9", "--algorithm", "shift_based", "--threads", "2"],
    ["-P", "6", "--algorithm", "direct_send"],
])
def test_composite_checks_ok(argv, capsys):
    assert main(["composite", *argv, "--width", "37", "--height", "23", "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: OK" in out and "Table 1: latency" in out
    seed = argv[argv.index("--seed") + 1] if "--seed" in argv else "0"
    assert f"seed {seed}" in out


def test_fig2_example_reports_corrected_latency(capsys):
    assert main(["composite", "-P", "12", "--algorithm", "radix_k", "--k", "4,3", "--width", "24",
                 "--height", "8"]) == 0
    out = capsys.readouterr().out
    assert "radix_k(k=[4, 3])" in out and "5 steps" in out and "latency 5·α" in out
    assert "check:" not in out           # no comparison without --check


def test_order_file_and_save(tmp_path, capsys):
    order = tmp_path / "order.txt"
    order.write_text("# back to front reversed\n3, 2\n1 0\n")
    png = tmp_path / "out.png"
    assert main(["composite", "-P", "4", "--algorithm", "radix_k", "--order", str(order), "--width", "31",
                 "--height", "17", "--pattern", "sphere", "--check", "--save", str(png)]) == 0
    out = capsys.readouterr().out
    assert "depth_order=(3, 2, 1, 0)" in out and "check: OK" in out and "saved" in out
    from PIL import Image
    with Image.open(png) as image:
        assert image.size == (31, 17)


@pytest.mark.parametrize("argv, fragment", [
    (["-P", "12", "--algorithm", "radix_k", "--k", "4,4"],
     "radix_k: k=[4, 4] has product 16, expected p=12; valid vectors near it: [4, 3], [3, 4]"),
    (["-P", "12", "--algorithm", "binary_swap"], "binary_swap: p=12, expected a power of two"),
    (["-P", "3", "--algorithm", "direct_send", "--k", "3"], "expected --k only with --algorithm radix_k"),
    (["-P", "3", "--algorithm", "radix_k", "--k", "3,x"], "--k '3,x', expected radices such as 8,8"),
    (["-P", "3", "--algorithm", "nosuch"], "invalid choice: 'nosuch'"),
    (["-P", "3", "--algorithm", "direct_send", "--pattern", "plaid"], "invalid choice: 'plaid'"),
    (["-P", "0", "--algorithm", "direct_send"], "0 is not positive"),
    (["-P", "3", "--algorithm", "direct_send", "--seed", "-4"], "--seed -4, expected a non-negative"),
])
def test_bad_input_is_one_line_exit_2(argv, fragment):
    code, out, err = run("composite", *argv, "--width", "8", "--height", "8")
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("topocoll: error: "), err
    assert fragment in err and "Traceback" not in err


def test_bad_order_file_is_one_line(tmp_path):
    bad = tmp_path / "order.txt"
    bad.write_text("0 1 1\n")
    code, _, err = run("composite", "-P", "3", "--algorithm", "shift_based", "--order", str(bad),
                       "--width", "4", "--height", "4")
    assert code == 2 and err.count("\n") == 1 and "repeats rank 1" in err


def test_composite_function_flat_vectors_and_gather():
    rng = np.random.default_rng(4)
    images = rng.random((10, 101, 4))
    images[..., :3] *= images[..., 3:]
    for algorithm in ("radix_k", "two_three_swap", "shift_based"):
        result = composite(images, algorithm, order=list(reversed(range(10))))
        assert result.ok and result.image.shape == (101, 4) and result.relative_error <= 1e-6
    gathered = composite(images, "radix_k", k=[5, 2], gather_root=3)
    assert gathered.ok and gathered.schedule.collective == "reduce"


def test_composite_float32_uses_the_kernel_within_1e_6():
    from topocoll.imaging import make_pattern

    images = np.stack([make_pattern("checker", r, 64, 19, 11) for r in range(64)])
    result = composite(images, "radix_k", threads=2)
    assert result.image.dtype == np.float32 and result.relative_error <= 1e-6
    assert tolerance_for(np.float64, 64) == 1e-6 and tolerance_for(np.float32, 64) > 1e-6


def test_a_wrong_picture_fails_the_check(monkeypatch, capsys):
    """The check can fail: composite with front and back swapped (under instead of over)."""
    import topocoll.composite as module

    right = module._over_operator
    monkeypatch.setattr(module, "_over_operator",
                        lambda dtype, threads: (lambda front, back: right(dtype, threads)(back, front)))
    images = np.random.default_rng(1).random((4, 9, 4))
    images[..., :3] *= images[..., 3:]
    result = composite(images, "direct_send")
    assert result.ok is False and result.relative_error > 1e-3
    assert main(["composite", "-P", "4", "--algorithm", "radix_k", "--width", "9", "--height", "5",
                 "--check"]) == 1
    assert "check: WRONG" in capsys.readouterr().out


def test_depth_order_changes_the_picture():
    images = np.random.default_rng(1).random((4, 9, 4))
    images[..., :3] *= images[..., 3:]
    result = composite(images, "direct_send", order=[1, 0, 2, 3])
    assert result.ok
    assert np.abs(result.image - composite(images, "direct_send").image).max() > 1e-3


@pytest.mark.parametrize("call, fragment", [
    (lambda: composite([], "radix_k"), "no images"),
    (lambda: composite(np.zeros((3, 5, 3)), "radix_k"), "expected (height, width, 4)"),
    (lambda: composite([np.zeros((5, 4)), np.zeros((6, 4))], "radix_k"), "expected (5, 4) like images[0]"),
    (lambda: composite(np.zeros((3, 5, 4), np.float16), "radix_k"), "expected float32 or float64"),
    (lambda: composite(np.zeros((3, 5, 4)), "ring"), "algorithm='ring', expected one of"),
    (lambda: composite(np.zeros((3, 5, 4)), "shift_based", k=[3]), "expected k only with radix_k"),
    (lambda: composite(np.zeros((3, 5, 4)), "radix_k", threads=0), "threads=0"),
])
def test_composite_bad_input(call, fragment):
    with pytest.raises(SpecError) as err:
        call()
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_zbuffer_verb(capsys):
    assert main(["composite", "-P", "6", "--algorithm", "radix_k", "--k", "3,2", "--width", "20",
                 "--height", "10", "--pattern", "random", "--seed", "4", "--operator", "zbuffer", "--check"]) == 0
    out = capsys.readouterr().out
    assert "z-buffer (seeded random depths)" in out and "seed 4" in out
    assert "check: OK, relative error 0 against a serial zbuffer-composition" in out
