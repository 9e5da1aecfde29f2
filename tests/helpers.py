"""What several test modules share that is no fixture: the repository's paths, a store filled with
synthetic runs, a run's facts, and whether a GPU is here. (conftest.py holds the fixtures and the session
setup; import these from here, never from conftest.)"""

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the checkout
DATA = TESTS / "data"
SESSION_TMP = os.environ["GPUDISSECT_TEST_TMP"]  # set by conftest before any test module is imported


def has_gpu() -> bool:
    try:
        from gpudissect.device.cuda import Device

        Device(0)
        return True
    except Exception:  # noqa: BLE001 - any failure to open the device means no GPU for the tests
        return False


def force_terminal(monkeypatch, columns: int = 100) -> None:
    """stdout read as a terminal `columns` wide by gpudissect.cli_output (CliRunner's stdout is no TTY)."""
    from gpudissect import cli_output

    monkeypatch.setattr(cli_output, "is_terminal", lambda: True)
    monkeypatch.setattr(cli_output, "terminal_width", lambda: columns)


def table_cells(line: str) -> list[str]:
    """The cells of one line of a rich table ("│ a │ b │" -> ["a", "b"]); [] for a border line."""
    if "│" not in line:
        return []
    return [c.strip() for c in line.strip().strip("│").split("│")]


def make_run_info(gpu: str = "NVIDIA H100 80GB HBM3", started: str = "2026-01-01T00:00:00+00:00", mode: str = "quick"):
    from gpudissect.models import RunInfo

    return RunInfo(
        0,
        gpu,
        "GPU-1",
        132,
        50 << 20,
        1980,
        2619,
        5120,
        "580",
        "13.0",
        "13.0",
        "0.1.0",
        "sm_90a",
        mode,
        started,
        None,
        "running",
        {"suites": ["memory"]},
        {"cc_major": 9, "cc_minor": 0, "sm_count": 132, "smem_per_sm": 233472},
    )


def fill_store(path, l1_values=(33.0, 40.0), extra_keys_in_first: int = 0, first_day: int = 1) -> list[int]:
    """A store with one run per value: a latency series, a figure with spread and telemetry, a text
    figure, a failed one; the first run may hold `extra_keys_in_first` keys the others lack."""
    from gpudissect.models import BenchResult, Figure, Point, Series, Telemetry
    from gpudissect.store import Store

    s = Store(path)
    ids = []
    for i, v in enumerate(l1_values):
        rid = s.create_run(make_run_info(started=f"2026-01-{i + first_day:02d}T00:00:00+00:00"))
        tele = Telemetry(10, 1980.0, 1950.0, 1980.0, 2619.0, 300.0, 350.0, 50.0, ["sw_power_cap"])
        figs = [
            Figure(
                "memory",
                "pchase_latency",
                "mem.latency.l1_hit_cycles",
                v,
                "cycles",
                "derived",
                "median of the first plateau",
                (v - 0.5, v + 0.5),
            ),
            Figure("memory", "pchase_latency", "mem.latency.l2_hit_cycles", 262.0, "cycles", "derived", "plateau 2"),
            Figure("memory", "pchase_latency", "mem.policy", "LRU", "", "derived", "eviction order"),
            Figure("memory", "pchase_latency", "mem.broken_cycles", "n/a", "cycles", "derived", "m", check="failed"),
            Figure(
                "memory",
                "pchase_latency",
                "clock.pchase_latency.sm_mhz",
                1755.0,
                "MHz",
                "measured",
                "clock64 over %globaltimer",
            ),
        ]
        if i == 0:
            figs += [
                Figure("memory", "tlb", f"mem.extra{k}_cycles", float(k), "cycles", "measured", "m")
                for k in range(extra_keys_in_first)
            ]
        s.save_bench(
            BenchResult(rid, "memory", "pchase_latency", "ok", "", "t0", "t1", 1.5, tele),
            [
                Series(
                    "memory",
                    "pchase_latency",
                    "ca",
                    "footprint",
                    "bytes",
                    "latency",
                    "cycles",
                    [Point(4096, v, v - 1, v + 1, 5), Point(1 << 20, 300.0, extra={"knee": 1})],
                    plot="logx",
                    figure="latency_vs_footprint",
                    params={"stride": 128},
                ),
                Series(
                    "memory",
                    "pchase_latency",
                    "cg",
                    "footprint",
                    "bytes",
                    "latency",
                    "cycles",
                    [Point(4096, 2 * v), Point(1 << 20, 600.0)],
                    plot="logx",
                    figure="latency_vs_footprint",
                ),
            ],
            figs,
        )
        s.finish_run(rid, "ok")
        ids.append(rid)
    s.close()
    return ids


def fake_compile(spec, arch: str) -> str:
    """A stand-in for compile_spec in a spawned pool (module-level, so the worker can import it)."""
    if spec.defines.get("FAIL"):
        raise RuntimeError("does not compile")
    return f"{spec.name}@{arch}"


def skip_unless_readable(arch: str) -> None:
    """Skip where this machine cannot build or read `arch` (no cuobjdump; Volta without NVRTC 12 / CUDA 12's)."""
    import pytest

    from gpudissect.device.compiler import unsupported_why
    from gpudissect.sass.disasm import find_tool, unreadable_why

    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    why = unsupported_why(arch) or unreadable_why(arch)
    if why:
        pytest.skip(why)


def missing_sass(checks) -> list[str]:
    """The required patterns a build lacks (sasscheck.check_spec's checks), one line each."""
    return [f"{c.function}: /{c.pattern}/" for c in checks if not c.found]


def one_line_error(r, code: int = 2) -> str:
    """The CLI's answer to bad input: exit `code`, one `error: ` line on stderr, no traceback; that line."""
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    return lines[0]
