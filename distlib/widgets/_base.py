"""What every widget shares: a matplotlib figure shown as a PNG Image widget.

Rendering to PNG bytes in an ``ipywidgets.Image`` (instead of an ``Output``)
keeps the current picture in the saved widget state, so the static book shows
it, and works the same under ipywidgets 7.7.1 (Colab) and 8.

Redrawing a whole figure costs matplotlib 100 ms and more, mostly laying out
text. A widget whose picture is mostly static marks the artists that change as
*animated*: the rest is drawn once into a cached background (Agg blitting), and
each update only restores it and draws the changed artists.
"""

from __future__ import annotations

import io

import ipywidgets as w
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

__all__ = ["FigureImage", "label_style"]


class FigureImage:
    """A figure drawn off-screen and pushed into an Image widget on demand."""

    def __init__(self, *, figsize=(5, 4), dpi=80, **subplot_kw):
        self.figure = Figure(figsize=figsize, dpi=dpi)
        self.canvas = FigureCanvasAgg(self.figure)
        self.ax = self.figure.add_subplot(**subplot_kw)
        self.image = w.Image(format="png")
        self._animated: list = []
        self._background = None

    def set_animated(self, artists) -> None:
        """Redraw only ``artists`` on later renders; the rest is cached."""
        self._animated = [a for a in artists if a is not None]
        for a in self._animated:
            a.set_animated(True)
        self._background = None

    def invalidate(self) -> None:
        """Forget the cached background (after changing static content)."""
        for a in self._animated:
            a.set_animated(False)
        self._animated = []
        self._background = None

    def render(self) -> bytes:
        """Draw the figure, store it as PNG in the Image widget, return the bytes."""
        if self._animated:
            if self._background is None:
                self.canvas.draw()
                self._background = self.canvas.copy_from_bbox(self.figure.bbox)
            else:
                self.canvas.restore_region(self._background)
            renderer = self.canvas.get_renderer()
            for a in self._animated:
                if a.get_visible():
                    a.draw(renderer)
        else:
            self.canvas.draw()
        width, height = self.canvas.get_width_height(physical=True)
        img = PILImage.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        img.save(buf, format="png", compress_level=1)
        png = buf.getvalue()
        self.image.value = png
        return png


def label_style() -> dict:
    """Slider style that leaves room for descriptive labels."""
    return {"description_width": "initial"}
