"""Which architecture family a published value's GPU label belongs to ("H800", "A100-SXM4-80GB", "V100",
"T4", "RTX 4090", "Ampere" ...), so that a report puts the run's own GPU first, then its family, then the
rest: an A100 run is compared with the papers' A100 figures before their H800 ones."""

from __future__ import annotations

import re
from collections.abc import Iterable

# label pattern -> family (capability.FAMILIES names); the first that matches wins
_FAMILY_OF_LABEL: tuple[tuple[str, str], ...] = (
    (r"^(GB|B)[23]00\b", "blackwell"),
    (r"^RTX ?(PRO ?6000|50\d\d)", "blackwell-consumer"),
    (r"^(GH200|H100|H200|H800|H20)\b|^Hopper\b", "hopper"),
    (r"^(L4|L40S?|RTX ?40\d\d|RTX ?6000 Ada)\b|^Ada\b", "ada"),
    (r"^(A100|A800|A30|A10|A40|A16|A2|RTX ?30\d\d|RTX ?A\d+)\b|^Ampere\b", "ampere"),
    (r"^(T4|RTX ?20\d\d|TITAN RTX|Quadro RTX)\b|^Turing\b", "turing"),
    (r"^(V100S?|TITAN V|Quadro GV100)\b|^Volta\b", "volta"),
)


_VENDOR = re.compile(r"^(nvidia\s+)?(geforce\s+|tesla\s+)?", flags=re.I)


def family_of(label: str) -> str | None:
    text = _VENDOR.sub("", label.strip())
    return next((fam for pat, fam in _FAMILY_OF_LABEL if re.search(pat, text, flags=re.I)), None)


def _model(label: str) -> str:
    """'A100-SXM4-80GB' -> 'a100'; 'RTX 4090' -> 'rtx4090': the model a label and a device name share."""
    text = _VENDOR.sub("", label.strip()).lower()
    return re.split(r"[-\s](?!\d{4}\b)", text.replace("rtx ", "rtx"), maxsplit=1)[0]


def own_first(labels: Iterable[str], gpu_name: str, family: str) -> list[str]:
    """The distinct labels, the run's own GPU model first, then its family, then the others (each group in
    the order given)."""
    own = _model(gpu_name)

    def rank(label: str) -> int:
        if _model(label) == own:
            return 0
        return 1 if family_of(label) == family else 2

    distinct = list(dict.fromkeys(labels))
    return sorted(distinct, key=rank)
