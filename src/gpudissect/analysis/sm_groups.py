"""Groups of SMs seen together (blocks of one cluster, observers slowed by one thrasher) merged into the
connected sets they imply: the hardware units (GPCs, TPCs) as far as placements reveal them. Pure."""

from __future__ import annotations

from collections.abc import Sequence


def merge_groups(groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """Connected sets of SMs linked by sharing a group (union-find), each sorted, largest first."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g in groups:
        for s in g:
            parent[find(s)] = find(g[0])
    out: dict[int, list[int]] = {}
    for s in sorted(parent):
        out.setdefault(find(s), []).append(s)
    return sorted(out.values(), key=lambda g: (-len(g), g[0]))
