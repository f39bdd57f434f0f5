"""Training under torchrun: two gloo processes on CPU against one process on the same batches,
and the default's two members (training.members: 2) trained one rank each.

Each test launches `python -m torch.distributed.run --standalone --nproc-per-node 2` as a
subprocess (a free port every time), on the tiny corpus prepared once for the whole module.
`model.dropout=0` leaves the batches as the only randomness, so the numbers are comparable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from helpers import REPO, write_tiny_corpus
from nmt.checkpoints.choose import choose_checkpoints
from nmt.checkpoints.file import load_checkpoint
from nmt.checkpoints.member_dirs import member_run_dirs
from nmt.config.loader import load_config
from nmt.data.batching import load_examples, make_batches
from nmt.data.vocab import Vocab
from nmt.data.prepare import prepare
from nmt.errors import NMTError
from nmt.runtime import set_threads
from nmt.training.distributed import Distributed, member_ranks
from nmt.training.loop import train

pytestmark = pytest.mark.e2e  # every test here runs the real stages

needs_gloo = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="this torch build has no torch.distributed with the gloo backend")

SMOKE = REPO / "configs" / "smoke.yaml"
STEPS = 20
# batch_tokens=16 on the tiny corpus: mostly 3 short sentences a batch (2 for rank 0, 1 for
# rank 1), and a few batches of one long sentence, of which rank 1 gets no share at all.
OVERRIDES = ["model.dropout=0", "training.batch_tokens=16", "training.validate_every=10",
             "training.checkpoint_every=5"]
TIMEOUT = 180  # seconds; a hung collective would otherwise wait for the 30-minute group timeout


@dataclass
class Setup:
    data: list[str]  # overrides naming the corpus and the prepared data shared by every run
    reference: dict[str, torch.Tensor]  # parameters of one process after STEPS steps
    reference_summary: dict


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Setup:
    """Prepare the data once and train the one-process reference in this process."""
    root = tmp_path_factory.mktemp("distributed")
    corpus = write_tiny_corpus(root / "raw" / "cmn.txt")
    data = [f"data.corpus={corpus}", f"data.prepared_dir={root / 'prepared'}"]
    config = load_config(SMOKE, [*data, f"runs_dir={root / 'reference'}", *OVERRIDES,
                                 f"training.max_steps={STEPS}"])
    run_dir = train(config)
    summary = json.loads((run_dir / "train_summary.json").read_text())
    return Setup(data, load_checkpoint(run_dir / "checkpoints" / "last.pt")["model"], summary)


def torchrun(script: Path, *args: str, cwd: Path = REPO) -> tuple[int, str]:
    """Run `script` on 2 ranks; (exit status, stdout + stderr). A run past TIMEOUT fails the test."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
               "2", "--tee", "3", str(script), *args]  # --tee: each line says which rank wrote it
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        # torchrun starts each worker in a session of its own, so only torchrun can end them
        # all: SIGTERM makes it stop them (SIGKILL after its 30-second grace).
        process.terminate()
        output, _ = process.communicate(timeout=60)
        pytest.fail(f"torchrun still running after {TIMEOUT} s (a hang?):\n{output[-3000:]}")
    return process.returncode, output


def train_2_ranks(setup: Setup, runs_dir: Path, *overrides: str,
                  script: Path = REPO / "scripts" / "train.py") -> str:
    status, output = torchrun(script, str(SMOKE), *setup.data, f"runs_dir={runs_dir}", *OVERRIDES,
                              *overrides)
    assert status == 0, output[-3000:]
    return output


# Two ranks sum a gradient in another order than one process, so it differs in its last bits.
# Adam's step lr * g / (|g| + eps) turns that into a visible difference only where |g| is near
# eps (1e-8): seen on Intel Xeon (AMX), one weight of 3,072 with g = 5e-10 moved 1.4e-5 apart
# after the first step, and no further. A rank that trained on other data than its share would
# move many weights by up to lr = 5e-3 a step, far above this tolerance.
PARAMETER_ATOL = 1e-4


def assert_close_parameters(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=PARAMETER_ATOL, msg=name)


def recording_script(tmp_path: Path) -> Path:
    """scripts/train.py, but every atomic file write is noted in written.<rank>.txt."""
    script = tmp_path / "recording_train.py"
    script.write_text(textwrap.dedent(f"""
        import os, runpy
        import nmt.io

        write = nmt.io.atomic_write

        def recorded(path, writer):
            with open({str(tmp_path)!r} + f"/written.{{os.environ['RANK']}}.txt", "a") as log:
                log.write(f"{{path}}\\n")
            write(path, writer)

        nmt.io.atomic_write = recorded  # before nmt.checkpoints.file imports it by name
        runpy.run_path({str(REPO / "scripts" / "train.py")!r}, run_name="__main__")
    """))
    return script


@dataclass
class TwoRankRun:
    run_dir: Path
    output: str  # both ranks' console, each line prefixed [default0]: or [default1]:
    written: dict[int, list[str]]  # rank → the files it wrote


@pytest.fixture(scope="module")
def two_rank_run(setup, tmp_path_factory) -> TwoRankRun:
    """STEPS steps on 2 ranks, noting which rank writes which file; shared by two tests."""
    root = tmp_path_factory.mktemp("two_ranks")
    output = train_2_ranks(setup, root / "runs", f"training.max_steps={STEPS}",
                           script=recording_script(root))
    written = {rank: (root / f"written.{rank}.txt").read_text().splitlines()
               for rank in (0, 1) if (root / f"written.{rank}.txt").exists()}
    return TwoRankRun(root / "runs" / "smoke", output, written)


@needs_gloo
def test_two_ranks_end_where_one_process_ends_on_the_same_global_batches(setup, two_rank_run):
    run_dir = two_rank_run.run_dir
    assert_close_parameters(setup.reference, load_checkpoint(run_dir / "checkpoints" / "last.pt")["model"])
    # batch_tokens is the global batch: both runs saw the same target tokens in the same steps.
    summary = json.loads((run_dir / "train_summary.json").read_text())
    assert summary["target_tokens"] == setup.reference_summary["target_tokens"]
    assert summary["step"] == STEPS

    # The run passed a batch with fewer sentences than ranks (rank 1 had no share of it).
    config = load_config(SMOKE, setup.data)
    prepared = prepare(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    examples = load_examples(prepared.tokens("train", "zh"), prepared.tokens("train", "en"),
                             src_vocab, tgt_vocab, max_length=config.training.max_length)
    batches = make_batches(examples, 16, config.seed, epoch=0)
    assert any(len(batch) == 1 for batch in batches[:STEPS])


@needs_gloo
def test_rank_0_alone_writes_files_and_logs(two_rank_run):
    run_dir = two_rank_run.run_dir
    files = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
    events = [f for f in files if f.startswith("tensorboard/")]
    assert len(events) == 1, files  # one SummaryWriter, rank 0's
    assert [f for f in files if f not in events] == [
        "checkpoints/best.pt", "checkpoints/last.pt", "commands.txt", "config.yaml", "run.json",
        "train_summary.json"]
    assert (run_dir / "commands.txt").read_text().count("torchrun --nproc-per-node 2") == 1
    assert 1 not in two_rank_run.written, two_rank_run.written
    # last.pt every 5 steps; best.pt after each validation (10, 20) that improved.
    names = [Path(p).name for p in two_rank_run.written[0]]
    assert names.count("last.pt") == STEPS // 5 and 1 <= names.count("best.pt") <= 2
    assert names.count("config.yaml") == names.count("train_summary.json") == 1

    lines = two_rank_run.output.splitlines()
    rank_0 = [line for line in lines if line.startswith("[default0]:")]
    rank_1 = [line for line in lines if line.startswith("[default1]:")]
    assert any("2 ranks" in line for line in rank_0) and any(":run: " in line for line in rank_0)
    assert not [line for line in rank_1 if " INFO " in line or ":run: " in line], rank_1


def separate_disks_script(tmp_path: Path) -> Path:
    """scripts/train.py, but rank 1 has a runs folder of its own, like a machine of its own."""
    script = tmp_path / "separate_disks_train.py"
    script.write_text(textwrap.dedent(f"""
        import os, runpy, sys

        if os.environ["RANK"] != "0":  # the last override wins
            sys.argv.append(f"runs_dir={str(tmp_path)}/rank{{os.environ['RANK']}}-runs")
        runpy.run_path({str(REPO / "scripts" / "train.py")!r}, run_name="__main__")
    """))
    return script


@needs_gloo
def test_resume_under_torchrun_ends_where_an_uninterrupted_run_ends(setup, tmp_path):
    train_2_ranks(setup, tmp_path / "runs", f"training.max_steps={STEPS // 2}")  # mid-epoch
    last = tmp_path / "runs" / "smoke" / "checkpoints" / "last.pt"
    assert load_checkpoint(last)["progress"]["step"] == STEPS // 2
    # Rank 1 cannot see the checkpoint on rank 0's disk: it resumes from what rank 0 sends.
    output = train_2_ranks(setup, tmp_path / "runs", f"training.max_steps={STEPS}",
                           script=separate_disks_script(tmp_path))
    assert f"resuming from {last} at step {STEPS // 2}" in output
    assert not (tmp_path / "rank1-runs").exists()

    checkpoint = load_checkpoint(last)
    assert checkpoint["progress"]["step"] == STEPS
    assert_close_parameters(setup.reference, checkpoint["model"])
    # Each rank's own random state is saved for its own resumption (seeded with seed + rank).
    assert len(checkpoint["rng"]) == 2
    assert not torch.equal(checkpoint["rng"][0]["torch"], checkpoint["rng"][1]["torch"])


@needs_gloo
@pytest.mark.parametrize("error", ["RuntimeError", "NMTError"])
def test_a_rank_that_fails_ends_the_job_with_its_error(setup, tmp_path, error):
    """A bug (traceback) or a user error (`error: ...`, exit 2) on rank 1 while rank 0 waits."""
    script = tmp_path / "failing_train.py"
    script.write_text(textwrap.dedent(f"""
        import os, runpy
        import nmt.training.trainer
        from nmt.errors import NMTError

        loss, calls = nmt.training.trainer.summed_loss, []

        def failing(model, batch, label_smoothing=0.0):
            calls.append(1)
            if os.environ["RANK"] == "1" and len(calls) == 3:
                raise {error}("rank 1 failed on purpose at step 3")
            return loss(model, batch, label_smoothing)

        nmt.training.trainer.summed_loss = failing
        runpy.run_path({str(REPO / "scripts" / "train.py")!r}, run_name="__main__")
    """))
    status, output = torchrun(script, str(SMOKE), *setup.data, f"runs_dir={tmp_path / 'runs'}",
                              *OVERRIDES, "training.max_steps=100")
    assert status != 0, output[-3000:]
    assert "rank 1 failed on purpose at step 3" in output
    if error == "NMTError":
        assert re.search(r"\[default1\]:error: rank 1 failed on purpose", output), output[-3000:]


def test_threads_0_shares_the_cores_among_the_ranks_of_a_machine(monkeypatch):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # torchrun --nproc-per-node 2
        assert set_threads(0) == max(1, cores // 2) == torch.get_num_threads()
        monkeypatch.setenv("LOCAL_WORLD_SIZE", str(4 * cores))
        assert set_threads(0) == 1
        assert set_threads(3) == 3  # a number given in the config is kept
    finally:
        torch.set_num_threads(before)


def test_members_split_the_ranks_into_interleaved_groups():
    """Member k is global ranks k-1, k-1+M, ...: every member's rank 0 is on machine 0."""
    assert member_ranks(2, 2, 2) == [[0], [1]]  # make train NPROC=2 with the default
    assert member_ranks(4, 1, 4) == [[0, 1, 2, 3]]  # one model: the whole world
    assert member_ranks(8, 2, 4) == [[0, 2, 4, 6], [1, 3, 5, 7]]  # 2 machines of 4
    assert member_ranks(6, 3, 3) == [[0, 3], [1, 4], [2, 5]]
    assert member_ranks(4, 4, 4) == [[0], [1], [2], [3]]  # one machine: any divisor will do
    with pytest.raises(NMTError, match=r"2 models .* do not divide the 3 .*WORLD_SIZE"):
        member_ranks(3, 2, 3)
    with pytest.raises(NMTError, match=r"more than the 2 processes\s+per machine .*LOCAL_WORLD_SIZE"
                                       r".*Set NPROC to at least 4"):
        member_ranks(4, 4, 2)  # 2 machines of 2: members 3 and 4 would lead from machine 1


def test_a_world_the_members_do_not_divide_is_refused_before_joining(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    with pytest.raises(NMTError, match="do not divide"):
        Distributed.from_env("cpu", members=2)
    assert not dist.is_initialized()
    monkeypatch.setenv("WORLD_SIZE", "1")  # python, not torchrun: one rank, member 1
    assert Distributed.from_env("cpu", members=2) == Distributed()


# configs/tatoeba.yaml with its two translating members only (the channel member left out: three
# ranks on two cores), sized to the tiny corpus and cut short; a validated checkpoint every 2
# steps keeps the 5 that its eval.average (best:5) asks for.
TATOEBA = REPO / "configs" / "tatoeba.yaml"
TATOEBA_STEPS = 10
TATOEBA_TINY = ["data.dev_size=20", "data.test_size=20", "data.src_subword_vocab=60",
                "data.tgt_subword_vocab=60", f"training.max_steps={TATOEBA_STEPS}",
                "training.validate_every=2", "training.checkpoint_every=2",
                "training.members=2", "training.channel_members=0"]


@needs_gloo
def test_the_default_trains_its_two_members_one_rank_each_under_torchrun(tmp_path):
    """make train NPROC=2 (two members): rank 0 trains member 1 in runs/<name>/, rank 1 member 2
    beside it."""
    corpus = write_tiny_corpus(tmp_path / "raw" / "cmn.txt")
    overrides = [f"data.corpus={corpus}", f"data.prepared_dir={tmp_path / 'prepared'}",
                 f"runs_dir={tmp_path / 'runs'}", *TATOEBA_TINY]
    status, output = torchrun(REPO / "scripts" / "train.py", str(TATOEBA), *overrides)
    assert status == 0, output[-3000:]

    config = load_config(TATOEBA, overrides)
    assert config.training.members == 2
    folders = member_run_dirs(config)
    assert folders == [config.run_dir, config.run_dir / "member2"]
    for folder in folders:
        summary = json.loads((folder / "train_summary.json").read_text())
        assert summary["finished"] and summary["step"] == TATOEBA_STEPS
    first, second = (load_checkpoint(f / "checkpoints" / "last.pt") for f in folders)
    assert second["config"]["seed"] == first["config"]["seed"] + 1
    assert len(first["rng"]) == len(second["rng"]) == 1  # each member trained on one rank
    assert not torch.equal(next(iter(first["model"].values())),
                           next(iter(second["model"].values())))  # two different models
    # Each member's rank 0 logs: rank 1 speaks for member 2, not only in warnings.
    assert re.search(r"\[default1\]:.* INFO .*model: ", output), output[-3000:]

    chosen = choose_checkpoints(config)  # what make eval decodes: the 2 members' averages
    assert chosen.label == "ensemble.average_best5"
    assert chosen.paths == [f / "checkpoints" / "average_best5.pt" for f in folders]
