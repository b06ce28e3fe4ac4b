"""Titles fit their figure, and log-axis ticks read as the numbers they mark (issue 28: titles were cut
at "P=" and "…50 runs per"; Fig. 10's ticks read 1.125×2^7 instead of 144)."""

from topocoll.reproduce.common import plot_series
from topocoll.viz.figure import fit_titles, new_figure

LONG = ("Fig. 10: slowdown of a binomial allreduce of 8 B at perturbation ratio 0.5, 50 runs per size, "
        "on every tree of the paper's Table 1")


def _title_inside(fig, ax) -> bool:
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    box = ax.title.get_window_extent(renderer)
    return box.x0 >= -1 and box.x1 <= fig.bbox.width + 1


def test_a_long_title_is_cut_without_fitting_and_whole_with_it():
    fig = new_figure(4.0, 3.0)
    ax = fig.add_subplot()
    ax.set_title(LONG)
    assert not _title_inside(fig, ax)            # the failure this guards against
    fit_titles(fig)
    assert _title_inside(fig, ax) and ax.get_title().replace("\n", " ") == LONG


def test_plot_series_ticks_are_the_numbers_given(tmp_path):
    from topocoll.reproduce.common import series_figure
    fig = series_figure([("model", [144, 288, 1152, 2304], [1.1, 1.2, 1.3, 1.4], "model")], xlabel="endpoints",
                        ylabel="slowdown", title=LONG, logx=True, xticks=[144, 288, 1152, 2304])
    fig.canvas.draw()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["144", "288", "1152", "2304"]
    assert all(t.get_text() == "" for t in ax.xaxis.get_minorticklabels())
    assert plot_series(tmp_path / "f.png", [("m", [1, 2], [1, 2], "model")], xlabel="x", ylabel="y",
                       title="t").stat().st_size > 1000
