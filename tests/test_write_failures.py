"""Disk full, read-only folder, permission denied: one NMTError naming the path, the previous
file intact under its name, no temporary file left behind."""

from __future__ import annotations

import errno
import io
import os
import resource
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from random_checkpoint import single_thread, write_random_checkpoint

import nmt.io
import nmt.training.loop
from helpers import REPO
from nmt.checkpoints.file import load_checkpoint, save_checkpoint
from nmt.errors import NMTError
from nmt.io import atomic_write, atomic_write_json, atomic_write_text
from nmt.io import iter_lines
from nmt.decoding.streaming import translate_stream
from nmt.decoding.translator import Translator



def disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def half_then_full(self, data):
    """Path.write_bytes that writes half of `data`, then finds the disk full."""
    with open(self, "wb") as file:
        file.write(bytes(data[: len(data) // 2]))
    disk_full()


@contextmanager
def file_size_limit(size: int):
    """A real write failure from the kernel (EFBIG) past `size` bytes, then the old limit back."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("where, code", [
    ("write", errno.ENOSPC), ("replace", errno.EROFS), ("mkstemp", errno.EACCES),
])
def test_atomic_write_failures_name_the_path_and_keep_the_old_file(tmp_path, monkeypatch, where,
                                                                   code):
    path = tmp_path / "results.json"
    atomic_write_json(path, {"bleu": 1.0})
    reason = os.strerror(code)

    def fail(*args, **kwargs):
        raise OSError(code, reason)

    if where == "replace":
        monkeypatch.setattr(nmt.io.os, "replace", fail)
    elif where == "mkstemp":
        monkeypatch.setattr(nmt.io.tempfile, "mkstemp", fail)
    else:
        monkeypatch.setattr(Path, "write_text", fail)
    with pytest.raises(NMTError) as raised:
        atomic_write_json(path, {"bleu": 2.0})
    assert str(raised.value).startswith(f"{path}: cannot write ({reason}); the previous "
                                        f"results.json is intact")
    assert path.read_text() == '{\n  "bleu": 1.0\n}\n'
    assert leftovers(tmp_path) == []


def test_a_new_file_that_cannot_be_written_is_not_there_at_all(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(NMTError, match="No space left on device.*nothing was written"):
        atomic_write_text(tmp_path / "hypotheses.test.en", "a\n")
    assert list(tmp_path.iterdir()) == []


def test_other_errors_pass_unchanged_and_leave_nothing(tmp_path):
    def broken(tmp):
        tmp.write_text("half")
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        atomic_write(tmp_path / "x.txt", broken)
    assert list(tmp_path.iterdir()) == []


def test_checkpoint_on_a_full_disk_keeps_the_previous_one(tmp_path, smoke, monkeypatch):
    path = write_random_checkpoint(tmp_path / "last.pt", smoke, step=7)
    state = load_checkpoint(path)
    del state["format"]
    state["progress"]["step"] = 8
    monkeypatch.setattr(Path, "write_bytes", half_then_full)
    with pytest.raises(NMTError, match=r"last\.pt: cannot write \(No space left on device\); "
                                       r"the previous last\.pt is intact"):
        save_checkpoint(path, state)
    monkeypatch.undo()
    assert load_checkpoint(path)["progress"]["step"] == 7
    assert leftovers(tmp_path) == []


def test_checkpoint_past_a_real_file_size_limit(tmp_path, smoke):
    """torch.save writing to a file said only "RuntimeError: [enforce fail at
    inline_container.cc:672] unexpected pos"; the system's reason must reach the user."""
    path = write_random_checkpoint(tmp_path / "best.pt", smoke, step=7)
    state = load_checkpoint(path)
    del state["format"]
    with file_size_limit(path.stat().st_size // 3), pytest.raises(NMTError) as raised:
        save_checkpoint(path, state)
    assert str(raised.value).startswith(f"{path}: cannot write (File too large); the previous "
                                        f"best.pt is intact")
    assert load_checkpoint(path)["progress"]["step"] == 7
    assert leftovers(tmp_path) == []


def test_translation_output_on_a_full_disk(tmp_path, smoke, monkeypatch):
    """--output is written through atomic_write: a failure mid-translation keeps the old file."""
    checkpoint = write_random_checkpoint(tmp_path / "best.pt", smoke)
    translator = Translator.from_checkpoint(checkpoint, search=replace(smoke.search, beam_size=1),
                                            device="cpu")
    output = tmp_path / "out.en"
    output.write_text("an earlier translation\n")

    class FullDisk(io.StringIO):
        def write(self, text):
            disk_full()

    def write(tmp: Path) -> None:
        lines = iter_lines(io.BytesIO("汤姆\n猫\n".encode()), "<stdin>")
        translate_stream(translator, lines, FullDisk(), 1)

    with single_thread(), pytest.raises(NMTError, match=r"out\.en: cannot write \(No space left"):
        atomic_write(output, write)
    assert output.read_text() == "an earlier translation\n"
    assert leftovers(tmp_path) == []


def test_training_stops_with_one_message_when_a_checkpoint_cannot_be_written(smoke_config,
                                                                            monkeypatch):
    """The first last.pt is written; the second finds the disk full: training ends with the
    NMTError (printed as `error: ...` by the scripts), the first checkpoint still loads."""
    config = replace(smoke_config, training=replace(smoke_config.training, max_steps=20,
                                                    validate_every=1000))
    calls = []
    original = Path.write_bytes

    def second_fails(self, data):
        if self.name.startswith(".last.pt."):
            calls.append(self)
            if len(calls) == 2:
                return half_then_full(self, data)
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", second_fails)
    with pytest.raises(NMTError) as raised:
        nmt.training.loop.train(config)
    checkpoints = config.run_dir / "checkpoints"
    assert str(raised.value).startswith(f"{checkpoints / 'last.pt'}: cannot write (No space left "
                                        f"on device); the previous last.pt is intact")
    monkeypatch.undo()
    assert load_checkpoint(checkpoints / "last.pt")["progress"]["step"] == 10
    assert sorted(p.name for p in checkpoints.iterdir()) == ["last.pt"]


@pytest.mark.e2e
def test_stdout_on_a_full_disk_is_one_error(smoke, tmp_path):
    """`translate.py ... > file` on a full disk (here /dev/full): `error: <stdout>: ...`."""
    checkpoint = write_random_checkpoint(tmp_path / "best.pt", smoke)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "translate.py"),
             str(REPO / "configs" / "smoke.yaml"), "training.device=cpu", "search.beam_size=1",
             "--checkpoint", str(checkpoint)],
            input="汤姆\n".encode(), stdout=full, stderr=subprocess.PIPE, timeout=120, check=False)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "error: <stdout>: cannot write (No space left on device)" in stderr
    assert "Traceback" not in stderr
