"""A legend and numeric tick labels for ``--plots``, each made of a few plain artists
(:class:`QuickLegend`, :class:`TickLabels`).

matplotlib's ``Legend`` packs each entry in nested offset boxes (a drawing area for the
colour box, a text area, packers per column and row), measured again on every draw: with its
creation about a fifth of a picture's cost (issue 51: the reports must cost a few per cent of
the simulation). :class:`QuickLegend` lays its entries out as those text areas and packers
would (each name's extent, then sums) and draws a rectangle and a text per entry (and a frame):
the same picture as matplotlib's with the same settings. A matplotlib tick is two lines and two texts, made and laid out one by one on each
draw (about a millisecond each): :class:`TickLabels` is a text per tick and one line of
markers.
"""

from __future__ import annotations

from matplotlib.artist import Artist
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.markers import TICKDOWN, TICKLEFT
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox, IdentityTransform, offset_copy

#: matplotlib's legend settings in font sizes (its rcParams' defaults): the colour box,
#: the gap from it to its name, between columns, between lines, inside the frame, and from the
#: anchor
HANDLE_W, HANDLE_H, TEXT_PAD, COLUMN_GAP, LINE_GAP, BORDER_PAD, ANCHOR_PAD = 2.0, 0.7, 0.8, 2.0, 0.5, 0.4, 0.5


class QuickLegend(Artist):
    """A colour box and a name per part, in ``ncols`` columns filled one after the other, the
    first ones one entry longer (as matplotlib's legend fills them), anchored at ``anchor`` in
    fractions of ``parent`` (an Axes or the Figure): ``loc`` "center left" puts the legend's left
    middle there, "lower center" its bottom middle; ``frame``: matplotlib's rounded translucent
    frame; ``box_edge``: the colour boxes' edge, in their colour, in points (a legend of
    ``Patch(color=...)`` handles has 1.0). What readers of a legend ask of it is here:
    :meth:`get_texts` (the names, in order) and :meth:`get_window_extent`. Add it with
    :func:`attach`."""

    zorder = 5  # matplotlib's legends'

    def __init__(self, parent, names: list[str], colours: list[str], anchor: tuple[float, float], loc: str,
                 ncols: int = 1, fontsize: float = 8, frame: bool = True, box_edge: float = 0.0) -> None:
        super().__init__()
        if loc not in ("center left", "lower center"):
            raise ValueError(f"QuickLegend: loc {loc!r} is not 'center left' or 'lower center'")
        self.parent, self.anchor, self.loc, self.frame = parent, anchor, loc, frame
        self.ncols, self.fontsize, self.colours, self.box_edge = max(1, ncols), fontsize, list(colours), box_edge
        self.texts = [Text(0.0, 0.0, name, fontsize=fontsize, ha="left", va="baseline") for name in names]

    def set_figure(self, fig) -> None:
        super().set_figure(fig)
        for text in self.texts:
            text.set_figure(fig)

    def get_texts(self) -> list[Text]:
        return list(self.texts)

    def _layout(self, renderer) -> tuple[Bbox, list[tuple[float, float]], list[tuple[float, float]]]:
        """(the frame, each colour box's lower left corner, each name's baseline's left end), in
        pixels."""
        fs = self.fontsize * self.figure.dpi / 72
        # each name's extent about its baseline's left end as matplotlib's legend lays it out (its
        # TextArea: no less than "lp" above the baseline, the text's layout's below); its colour
        # box stands on the baseline, as matplotlib's legend aligns them
        pixels = IdentityTransform()
        extents = []
        for text in self.texts:
            text.set_transform(pixels)
            text.set_position((0.0, 0.0))
            extents.append(text.get_window_extent(renderer))
        _w, lp_h, lp_d = renderer.get_text_width_height_descent("lp", FontProperties(size=self.fontsize), False)
        above = [max(e.y1, lp_h - lp_d, HANDLE_H * fs) for e in extents]  # as matplotlib's TextArea
        below = [-e.y0 for e in extents]
        # as matplotlib splits them (numpy's array_split): the first n % ncols columns one longer
        longer, base = len(self.texts) % self.ncols, len(self.texts) // self.ncols
        sizes = [base + (c < longer) for c in range(self.ncols) if base + (c < longer)]
        starts = [sum(sizes[:c]) for c in range(len(sizes))]
        columns = [range(start, start + size) for start, size in zip(starts, sizes, strict=True)]
        column_w = [(HANDLE_W + TEXT_PAD) * fs + max(extents[k].width for k in col) for col in columns]
        column_h = [sum(above[k] + below[k] for k in col) + LINE_GAP * fs * (len(col) - 1) for col in columns]
        width = sum(column_w) + COLUMN_GAP * fs * (len(columns) - 1) + 2 * BORDER_PAD * fs
        height = max(column_h) + 2 * BORDER_PAD * fs
        box = self.parent.bbox
        x, y = box.x0 + self.anchor[0] * box.width, box.y0 + self.anchor[1] * box.height
        x0, y0 = (x + ANCHOR_PAD * fs, y - height / 2) if self.loc == "center left" else (x - width / 2,
                                                                                          y + ANCHOR_PAD * fs)
        corners, places = [], []
        left = x0 + BORDER_PAD * fs
        for col, w in zip(columns, column_w, strict=True):
            top = y0 + height - BORDER_PAD * fs
            for k in col:
                baseline = top - above[k]
                corners.append((left, baseline))
                places.append((left + (HANDLE_W + TEXT_PAD) * fs, baseline))
                top = baseline - below[k] - LINE_GAP * fs
            left += w + COLUMN_GAP * fs
        for place, text in zip(places, self.texts, strict=True):  # each name back where it is drawn
            text.set_position(place)
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
                                         edgecolor="0.8", alpha=0.8, linewidth=1.0, transform=pixels, snap=True))
        shapes += [Rectangle(corner, HANDLE_W * fs, HANDLE_H * fs, facecolor=colour,
                             edgecolor=colour if self.box_edge else "none", linewidth=self.box_edge, transform=pixels)
                   for corner, colour in zip(corners, self.colours, strict=True)]
        for shape in shapes:
            shape.set_figure(self.figure)
            shape.draw(renderer)
        for text in self.texts:  # placed by _layout
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


#: matplotlib's ticks (its rcParams' defaults): length and pad (points), the marks' width
TICK_LEN_PT, TICK_PAD_PT, TICK_WIDTH_PT = 3.5, 3.5, 0.8


def tick_marks(ax, axis: str, locs) -> Line2D:
    """One line of matplotlib-sized tick marks at ``locs`` (data coordinates) on ``ax``'s ``axis``
    ("x": below the axes, "y": left of them), where matplotlib makes a line per tick."""
    locs = list(locs)
    if axis == "x":
        marks = Line2D(locs, [0.0] * len(locs), transform=ax.get_xaxis_transform(), marker=TICKDOWN)
    else:
        marks = Line2D([0.0] * len(locs), locs, transform=ax.get_yaxis_transform(), marker=TICKLEFT)
    marks.set(linestyle="none", markersize=TICK_LEN_PT, markeredgewidth=TICK_WIDTH_PT, color="black", clip_on=False)
    return marks


class TickLabels(Artist):
    """An axis' numeric ticks as matplotlib would draw them (the same places, by
    ``MaxNLocator(nbins)``; the same labels, by the axis' ``ScalarFormatter``; the same
    marks, size and gaps), as a text per tick (:attr:`texts`) and one line of tick marks,
    and the axis label placed where matplotlib would put it beyond them. Add it with
    :func:`numeric_ticks`, once the axes' limits are set."""

    zorder = 2.5  # above the axes' content, as matplotlib's axes are drawn

    def __init__(self, ax, axis: str, locs: list[float], labels: list[str], fontsize: float) -> None:
        super().__init__()
        fig = ax.figure
        if axis == "x":
            place = offset_copy(ax.get_xaxis_transform(), fig=fig, y=-(TICK_LEN_PT + TICK_PAD_PT), units="points")
            self.texts = [Text(v, 0.0, text, transform=place, ha="center", va="top", fontsize=fontsize)
                          for v, text in zip(locs, labels, strict=True)]
        else:
            place = offset_copy(ax.get_yaxis_transform(), fig=fig, x=-(TICK_LEN_PT + TICK_PAD_PT), units="points")
            self.texts = [Text(0.0, v, text, transform=place, ha="right", va="center_baseline", fontsize=fontsize)
                          for v, text in zip(locs, labels, strict=True)]
        self.marks = tick_marks(ax, axis, locs)
        for artist in (*self.texts, self.marks):
            artist.set_figure(fig)
            artist.set_clip_on(False)

    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        self.marks.draw(renderer)
        for text in self.texts:
            text.draw(renderer)


def numeric_ticks(ax, axis: str, nbins: int = 5) -> TickLabels | None:
    """``ax``'s ``axis`` ("x" or "y") ticked as ``MaxNLocator(nbins)`` would tick it, by a
    :class:`TickLabels` (an artist of the axes, not among its ``texts``), the axis itself left
    without ticks and its label placed beyond the tick labels as matplotlib places it (their
    gap, then the axis' ``labelpad``). None, and matplotlib's own ticks, where the labels would
    need an offset or a scale written beside the axis (``1e6``), which only matplotlib draws."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    which = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    close = 1e-10 * (hi - lo)  # matplotlib keeps a tick this close outside the limits
    locs = [float(v) for v in MaxNLocator(nbins=nbins).tick_values(lo, hi) if lo - close <= v <= hi + close]
    formatter = ScalarFormatter()
    formatter.set_axis(which)
    labels = formatter.format_ticks(locs)
    if formatter.get_offset():
        which.set_major_locator(MaxNLocator(nbins=nbins))
        return None
    import matplotlib

    fig = ax.figure
    fontsize = FontProperties(size=matplotlib.rcParams[f"{axis}tick.labelsize"]).get_size_in_points()
    ticks = TickLabels(ax, axis, locs, labels, fontsize)
    ax.add_artist(ticks)
    (ax.set_xticks if axis == "x" else ax.set_yticks)([])
    renderer, font = fig.canvas.get_renderer(), FontProperties(size=fontsize)
    beyond = TICK_LEN_PT + TICK_PAD_PT + which.labelpad  # points, plus the labels' own extent
    if axis == "x":  # the labels' height as matplotlib lays them out
        height = max((t.get_window_extent(renderer).height for t in ticks.texts), default=0.0)
        which.set_label_coords(0.5, 0.0, transform=offset_copy(ax.transAxes, fig=fig, units="points",
                                                               y=-beyond - height * 72 / fig.dpi))
    else:
        width = max((renderer.get_text_width_height_descent(s, font, False)[0] for s in labels), default=0.0)
        which.set_label_coords(0.0, 0.5, transform=offset_copy(ax.transAxes, fig=fig, units="points",
                                                               x=-beyond - width * 72 / fig.dpi))
    return ticks
