"""OpenMP's wait policy. torch reads it when it loads OpenMP, so this module must not import torch."""

import os


def sleep_while_waiting() -> None:
    """Idle OpenMP threads sleep instead of spinning; call it before the first torch import.

    On a 2-core machine shared with other work, spinning threads wait on each other: decoding
    measured 5-8x slower. Training does not call it: on a quiet machine it halves training speed.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
