"""One process or many: the little training needs to know about torchrun and its process group.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK. Every rank computes the same global batches (they
are a pure function of seed and epoch) and trains on its own share of each one; DDP averages the
gradients. Rank 0 alone writes files and validates, then tells the others what it found.
"""

from __future__ import annotations

import datetime
import gc
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from nmt.errors import NMTError
from nmt.runtime import pick_device


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @classmethod
    def from_env(cls, device_type: str, timeout_minutes: float = 30) -> "Distributed":
        """Join the process group torchrun describes; a plain `python` run is one rank."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls()
        backend = "nccl" if device_type == "cuda" else "gloo"
        try:
            # The timeout turns a rank that died mid-collective into an error, not a hang.
            dist.init_process_group(backend, timeout=datetime.timedelta(minutes=timeout_minutes))
        except (RuntimeError, ValueError) as error:
            raise NMTError(f"could not join the torchrun process group ({backend}): {error}") from None
        return cls(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))

    def shard(self, indices: list[int]) -> list[int]:
        """This rank's share of a global batch: every world_size-th sentence."""
        return indices[self.rank :: self.world_size]

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's `obj` on every rank."""
        if not self.enabled:
            return obj
        holder = [obj]
        dist.broadcast_object_list(holder, src=0)
        return holder[0]

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in rank order, on every rank."""
        if not self.enabled:
            return [obj]
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered

    def any(self, flag: bool) -> bool:
        """Whether `flag` is true on at least one rank, on every rank: one small all-reduce."""
        if not self.enabled:
            return flag
        on_gpu = dist.get_backend() == "nccl"  # nccl reduces only tensors on the rank's GPU
        tensor = torch.tensor([float(flag)], device=f"cuda:{self.local_rank}" if on_gpu else "cpu")
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor.item())

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    def close(self) -> None:
        """Tear the group down while Python is fully alive; the caller drops its DDP wrapper first.

        The wrapper holds the group, so with it gone (and collected) the gloo threads stop here,
        not during interpreter exit, where they can abort a rank whose run succeeded
        ("terminate called without an active exception").
        """
        if self.enabled and dist.is_initialized():
            dist.barrier()  # no rank closes its sockets while another still talks
            gc.collect()
            dist.destroy_process_group()


def device_for(name: str, distributed: Distributed) -> torch.device:
    """With several GPUs on a machine, each rank takes the one named by its LOCAL_RANK."""
    device = pick_device(name)
    if device.type == "cuda":
        device = torch.device("cuda", distributed.local_rank)
        torch.cuda.set_device(device)
    return device
