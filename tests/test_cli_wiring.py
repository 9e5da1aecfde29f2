"""Sub-commands of other modules are reachable from the main CLI."""

import pytest
from typer.testing import CliRunner

from gpudissect.cli import app
from gpudissect.device.sass import find_tool

runner = CliRunner()


def test_isa_group_is_wired():
    r = runner.invoke(app, ["isa", "--help"])
    assert r.exit_code == 0 and "encoding" in r.output


@pytest.mark.skipif(find_tool("cuobjdump") is None or find_tool("nvdisasm") is None, reason="no disassembler")
def test_sass_control_lists_decoded_fields_per_instruction():
    r = runner.invoke(app, ["sass", "shared_latency", "--control"])
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if line.startswith("/*")]
    assert rows and all(" S:" in line and " W:" in line for line in rows)
    assert any("LDS" in line for line in rows)


def test_sass_control_refuses_full():
    r = runner.invoke(app, ["sass", "shared_latency", "--control", "--full"])
    assert r.exit_code == 2 and "--control" in r.output
