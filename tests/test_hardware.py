"""The sourced accelerator table: look-up, units, directions and sources."""

import csv
from importlib import resources

import pytest

import distlib as dl
from distlib import hardware as H

REQUIRED = ["A100", "H100", "H200", "B200", "MI300X", "TPU v4", "TPU v5p", "Gaudi 3"]


def test_required_rows_present():
    names = dl.accelerator_names() if hasattr(dl, "accelerator_names") else H.accelerator_names()
    for name in REQUIRED:
        assert name in names
    assert [a.name for a in dl.accelerators()] == names


@pytest.mark.parametrize("query,name", [
    ("h100", "H100"), ("H100 SXM", "H100"), ("tpu v5p", "TPU v5p"), ("TPU-v5p", "TPU v5p"),
    ("tpuv4", "TPU v4"), ("gaudi3", "Gaudi 3"), ("Gaudi-3", "Gaudi 3"), ("Intel Gaudi 3", "Gaudi 3"),
    ("mi300x", "MI300X"), ("A100 SXM 80GB", "A100"), ("b200", "B200"), ("  H200 ", "H200"),
])
def test_lookup_is_tolerant_of_case_spaces_and_hyphens(query, name):
    assert dl.accelerator(query).name == name


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError) as err:
        dl.accelerator("V100")
    for name in REQUIRED:
        assert name in str(err.value)
    with pytest.raises(TypeError):
        dl.accelerator(100)


def test_spec_passes_through():
    spec = dl.accelerator("H200")
    assert dl.accelerator(spec) is spec


def test_every_figure_has_a_source_with_a_url():
    for a in dl.accelerators():
        assert isinstance(a.sources, dict) and set(a.sources) == set(H.FIGURES)
        for fig, src in a.sources.items():
            assert "https://" in src, (a.name, fig)


def test_csv_has_one_source_column_per_figure():
    text = resources.files("distlib").joinpath("data/accelerators.csv").read_text()
    header = next(csv.reader(text.splitlines()))
    for fig in H.FIGURES:
        assert fig in header and f"{fig}_source" in header


# Values checked against the vendors' documents (see the source columns).
@pytest.mark.parametrize("name,flops,hbm,bw,link", [
    ("A100", 312e12, 81920 * 2**20, 2039e9, 300e9),   # capacities as nvidia-smi reports them (MiB)
    ("H100", 989.5e12, 81559 * 2**20, 3.35e12, 450e9),
    ("H200", 989.5e12, 143771 * 2**20, 4.8e12, 450e9),
    ("B200", 2.25e15, 183359 * 2**20, 7.7e12, 900e9),
    ("MI300X", 1307.4e12, 206141652992, 5.3e12, 448e9),  # rocm-smi, bytes
    ("TPU v4", 275e12, 32 * 2**30, 1.2e12, 270e9),
    ("TPU v5p", 459e12, 95 * 2**30, 2.765e12, 600e9),
    ("Gaudi 3", 1835e12, 131072 * 2**20, 3.67e12, 525e9),  # hl-smi, MiB
])
def test_table_values(name, flops, hbm, bw, link):
    a = dl.accelerator(name)
    assert a.bf16_flops == pytest.approx(flops)
    assert a.hbm_bytes == pytest.approx(hbm)
    assert a.hbm_bandwidth == pytest.approx(bw)
    assert a.link_bandwidth == pytest.approx(link)


def test_dense_not_sparse_flops():
    # NVIDIA prints 1,979 TFLOPS (with sparsity) for H100/H200 BF16: the table holds half
    for name in ["H100", "H200"]:
        assert dl.accelerator(name).bf16_flops < 1.0e15
        assert "sparsity" in dl.accelerator(name).sources["bf16_flops"]


def test_link_bandwidth_is_one_direction():
    # vendors print both directions together: H100 900 GB/s, A100 600, B200 1800, MI300X 896,
    # TPU v5p 1200 GB/s, Gaudi 3 1050 GB/s scale-up
    printed_bidirectional = {"H100": 900e9, "A100": 600e9, "B200": 1.8e12, "MI300X": 896e9, "TPU v5p": 1200e9,
                             "Gaudi 3": 1050e9}
    for name, both in printed_bidirectional.items():
        assert dl.accelerator(name).link_bandwidth == pytest.approx(both / 2)


def test_h200_is_h100_compute_with_more_and_faster_memory():
    h100, h200 = dl.accelerator("H100"), dl.accelerator("H200")
    assert h200.bf16_flops == h100.bf16_flops
    assert h200.hbm_bandwidth > h100.hbm_bandwidth  # 4.8 TB/s, not the seed's 3.35
    assert h200.hbm_bytes > h100.hbm_bytes


def test_ridge_points():
    assert dl.accelerator("H100").ridge_point == pytest.approx(989.5e12 / 3.35e12)
    assert round(dl.accelerator("A100").ridge_point) == 153


def test_units_are_plausible():
    for a in dl.accelerators():
        assert 1e14 < a.bf16_flops < 1e16      # 100 TFLOP/s .. 10 PFLOP/s
        assert 1e10 < a.hbm_bytes < 1e12       # 10 GB .. 1 TB
        assert 5e11 < a.hbm_bandwidth < 1e13   # 0.5 .. 10 TB/s
        assert 1e11 < a.link_bandwidth < 2e12  # 100 GB/s .. 2 TB/s
        assert a.link_bandwidth < a.hbm_bandwidth


def test_gpu_memory_is_what_the_gpu_exposes_not_the_marketed_round_number():
    # "80 GB" and "141 GB" are below the bytes the GPUs expose: 79.6 and 140.4 GiB.
    assert dl.accelerator("H100").hbm_bytes > 80e9 and dl.accelerator("H200").hbm_bytes > 141e9
    assert round(dl.accelerator("H200").hbm_gib, 1) == 140.4
    assert "nvidia-smi" in dl.accelerator("B200").sources["hbm_bytes"]
    # AMD's "192 GB" and Intel's "128 GB" are below what rocm-smi and hl-smi report (192.0 and 128 GiB)
    assert dl.accelerator("MI300X").hbm_bytes > 192e9 and dl.accelerator("Gaudi 3").hbm_bytes > 128e9
    assert "rocm-smi" in dl.accelerator("MI300X").sources["hbm_bytes"]
    assert "hl-smi" in dl.accelerator("Gaudi 3").sources["hbm_bytes"]
    assert "8 TB/s" in dl.accelerator("B200").sources["hbm_bandwidth"]  # says why 8 TB/s is not used
