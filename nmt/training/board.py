"""TensorBoard output of a run: curves, example translations and attention heatmaps."""

from __future__ import annotations

from pathlib import Path

from torch.utils.tensorboard import SummaryWriter


class Board:
    """A SummaryWriter for rank 0; on other ranks every call does nothing."""

    def __init__(self, log_dir: Path, enabled: bool = True):
        self.writer = SummaryWriter(str(log_dir)) if enabled else None

    def scalars(self, step: int, prefix: str, values: dict[str, float]) -> None:
        if self.writer:
            for name, value in values.items():
                self.writer.add_scalar(f"{prefix}/{name}", value, step)

    def examples(self, step: int, sources: list[list[str]], hypotheses: list[str],
                 references: list[str], hypothesis_tokens: list[list[str]], attentions: list,
                 heads: list | None = None) -> None:
        """Each example's translation as text and, with attention, its heatmap as an image;
        with `heads` (per example (H, T, S) or None) also a grid of every head."""
        if not self.writer:
            return
        from nmt.plot import attention_figure, figure_to_array, heads_figure  # matplotlib loads slowly

        for i, (src, hyp, ref) in enumerate(zip(sources, hypotheses, references)):
            text = f"**source:** {' '.join(src)}  \n**output:** {hyp}  \n**reference:** {ref}"
            self.writer.add_text(f"dev_example/{i}", text, step)
            weights = attentions[i]  # (T, S): one row per output token, </s> included if produced
            if weights is not None and len(weights):
                labels = (hypothesis_tokens[i] + ["</s>"])[: len(weights)]
                figure = attention_figure(weights, src, labels)
                self.writer.add_image(f"attention/{i}", figure_to_array(figure), step,
                                      dataformats="HWC")
                if heads is not None and heads[i] is not None:
                    grid = heads_figure(heads[i], src, labels)
                    self.writer.add_image(f"attention_heads/{i}", figure_to_array(grid), step,
                                          dataformats="HWC")

    def gold_alignment(self, step: int, index: int, weights, src: list[str], tgt: list[str],
                       sure: set, possible: set, kind: str = "attention") -> None:
        """Forced-decoding attention (T, S) over the reference `tgt`, gold links outlined; `kind`
        "posterior" for the posterior alignment of the same pair (its own image tag)."""
        if not self.writer:
            return
        from nmt.plot import attention_figure, figure_to_array  # matplotlib loads slowly

        figure = attention_figure(weights, src, tgt, f"reference, {kind}; gold: solid Sure, "
                                  f"dashed Possible", gold=sure, possible=possible)
        self.writer.add_image(f"{kind}_gold/{index}", figure_to_array(figure), step,
                              dataformats="HWC")

    def flush(self) -> None:
        if self.writer:
            self.writer.flush()

    def close(self) -> None:
        if self.writer:
            self.writer.close()
