"""Attention heatmaps: which source word each target word looked at, with Chinese labels.

Figures are made with matplotlib's object API and the Agg canvas, never pyplot, so plotting
changes no global backend and leaks no figures in a long training run.

Chinese labels need a font with CJK glyphs; matplotlib's own DejaVu Sans has none and would draw
boxes. `cjk_font()` looks, in order, for the Noto Sans SC font that the `pylopdf-fonts-zh-cn`
package (a project dependency) installs, the one `manimgx-fonts-cjk` installs, then for common
CJK fonts installed on the system. Without any, it logs one warning saying how to get one.
"""

from __future__ import annotations

import functools
import io
import logging
import warnings
from pathlib import Path

import numpy as np
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font

log = logging.getLogger(__name__)

# System font families that carry Chinese glyphs, most preferred first.
CJK_FAMILIES = (
    "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
    "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Noto Serif CJK SC", "AR PL UMing CN",
    "AR PL UKai CN", "SimHei", "Microsoft YaHei", "PingFang SC", "Heiti SC", "Noto Sans CJK JP",
)
PROBE = "汤姆喜欢猫"  # characters any usable font must have
INSTALL_HINT = ("pip install pylopdf-fonts-zh-cn (Noto Sans SC, OFL) into the environment, or "
                "apt-get install fonts-wqy-microhei")


def _has_glyphs(path: str | Path, text: str = PROBE) -> bool:
    try:
        font = FT2Font(str(path))
    except (OSError, RuntimeError, ValueError):
        return False
    return all(font.get_char_index(ord(char)) != 0 for char in text)


def _packaged_fonts() -> list[Path]:
    """CJK fonts shipped inside pip packages, if those are installed."""
    found = []
    try:
        import pylopdf_fonts_zh_cn

        found.append(Path(pylopdf_fonts_zh_cn.sans_path()))
    except ImportError:
        pass
    try:
        import manimgx_fonts_cjk

        found.extend(sorted(Path(manimgx_fonts_cjk.__file__).parent.glob("*.tt[fc]")))
    except ImportError:
        pass
    return found


@functools.cache
def cjk_font() -> tuple[str, str] | None:
    """(family name, file path) of a font that draws Chinese, registered with matplotlib; or
    None, after one warning, when there is none."""
    for path in _packaged_fonts():
        if path.is_file() and _has_glyphs(path):
            font_manager.fontManager.addfont(str(path))
            return font_manager.FontProperties(fname=str(path)).get_name(), str(path)
    by_name = {entry.name: entry.fname for entry in font_manager.fontManager.ttflist}
    for family in CJK_FAMILIES:
        if family in by_name and _has_glyphs(by_name[family]):
            return family, by_name[family]
    log.warning("no font with Chinese characters found: attention plots will show boxes "
                "instead of Chinese labels. To fix: %s", INSTALL_HINT)
    return None


def label_families() -> list[str]:
    """Font families for labels: the CJK font first, DejaVu Sans for what it lacks."""
    found = cjk_font()
    return [found[0], "DejaVu Sans"] if found else ["DejaVu Sans"]


def attention_figure(weights, src_tokens: list[str], tgt_tokens: list[str],
                     title: str | None = None, gold=None, possible=None) -> Figure:
    """A heatmap of weights (T, S): target tokens down the side, source tokens along the top.

    `weights` is a numpy array or tensor with one row per target token and one column per
    source token; a shape that does not match the labels is a ValueError. `gold` and `possible`
    are (row, column) cells of gold alignment links, outlined solid (Sure) and dashed (Possible
    only), so that one sees at a glance where attention and the annotators agree.
    """
    weights = np.asarray(weights.detach().float().cpu() if hasattr(weights, "detach") else weights,
                         dtype=np.float32)  # (T, S)
    if weights.shape != (len(tgt_tokens), len(src_tokens)):
        raise ValueError(f"attention weights {weights.shape} do not match "
                         f"{len(tgt_tokens)} target × {len(src_tokens)} source tokens")
    rows, cols = weights.shape
    src_labels, tgt_labels = _short(src_tokens), _short(tgt_tokens)
    rotate = cols > 12
    longest_src = max((len(t) for t in src_labels), default=1) if rotate else 1
    longest_tgt = max((len(t) for t in tgt_labels), default=1)
    # About 0.45 inch per source column and 0.3 inch per target row, room for the labels.
    width = min(max(2.5 + 0.45 * cols + 0.1 * longest_tgt, 4.0), 24.0)
    height = min(max(1.8 + 0.3 * rows + 0.12 * longest_src, 3.0), 24.0)
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")  # laid out when drawn
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    image = axes.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto",
                        interpolation="nearest")
    font = font_manager.FontProperties(family=label_families(), size=11)
    axes.set_xticks(range(cols))
    axes.set_xticklabels(src_labels, fontproperties=font, rotation=90 if rotate else 0,
                        parse_math=False)  # "$" in text is text, not a formula
    axes.set_yticks(range(rows))
    axes.set_yticklabels(tgt_labels, fontproperties=font, parse_math=False)
    axes.xaxis.tick_top()
    axes.set_xlabel("source", fontproperties=font)
    axes.set_ylabel("output", fontproperties=font)
    _mark_cells(axes, set(gold or ()), "-")
    _mark_cells(axes, set(possible or ()) - set(gold or ()), "--")
    if title:
        axes.set_title(title, fontproperties=font, pad=24, parse_math=False)
    figure.colorbar(image, ax=axes, fraction=0.04, pad=0.02)
    return figure


def heads_figure(weights, src_tokens: list[str], tgt_tokens: list[str],
                 title: str | None = None) -> Figure:
    """A grid of heatmaps, one per attention head: weights (heads, T, S), e.g. one Transformer
    layer's cross-attention. Every panel shares one colour scale, 0 to 1, shown once."""
    weights = np.asarray(weights.detach().float().cpu() if hasattr(weights, "detach") else weights,
                         dtype=np.float32)  # (H, T, S)
    if weights.ndim != 3 or weights.shape[1:] != (len(tgt_tokens), len(src_tokens)):
        raise ValueError(f"attention weights {weights.shape} do not match (heads, "
                         f"{len(tgt_tokens)} target, {len(src_tokens)} source tokens)")
    heads, rows, cols = weights.shape
    columns = min(heads, 4)
    grid_rows = -(-heads // columns)
    src_labels, tgt_labels = _short(src_tokens), _short(tgt_tokens)
    longest_src = max((len(t) for t in src_labels), default=1)
    longest_tgt = max((len(t) for t in tgt_labels), default=1)
    panel_width = min(max(1.2 + 0.35 * cols + 0.08 * longest_tgt, 2.5), 10.0)
    panel_height = min(max(1.2 + 0.25 * rows + 0.1 * longest_src, 2.2), 10.0)
    figure = Figure(figsize=(min(panel_width * columns + 1.0, 40.0),
                             min(panel_height * grid_rows + (0.6 if title else 0.0), 40.0)),
                    dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    font = font_manager.FontProperties(family=label_families(), size=9)
    axes = figure.subplots(grid_rows, columns, squeeze=False)
    image = None
    for head, ax in enumerate(axes.flat):
        if head >= heads:
            ax.set_axis_off()
            continue
        image = ax.imshow(weights[head], cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto",
                          interpolation="nearest")
        ax.set_xticks(range(cols))
        ax.set_xticklabels(src_labels, fontproperties=font, rotation=90)
        ax.set_yticks(range(rows))
        ax.set_yticklabels(tgt_labels, fontproperties=font)
        ax.xaxis.tick_top()
        ax.set_xlabel(f"head {head + 1}", fontproperties=font)
    if title:
        figure.suptitle(title, fontproperties=font_manager.FontProperties(family=label_families(),
                                                                          size=11))
    assert image is not None  # there is at least one head (columns would be 0 otherwise)
    figure.colorbar(image, ax=axes, fraction=0.03, pad=0.02)
    return figure


def _mark_cells(axes, cells: set[tuple[int, int]], style: str) -> None:
    """A red outline around each (row, column) cell."""
    from matplotlib.patches import Rectangle

    for row, col in sorted(cells):
        axes.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red",
                                 linestyle=style, linewidth=2 if style == "-" else 1.2))


def _short(tokens: list[str], limit: int = 14) -> list[str]:
    """Labels no longer than `limit` characters: a 40-letter token must not squash the plot."""
    return [token if len(token) <= limit else token[: limit - 1] + "…" for token in tokens]


def _draw(figure: Figure) -> FigureCanvasAgg:
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    with warnings.catch_warnings():  # an emoji in the input has no glyph anywhere: not an error
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        canvas.draw()
    return canvas


def figure_to_png_bytes(figure: Figure, dpi: int = 100) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def figure_to_array(figure: Figure) -> np.ndarray:
    """(H, W, 3) uint8 RGB: for TensorBoard's add_image(..., dataformats="HWC")."""
    return np.asarray(_draw(figure).buffer_rgba())[..., :3].copy()
