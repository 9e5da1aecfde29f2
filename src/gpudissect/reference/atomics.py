"""Published atomic-operation latencies, transcribed from the seed papers.

Paper ``"002"``: Jia et al., *Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking*,
Table 4.2: latency of atomic operations on shared and global memory in cycles, with no contention and
with 2..32 threads contending. Jia's benchmark is atomicAdd (§4.2: "Throughput of atomicAdd()"); the
table does not name the operand type, which we take as 32-bit integer add and say so in the note.
Jia measured the latency as an atomic followed by a dependent load of the same location, minus the
load's known latency; we chain atomics on their own returns (see bench/atomics/latency.py).
Jia et al.'s Turing (T4) report is not among the seed texts, so no T4 value is transcribed.
"""

from __future__ import annotations

from .memory import Published

GPUS = ("V100", "P100", "P4", "M60", "K80")
_NOTE = "Table 4.2 atomicAdd; operand type not printed, taken as u32"
# rows: none, 2, 4, 8, 16, 32 threads
_SHARED = {"V100": (6, 7, 11, 18, 24, 66), "P100": (15, 17, 19, 30, 46, 78), "P4": (16, 18, 25, 30, 46, 78),
           "M60": (17, 19, 25, 31, 47, 79), "K80": (93, 214, 460, 952, 1936, 4257)}
_GLOBAL = {"V100": (36, 31, 32, 41, 58, 76), "P100": (26, 31, 48, 48, 50, 50), "P4": (30, 50, 50, 51, 51, 51),
           "M60": (24, 26, 41, 41, 46, 46), "K80": (29, 69, 96, 152, 264, 488)}
_THREADS = (1, 2, 4, 8, 16, 32)


def _key(space: str, threads: int) -> str:
    return f"atom.{space}.add_u32.latency_cycles" if threads == 1 else f"atom.{space}.add_u32.contended_{threads}_latency_cycles"


ATOMICS: tuple[Published, ...] = tuple(
    Published(_key(space, t), gpu, float(v), "cycles", "002", "Table 4.2", _NOTE)
    for space, table in (("shared", _SHARED), ("global", _GLOBAL))
    for gpu, row in table.items()
    for t, v in zip(_THREADS, row)
)


def published(key: str, gpu: str | None = None) -> list[Published]:
    return [p for p in ATOMICS if p.key == key and (gpu is None or p.gpu == gpu)]
