"""PyTorch's DCP beside the book's checkpoints: FSDP2 saved on 4 gloo ranks, loaded on 2, the run goes on as if
uninterrupted; the book's own format for the same model written beside it."""

from __future__ import annotations

import importlib.util

import pytest

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


@pytest.mark.engines
@pytest.mark.slow
@needs_torch
def test_dcp_saved_on_four_ranks_and_loaded_on_two_goes_on_as_if_uninterrupted():
    from distlib.train.dcp_peer import dcp_reshard

    r = dcp_reshard(save_ranks=4, load_ranks=2, steps=4, saved_after=2)
    assert len(r.uninterrupted_losses) == 4 and len(r.resumed_losses) == 2
    assert r.max_loss_difference < 1e-9
    assert r.dcp_files >= 4 + 1 and r.dcp_bytes > 0  # a file per saving rank, and the metadata
    assert r.book_files == 4 + 1 and r.book_bytes > 0


def test_ranks_that_cannot_split_the_batch_are_refused():
    from distlib.train.dcp_peer import dcp_reshard

    with pytest.raises(ValueError, match="save_ranks must divide the global batch of 12"):
        dcp_reshard(save_ranks=5)
