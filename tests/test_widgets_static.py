"""Kernel-free widgets: the frames the static book shows, built here in Python.

With static frames switched on, every widget must put a Stack of frames
behind each control it keeps live (jslinked, so the browser swaps frames with
no kernel), include the values its constructor was given (the prose's) among
the grid points, draw each frame through the live ``update()``, and show every
other control disabled with its reason. The browser side is tests/test_browser.py.

Each widget is built as its class's ``EXAMPLE`` says (the chapter's values), and the widgets are found,
not listed (:func:`distlib.widgets.widget_classes`).
"""

from __future__ import annotations

import ipywidgets as w
import pytest

from distlib.fmt import fmt_bytes
from distlib.widgets import _base, widget_classes
from distlib.widgets.collectives import CollectivesWidget
from distlib.widgets.overlap import OverlapWidget
from distlib.widgets.ring import ClusterWidget, RingWidget
from distlib.widgets.roofline import RooflineWidget
from distlib.widgets.walls import WallsWidget

#: Every public widget class, by name (tests/test_widget_inputs.py checks each declares its EXAMPLE).
WIDGETS = widget_classes()

PNG = b"\x89PNG"


def _src(html, attr):
    import re

    return re.search(rf'{attr}="([^"]+)"', html).group(1)


def _png_size(path):
    from PIL import Image

    with Image.open(path) as img:
        return img.size


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


@pytest.fixture
def static(tmp_path):
    _base.static_frames(tmp_path / "frames", url="widget-frames")
    yield tmp_path / "frames"
    _base.static_frames("env")


def example(cls):
    """The widget as its class's ``EXAMPLE`` builds it: the values its chapter shows it with."""
    return cls(**cls.EXAMPLE)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each widget built once in static mode (drawing every frame costs seconds): class -> (widget, folder)."""
    cache = {}

    def get(cls):
        if cls not in cache:
            folder = tmp_path_factory.mktemp(cls.__name__) / "frames"
            _base.static_frames(folder, url="widget-frames")
            try:
                cache[cls] = example(cls), folder
            finally:
                _base.static_frames("env")
        return cache[cls]

    return get


@pytest.mark.parametrize("name", WIDGETS)
def test_every_live_static_control_drives_a_stack_of_distinct_frames(built, name):
    wdg, static = built(WIDGETS[name])
    stacks = [c for c in _walk(wdg) if isinstance(c, w.Stack)]
    assert stacks, "no Stack of frames"
    links = wdg.static_links
    for stack in stacks:
        assert any(b is stack and bt == "selected_index" for _, _, b, bt in links), "a Stack no control drives"
        assert stack.selected_index is not None and 0 <= stack.selected_index < len(stack.children)
    leaves = [c for c in _walk(wdg) if isinstance(c, w.HTML) and "<picture" in c.value]
    # identical frames share one model, so there are at most as many pictures as frames
    assert wdg.frame_count >= 20 and 0.5 * wdg.frame_count <= len({id(p) for p in leaves}) <= wdg.frame_count
    # only the first view's frame comes with the page; the rest load when a control shows them
    eager = [p for p in {id(p): p for p in leaves}.values() if 'loading="lazy"' not in p.value]
    assert len(eager) == 1, f"{len(eager)} frames fetched with the page"
    files = {p.name for p in static.iterdir()}
    wide = {_src(p.value, "src") for p in leaves}
    narrow = {_src(p.value, "srcset") for p in leaves}
    assert all(u.startswith("widget-frames/") for u in wide | narrow)
    assert {u.split("/")[-1] for u in wide | narrow} <= files
    assert all((static / f).read_bytes()[:4] == PNG for f in files)
    # distinct pictures: a slider that changed nothing would make the grid pointless
    assert len(wide) >= 0.5 * wdg.frame_count and len(narrow) >= 0.5 * wdg.frame_count
    # the phone frames are drawn for a phone: NARROW CSS px wide at 2x, never a shrunk desktop frame
    for u in list(narrow)[:3]:
        assert _png_size(static / u.split("/")[-1])[0] == 2 * _base.NARROW
    for u in list(wide)[:3]:
        assert _png_size(static / u.split("/")[-1])[0] == 2 * wdg.fig.width > 2 * _base.NARROW
    # every control the reader sees is either linked to frames or disabled with a reason
    linked = {id(a) for a, _, _, _ in links}
    shown = [c for c in _walk(wdg) if isinstance(c, (w.IntSlider, w.FloatSlider, w.FloatLogSlider, w.SelectionSlider,
                                                    w.Dropdown, w.ToggleButtons))]
    notes = " ".join(c.value for c in _walk(wdg) if isinstance(c, w.HTML))
    for c in shown:
        assert id(c) in linked or (c.disabled and "static page" in notes), c.description


def _picture(node):
    """The wide picture's file a subtree shows with every Stack at its selected child (None: no picture)."""
    if isinstance(node, w.Stack):
        return _picture(node.children[node.selected_index])
    if isinstance(node, w.HTML) and "<picture" in node.value:
        return _src(node.value, "src")
    for child in getattr(node, "children", ()):
        found = _picture(child)
        if found is not None:
            return found
    return None


def _first_view_stacks(node):
    """The Stacks a reader meets on the page's first view: every Stack reached through selected children."""
    if isinstance(node, w.Stack):
        yield node
        yield from _first_view_stacks(node.children[node.selected_index])
        return
    for child in getattr(node, "children", ()):
        yield from _first_view_stacks(child)


@pytest.mark.parametrize("name", WIDGETS)
def test_each_live_control_moved_one_step_from_the_first_view_changes_the_picture(built, name):
    """A reader's first move of any live control, one grid step either way from the page's first view, shows
    another picture: a slider whose step changed nothing would look broken (issue 40: chapter 1's GPU count, at
    1,024 and 4,096 GPUs, moved the all-reduce by less than its printed digits)."""
    wdg, _ = built(WIDGETS[name])
    same = []
    for stack in _first_view_stacks(wdg):
        shown = [_picture(child) for child in stack.children]
        k = stack.selected_index
        same += [(k, j) for j in (k - 1, k + 1) if 0 <= j < len(shown) and shown[j] == shown[k]]
    assert not same, f"{len(same)} first moves of a control leave the picture as it was: (from, to) {same[:4]}"


def test_the_prose_values_are_grid_points_and_selected_first(built):
    cw, _ = built(CollectivesWidget)
    sel = {c.description: c for c in _walk(cw) if isinstance(c, w.SelectionSlider)}
    assert sel["buffer per rank"].value == 2**20
    assert sel["ranks p"].value == 64
    # the read-outs carry their units, as the prose writes them (no 1.00e+12, no 5.00e-6)
    assert sel["buffer per rank"].label == fmt_bytes(2**20)
    assert [label for label, _ in sel["alpha: latency per message"].options][:2] == ["1 µs", "5 µs"]
    assert "450 GB/s" in [label for label, _ in sel["bandwidth per link, one way"].options]
    ov, _ = built(OverlapWidget)
    sel = {c.description: c for c in _walk(ov) if isinstance(c, w.SelectionSlider)}
    assert sel["bucket capacity"].value == 25 and sel["bucket capacity"].label == "25 MiB"


def test_the_initial_frame_is_the_live_picture(built):
    wdg, _ = built(WallsWidget)
    _base.static_frames(None)
    try:
        again = example(WallsWidget)
    finally:
        _base.static_frames("env")
    live = bytes(again.fig.image.value)
    # the same update() path draws both; the static one stores a palette PNG of the same picture
    assert again.result == wdg.result
    assert len(live) > 1000 and bytes(again.fig.image.value)[:4] == PNG
    # the static widget's own live Image is not shown, and keeps no pixels in the page's state
    assert bytes(wdg.fig.image.value) == b""


def test_ring_steps_have_their_own_slider_and_play_per_ring_size(built):
    wdg, _ = built(RingWidget)
    plays = [c for c in _walk(wdg) if isinstance(c, w.Play)]
    assert len(plays) == len(_base_p_static())
    for play in plays:
        assert play.max == 2 * (play.max // 2) and play.min == 0
    assert sum(2 * (p - 1) + 1 for p in _base_p_static()) == wdg.frame_count


def _base_p_static():
    from distlib.widgets.ring import P_STATIC

    return P_STATIC


@pytest.mark.parametrize("cls", [RingWidget, WallsWidget, CollectivesWidget], ids=lambda c: c.__name__)
def test_every_frame_says_in_words_what_it_shows(built, cls):
    """A static frame's alt text is its own read-out, so a screen reader hears what the picture shows."""
    import html as html_lib
    import re

    wdg, _ = built(cls)
    pics = [c.value for c in _walk(wdg) if isinstance(c, w.HTML) and "<picture" in c.value]
    alts = [html_lib.unescape(re.search(r' alt="([^"]*)"', h).group(1)) for h in pics]
    assert alts and all(len(a) >= 20 for a in alts), alts[:3]
    assert len(set(alts)) > 1  # frames for other values say other things
    assert not any("<" in a for a in alts)  # words, not the read-out's HTML


def test_inline_frames_embed_png(tmp_path):
    _base.static_frames("inline")
    try:
        wdg = RooflineWidget()
    finally:
        _base.static_frames("env")
    import base64

    pics = [c.value for c in _walk(wdg) if isinstance(c, w.HTML) and "<picture" in c.value]
    assert pics
    for html in pics:
        for attr in ("src", "srcset"):
            url = _src(html, attr)
            assert url.startswith("data:image/png;base64,")
            assert base64.b64decode(url.split(",", 1)[1])[:4] == PNG


def test_the_environment_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("DISTLIB_STATIC_WIDGETS", str(tmp_path))
    monkeypatch.setenv("DISTLIB_STATIC_URL", "frames")
    cfg = _base.static_config()
    assert cfg.folder == tmp_path and cfg.url == "frames/"
    monkeypatch.setenv("DISTLIB_STATIC_WIDGETS", "0")
    assert _base.static_config() is None
    monkeypatch.delenv("DISTLIB_STATIC_WIDGETS")
    assert _base.static_config() is None
    live = RingWidget(p=3)
    assert not any(isinstance(c, w.Stack) for c in _walk(live))


def test_live_pictures_are_2x_for_their_css_size_and_never_stretched():
    wdg = ClusterWidget()
    from PIL import Image
    import io

    img = Image.open(io.BytesIO(bytes(wdg.fig.image.value)))
    assert wdg.fig.image.layout.width == f"{wdg.fig.width}px"
    assert wdg.fig.image.layout.max_width == "100%"
    assert img.size == (2 * wdg.fig.width, 2 * wdg.fig.height)


def test_log_sliders_start_on_the_value_given():
    cw = CollectivesWidget(alpha=5e-6, bandwidth=7e9)
    for slider, value in ((cw.alpha, 5e-6), (cw.bandwidth, 7e9)):
        k = (slider.min - __import__("math").log10(value)) / slider.step
        assert abs(k - round(k)) < 1e-6
        assert slider.min <= __import__("math").log10(value) <= slider.max
    with pytest.raises(ValueError, match="value"):
        _base.log_slider(value=1e-9, base=10, min=-7, max=-3, step=0.05)


class _Square(_base.FigureWidget):
    """A square's area: the smallest widget made of compute, draw and describe."""

    def __init__(self, *, side=2):
        self.side = w.IntSlider(value=side, min=1, max=4, description="side")
        self.controls = [self.side]
        self.fig = _base.FigureImage(width=200, height=160)
        self.summary = w.HTML()
        self.calls = []
        self._finish()

    def compute(self):
        self.calls.append("compute")
        return self.side.value ** 2

    def draw(self, area):
        self.calls.append("draw")
        self.fig.ax.clear()
        self.fig.ax.bar([0], [area])
        self.fig.ax.set_ylim(0, 16)
        self.fig.render()

    def describe(self, area):
        self.calls.append("describe")
        self.summary.value = f"area {area}"

    def static_axes(self):
        return [_base.StaticAxis("side", [1, 2, 3])]


def test_update_is_compute_then_draw_then_describe_and_static_frames_come_from_it():
    live = _Square(side=3)
    assert live.calls == ["compute", "draw", "describe"] and live.summary.value == "area 9"
    live.side.value = 1  # the observer: one update, in that order
    assert live.calls[3:] == ["compute", "draw", "describe"] and live.summary.value == "area 1"
    _base.static_frames("inline")
    try:
        wdg = _Square(side=2)
    finally:
        _base.static_frames("env")
    assert wdg.frame_count == 3 and wdg.side.value == 2
    summaries = sorted(c.value for c in _walk(wdg) if isinstance(c, w.HTML) and c.value.startswith("area"))
    assert summaries == ["area 1", "area 4", "area 9"]
    pics = [c.value for c in _walk(wdg) if isinstance(c, w.HTML) and "<picture" in c.value]
    assert all('--wn:328px' in p and '--w:200px' in p for p in pics)  # each frame twice: its phone twin's too


def test_the_phone_twin_is_built_from_the_same_arguments_inside_a_block_that_ends():
    from distlib.static import mode

    wdg = _Square(side=3)
    assert wdg._init_args == ((), {"side": 3}) and not wdg.fig.narrow
    twin = wdg.phone_twin()
    assert twin.fig.narrow and twin.fig.width == _base.NARROW and twin.side.value == 3
    assert not mode.drawn_for_phone() and mode.current_mode() == mode.Mode()  # the block is over
    assert _base.FigureImage(narrow=True).narrow  # or said explicitly
    with mode.phone_twin():
        assert _base.FigureImage().narrow and mode.static_config() is None
    _base.static_frames("inline")
    try:
        with mode.phone_twin():  # a phone twin is live even while the page's widgets draw frames
            assert mode.static_config() is None
        assert mode.static_config() == mode.StaticConfig(None, "")
    finally:
        _base.static_frames("env")
