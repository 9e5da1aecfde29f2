"""Every kernel file compiles, and holds the SASS its variants declare, on every architecture CI covers:
per (arch, kernel file), the first declared variant that arch can run (the plan's own choice). The whole set
of variants per arch is `gpudissect sass --all --arch A` (too long for CI: about 240 builds an arch)."""

import pytest

from gpudissect.capability import CI_ARCHES, Target
from gpudissect.sass.disasm import find_tool
from helpers import missing_sass

pytestmark = [pytest.mark.sass, pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")]


def _cases() -> list[tuple[str, str]]:
    from gpudissect.bench.registry import load_all

    out = []
    for arch in CI_ARCHES:
        t = Target.parse(arch)
        seen = set()
        for b in load_all().values():
            if b.suite == "fake" or b.why_not(t):
                continue
            for spec in b.variants(t)[0]:
                if spec.file not in seen:
                    seen.add(spec.file)
                    out.append((arch, spec.name))
    return out


CASES = _cases()


def _spec(name: str):
    from gpudissect.bench.registry import load_all

    return next(s for b in load_all().values() for s in b.kernels if s.name == name)


@pytest.mark.parametrize(("arch", "name"), CASES, ids=[f"{a}-{n}" for a, n in CASES])
def test_compiles_with_its_sass(arch, name):
    from gpudissect.device import nvrtc_legacy
    from gpudissect.device.compiler import compile_spec, unsupported_why
    from gpudissect.errors import GpuDissectError
    from gpudissect.sass import legacy
    from gpudissect.sasscheck import check_spec

    spec = _spec(name)
    if unsupported_why(arch):
        pytest.skip(unsupported_why(arch))
    if arch == "sm_70":  # compiled with NVRTC 12; read by a CUDA 12 cuobjdump (CUDA 13's refuses Volta code)
        assert nvrtc_legacy.library() is not None
        assert compile_spec(spec, arch)[:4] == b"\x7fELF"
        if legacy.cuobjdump() is None:  # not fetched (`python -m gpudissect.sass.legacy`): compile only
            with pytest.raises(GpuDissectError, match="CUDA 12"):
                check_spec(spec, arch)
            return
    funcs, checks = check_spec(spec, arch)
    missing = missing_sass(checks)
    assert not missing, missing


def test_every_kernel_file_is_covered_on_hopper():
    from gpudissect.bench.registry import load_all

    files = {s.file for b in load_all().values() if b.suite != "fake" for s in b.kernels}
    covered = {_spec(n).file for a, n in CASES if a == "sm_90a"}
    assert files == covered
