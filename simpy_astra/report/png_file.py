"""A chart's pixels as a PNG file's bytes, written by our own encoder (issue 51: the reports
must cost a few per cent of the simulation), for ``--plots`` and a sweep's plots alike.
"""

from __future__ import annotations

#: an RGBA pixel as its colour (3 bytes) and its alpha
_RGB_OF_RGBA = [("rgb", "V3"), ("a", "u1")]


def png_bytes(rgba, text: dict[str, str], dpi: int) -> bytes:
    """An opaque picture (``rgba``: height x width x 4 bytes, alpha ignored) as a lossless RGB
    PNG with ``text`` as ``tEXt`` chunks (``iTXt`` where not Latin-1) and ``dpi`` in ``pHYs``.

    Written here rather than by Pillow (issue 51: the reports must cost a few per cent of the
    simulation): Pillow first converts matplotlib's RGBA to RGB (a copy), then picks one of PNG's
    five filters per line by trying each, most of its time; here every line is filtered "Up"
    (its difference from the line above, one array subtraction): a chart's bars, rows and
    margins repeat down the picture, so the lines are mostly zeros and compress nearly as well,
    zlib at level 1, in about half the time."""
    import struct
    import zlib

    import numpy as np

    height, width = rgba.shape[:2]
    # each pixel's first three bytes, copied as one 3-byte item (a copy of three uint8s of every
    # four is several times slower), then every line but the first less the line above
    rgb = np.ascontiguousarray(np.ascontiguousarray(rgba).view(_RGB_OF_RGBA)["rgb"]).view(np.uint8)
    rgb = rgb.reshape(height, 3 * width)
    lines = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    lines[:, 0] = 2  # filter type Up
    lines[0, 1:] = rgb[0]
    np.subtract(rgb[1:], rgb[:-1], out=lines[1:, 1:])  # modulo 256, as PNG's Up is

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    out = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))]
    per_metre = round(dpi / 0.0254)
    out.append(chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)))
    for key, value in text.items():
        try:
            out.append(chunk(b"tEXt", key.encode("latin-1") + b"\0" + value.encode("latin-1")))
        except UnicodeEncodeError:  # uncompressed international text, no language
            out.append(chunk(b"iTXt", key.encode("latin-1") + b"\0\0\0\0\0" + value.encode("utf-8")))
    out.append(chunk(b"IDAT", zlib.compress(lines, 1)))
    out.append(chunk(b"IEND", b""))
    return b"".join(out)
