"""distlib: the library behind the course book on distributed training.

The model layer (everything importable from here) is pure NumPy: no plotting
and no widgets. Drawings live in :mod:`distlib.plots`, interactive controls in
:mod:`distlib.widgets`, and real collectives over MPI or torch.distributed in
:mod:`distlib.engines`; import those explicitly.
"""

from .ring import Transfer, RingTrace, chunk_bounds, simulate_ring_allreduce, ring_bytes_per_rank
from .cluster import StepTime, cluster_step, ring_allreduce_time
from .fmt import Text, si, fmt_bytes, fmt_seconds, fmt_rate, fmt_flops
from .notebook import glue, in_colab

__version__ = "0.1.0"
