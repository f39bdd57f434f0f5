"""Stage 3, train: prepared data and a config in, checkpoints and TensorBoard curves out.

`loop.train(config)` reads top to bottom: `setup` (processes, prepared data on every machine,
the run folder `run_dir`, the data in memory) → `trainer.Trainer` (model, `optim`izer and
schedule, the weights' moving average `ema`; each step: `loss` with `word_dropout`, log to the
`board`, `validate` on dev with the shown `examples`, save checkpoints) until `progress` says
stop. `distributed` is what little the loop knows about torchrun.
"""
