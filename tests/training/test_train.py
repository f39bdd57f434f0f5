"""The train stage on the smoke config: checkpoints, curves, resume, determinism, NaN, guards."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import nmt.training.trainer
from helpers import REPO
from nmt.checkpoints.file import load_checkpoint
from nmt.config.loader import load_config
from nmt.errors import NMTError
from nmt.training.loop import train
from nmt.training.run_dir import config_differences


def with_training(config, **changes):
    return replace(config, training=replace(config.training, **changes))


def wider_embeddings(model):
    return replace(model, rnn=replace(model.rnn, embed_size=48))


def final_parameters(run_dir: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(run_dir / "checkpoints" / "last.pt")["model"]


def assert_same_parameters(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)


@pytest.mark.e2e
def test_smoke_training_writes_checkpoints_curves_and_pictures(smoke_config, monkeypatch):
    saved_steps = []
    original = nmt.training.trainer.save_checkpoint
    monkeypatch.setattr(nmt.training.trainer, "save_checkpoint",
                        lambda path, state: saved_steps.append((path.name, state["progress"]["step"]))
                        or original(path, state))
    run_dir = train(smoke_config)

    last_steps = [step for name, step in saved_steps if name == "last.pt"]
    assert last_steps == [10, 20, 30, 40], "checkpoints every training.checkpoint_every steps"
    checkpoint = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert checkpoint["progress"]["step"] == 40
    assert (run_dir / "checkpoints" / "best.pt").is_file()
    assert (run_dir / "config.yaml").is_file()
    summary = json.loads((run_dir / "train_summary.json").read_text())
    assert summary["step"] == 40 and summary["finished"] and summary["best_dev_bleu"] is not None
    # the machine it ran on, for make report's tables per machine
    assert summary["cpu"] and summary["device"] in ("cpu", "cuda") and summary["dtype"] == "float32"
    assert summary["threads"] >= 1
    ended = datetime.strptime(summary["ended_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - ended).total_seconds()) < 600  # when it ended, in UTC
    [(started, ended_again)] = summary["spans"]  # one session, ending when the run did
    assert ended_again == summary["ended_at"] and started <= ended_again
    # what the two validations (dev search, TensorBoard examples, best.pt) cost of the minutes
    assert 0 < summary["validation_seconds"] < summary["train_seconds"]

    events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"images": 0}).Reload()
    scalars = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/grad_norm", "train/tokens_per_second",
            "dev/loss", "dev/perplexity", "dev/bleu", "dev/chrf"} <= scalars
    assert [e.step for e in events.Scalars("dev/bleu")] == [20, 40]
    assert any(tag.startswith("attention/") for tag in events.Tags()["images"])
    train_loss = [e.value for e in events.Scalars("train/loss")]
    assert train_loss[-1] < train_loss[0], "the loss goes down"


@pytest.mark.e2e
def test_the_same_seed_gives_the_same_numbers(smoke_config, tmp_path):
    config = with_training(smoke_config, max_steps=15, validate_every=100)
    first = final_parameters(train(config))
    second = final_parameters(train(replace(config, runs_dir=str(tmp_path / "again"))))
    assert_same_parameters(first, second)
    other = final_parameters(train(replace(config, seed=7, runs_dir=str(tmp_path / "other"))))
    assert not torch.equal(first["output_layer.weight"], other["output_layer.weight"])


@pytest.mark.e2e
@pytest.mark.parametrize("ema_decay", [0.0, 0.9])
def test_resume_ends_where_an_uninterrupted_run_ends(smoke_config, tmp_path, ema_decay):
    config = with_training(smoke_config, max_steps=30, validate_every=15, checkpoint_every=10,
                           ema_decay=ema_decay)
    uninterrupted = load_checkpoint(train(config) / "checkpoints" / "last.pt")

    resumed_config = replace(config, runs_dir=str(tmp_path / "resumed"))
    train(with_training(resumed_config, max_steps=20))  # "stops" at 20 ...
    run_dir = train(resumed_config)  # ... and the same command resumes to 30
    resumed = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert resumed["progress"]["step"] == 30
    assert_same_parameters(uninterrupted["model"], resumed["model"])
    if ema_decay:  # the average resumes too, and is not the weights themselves
        assert resumed["averaged_updates"] == 30 // 4
        assert_same_parameters(uninterrupted["averaged_model"], resumed["averaged_model"])
        assert not torch.equal(resumed["model"]["output_layer.weight"],
                               resumed["averaged_model"]["output_layer.weight"])
    else:
        assert resumed["averaged_model"] is None


@pytest.mark.e2e
def test_bf16_autocast_trains_on_the_cpu_and_keeps_float32_weights(smoke_config, tmp_path,
                                                                    monkeypatch):
    original, autocast_dtypes, losses = nmt.training.trainer.summed_loss, [], []

    def spy(model, batch, label_smoothing=0.0):
        autocast_dtypes.append(torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu")
                               else None)
        loss = original(model, batch, label_smoothing)
        losses.append(loss.item() / batch.target_tokens)
        return loss

    monkeypatch.setattr(nmt.training.trainer, "summed_loss", spy)
    config = with_training(smoke_config, max_steps=15, validate_every=100, bf16=True)
    run_dir = train(config)
    bf16 = final_parameters(run_dir)
    assert set(autocast_dtypes) == {torch.bfloat16}
    assert {tensor.dtype for tensor in bf16.values()} == {torch.float32}
    assert json.loads((run_dir / "train_summary.json").read_text())["dtype"] == "bfloat16"

    bf16_losses = losses[:]
    autocast_dtypes.clear(), losses.clear()
    fp32 = final_parameters(train(replace(with_training(config, bf16=False),
                                          runs_dir=str(tmp_path / "fp32"))))
    assert set(autocast_dtypes) == {None}
    assert not torch.equal(bf16["output_layer.weight"], fp32["output_layer.weight"]), \
        "bf16 changed the arithmetic"
    torch.testing.assert_close(torch.tensor(bf16_losses), torch.tensor(losses), rtol=0.01, atol=0,
                               msg="but not the training: the same losses within 1%")


def _train_command(config, *overrides: str) -> list[str]:
    return [sys.executable, str(REPO / "scripts" / "train.py"), str(REPO / "configs" / "smoke.yaml"),
            f"data.corpus={config.data.corpus}", f"data.prepared_dir={config.data.prepared_dir}",
            f"runs_dir={config.runs_dir}", *overrides]


def _wait_for(path: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.e2e
def test_kill_9_then_rerun_reaches_the_final_step(smoke_config):
    command = _train_command(smoke_config, "training.max_steps=60", "training.checkpoint_every=5")
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    last = Path(smoke_config.runs_dir) / "smoke" / "checkpoints" / "last.pt"
    _wait_for(last, process)
    process.kill()  # SIGKILL: no chance to save anything
    process.wait()
    killed_at = load_checkpoint(last)["progress"]["step"]
    assert killed_at < 60
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"resuming from {last}" in result.stderr or "resuming from" in result.stderr
    assert load_checkpoint(last)["progress"]["step"] == 60


@pytest.mark.e2e
def test_sigterm_saves_and_exits_cleanly(smoke_config):
    command = _train_command(smoke_config, "training.max_steps=100000", "training.checkpoint_every=1000",
                             "training.validate_every=1000")
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    _wait_for(Path(smoke_config.runs_dir) / "smoke" / "tensorboard", process)
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "stopped by signal" in stderr
    step = load_checkpoint(Path(smoke_config.runs_dir) / "smoke" / "checkpoints" / "last.pt")
    assert 0 < step["progress"]["step"] < 1000


def _poison_step(monkeypatch, bad_steps: set[int]):
    """Make the loss NaN on the given calls (counted from 1)."""
    original, calls = nmt.training.trainer.summed_loss, []

    def poisoned(model, batch, label_smoothing=0.0):
        calls.append(1)
        loss = original(model, batch, label_smoothing)
        return loss * float("nan") if len(calls) in bad_steps else loss

    monkeypatch.setattr(nmt.training.trainer, "summed_loss", poisoned)


@pytest.mark.e2e
def test_a_nan_loss_is_skipped_and_never_reaches_a_checkpoint(smoke_config, monkeypatch):
    _poison_step(monkeypatch, {3, 4})
    run_dir = train(with_training(smoke_config, max_steps=10, on_nan="skip"))
    checkpoint = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    assert checkpoint["progress"]["skipped_batches"] == 2
    assert checkpoint["progress"]["step"] == 10
    assert all(torch.isfinite(p).all() for p in checkpoint["model"].values())


def test_a_nan_loss_stops_the_run_when_asked(smoke_config, monkeypatch):
    _poison_step(monkeypatch, {12})
    config = with_training(smoke_config, max_steps=30, on_nan="stop", checkpoint_every=5)
    with pytest.raises(NMTError, match="loss became nan at step 12"):
        train(config)
    checkpoint = load_checkpoint(Path(config.runs_dir) / "smoke" / "checkpoints" / "last.pt")
    assert checkpoint["progress"]["step"] == 10
    assert all(torch.isfinite(p).all() for p in checkpoint["model"].values())


@pytest.mark.e2e
def test_a_run_directory_of_another_experiment_is_not_overwritten(smoke_config):
    run_dir = train(with_training(smoke_config, max_steps=5, validate_every=100))
    before = (run_dir / "checkpoints" / "last.pt").read_bytes()
    different = replace(smoke_config, model=wider_embeddings(smoke_config.model))
    with pytest.raises(NMTError, match="model.rnn.embed_size"):
        train(different)
    assert (run_dir / "checkpoints" / "last.pt").read_bytes() == before
    for name in ("results.json", "results.ensemble.json"):  # the other experiment's scores
        (run_dir / name).write_text("{}", encoding="utf-8")
    train(with_training(different, overwrite=True, max_steps=5, validate_every=100))
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["config"]["model"]["rnn"]["embed_size"] == 48
    assert not list(run_dir.glob("results*.json"))  # gone with the experiment they scored


def test_checkpoints_load_with_weights_only(smoke_config):
    run_dir = train(with_training(smoke_config, max_steps=5, validate_every=100))
    for name in ("last.pt", "best.pt"):
        torch.load(run_dir / "checkpoints" / name, weights_only=True)


def test_max_minutes_ends_the_run_and_the_command_is_recorded(smoke_config):
    # 0.001 minutes (60 ms) is over after the first step or two; max_steps would allow 40.
    config = with_training(smoke_config, max_steps=40, max_minutes=0.001, validate_every=100)
    run_dir = train(config, command="python scripts/train.py configs/smoke.yaml")
    summary = json.loads((run_dir / "train_summary.json").read_text())
    assert 1 <= summary["step"] < 40 and summary["finished"]
    assert 0 < summary["cpu_seconds"] and summary["threads"] == 1
    assert (run_dir / "commands.txt").read_text().rstrip().endswith(
        "python scripts/train.py configs/smoke.yaml")
    # Rerun with its minutes spent (as `make eval` reruns `make train`): no step, no validation.
    last = (run_dir / "checkpoints" / "last.pt").stat().st_mtime_ns
    train(config)
    again = json.loads((run_dir / "train_summary.json").read_text())
    assert again["step"] == summary["step"] and again["finished"]
    assert (run_dir / "checkpoints" / "last.pt").stat().st_mtime_ns == last


def test_with_no_epoch_or_step_cap_the_minutes_end_the_run(smoke_config):
    """The recipes' budget is time: epochs run on until max_minutes (or early stopping) ends it."""
    # One batch an epoch: many epochs pass in the 2.4 seconds, even on a busy machine.
    config = with_training(smoke_config, max_epochs=None, max_steps=None, max_minutes=0.04,
                           batch_tokens=100_000, patience=1000, validate_every=1000)
    summary = json.loads((train(config) / "train_summary.json").read_text())
    assert summary["epoch"] >= 2 and summary["finished"]
    assert 2.4 <= summary["train_seconds"] < 30


def test_the_default_recipe_is_bounded_by_minutes_not_epochs():
    training = load_config(REPO / "configs" / "tatoeba.yaml").training
    assert training.max_epochs is None and training.max_steps is None
    assert training.max_minutes == 30


def test_a_run_saved_before_a_key_existed_resumes_when_the_key_keeps_its_default(smoke_config):
    saved = smoke_config.to_dict()
    del saved["model"]["architecture"], saved["training"]["src_word_dropout"]  # an older schema
    assert config_differences(saved, smoke_config.to_dict()) == []
    changed = with_training(smoke_config, src_word_dropout=0.1).to_dict()
    assert config_differences(saved, changed) == ["training.src_word_dropout"]


def test_a_run_folder_moved_or_spelled_otherwise_resumes(smoke_config, tmp_path):
    """Where a run folder is (runs_dir) is not what it holds: a moved run resumes."""
    moved = replace(smoke_config, runs_dir=str(tmp_path / "elsewhere"))
    assert config_differences(smoke_config.to_dict(), moved.to_dict()) == []
    assert config_differences(smoke_config.to_dict(), with_training(moved, lr=0.1).to_dict()) == [
        "training.lr"]


@pytest.mark.e2e
def test_init_from_starts_a_new_run_from_trained_weights(smoke_config):
    base_dir = train(with_training(smoke_config, max_steps=10, validate_every=100))
    base = final_parameters(base_dir)
    # lr ~0: one step of fine-tuning leaves the weights it started from
    tuned = replace(with_training(smoke_config, init_from=str(base_dir / "checkpoints" / "last.pt"),
                                  max_steps=1, validate_every=100, lr=1e-12), name="tuned")
    tuned_dir = train(tuned)
    checkpoint = load_checkpoint(tuned_dir / "checkpoints" / "last.pt")
    assert checkpoint["progress"]["step"] == 1, "step count, optimizer and schedule start afresh"
    for name, weight in base.items():
        torch.testing.assert_close(checkpoint["model"][name], weight, rtol=0, atol=1e-6, msg=name)
    fresh = final_parameters(train(replace(tuned, training=replace(tuned.training, init_from=None),
                                           name="fresh")))
    assert not torch.equal(fresh["output_layer.weight"], base["output_layer.weight"])

    resumed = train(with_training(tuned, max_steps=2))  # its own last.pt, not init_from
    assert load_checkpoint(resumed / "checkpoints" / "last.pt")["progress"]["step"] == 2


def test_init_from_a_checkpoint_of_another_model_is_a_clear_error(smoke_config):
    base_dir = train(with_training(smoke_config, max_steps=2, validate_every=100))
    wider = replace(smoke_config, name="wider", model=wider_embeddings(smoke_config.model))
    with pytest.raises(NMTError, match="init_from.*do not fit this run's model"):
        train(with_training(wider, init_from=str(base_dir / "checkpoints" / "last.pt")))
    checkpoint = load_checkpoint(base_dir / "checkpoints" / "last.pt")
    checkpoint["tgt_vocab"] = checkpoint["tgt_vocab"][:-1] + ["another-word"]
    other_vocab = base_dir / "other_vocab.pt"
    torch.save(checkpoint, other_vocab)
    with pytest.raises(NMTError, match="target vocabulary is not this run's"):
        train(replace(with_training(smoke_config, init_from=str(other_vocab)), name="other"))
