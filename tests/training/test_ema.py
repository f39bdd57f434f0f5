"""The moving average of the weights: its arithmetic, its cadence, and what translation loads."""

import pytest
import torch

from nmt.training.ema import ExponentialMovingAverage
from nmt.checkpoints.file import inference_weights


def _model(value: float) -> torch.nn.Linear:
    model = torch.nn.Linear(1, 1, bias=False)
    model.weight.data.fill_(value)
    return model


def test_the_average_follows_the_warmed_up_decay():
    model = _model(0.0)
    average = ExponentialMovingAverage(model, decay=0.9, every=1)
    expected = None
    for step, value in enumerate([1.0, 5.0, -2.0, 3.0, 3.0, 8.0], start=1):
        model.weight.data.fill_(value)
        average.update(model, step)
        if expected is None:
            expected = value  # the first update copies the weights
        else:
            n = step - 1  # updates before this one
            decay = min(0.9, (1 + n) / (10 + n))
            expected = decay * expected + (1 - decay) * value
        assert average.model.weight.item() == pytest.approx(expected)
    assert average.updates == 6
    assert model.weight.item() == 8.0, "training's own weights are untouched"


def test_it_averages_every_few_steps_with_the_decay_raised_to_that_power():
    model = _model(1.0)
    average = ExponentialMovingAverage(model, decay=0.5, every=4)
    for step in range(1, 8):
        model.weight.data.fill_(float(step))
        average.update(model, step)
    assert average.updates == 1 and average.model.weight.item() == 4.0  # only step 4
    model.weight.data.fill_(10.0)
    average.update(model, 8)
    decay = min(0.5 ** 4, 2 / 11)
    assert average.model.weight.item() == pytest.approx(decay * 4.0 + (1 - decay) * 10.0)


def test_a_saved_average_continues_where_it_stopped():
    model = _model(2.0)
    first = ExponentialMovingAverage(model, decay=0.9, every=1)
    for step in range(1, 4):
        model.weight.data.add_(1.0)
        first.update(model, step)
    second = ExponentialMovingAverage(_model(0.0), decay=0.9, every=1)
    second.load(first.weights(), first.updates)
    model.weight.data.add_(1.0)
    first.update(model, 4)
    second.update(model, 4)
    assert second.model.weight.item() == pytest.approx(first.model.weight.item())


def test_translation_uses_the_average_where_training_kept_one():
    raw, averaged = {"w": torch.zeros(1)}, {"w": torch.ones(1)}
    assert inference_weights({"model": raw, "averaged_model": averaged}) is averaged
    assert inference_weights({"model": raw, "averaged_model": None}) is raw
    assert inference_weights({"model": raw}) is raw  # a checkpoint from before averaging existed
