"""The Makefile: `make help` lists every target with one line that says what it does; each stage
of a target gets the keys of ARGS it reads (nmt/config/stages.py) and a key no stage reads stops
make before any work; the examples of the Makefile's header and of the README run as written.

`make -n` prints the commands a target would run and runs none of them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import REPO
from nmt.config.loader import load_config
from nmt.config.stages import STAGES, TOP_LEVEL, pick, reads

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")

# The script of each command line a target runs with ARGS → the stage whose keys it gets
SCRIPT_STAGES = {"scripts/prepare.py": "prepare", "scripts/train.py": "train",
                 "scripts/evaluate.py": "evaluate", "scripts/tune.py": "tune",
                 "scripts/translate.py": "translate", "scripts/serve.py": "serve",
                 "scripts/align.py": "align", "bench/bench_train.py": "train",
                 "bench/bench_decode.py": "evaluate", "bench/bench_align.py": "align",
                 "bench/bench_serve.py": "serve"}
# One override of each top-level key of the config
SAMPLES = {"name": "name=x", "seed": "seed=7", "runs_dir": "runs_dir=r", "data": "data.workers=1",
           "model": "model.dropout=0.2", "training": "training.threads=1",
           "distill": "distill.n_best=2", "search": "search.beam_size=2", "eval": "eval.split=dev",
           "export": "export.quantization=float32", "serve": "serve.max_lines=3"}
TARGETS_WITH_ARGS = ("prepare", "train", "eval", "tune", "student", "translate", "serve", "align",
                     "align-eval", "bench")
TEACHER = "configs/tatoeba.yaml"  # CONFIG's default: make student's teacher


def make(*arguments: str) -> subprocess.CompletedProcess:
    """`make ARGUMENTS` in the checkout, with none of the caller's make variables (`make test
    ARGS=...` would hand its ARGS down through MAKEFLAGS)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "ARGS", "TEACHER_ARGS", "CONFIG",
                        "STUDENT", "NPROC", "NNODES")}
    return subprocess.run(["make", *arguments], cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=120)


def script_lines(*arguments: str) -> list[list[str]]:
    """The command lines of `make -n ARGUMENTS` that run a script of SCRIPT_STAGES, as words."""
    done = make("-n", *arguments)
    assert done.returncode == 0, done.stderr
    lines = [shlex.split(line) for line in done.stdout.splitlines()
             if any(f" {script}" in line for script in SCRIPT_STAGES)]
    assert lines, done.stdout
    return lines


def stage_of(words: list[str]) -> str:
    return next(SCRIPT_STAGES[w] for w in words if w in SCRIPT_STAGES)


def phony_targets() -> list[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split()


def test_make_help_lists_every_target_with_a_line():
    out = make("-s", "help").stdout
    listed = dict(re.findall(r"^  make (\S+)\s+(.+)$", out, re.M))
    assert sorted(listed) == sorted(phony_targets())
    assert all(len(line) > 10 for line in listed.values())
    assert all(example in out for example in header_examples())


def test_make_eval_gives_the_train_step_no_decoding_key():
    keys = ["eval.channel_weight=0", "search.beam_size=10", "export.quantization=float32"]
    prepare, train, evaluate = script_lines("eval", "ARGS=" + " ".join(keys + ["training.threads=1"]))
    assert stage_of(train) == "train" and not any(w.startswith(("eval.", "search.", "export."))
                                                  for w in train)
    assert "training.threads=1" in train and "training.threads=1" not in prepare
    assert evaluate[-4:] == keys + ["training.threads=1"]


def test_make_student_gives_the_teacher_none_of_its_args():
    lines = script_lines("student", "ARGS=training.max_minutes=60")
    teacher = [words for words in lines if TEACHER in words]
    student = [words for words in lines if TEACHER not in words]
    assert [stage_of(w) for w in teacher] == ["prepare", "train"]
    assert not any("training.max_minutes=60" in words for words in teacher)
    assert [stage_of(w) for w in student] == ["train", "evaluate"]
    assert all(words[-1] == "training.max_minutes=60" for words in student)
    # TEACHER_ARGS: the teacher's training, and nothing of the student's
    lines = script_lines("student", "TEACHER_ARGS=training.max_minutes=40 -v",
                         "ARGS=training.max_minutes=60")
    assert lines[1][-2:] == ["training.max_minutes=40", "-v"] and TEACHER in lines[1]
    assert "training.max_minutes=40" not in lines[0] and "-v" not in lines[0]  # its prepare
    assert all("training.max_minutes=40" not in words for words in lines[2:])


def test_options_go_to_the_targets_own_script_alone():
    prepare, align = script_lines("align-eval", "ARGS=--reverse r.pt name=x")
    assert prepare[-1] == "name=x" and "--reverse" not in prepare
    assert align[align.index("--reverse"):][:3] == ["--reverse", "r.pt", "name=x"]


@pytest.mark.parametrize("arguments, key, readers", [
    (["eval", "ARGS=serve.max_runs=2"], "serve.max_runs=2", "it is read by serve"),
    (["train", "ARGS=training.lr=1 search.beam_size=3"], "search.beam_size=3",
     "it is read by evaluate, tune, translate"),
    (["prepare", "ARGS=model.dropout=0.2"], "model.dropout=0.2", "it is read by train"),
    (["translate", "ARGS=serve.max_lines=2"], "serve.max_lines=2", "it is read by serve"),
    (["student", "TEACHER_ARGS=eval.channel_weight=0"], "TEACHER_ARGS eval.channel_weight=0",
     "it is read by evaluate"),
    (["eval", "ARGS=trainig.lr=1"], "trainig.lr=1", "did you mean training?"),
])
def test_a_key_no_stage_of_the_target_reads_stops_make_before_any_work(arguments, key, readers):
    done = make("-n", *arguments)  # make -n prints every command it would run: here none
    assert done.returncode != 0 and done.stdout == ""
    assert key in done.stderr and readers in done.stderr
    assert "no stage that make" in done.stderr or "no key" in done.stderr


def test_teacher_args_are_for_make_student_alone():
    done = make("-n", "train", "TEACHER_ARGS=training.max_minutes=40")
    assert done.returncode != 0 and done.stdout == ""
    assert "TEACHER_ARGS is read by make student alone" in done.stderr


@pytest.mark.parametrize("target", TARGETS_WITH_ARGS)
def test_each_stage_of_a_target_gets_the_keys_it_reads(target):
    stages = [stage_of(words) for words in script_lines(target)]
    readable = [SAMPLES[k] for k in TOP_LEVEL if any(reads(s, SAMPLES[k]) for s in stages)]
    for words in script_lines(target, "ARGS=" + " ".join(readable)):
        given = [w for w in words if w in SAMPLES.values()]
        if target == "student" and TEACHER in words:
            assert given == [], words
        else:
            assert given == pick(stage_of(words), readable), words
    unread = [SAMPLES[k] for k in TOP_LEVEL if SAMPLES[k] not in readable]
    assert (target in ("serve", "bench")) == (unread == [])  # serve.* reaches serve alone
    if unread:
        done = make("-n", target, f"ARGS={unread[0]}")
        assert done.returncode != 0 and done.stdout == "" and unread[0] in done.stderr


def header_examples() -> list[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return re.findall(r"^#   (make .*?)(?:\s+# .*)?$", text, re.M)


def readme_examples() -> list[str]:
    """The make commands of the README's Set up, Everyday commands and Your own experiment."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = []
    for section in ("Set up", "Everyday commands", "Your own experiment"):
        body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
        for block in re.findall(r"```bash\n(.*?)```", body, re.S):
            found += [re.sub(r"\s+# .*$", "", line).split("| ")[-1]
                      for line in block.splitlines() if "make " in line]
    return found


def example_ids(examples: list[str]) -> list[str]:
    return [example.split("ARGS")[0].strip() for example in examples]


@pytest.mark.parametrize("example", header_examples() + readme_examples(),
                         ids=example_ids(header_examples() + readme_examples()))
def test_the_header_and_readme_examples_run_as_written(example):
    words = shlex.split(example)
    assert words[0] == "make"
    done = make("-n", *words[1:])
    assert done.returncode == 0, done.stderr
    variables = dict(w.split("=", 1) for w in words if "=" in w)
    config = REPO / variables.get("CONFIG", TEACHER)
    overrides = pick("train", shlex.split(variables.get("ARGS", "")), options=False)
    trained = load_config(config, overrides).training.trained_models
    assert int(variables.get("NPROC", "1")) % trained == 0 or "NPROC" not in variables, (
        f"{example}: {config.name} trains {trained} models, a multiple of which NPROC must be")
    for run in re.findall(r"runs/([\w.-]+)", example):  # a run some config of configs/ makes
        assert any(re.search(rf"^name: {re.escape(run)}\b", path.read_text(encoding="utf-8"), re.M)
                   for path in (REPO / "configs").glob("*.yaml")), run


def test_the_examples_were_found():
    assert len(header_examples()) >= 4 and any("NPROC" in e for e in header_examples())
    assert any("compare" in e for e in readme_examples()) and len(readme_examples()) >= 10


def test_make_setup_without_a_c_compiler_says_what_to_install(tmp_path):
    """Before the virtual environment and pip: PYTHON=false fails at once if the check is gone."""
    empty = tmp_path / "bin"
    empty.mkdir()
    make_path = shutil.which("make")
    env = {"PATH": str(empty), "HOME": str(tmp_path)}
    done = subprocess.run([make_path, "setup", f"VENV={tmp_path / 'venv'}", "PYTHON=false"],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0
    assert "no C compiler (cc or gcc) found" in done.stderr and "build-essential" in done.stderr
    assert "xcode-select --install" in done.stderr
    assert not Path(tmp_path / "venv").exists()


def test_every_stage_has_a_script_line_or_a_reason():
    """The stages make hands ARGS to are STAGES' (average and dual_score have scripts alone)."""
    assert set(SCRIPT_STAGES.values()) == set(STAGES) - {"average", "dual_score"}
