"""Learning-rate schedules."""

import pytest
import torch

from nmt.config.schema import TrainingConfig
from nmt.training.optim import Schedule, build_optimizer


def _schedule(**changes):
    config = TrainingConfig(**changes)
    model = torch.nn.Linear(2, 2)
    optimizer = build_optimizer(model, config)
    return Schedule(optimizer, config), optimizer


def test_plateau_halves_after_patience_validations_without_gain():
    schedule, optimizer = _schedule(schedule="plateau", lr=1e-3, plateau_patience=1,
                                    plateau_factor=0.5, min_lr=3e-4)
    schedule.after_validation(improved=True)
    schedule.after_validation(improved=False)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-3)
    schedule.after_validation(improved=False)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(5e-4)
    schedule.after_validation(improved=False)
    schedule.after_validation(improved=False)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(3e-4), "never below min_lr"


def test_warmup_then_inverse_square_root_decay():
    schedule, optimizer = _schedule(schedule="warmup_decay", lr=1e-3, warmup_steps=100)
    rates = {}
    for step in (1, 50, 100, 400):
        schedule.before_step(step)
        rates[step] = optimizer.param_groups[0]["lr"]
    assert rates[1] == pytest.approx(1e-5) and rates[50] == pytest.approx(5e-4)
    assert rates[100] == pytest.approx(1e-3) and rates[400] == pytest.approx(5e-4)


def test_state_round_trips():
    schedule, _ = _schedule(schedule="plateau", plateau_patience=0)
    schedule.after_validation(improved=False)
    restored, optimizer = _schedule(schedule="plateau", plateau_patience=0)
    restored.load_state_dict(schedule.state_dict())
    assert restored.lr == schedule.lr and optimizer.param_groups[0]["lr"] == schedule.lr
