"""timeline.png's Gantt chart drawn as one image: the rows' stretches rasterised, a column the
part that filled most of it, and an image artist whose every canvas pixel takes the raster
pixel under its centre (issue 51: the reports must cost a few per cent of the simulation).
"""

from __future__ import annotations

#: the Gantt chart's resolution: stretches of time per row (the PNG is about 1,300 pixels wide)
GANTT_COLUMNS = 2000
#: image lines per row: the row's bar fills all but the first (a gap between rows)
ROW_LINES = 5


def picked_image(ax, raster, extent):
    """An image of ``raster`` (RGBA bytes, its first line on top) spread over ``extent`` (data:
    left, right, bottom, top) whose every pixel on the canvas takes the raster pixel under its
    centre: ``imshow``'s "none" interpolation picked by two index arrays, without matplotlib's
    generic resampling and colour passes (most of the chart's drawing, issue 51)."""
    import numpy as np
    from matplotlib.image import AxesImage
    from matplotlib.transforms import Bbox, TransformedBbox

    class _PickedImage(AxesImage):
        def make_image(self, renderer, magnification=1.0, unsampled=False):
            left, right, bottom, top = self.get_extent()
            box = TransformedBbox(Bbox([[left, bottom], [right, top]]), self.get_transform())
            shown = Bbox.intersection(box, self.axes.bbox)
            if shown is None:
                return None, 0, 0, None
            x0, x1 = int(np.floor(shown.x0)), int(np.ceil(shown.x1))
            y0, y1 = int(np.floor(shown.y0)), int(np.ceil(shown.y1))
            if x1 <= x0 or y1 <= y0:
                return None, 0, 0, None
            lines, columns = self._A.shape[:2]
            xs = np.arange(x0, x1) + 0.5  # pixel centres; the picture's rows bottom first
            ys = np.arange(y0, y1) + 0.5
            col = np.clip(((xs - box.x0) / box.width * columns).astype(np.int64), 0, columns - 1)
            # the raster's first line is the extent's top, drawn where the axes put it
            line = ((ys - box.y0) / box.height * lines).astype(np.int64)
            line = np.clip(lines - 1 - line if box.height > 0 else line, 0, lines - 1)
            # the raster's own bytes (the masked array set_data wraps them in indexes several
            # times slower; none of its pixels is masked), a pixel as one 32-bit word, its
            # columns picked before its lines are repeated: a few times less to gather
            raw = np.ascontiguousarray(np.ma.getdata(self._A)).view(np.uint32)[..., 0]
            picked = raw[:, col][line]
            return picked.view(np.uint8).reshape(*picked.shape, 4), x0, y0, None

    image = _PickedImage(ax, extent=extent, interpolation="none")
    image.set_data(raster)
    return image


def gantt_raster(rows: list[tuple], colours: dict[str, str], end_ns: int):
    """The chart as one image (rows x :data:`GANTT_COLUMNS` RGBA pixels, transparent past a
    row's finish; ``rows``: each row's stretches as :func:`~simpy_astra.report.columns.as_arrays`
    gives them): one picture to draw however many kernels a step runs, not a rectangle each;
    a column shows the part that filled most of it (:func:`~simpy_astra.report.columns.dominant`)."""
    import numpy as np
    from matplotlib.colors import to_rgba

    from simpy_astra.report.columns import dominant_codes

    names = ["", *colours]  # "": transparent
    palette = (np.array([(0.0, 0.0, 0.0, 0.0)] + [to_rgba(colours[n]) for n in names[1:]]) * 255).round()
    palette = palette.astype(np.uint8)  # bytes: drawn several times faster than floats
    index = {name: k for k, name in enumerate(names)}
    image = np.zeros((len(rows) * ROW_LINES, GANTT_COLUMNS, 4), dtype=np.uint8)
    for y, arrays in enumerate(rows):
        best, order = dominant_codes(None, GANTT_COLUMNS, end_ns, arrays=arrays)
        # a part the row names but never shows wins no column (it fills none): any colour will do;
        # the last entry is for -1, a column nothing fills: transparent
        colour_of = np.array([index.get(name, 0) for name in order] + [0], dtype=np.intp)
        image[y * ROW_LINES + 1:(y + 1) * ROW_LINES] = palette[colour_of[best]]
    return image
