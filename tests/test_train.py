"""The book's tiny trainer (distlib.train): its model's gradients, its data, one process learning."""

from __future__ import annotations

import numpy as np
import pytest

from distlib.train.data import GLOBAL_BATCH, global_batch
from distlib.train.model import Config, init_units, loss_and_grads, unit_specs

CONFIG = Config()
N = CONFIG.params


# ---------------------------------------------------------------------------
# The model on its own
# ---------------------------------------------------------------------------


def test_every_kind_of_gradient_matches_central_differences():
    config = Config(layers=2)  # every kind of tensor, two blocks deep: the same code as eight
    units = init_units(config, 1)
    tokens, targets = global_batch(1, 0, batch=3, seq=config.seq, vocab=config.vocab)
    _, grads = loss_and_grads(config, units, tokens, targets)
    h, checked, worst = 1e-5, set(), 0.0
    for k, spec in enumerate(unit_specs(config)):
        for name, (a, b) in spec.offsets().items():
            for i in (a, (a + b) // 2 + 1, b - 1):
                if abs(grads[k][i]) < 1e-8:  # an embedding row no token of the batch uses: exactly 0
                    continue
                plus = [u.copy() for u in units]
                plus[k][i] += h
                minus = [u.copy() for u in units]
                minus[k][i] -= h
                fd = (loss_and_grads(config, plus, tokens, targets)[0]
                      - loss_and_grads(config, minus, tokens, targets)[0]) / (2 * h)  # fmt: skip
                worst = max(worst, abs(fd - grads[k][i]) / max(abs(fd), abs(grads[k][i])))
                checked.add((spec.name.rstrip("0123456789"), name))
    kinds = {(s.name.rstrip("0123456789"), n) for s in unit_specs(config) for n, _, _ in s.tensors}
    assert checked == kinds  # at least one element of every kind of parameter
    assert worst < 1e-6


def test_a_wrong_gradient_would_be_caught():
    # The check above can fail: a gradient off by 1e-4 relative is far outside it.
    config = Config(layers=1)
    units = init_units(config, 0)
    tokens, targets = global_batch(0, 0, batch=2)
    _, grads = loss_and_grads(config, units, tokens, targets)
    i = unit_specs(config)[1].offsets()["w1"][0]
    plus, minus = [u.copy() for u in units], [u.copy() for u in units]
    plus[1][i] += 1e-5
    minus[1][i] -= 1e-5
    fd = (loss_and_grads(config, plus, tokens, targets)[0] - loss_and_grads(config, minus, tokens, targets)[0]) / 2e-5
    assert abs(fd - grads[1][i] * (1 + 1e-4)) / abs(fd) > 1e-6 > abs(fd - grads[1][i]) / abs(fd)


def test_the_global_batch_splits_or_is_refused():
    from distlib.train.data import local_batch

    tokens, targets = global_batch(0, 0)
    parts = [local_batch(tokens, targets, r, 4)[0] for r in range(4)]
    assert np.array_equal(np.concatenate(parts), tokens)
    with pytest.raises(ValueError, match=f"dp must divide the global batch of {GLOBAL_BATCH} sequences, got 5"):
        local_batch(tokens, targets, 0, 5)
