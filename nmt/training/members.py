"""Several models of one recipe trained side by side (training.members): an ensemble inside one
time budget.

On a small CPU one process does not keep every core busy: a model's many small operations leave
a second thread partly idle, so two one-thread processes train more tokens between them than one
two-thread process (`bench/bench_train.py` measures both on your machine). `training.members: N`
and `training.channel_members: C` train N + C models at once, each in its own process with its
own seed (seed, seed + 1, ...), its own share of the cores (cores ÷ (N + C) threads, pinned to
those cores) and the whole time budget; `make eval`, `make translate`, `make serve` and `make
align` decode with the N as one ensemble, reranked by the C (nmt/decoding/plan.py), each model
averaged as eval.average says.

Member 1 trains in runs/<name>/ itself, so that every tool that reads one model (alignment, the
TensorBoard pictures, a report row) reads it as before; member k >= 2 trains in
runs/<name>/member<k>/ (nmt/checkpoints/member_dirs.py), a run folder of its own, and logs to
its train.log there. Rerunning the command resumes every member. Ctrl-C reaches every member;
SIGTERM to this process stops member 1 and then the others, each saving its checkpoint first.
nmt/training/loop.py starts the processes (train_side_by_side); this module says what each
member is: its config.

Under torchrun the members start no processes of their own: torchrun's ranks are split into one
group per member (nmt/training/distributed.py) and each rank trains its group's member_config,
logging to the console as any rank does (docs/distributed.md).
"""

from __future__ import annotations

import dataclasses

from nmt.checkpoints.member_dirs import is_channel_member, member_run_dirs
from nmt.config.schema import Config
from nmt.runtime import usable_cores


def member_config(config: Config, k: int) -> Config:
    """Model k's config: model 1 is `config` itself, model k >= 2 a run of its own in
    runs/<name>/member<k>/ with seed + k - 1 (and one model: training.members = 1). The
    training.channel_members last ones train English → Chinese (model.direction: reverse): the
    channel models make eval reranks with (nmt/checkpoints/member_dirs.py)."""
    if k == 1:
        return config
    run_dir = member_run_dirs(config)[k - 1]
    model = (dataclasses.replace(config.model, direction="reverse")
             if is_channel_member(config, k) else config.model)
    return dataclasses.replace(
        config, name=run_dir.name, runs_dir=str(run_dir.parent), seed=config.seed + k - 1,
        model=model, training=dataclasses.replace(config.training, members=1, channel_members=0),
        eval=dataclasses.replace(config.eval, rerank=[], rerank_weights=[]))


def member_configs(config: Config) -> list[Config]:
    """Every model's config (member_config), each with its share of the CPU threads."""
    training = config.training
    threads = training.threads or max(1, len(usable_cores()) // training.trained_models)
    shared = dataclasses.replace(config, training=dataclasses.replace(training, threads=threads))
    return [member_config(shared, k) for k in range(1, training.trained_models + 1)]
