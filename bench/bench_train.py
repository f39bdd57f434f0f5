"""Training throughput on real batches, beside the machine's matmul speed in the same run.

    python bench/bench_train.py configs/tatoeba.yaml [--steps 30] [overrides ...]
    python bench/bench_train.py configs/tatoeba.yaml --also configs/transformer.yaml  # both families
    python bench/bench_train.py configs/tatoeba.yaml training.members=1  # one model, all threads

Prints, per config, target tokens/s of full training steps (forward, backward, clipping, Adam),
the FLOPs of a step as torch's FlopCounterMode counts them, the machine's matmul GFLOP/s in the
dtype that config trains in (float32, or bfloat16 when training.bf16 is on), and their ratio: the
model FLOPs utilisation. A config with training.members > 1 (the default) is measured as
`make train` runs it: every member at once in its own process, pinned to its share of the cores,
timed over the same steps; the figure is their sum, and the matmul speed is every member's
measured at once. A benchmark prints figures; it asserts nothing.
"""

import argparse
import multiprocessing
import os
import queue
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from nmt.config.loader import load_config
from nmt.data.batching import collate, make_batches
from nmt.data.token_arrays import PairArrays, TokenArrays
from nmt.data.vocab import Vocab
from nmt.model import build_model, count_parameters, describe
from nmt.training.optim import build_optimizer
from nmt.data.prepare import load_prepared
from nmt.runtime import (cpu_model, keep_freed_memory, pin_to_cores, seed_everything, set_threads,
                         usable_cores, use_bf16)
from nmt.training.loss import summed_loss
from nmt.training.members import member_configs


def matmul_gflops(dtype: torch.dtype, size: int = 1024, repeats: int = 20) -> float:
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def measure(config, steps: int, allocator_tweak: bool, start_together=None) -> dict:
    """Tokens/s of `steps` training steps after 3 warm-up ones, and FLOPs per target token;
    `start_together`, a barrier, holds the timed steps until every member is ready."""
    if allocator_tweak:
        keep_freed_memory()
    threads = set_threads(config.training.threads)
    seed_everything(config.seed)
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    examples = PairArrays(TokenArrays.open(prepared.dir / "train.zh"),
                          TokenArrays.open(prepared.dir / "train.en"), config.training.max_length,
                          config.model.target_order)
    batches = make_batches(examples, config.training.batch_tokens, config.seed, epoch=0)
    if len(batches) < 4:  # 3 warm-up steps and at least one timed
        raise SystemExit(f"{prepared.tokens('train', 'en')}: {len(batches)} batches of "
                         f"training.batch_tokens={config.training.batch_tokens}; the bench needs "
                         f"at least 4 (3 to warm up): use smaller batches")
    model = build_model(config.model, len(src_vocab), len(tgt_vocab)).train()
    optimizer = build_optimizer(model, config.training)
    bf16 = use_bf16(config.training.bf16, torch.device("cpu"))

    def step(indices) -> int:
        batch = collate(examples, indices)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = summed_loss(model, batch, config.training.label_smoothing) / batch.target_tokens
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.training.clip_norm)
        optimizer.step()
        return batch.target_tokens

    for indices in batches[:3]:  # warm-up
        step(indices)
    if start_together is not None:
        start_together.wait()
    measured = batches[3 : 3 + steps]
    tokens, start = 0, time.perf_counter()
    for indices in measured:
        tokens += step(indices)
    seconds = time.perf_counter() - start

    counter = FlopCounterMode(display=False)
    with counter:
        flop_tokens = step(measured[0])
    return {"config": config, "threads": threads, "bf16": bf16, "steps": len(measured),
            "tokens": tokens, "seconds": seconds, "parameters": count_parameters(model),
            "flops_per_token": counter.get_total_flops() / flop_tokens, "members": 1}


def _measure_member(index, config, steps, allocator_tweak, cores, start_together, results) -> None:
    pin_to_cores(cores)
    result = measure(config, steps, allocator_tweak, start_together)
    start_together.wait()  # every member's matmul speed at once: the machine's, in this layout
    result["matmul_gflops"] = matmul_gflops(torch.bfloat16 if result["bf16"] else torch.float32)
    results.put((index, {key: value for key, value in result.items() if key != "config"}))


def measure_config(config_path: str, overrides: list[str], steps: int, allocator_tweak: bool
                   ) -> dict:
    """One model in this process, or every member of training.members in processes of their own
    at once: their tokens summed, their seconds the slowest member's."""
    config = load_config(config_path, overrides)
    if config.training.trained_models == 1:
        return measure(config, steps, allocator_tweak)
    members = member_configs(config)
    threads, cores = members[0].training.threads, usable_cores()
    context = multiprocessing.get_context("spawn")
    start_together, results = context.Barrier(len(members)), context.Queue()
    processes = [context.Process(target=_measure_member,
                                 args=(k, member, steps, allocator_tweak,
                                       cores[k * threads:(k + 1) * threads], start_together, results))
                 for k, member in enumerate(members)]
    for process in processes:
        process.start()
    parts = []
    while len(parts) < len(processes):
        try:
            parts.append(results.get(timeout=5))
        except queue.Empty:  # a member that failed would leave the others at the barrier
            if any(process.exitcode not in (None, 0) for process in processes):
                for process in processes:
                    process.terminate()
                raise SystemExit("a member's measurement failed: its error is above")
    parts = [part for _, part in sorted(parts)]  # member 1 first
    for process in processes:
        process.join()
    return {**parts[0], "config": config, "members": len(parts), "threads": threads * len(parts),
            "steps": sum(part["steps"] for part in parts),
            "tokens": sum(part["tokens"] for part in parts),
            "seconds": max(part["seconds"] for part in parts),
            "matmul_gflops": sum(part["matmul_gflops"] for part in parts),
            "member_throughputs": [part["tokens"] / part["seconds"] for part in parts]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--also", nargs="+", default=[], metavar="CONFIG",
                        help="more experiment YAMLs measured in the same run with the same "
                             "overrides, e.g. configs/transformer.yaml beside configs/tatoeba.yaml")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-allocator-tweak", action="store_true",
                        help="leave glibc's malloc settings alone, to measure what the tweak buys")
    args = parser.parse_intermixed_args()
    # Overrides written after --also land in it: they are the ones with a '='.
    args.overrides += [a for a in args.also if "=" in a]
    paths = [args.config] + [a for a in args.also if "=" not in a]

    results = [measure_config(path, args.overrides, args.steps, not args.no_allocator_tweak)
               for path in paths]
    peaks = {}  # the matmul speed in each dtype a model trains in, measured once
    for result in results:
        dtype = torch.bfloat16 if result["bf16"] else torch.float32
        if dtype not in peaks and "matmul_gflops" not in result:
            peaks[dtype] = matmul_gflops(dtype)

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{results[0]['threads']} threads, allocator tweak "
          f"{'off' if args.no_allocator_tweak else 'on'}")
    for dtype, peak in peaks.items():
        print(f"matmul: {peak:.1f} GFLOP/s ({'bfloat16' if dtype == torch.bfloat16 else 'float32'}, "
              f"1024x1024, same threads)")
    for path, result in zip(paths, results):
        config, seconds, steps = result["config"], result["seconds"], result["steps"]
        throughput = result["tokens"] / seconds
        achieved = throughput * result["flops_per_token"] / 1e9
        peak = result.get("matmul_gflops") or peaks[torch.bfloat16 if result["bf16"] else torch.float32]
        print(f"\n{path} {' '.join(args.overrides)}: {describe(config.model)}, "
              f"{result['parameters']:,} parameters, batch_tokens {config.training.batch_tokens}, "
              f"bf16 autocast {'on' if result['bf16'] else 'off'}")
        if result["members"] > 1:
            print(f"  {result['members']} members side by side, "
                  f"{result['threads'] // result['members']} thread(s) each: "
                  + " + ".join(f"{rate:.0f}" for rate in result["member_throughputs"])
                  + f" target tokens/s; matmul {peak:.1f} GFLOP/s, all of them at once")
        print(f"  training: {steps} steps, {result['tokens']} target tokens in {seconds:.1f} s "
              f"= {throughput:.0f} target tokens/s ({seconds / steps * 1000 * result['members']:.0f}"
              f" ms/step)")
        print(f"  model: {result['flops_per_token'] / 1e6:.1f} MFLOP per target token "
              f"(forward + backward)")
        print(f"  utilisation: {achieved:.1f} GFLOP/s achieved = {100 * achieved / peak:.0f}% of "
              f"matmul speed")


if __name__ == "__main__":
    main()
