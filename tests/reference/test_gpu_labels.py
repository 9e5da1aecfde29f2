"""Published values of the run's own GPU come first in a report, then its family's, then the rest."""

import pytest

from gpudissect.reference.gpu_labels import family_of, own_first


@pytest.mark.parametrize(
    ("label", "family"),
    [
        ("H800", "hopper"),
        ("H100-SXM5", "hopper"),
        ("A100-SXM4-80GB", "ampere"),
        ("Ampere", "ampere"),
        ("V100-NVLink", "volta"),
        ("Tesla V100-SXM2-16GB", "volta"),
        ("T4", "turing"),
        ("RTX 4090", "ada"),
        ("NVIDIA GeForce RTX 4090", "ada"),
        ("NVIDIA GeForce RTX 5090", "blackwell-consumer"),
        ("NVIDIA B200", "blackwell"),
        ("Some GPU", None),
    ],
)
def test_family_of_a_label(label, family):
    assert family_of(label) == family


def test_an_a100_run_sees_the_a100_first_then_the_rest_in_order():
    labels = ["H800", "A100", "V100", "T4", "RTX 4090", "H100-SXM5", "A100"]
    assert own_first(labels, "NVIDIA A100-SXM4-80GB", "ampere") == [
        "A100",
        "H800",
        "V100",
        "T4",
        "RTX 4090",
        "H100-SXM5",
    ]


def test_an_h100_run_sees_the_h100_then_its_family():
    labels = ["A100", "H800", "V100", "H100-SXM5"]
    assert own_first(labels, "NVIDIA H100 80GB HBM3", "hopper") == ["H100-SXM5", "H800", "A100", "V100"]


def test_a_gpu_no_paper_measured_keeps_the_family_first():
    assert own_first(["H800", "RTX 4090", "V100"], "NVIDIA L40S", "ada") == ["RTX 4090", "H800", "V100"]


def test_a_report_orders_the_published_columns_by_the_runs_gpu():
    from types import SimpleNamespace

    from gpudissect.report.compare import default_refs
    from gpudissect.report.sections import own_gpu_first

    refs = default_refs()
    a100 = own_gpu_first(refs, SimpleNamespace(arch="sm_80", gpu_name="NVIDIA A100-SXM4-80GB"))
    assert a100[0].startswith("A100") and set(a100) == {r.gpu for r in refs}
    v100 = own_gpu_first(refs, SimpleNamespace(arch="sm_70", gpu_name="Tesla V100-SXM2-32GB"))
    assert v100[0].startswith("V100")
    odd = own_gpu_first(refs, SimpleNamespace(arch="<b>", gpu_name="x"))  # an imported run's unreadable arch
    assert set(odd) == set(a100)
