"""The numerics suite: what the tensor cores compute, bit for bit (issues 4 and 9).

Three benchmarks, all built on one kernel shape (kernels/numerics.cu, see common.py):

1. `tc_profiling` (profiling.py) — Sun et al. (001) §8: element-wise errors of multiplication,
   inner-product addition and accumulation (Tables 12-15) and chain matrix multiplication (Fig. 17).
2. `tc_probes` (probe_bench.py) — crafted inputs that decide, per instruction and type, how the sum is
   formed: the probes per question in probes.py, their kit in probe_kit.py, the stages run in order and
   what they found in findings.py; multiblock.py: past one block (fp8 mma.sync m16n8k32's two blocks,
   chains of instructions, D -> next C). Each probe carries the prediction of every hypothesis
   (evaluator.py, exact: integers over the probes' dyadic values, independent of gpudissect.numerics)
   and the hardware's answer; runner.py runs the instructions.
3. `tc_model_agreement` (agreement.py, inputs.py) — corner-stressing random dot products, hardware bits
   vs gpudissect.numerics.model.dot with the parameters the probes of the same run found, with K of one
   block and K over several blocks; a fresh seed per run, recorded.

Every GPU from compute capability 8.0 runs the three benchmarks with the instructions it has (targets.py:
wgmma on sm_90a only, fp8 mma.sync from 8.9; the others are recorded as skipped variants with the reason),
and whether an instruction runs natively or emulated is read from the SASS that ran.

The registry imports this package; importing the benchmark modules here registers the benchmarks. The
public names of the modules are re-exported for callers that use `gpudissect.bench.numerics.X`.
"""

from .agreement import *  # noqa: F403  (registers tc_model_agreement)
from .common import *  # noqa: F403
from .evaluator import *  # noqa: F403
from .findings import *  # noqa: F403
from .inputs import *  # noqa: F403
from .multiblock import *  # noqa: F403
from .probe_bench import *  # noqa: F403  (registers tc_probes)
from .probe_kit import *  # noqa: F403
from .probes import *  # noqa: F403
from .profiling import *  # noqa: F403  (registers tc_profiling)
from .runner import *  # noqa: F403
from .targets import *  # noqa: F403

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("probe_bench", "agreement", "profiling")
