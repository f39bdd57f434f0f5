"""Training throughput on real batches, beside the machine's matmul speed in the same run.

    python bench/bench_train.py configs/tatoeba.yaml [--steps 30] [overrides ...]

Prints target tokens/s of full training steps (forward, backward, clipping, Adam), the FLOPs of a
step as torch's FlopCounterMode counts them, the machine's matmul GFLOP/s (float32, or bfloat16
when training.bf16 is on), and their ratio: the model FLOPs utilisation. A benchmark prints
figures; it asserts nothing.
"""

import argparse
import os
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from nmt.config import load_config
from nmt.data.batching import collate, load_examples, make_batches
from nmt.data.vocab import Vocab
from nmt.model.seq2seq import build_model, count_parameters
from nmt.optim import build_optimizer
from nmt.prepare import load_prepared
from nmt.runtime import keep_freed_memory, seed_everything, set_threads, use_bf16
from nmt.loss import summed_loss
from machine import cpu_model  # bench/machine.py


def matmul_gflops(dtype: torch.dtype, size: int = 1024, repeats: int = 20) -> float:
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-allocator-tweak", action="store_true",
                        help="leave glibc's malloc settings alone, to measure what the tweak buys")
    args = parser.parse_args()

    config = load_config(args.config, args.overrides)
    if not args.no_allocator_tweak:
        keep_freed_memory()
    threads = set_threads(config.training.threads)
    seed_everything(config.seed)
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    examples = load_examples(prepared.tokens("train", "zh"), prepared.tokens("train", "en"),
                             src_vocab, tgt_vocab, config.training.max_length)
    batches = make_batches(examples, config.training.batch_tokens, config.seed, epoch=0)
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
    measured = batches[3 : 3 + args.steps]
    tokens, start = 0, time.perf_counter()
    for indices in measured:
        tokens += step(indices)
    seconds = time.perf_counter() - start

    counter = FlopCounterMode(display=False)
    with counter:
        flop_tokens = step(measured[0])
    flops_per_token = counter.get_total_flops() / flop_tokens
    matmul_dtype, dtype_name = (torch.bfloat16, "bfloat16") if bf16 else (torch.float32, "float32")
    peak = matmul_gflops(matmul_dtype)
    throughput = tokens / seconds
    achieved = throughput * flops_per_token / 1e9

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{threads} threads")
    print(f"config: {args.config} {' '.join(args.overrides)} | {count_parameters(model):,} "
          f"parameters, {config.model.attention} attention, batch_tokens "
          f"{config.training.batch_tokens}, bf16 autocast {'on' if bf16 else 'off'}, "
          f"allocator tweak {'off' if args.no_allocator_tweak else 'on'}")
    print(f"training: {len(measured)} steps, {tokens} target tokens in {seconds:.1f} s "
          f"= {throughput:.0f} target tokens/s ({seconds / len(measured) * 1000:.0f} ms/step)")
    print(f"model: {flops_per_token / 1e6:.1f} MFLOP per target token (forward + backward)")
    print(f"matmul: {peak:.1f} GFLOP/s ({dtype_name}, 1024x1024, same threads)")
    print(f"utilisation: {achieved:.1f} GFLOP/s achieved = {100 * achieved / peak:.0f}% of matmul speed")


if __name__ == "__main__":
    main()
