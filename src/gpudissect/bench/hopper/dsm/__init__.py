"""Distributed shared memory on Hopper (Luo et al. 000 §7, Table III row DSM, Figs. 9-12).

Three benchmarks over thread-block clusters (kernels in kernels/hopper_dsm.cu):

* dsm_latency: one thread chases a random single-cycle chain in its own shared memory (ld.shared),
  in its own shared memory through the cluster window (mapa of its own rank), and in the shared
  memory of every other rank of clusters of 2..16 blocks, with every block's %smid recorded; in the
  same run an L2-hit chase (.cg, small footprint) and SM-to-SM round trips through global memory and
  through DSM (ping-pong between two blocks of a cluster).
* dsm_throughput: every block reads a target block's 16 KiB through the cluster window (ring, pair,
  broadcast; "self" for the interface's cost without the network) for each scheduling policy x
  cluster size x block size x ILP, all SMs busy, event-timed; every block's sum of values read is
  checked, and where the blocks ran (%smid, %cluster_ctarank) is summarised.
* dsm_histogram: the bins of a cluster spread over its blocks' shared memories, every element
  counted by an atomic on its owner's shared memory through mapa; checked bin by bin against numpy.

Where ptxas lowers DSM access (pinned by the KernelSpec and the tests): mapa is a PRMT that writes the
rank into byte 3 of the shared-window address (no MAPA opcode), ld.shared::cluster a generic LD.E whose
upper half is SR_SWINHI, atom.shared::cluster a generic ATOM.E.ADD, barrier.cluster.arrive/wait
UCGABAR_ARV / UCGABAR_WAIT (arrive.release adds MEMBAR.ALL.GPU, wait.acquire CCTL.IVALL), %smid
SR_VIRTUALSMID and %cluster_ctarank SR_CgaCtaId.

Modules: common.py (constants, the kernel spec, host-side rules, parameter checks, launch helpers),
latency.py (`dsm_latency`), throughput.py (`dsm_throughput`), histogram.py (`dsm_histogram`). The
registry imports this package; importing the benchmark modules here registers the benchmarks (in this
order). The public names of the modules are re-exported for callers that use
`gpudissect.bench.hopper.dsm.X`.
"""

from .common import *  # noqa: F403
from .histogram import *  # noqa: F403  (registers dsm_histogram)
from .latency import *  # noqa: F403  (registers dsm_latency)
from .throughput import *  # noqa: F403  (registers dsm_throughput)
