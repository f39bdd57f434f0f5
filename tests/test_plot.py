"""Attention heatmaps: shapes, PNG and array output, Chinese glyphs drawn with a CJK font."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

from nmt.plot import (
    attention_figure,
    cjk_font,
    figure_to_array,
    figure_to_png_bytes,
    heads_figure,
)

SRC = ["汤姆", "喜欢", "猫", "。"]
TGT = ["Tom", "likes", "cats", ".", "</s>"]


def _weights(rows: int = len(TGT), cols: int = len(SRC)) -> np.ndarray:
    return np.random.default_rng(0).dirichlet(np.ones(cols), size=rows).astype(np.float32)


def test_png_bytes_and_hwc_array():
    figure = attention_figure(_weights(), SRC, TGT, title="汤姆喜欢猫。")
    png = figure_to_png_bytes(figure)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    array = figure_to_array(figure)
    assert array.ndim == 3 and array.shape[2] == 3 and array.dtype == np.uint8
    assert array.shape[0] > 100 and array.shape[1] > 100
    assert array.std() > 10  # a picture, not a blank canvas


def test_tensor_weights_and_shape_mismatch():
    attention_figure(torch.from_numpy(_weights()), SRC, TGT)
    with pytest.raises(ValueError, match="do not match"):
        attention_figure(_weights(rows=3), SRC, TGT)


def test_awkward_labels_do_not_crash():
    src = ["Tom", "😀", "學習", "3,000", "x" * 40] + [f"词{i}" for i in range(20)]
    figure_to_array(attention_figure(_weights(2, len(src)), src, ["a", "</s>"]))


def test_chinese_glyphs_render_with_the_cjk_font():
    found = cjk_font()
    if found is None:
        pytest.skip("no CJK font installed (pip install pylopdf-fonts-zh-cn)")
    family, path = found
    font = FT2Font(path)
    assert all(font.get_char_index(ord(char)) != 0 for char in "".join(SRC[:3]))
    # matplotlib resolves the family to that very file ...
    resolved = font_manager.findfont(font_manager.FontProperties(family=family),
                                     fallback_to_default=False)
    assert FT2Font(resolved).family_name == font.family_name
    # ... and drawing Chinese labels reports no missing glyph (DejaVu alone would: boxes).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attention_figure(_weights(), SRC, TGT).canvas.draw()
    assert not [w for w in caught if "missing from" in str(w.message)]


def test_a_grid_of_every_head_with_one_colour_scale():
    weights = np.stack([_weights() for _ in range(5)])  # (H, T, S)
    figure = heads_figure(weights, SRC, TGT, title="汤姆喜欢猫。")
    panels = [ax for ax in figure.axes if ax.images]
    assert len(panels) == 5
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in panels)
    assert [ax.get_xlabel() for ax in panels] == [f"head {h}" for h in range(1, 6)]
    assert any(ax.get_label() == "<colorbar>" for ax in figure.axes)  # the scale is shown
    array = figure_to_array(figure)
    assert array.shape[1] > array.shape[0] and array.std() > 10
    with pytest.raises(ValueError, match="do not match"):
        heads_figure(weights[:, :, :2], SRC, TGT)
