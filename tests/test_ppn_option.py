"""``--ppn N`` on simulate, compare and tune is the spec's ``+ppn=N``."""

from topocoll.cli import main


def test_ppn_is_the_specs_suffix(capsys):
    assert main(["simulate", "allreduce", "ring", "-P", "8", "--size", "1K", "--topology", "crossbar:4",
                 "--ppn", "2", "--model", "flow"]) == 0
    by_option = capsys.readouterr().out
    assert main(["simulate", "allreduce", "ring", "-P", "8", "--size", "1K", "--topology", "crossbar:4+ppn=2",
                 "--model", "flow"]) == 0
    assert capsys.readouterr().out == by_option
    assert "crossbar:4+ppn=2 (4 hosts x 2 ranks)" in by_option


def test_ppn_needs_a_topology_and_only_once(capsys):
    for argv, expected in (
            (["compare", "allreduce", "-P", "4", "--ppn", "2"], "--ppn 2 without --topology"),
            (["tune", "allreduce", "-P", "4", "--topology", "crossbar:4+ppn=2", "--ppn", "2"],
             "both give ranks per host, expected one of them"),
            (["simulate", "allreduce", "ring", "-P", "4", "--ppn", "0", "--topology", "crossbar:4"],
             "expected an integer in 1..1024")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert expected in err and len(err.strip().splitlines()) == 1, err
