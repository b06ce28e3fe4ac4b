"""Views of simulated runs, drawn with matplotlib (:mod:`.figure`): a
Chrome/Perfetto timeline grouped by node (:mod:`.timeline`), the per-pair
bandwidth matrix with its histogram (:mod:`.matrix`, Cavin & Demengeon,
EGPGV 2012, §5), notched box plots (:mod:`.boxplot`, Hoefler et al. 2009)
and time against message size per algorithm (:mod:`.curves`)."""

from .matrix import NAN_COLOUR, bandwidth_matrix, histogram, matrix_figure, summary, write_matrix_png
from .timeline import chrome_trace, write_chrome_trace

__all__ = ["NAN_COLOUR", "bandwidth_matrix", "chrome_trace", "histogram", "matrix_figure", "summary",
           "write_chrome_trace", "write_matrix_png"]
