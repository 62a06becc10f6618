"""An image made small enough for one HTTP answer: downscaled, so the model still sees the picture.

Over stdio nothing caps an answer and a stored image comes back whole. HTTP and SSE clients refuse a server-sent
event over 1 MiB, and a full-page screenshot is often more: rather than refuse it, `memory_load` there answers it
downscaled, and says so and how to get the original.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

__all__ = ["Downscaled", "downscale_to_fit"]

_ATTEMPTS = 6


@dataclass(frozen=True, slots=True)
class Downscaled:
    data: bytes
    mime_type: str
    width: int
    height: int
    original_width: int
    original_height: int


def _base64_size(raw: int) -> int:
    return 4 * ((raw + 2) // 3)


def downscale_to_fit(data: bytes, limit: int) -> Downscaled | None:
    """The image scaled down until its base64 is at most `limit` bytes (PNG for images with transparency or few
    colours, else JPEG), or None when it is no image Pillow reads."""
    from PIL import Image, UnidentifiedImageError  # only when an image is too big for an answer

    try:
        with Image.open(io.BytesIO(data)) as opened:
            opened.load()
            image = opened.copy()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    width, height = image.size
    keep_png = image.mode in ("RGBA", "LA", "P", "1", "L")
    if not keep_png and image.mode != "RGB":
        image = image.convert("RGB")
    scale = min(1.0, math.sqrt(limit / max(1, _base64_size(len(data)))))
    for _ in range(_ATTEMPTS):
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        smaller = image.resize(size, Image.Resampling.LANCZOS)
        out = io.BytesIO()
        if keep_png:
            smaller.save(out, format="PNG", optimize=True)
        else:
            smaller.save(out, format="JPEG", quality=85)
        encoded = out.getvalue()
        if _base64_size(len(encoded)) <= limit:
            mime = "image/png" if keep_png else "image/jpeg"
            return Downscaled(encoded, mime, size[0], size[1], width, height)
        scale *= 0.75
    return None
