import distlib as dl


def test_formatting():
    assert str(dl.fmt_bytes(1.75e9)) == "1.75 GB"
    assert repr(dl.fmt_rate(5e10)) == "50 GB/s"  # no quotes when glued
    assert str(dl.fmt_seconds(3e-6)) == "3 µs"
    assert str(dl.fmt_seconds(3 * 86400)) == "3 days"
    assert str(dl.fmt_flops(9.894e14)) == "989 TFLOP/s"
