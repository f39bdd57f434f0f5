"""One process or many: the little training needs to know about torchrun and its process groups.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE. Every rank computes the same
global batches (they are a pure function of seed and epoch) and trains on its own share of each
one; DDP averages the gradients. Rank 0 alone writes files and validates, then tells the others
what it found.

With M = training.members + training.channel_members > 1 models the world is split into M groups, one per member, interleaved:
member k (1-based) is global ranks k-1, k-1+M, k-1+2M, ... Each group trains its own model with
DDP over its own process group, and its first rank (global rank k-1) is that member's rank 0.
Interleaving puts every member's rank 0 on machine 0, where runs/ is, when M <= the processes
per machine. `Distributed` is the one place that knows about the groups: its rank and
world_size are the member's, and its collectives talk within the member's group only.
"""

from __future__ import annotations

import datetime
import gc
import os
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import torch
import torch.distributed as dist

from nmt.errors import NMTError
from nmt.runtime import pick_device

T = TypeVar("T")


@dataclass
class Distributed:
    rank: int = 0  # within this rank's member group: 0 writes the member's run folder
    world_size: int = 1  # ranks training this member
    local_rank: int = 0  # on this machine (LOCAL_RANK): picks the GPU
    member: int = 1  # the model (1-based, of training.members + channel_members) this rank trains
    global_rank: int = 0  # in torchrun's whole world (RANK)
    global_size: int = 1  # WORLD_SIZE: every member's ranks
    group: Any = None  # the member's process group; None: the whole world (one member)
    leader: int = 0  # the global rank of the member's rank 0: member - 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """Whether this member trains on several ranks (DDP and collectives needed)."""
        return self.world_size > 1

    @classmethod
    def from_env(cls, device_type: str, members: int = 1,
                 timeout_minutes: float = 30) -> "Distributed":
        """Join the process group torchrun describes, and this rank's member group; a plain
        `python` run (or a torchrun world of one) is one rank training member 1."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls()
        groups = member_ranks(world_size, members,
                              int(os.environ.get("LOCAL_WORLD_SIZE", str(world_size))))
        backend = "nccl" if device_type == "cuda" else "gloo"
        timeout = datetime.timedelta(minutes=timeout_minutes)
        try:
            # The timeout turns a rank that died mid-collective into an error, not a hang.
            dist.init_process_group(backend, timeout=timeout)
        except (RuntimeError, ValueError) as error:
            raise NMTError(f"could not join the torchrun process group ({backend}): {error}") from None
        global_rank = dist.get_rank()
        # new_group is collective over the whole world: every rank creates every group, in order.
        handles = [dist.new_group(ranks, timeout=timeout) if members > 1 else None
                   for ranks in groups]
        index = global_rank % members
        ranks = groups[index]
        return cls(rank=ranks.index(global_rank), world_size=len(ranks),
                   local_rank=int(os.environ.get("LOCAL_RANK", "0")), member=index + 1,
                   global_rank=global_rank, global_size=world_size, group=handles[index],
                   leader=ranks[0])

    def shard(self, indices: list[int]) -> list[int]:
        """This rank's share of a global batch: every world_size-th sentence."""
        return indices[self.rank :: self.world_size]

    def broadcast(self, obj: Any) -> Any:
        """The member's rank 0's `obj` on every rank of the member."""
        if not self.enabled:
            return obj
        holder = [obj]
        dist.broadcast_object_list(holder, src=self.leader, group=self.group)  # src: global rank
        return holder[0]

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in the member's rank order, on every rank of the member."""
        if not self.enabled:
            return [obj]
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, obj, group=self.group)
        return gathered

    def any(self, flag: bool) -> bool:
        """Whether `flag` is true on at least one of the member's ranks: one small all-reduce."""
        if not self.enabled:
            return flag
        on_gpu = dist.get_backend(self.group) == "nccl"  # nccl reduces only tensors on a GPU
        tensor = torch.tensor([float(flag)], device=f"cuda:{self.local_rank}" if on_gpu else "cpu")
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=self.group)
        return bool(tensor.item())

    def barrier(self) -> None:
        """Wait for the member's other ranks."""
        if self.enabled:
            dist.barrier(group=self.group)

    def in_turn(self, make: Callable[[], T]) -> T:
        """`make()` on every rank of the world, global rank 0 first, then the first rank of every
        other machine (whose disk may not be shared: a cache hit where it is), then the rest,
        which find its result ready. For what every member shares: the prepared data, the
        distilled targets. The barriers are the whole world's and wait at most the group's
        timeout (30 minutes)."""
        result = make() if self.global_rank == 0 else None
        self._world_barrier()
        if result is None and self.local_rank == 0:
            result = make()
        self._world_barrier()
        return result if result is not None else make()

    def _world_barrier(self) -> None:
        if self.global_size > 1:
            dist.barrier()

    def close(self) -> None:
        """Tear the groups down while Python is fully alive; the caller drops its DDP wrapper first.

        The wrapper holds the group, so with it gone (and collected) the gloo threads stop here,
        not during interpreter exit, where they can abort a rank whose run succeeded
        ("terminate called without an active exception"). Only the member's ranks wait for each
        other: one member may end long before another (early stopping), longer than a world
        barrier's timeout would wait.
        """
        if self.global_size > 1 and dist.is_initialized():
            self.barrier()  # no rank closes its sockets while a rank of its member still talks
            gc.collect()
            dist.destroy_process_group()  # the world's group and every member's


def member_ranks(world_size: int, members: int, local_world_size: int) -> list[list[int]]:
    """The global ranks of each member's group, member k at index k - 1: ranks k-1, k-1+M, ...

    Interleaved so that member k's rank 0 is global rank k - 1, on machine 0 (where runs/ is)
    whenever members <= the processes per machine. Errors name what to set."""
    if world_size % members:
        raise NMTError(f"the run's {members} models (training.members + training.channel_members) "
                       f"do not divide the {world_size} torchrun processes (WORLD_SIZE): start a "
                       f"multiple of {members} processes (NPROC x NNODES) or train a divisor of "
                       f"{world_size} models")
    if world_size > local_world_size and members > local_world_size:
        raise NMTError(f"the run's {members} models (training.members + training.channel_members) "
                       f"are more than the {local_world_size} processes "
                       f"per machine (LOCAL_WORLD_SIZE) of this several-machine run: a member's "
                       f"rank 0 would be on another machine than runs/. Set NPROC to at least "
                       f"{members} or train at most {local_world_size} models")
    return [list(range(k, world_size, members)) for k in range(members)]


def device_for(name: str, distributed: Distributed) -> torch.device:
    """With several GPUs on a machine, each rank takes the one named by its LOCAL_RANK."""
    device = pick_device(name)
    if device.type == "cuda":
        device = torch.device("cuda", distributed.local_rank)
        torch.cuda.set_device(device)
    return device
