"""A legend for ``--plots`` made of a few plain artists (:class:`QuickLegend`).

matplotlib's ``Legend`` packs each entry in nested offset boxes (a drawing area for the
colour box, a text area, packers per column and row), measured again on every draw: with its
creation about a fifth of a picture's cost (issue 51: the reports must cost a few per cent of
the simulation). This one lays its entries out by sums of its names' widths and draws a
rectangle and a text per entry (and a frame), looking as matplotlib's does with the same
settings.
"""

from __future__ import annotations

from matplotlib.artist import Artist
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox, IdentityTransform

#: matplotlib's legend settings in font sizes (its rcParams' defaults): the colour box,
#: the gap from it to its name, between columns, between lines, inside the frame, and from the
#: anchor
HANDLE_W, HANDLE_H, TEXT_PAD, COLUMN_GAP, LINE_GAP, BORDER_PAD, ANCHOR_PAD = 2.0, 0.7, 0.8, 2.0, 0.5, 0.4, 0.5


class QuickLegend(Artist):
    """A colour box and a name per part, in ``ncols`` columns filled one after the other (as
    matplotlib's legend fills them), anchored at ``anchor`` in fractions of ``parent`` (an Axes
    or the Figure): ``loc`` "center left" puts the legend's left middle there, "lower center" its
    bottom middle; ``frame``: matplotlib's rounded translucent frame. What readers of a legend
    ask of it is here: :meth:`get_texts` (the names, in order) and :meth:`get_window_extent`.
    Add it with :func:`attach`."""

    zorder = 5  # matplotlib's legends'

    def __init__(self, parent, names: list[str], colours: list[str], anchor: tuple[float, float], loc: str,
                 ncols: int = 1, fontsize: float = 8, frame: bool = True) -> None:
        super().__init__()
        if loc not in ("center left", "lower center"):
            raise ValueError(f"QuickLegend: loc {loc!r} is not 'center left' or 'lower center'")
        self.parent, self.anchor, self.loc, self.frame = parent, anchor, loc, frame
        self.ncols, self.fontsize, self.colours = max(1, ncols), fontsize, list(colours)
        self.texts = [Text(0.0, 0.0, name, fontsize=fontsize, ha="left", va="center") for name in names]

    def set_figure(self, fig) -> None:
        super().set_figure(fig)
        for text in self.texts:
            text.set_figure(fig)

    def get_texts(self) -> list[Text]:
        return list(self.texts)

    def _layout(self, renderer) -> tuple[Bbox, list[tuple[float, float]], list[tuple[float, float]]]:
        """(the frame, each colour box's lower left corner, each name's left middle), in pixels."""
        fs = self.fontsize * self.figure.dpi / 72
        font = FontProperties(size=self.fontsize)
        widths = [renderer.get_text_width_height_descent(t.get_text(), font, False)[0] for t in self.texts]
        line_h = max(renderer.get_text_width_height_descent("lp", font, False)[1], HANDLE_H * fs)
        lines = -(-len(self.texts) // self.ncols)
        columns = [range(start, min(start + lines, len(self.texts))) for start in range(0, len(self.texts), lines)]
        column_w = [(HANDLE_W + TEXT_PAD) * fs + max(widths[k] for k in col) for col in columns]
        width = sum(column_w) + COLUMN_GAP * fs * (len(columns) - 1) + 2 * BORDER_PAD * fs
        height = lines * line_h + LINE_GAP * fs * (lines - 1) + 2 * BORDER_PAD * fs
        box = self.parent.bbox
        x, y = box.x0 + self.anchor[0] * box.width, box.y0 + self.anchor[1] * box.height
        x0, y0 = (x + ANCHOR_PAD * fs, y - height / 2) if self.loc == "center left" else (x - width / 2,
                                                                                          y + ANCHOR_PAD * fs)
        corners, places = [], []
        left = x0 + BORDER_PAD * fs
        for col, w in zip(columns, column_w, strict=True):
            for line, _k in enumerate(col):
                middle = y0 + height - BORDER_PAD * fs - line * (line_h + LINE_GAP * fs) - line_h / 2
                corners.append((left, middle - HANDLE_H * fs / 2))
                places.append((left + (HANDLE_W + TEXT_PAD) * fs, middle))
            left += w + COLUMN_GAP * fs
        return Bbox.from_bounds(x0, y0, width, height), corners, places

    def get_window_extent(self, renderer=None) -> Bbox:
        if not self.texts:
            return Bbox.null()
        return self._layout(renderer or self.figure.canvas.get_renderer())[0]

    def draw(self, renderer) -> None:
        if not self.get_visible() or not self.texts:
            return
        frame, corners, places = self._layout(renderer)
        fs = self.fontsize * self.figure.dpi / 72
        pixels = IdentityTransform()
        shapes = []
        if self.frame:  # matplotlib's legend frame: rounded, white at 0.8 opacity, a light grey edge
            shapes.append(FancyBboxPatch((frame.x0, frame.y0), frame.width, frame.height,
                                         boxstyle=f"round,pad=0,rounding_size={0.2 * fs}", facecolor="white",
                                         edgecolor="0.8", alpha=0.8, linewidth=1.0, transform=pixels))
        shapes += [Rectangle(corner, HANDLE_W * fs, HANDLE_H * fs, facecolor=colour, edgecolor="none",
                             linewidth=0, transform=pixels) for corner, colour in zip(corners, self.colours,
                                                                                      strict=True)]
        for shape in shapes:
            shape.set_figure(self.figure)
            shape.draw(renderer)
        for place, text in zip(places, self.texts, strict=True):
            text.set_transform(pixels)
            text.set_position(place)
            text.draw(renderer)


def attach(legend: QuickLegend) -> QuickLegend:
    """``legend`` as its parent's legend: an Axes' ``legend_`` (what ``get_legend()`` returns,
    drawn with the axes), the Figure's ``legends`` otherwise (drawn with the figure)."""
    parent = legend.parent
    if hasattr(parent, "transAxes"):
        legend.set_figure(parent.figure)
        legend.axes = parent
        parent.legend_ = legend
    else:
        legend.set_figure(parent)
        parent.legends.append(legend)
    return legend
