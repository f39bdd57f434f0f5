"""Learning curves against time, read back from each run's TensorBoard events.

At every validation training logs `dev/bleu` and, beside it, `time/minutes` (wall clock) and
`time/cpu_minutes` (the CPU time of the training process). `dev_curves` pairs them up per step,
so that runs of different speed per step, or runs that shared a busy machine, can be compared in
the same minutes: `make report ARGS="--curves"`.
"""

from __future__ import annotations

from pathlib import Path


def dev_curve(run_dir: Path) -> list[dict]:
    """[{step, minutes, cpu_minutes, bleu}, ...] in step order; [] without events. A resumed run
    has one entry per step (its last value)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder = Path(run_dir) / "tensorboard"
    if not folder.is_dir():
        return []
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags().get("scalars", []))
    if "dev/bleu" not in tags:
        return []

    def by_step(tag: str) -> dict[int, float]:
        return {e.step: e.value for e in events.Scalars(tag)} if tag in tags else {}

    bleu, minutes, cpu = by_step("dev/bleu"), by_step("time/minutes"), by_step("time/cpu_minutes")
    return [{"step": step, "minutes": minutes.get(step), "cpu_minutes": cpu.get(step),
             "bleu": bleu[step]} for step in sorted(bleu)]


def format_curves(runs_dir: str | Path, names: list[str]) -> str:
    """One Markdown table per run: dev BLEU (greedy) at each validation, with its minutes."""
    parts = []
    for name in names:
        curve = dev_curve(Path(runs_dir) / name)
        if not curve:
            continue
        lines = [f"{name}:", "", "| step | minutes | CPU minutes | dev BLEU |", "|---|---|---|---|"]
        for point in curve:
            cells = [str(point["step"])] + [
                "-" if point[key] is None else f"{point[key]:.1f}" for key in ("minutes", "cpu_minutes")]
            lines.append(f"| {' | '.join(cells)} | {point['bleu']:.2f} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
