"""Algorithm and bus bandwidth of collectives, as nccl-tests defines them (doc/PERFORMANCE.md).

algbw = S / t. busbw = algbw x a factor that makes the figure comparable with the hardware's
per-rank link bandwidth whatever the number of ranks n:
all_reduce 2(n-1)/n; reduce_scatter, all_gather, all_to_all (n-1)/n; broadcast, reduce 1.
S is the size of the whole array: for all_gather the gathered output (n x the per-rank input),
for reduce_scatter the input (n x the per-rank output), for all_to_all each rank's send buffer.
"""

from __future__ import annotations

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce")


def bus_factor(op: str, n: int) -> float:
    if n < 1:
        raise ValueError(f"need at least one rank, got {n}")
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1) / n
    if op in ("broadcast", "reduce"):
        return 1.0
    raise ValueError(f"unknown collective {op!r}; known: {', '.join(OPS)}")


def algbw_gbps(size_bytes: float, seconds: float) -> float:
    """S / t in GB/s (10^9 bytes/s), as nccl-tests prints it."""
    if seconds <= 0:
        raise ValueError("time must be positive")
    return size_bytes / seconds / 1e9


def busbw_gbps(op: str, size_bytes: float, seconds: float, n: int) -> float:
    return algbw_gbps(size_bytes, seconds) * bus_factor(op, n)


def buffer_elems(op: str, size_elems: int, n: int) -> tuple[int, int]:
    """(send, receive) elements per rank for an operation of S = `size_elems` elements.
    S must split evenly over the ranks where the operation splits it."""
    if op in ("all_gather", "reduce_scatter", "all_to_all") and size_elems % n:
        raise ValueError(f"{op}: {size_elems} elements do not split over {n} ranks")
    if op == "all_gather":
        return size_elems // n, size_elems
    if op == "reduce_scatter":
        return size_elems, size_elems // n
    if op in ("all_reduce", "all_to_all", "broadcast", "reduce"):
        return size_elems, size_elems
    raise ValueError(f"unknown collective {op!r}")


def round_size(op: str, size_bytes: int, n: int, elem_bytes: int = 4) -> int:
    """The largest S <= size_bytes (at least one element per rank) that the operation can use."""
    unit = elem_bytes * (n if op in ("all_gather", "reduce_scatter", "all_to_all") else 1)
    return max(unit, size_bytes // unit * unit)
