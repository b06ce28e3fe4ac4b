"""Views of simulated runs: a Chrome/Perfetto timeline per rank
(:mod:`.timeline`) and the per-pair bandwidth matrix with its grey-scale
image and histogram (:mod:`.matrix`, Cavin & Demengeon, EGPGV 2012, §5)."""

from .matrix import NAN_COLOUR, bandwidth_matrix, histogram, summary, write_matrix_png
from .timeline import chrome_trace, write_chrome_trace

__all__ = ["NAN_COLOUR", "bandwidth_matrix", "chrome_trace", "histogram", "summary",
           "write_chrome_trace", "write_matrix_png"]
