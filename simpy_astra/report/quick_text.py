"""An Agg canvas whose plain text is laid out and drawn by Pillow's FreeType binding.

matplotlib's Agg renderer lays a string out glyph by glyph in Python (a font load, a
transform and a render per character, and again to measure it): about a millisecond per
tick label, most of what a picture of ``--plots`` costs (issue 51: the reports must cost a
few per cent of the simulation). Pillow draws a whole string in one call, from the same
font file, ten to twenty times faster. Everything else (lines, bars, images, mathtext, the
layout of the figure) is matplotlib's own; only a renderer's two text methods change.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.font_manager import findfont


def pillow_draws_text() -> bool:
    """Whether Pillow was built with FreeType (else matplotlib draws the text itself)."""
    try:
        from PIL import features

        return bool(features.check("freetype2"))
    except ImportError:  # pragma: no cover - Pillow is a dependency of matplotlib
        return False


@lru_cache(maxsize=64)
def _font(path: str, size_px: float):
    from PIL import ImageFont

    return ImageFont.truetype(path, size_px, layout_engine=ImageFont.Layout.BASIC)


@lru_cache(maxsize=1024)
def _ink(font, text: str) -> tuple[int, int, int, int]:
    """The inked box (left, top, right, bottom) of ``text`` about its baseline's left end: each
    label is measured for the layout, then drawn."""
    return font.getbbox(text, anchor="ls")


@lru_cache(maxsize=64)
def _height_metrics(path: str, size_pt: float, dpi: float) -> tuple[float | None, float | None, float | None]:
    """(ascent, descent, line gap) in pixels from the font's tables, as matplotlib's text layout
    reads them (``Text._get_layout``), which it otherwise reads again for every text drawn."""
    from matplotlib.font_manager import get_font

    font = get_font(path)
    for table_name, gap, ascent, descent in (("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                                             ("hhea", "lineGap", "ascent", "descent")):
        table = font.get_sfnt_table(table_name)
        if table is not None:
            scale = size_pt * dpi / 72 / font.get_sfnt_table("head")["unitsPerEm"]
            return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
    return None, None, None


def font_file(prop) -> str:
    """``findfont(prop)`` asked at one size: matplotlib scores every TrueType or OpenType font
    (all that Agg draws) the same at any size, and keeps each answer per distinct properties,
    size included; so each size of a picture's labels was a new search of the font list, about
    a millisecond each the first time in a run (issue 51: the reports must cost a few per cent
    of the simulation). Asked at one size, the first search answers every later size."""
    key = prop.copy()
    key.set_size(10.0)
    return findfont(key)


class QuickTextRenderer(RendererAgg):
    """:class:`RendererAgg` with plain text (not mathtext, not TeX) measured and drawn by Pillow."""

    def __init__(self, width, height, dpi) -> None:
        super().__init__(width, height, dpi)
        self._paths: dict = {}  # font properties -> font file

    def _path(self, prop) -> str:
        """The font file of ``prop``, found once per distinct properties (matplotlib's
        ``findfont`` reads a dozen settings on each call, several calls per text)."""
        path = self._paths.get(prop)
        if path is None:
            path = self._paths[prop.copy()] = font_file(prop)
        return path

    def _pillow_font(self, prop):
        return _font(self._path(prop), prop.get_size_in_points() * self.dpi / 72)

    def _get_font_height_metrics(self, prop):
        """matplotlib's hook for a renderer's font heights (3.11 on; older versions measure "lp"):
        the font's tables read once per font and size, not once per text."""
        return _height_metrics(self._path(prop), prop.get_size_in_points(), self.dpi)

    def get_text_width_height_descent(self, s, prop, ismath):
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        # the inked box about the baseline's left end, as FreeType's string box in matplotlib's
        left, top, right, bottom = _ink(self._pillow_font(prop), s)
        return float(right - min(left, 0)), float(max(bottom, 0) - min(top, 0)), float(max(bottom, 0))

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        if not s:
            return None
        from PIL import Image, ImageDraw

        font = self._pillow_font(prop)
        ox, oy, right, bottom = _ink(font, s)
        if right <= ox or bottom <= oy:
            return None
        image = Image.new("L", (right - ox, bottom - oy))
        ImageDraw.Draw(image).text((-ox, -oy), s, font=font, fill=255, anchor="ls")
        ink = np.asarray(image)
        # (x, y) is the baseline's left end, y downwards; the string turns anticlockwise about it
        quarter = round(angle / 90.0) % 4 if abs(angle / 90.0 - round(angle / 90.0)) < 1e-6 else None
        if quarter is None:  # any other angle: matplotlib's own glyph by glyph
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        h, w = ink.shape
        if quarter == 0:
            left, top = x + ox, y + oy
        elif quarter == 1:  # upright, reading upwards
            ink = np.rot90(ink)
            left, top = x + oy, y - ox - w
        elif quarter == 2:
            ink = np.rot90(ink, 2)
            left, top = x - ox - w, y - oy - h
        else:
            ink = np.rot90(ink, 3)
            left, top = x - oy - h, y + ox
        r, g, b, a = gc.get_rgb()
        alpha = gc.get_alpha() if gc.get_forced_alpha() else a
        rgba = np.empty((*ink.shape, 4), dtype=np.uint8)
        rgba[..., 0], rgba[..., 1], rgba[..., 2] = round(r * 255), round(g * 255), round(b * 255)
        rgba[..., 3] = (ink * alpha).round().astype(np.uint8) if alpha < 1 else ink
        # draw_image takes the image's lower left corner, y upwards, and its rows bottom first
        self.draw_image(gc, round(left), round(self.height - top - ink.shape[0]), rgba[::-1])
        return None


class QuickTextCanvas(FigureCanvasAgg):
    """:class:`FigureCanvasAgg` drawing with a :class:`QuickTextRenderer`."""

    def get_renderer(self):
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if self._lastKey != key:
            self.renderer = QuickTextRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer
