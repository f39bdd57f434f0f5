"""Process-wide settings a run needs before any tensor is made: seeds, threads, device, allocator."""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import random
import sys
from pathlib import Path

import torch

from nmt.errors import NMTError

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    """Python and torch generators (numpy is not used for randomness in this project)."""
    random.seed(seed)
    torch.manual_seed(seed)


def usable_cores() -> list[int]:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def pin_to_cores(cores: list[int]) -> None:
    """Keep this process on these cores (Linux; nothing elsewhere or when `cores` is empty)."""
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)


def set_threads(threads: int) -> int:
    """torch's intra-op threads: `threads`, or when 0 this process's share of the cores."""
    if threads == 0:
        cores = len(usable_cores())
        # torchrun's processes on one machine share its cores; more threads than cores would
        # have them take turns (torchrun's OMP_NUM_THREADS=1 does not bind torch.set_num_threads).
        threads = max(1, cores // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    torch.set_num_threads(threads)
    return threads


def keep_freed_memory() -> None:
    """Ask glibc to reuse freed memory instead of returning it to the OS at once.

    Training frees and reallocates the same large activations (the (B·T, V) logits) every step;
    by default glibc unmaps each of them and the next step pays page faults to map them again
    (bench/bench_train.py measures a step with and without).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (musl): nothing to tune
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 1 << 30)
    libc.mallopt(m_trim_threshold, (1 << 31) - 1)


def pick_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise NMTError("training.device = cuda, but torch sees no CUDA device; use auto or cpu")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def native_bf16(device: torch.device) -> bool:
    """Whether this device multiplies bfloat16 matrices in hardware, faster than float32.

    CPUs: Intel AMX or AVX-512 BF16 (Sapphire Rapids and later, AMD Zen 4 and later); elsewhere
    torch emulates bf16 and it runs slower. torch exposes the check only as private functions,
    hence getattr with a fallback.
    """
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return any(getattr(torch.cpu, check, lambda: False)()
               for check in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"))


def use_bf16(setting: bool | str, device: torch.device, key: str = "training.bf16") -> bool:
    """`training.bf16` (or `search.bf16`, named by `key`): auto turns bf16 autocast on where the
    hardware does bf16 natively."""
    if setting == "auto":
        return native_bf16(device)
    if setting and not native_bf16(device):
        log.warning("%s = true, but this %s has no native bfloat16 arithmetic: it will run slower "
                    "than in float32; use auto or false", key, device.type.upper())
    return bool(setting)


def cpu_model() -> str:
    """The CPU's model name, recorded with every run and benchmark figure."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
