"""Drawings of network topologies and of a ring's messages laid on them.

:func:`draw_topology` picks a layout that shows each family's structure: a
circle for the ring, a grid for a 2D torus (wrap-around links drawn as short
stubs at the edges), stacked grids for a 3D torus, nested squares for a
hypercube, tiers for the fat-tree and the DGX cluster, and rings of groups
for the dragonfly.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize, to_rgba
from matplotlib import colormaps, patheffects

from ..static.phone import Panel, panel, phone_layout, set_panel
from ..static.pictures import NARROW
from ..topology import RingLoads, Topology, ring_link_loads, ring_order

__all__ = ["layout", "draw_topology", "clear_drawing", "plot_link_loads", "phone_panels", "HOST_COLOR", "SWITCH_COLOR",
           "RING_COLOR"]

HOST_COLOR = "#1f77b4"
SWITCH_COLOR = "#7f7f7f"
RING_COLOR = "#ff7f0e"
_LINK_COLOR = "#c7c7c7"
_LOAD_CMAP = "Reds"


def layout(topo: Topology) -> dict:
    """Node -> (x, y) positions suited to the topology's kind."""
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    kind = topo.kind
    if kind == "ring" or (kind == "torus" and len(topo.size["dims"]) == 1):
        n = topo.n_hosts
        ang = np.pi / 2 - 2 * np.pi * np.arange(n) / n
        return {h: (math.cos(a), math.sin(a)) for h, a in zip(topo.hosts, ang)}
    if kind == "torus":
        dims = topo.size["dims"]
        if len(dims) == 2:
            return {v: (float(v[1]), -float(v[0])) for v in topo.hosts}
        # 3D and more: grids of the first two axes, later axes as small diagonal shifts
        rest = dims[2:]
        pos = {}
        for v in topo.hosts:
            x, y = float(v[1]), -float(v[0])
            scale = 0.75
            for axis, c in enumerate(v[2:]):
                step = scale / max(rest[axis], 1)
                x += c * step
                y += c * step * 0.6
                scale = step
            pos[v] = (x, y)
        return pos
    if kind == "hypercube":
        # Bits pair up into squares (bit 2q along x, bit 2q+1 along y); each
        # further pair is a larger square turned a little, so that no edge
        # runs through a node it does not join (with parallel, doubled
        # vectors, bit 2's edge 0-4 would pass straight through node 1).
        d = topo.size["d"]
        steps = []
        for b in range(d):
            q = b // 2
            scale, turn = 2.3 ** q, 0.32 * q
            ux, uy = (1.0, 0.18) if b % 2 == 0 else (0.18, 1.0)
            steps.append((scale * (ux * math.cos(turn) - uy * math.sin(turn)),
                          scale * (ux * math.sin(turn) + uy * math.cos(turn))))
        pos = {}
        for v in topo.hosts:
            x = y = 0.0
            for b, (dx, dy) in enumerate(steps):
                if (v >> b) & 1:
                    x += dx
                    y += dy
            pos[v] = (x, y)
        return pos
    if kind == "fat_tree":
        return _tiered(topo, {"host": 0, "edge": 1, "agg": 2, "core": 3})
    if kind == "dgx":
        return _tiered(topo, {"gpu": 0, "nvswitch": -1, "leaf": 1.6, "spine": 2.6})
    if kind == "dragonfly":
        a, p, h = topo.size["a"], topo.size["p"], topo.size["h"]
        groups = a * h + 1
        big = max(1.2, groups * 0.5)
        small = 0.3 + 0.05 * a if a > 1 else 0.0
        pos = {}
        for grp in range(groups):
            ga = np.pi / 2 - 2 * np.pi * grp / groups
            cx, cy = big * math.cos(ga), big * math.sin(ga)
            for r in range(a):
                ra = ga + 2 * np.pi * (r + 0.5) / a
                rx, ry = cx + small * math.cos(ra), cy + small * math.sin(ra)
                pos[("router", grp, r)] = (rx, ry)
                # hosts sit just outside their router: away from the group centre
                # (or from the ring's centre when the group is a single router)
                out = ra if a > 1 else ga
                for j in range(p):
                    t = out + (j - (p - 1) / 2) * 0.45
                    pos[("host", grp, r, j)] = (rx + 0.25 * math.cos(t), ry + 0.25 * math.sin(t))
        return pos
    raise ValueError(f"no layout for kind {kind!r}")


def _tiered(topo: Topology, levels: dict) -> dict:
    """Hosts spread on a line, each switch above (or below) the mean of its lower neighbours."""
    pos = {}
    n = topo.n_hosts
    for i, hst in enumerate(topo.hosts):
        pos[hst] = (i / max(n - 1, 1), levels[hst[0]])
    # place switches tier by tier, from the hosts outward
    switches = sorted(topo.switches, key=lambda v: abs(levels[v[0]]))
    by_tier: dict = {}
    for v in switches:
        by_tier.setdefault(levels[v[0]], []).append(v)
    for tier in sorted(by_tier, key=abs):
        nodes = by_tier[tier]
        if tier == max(levels.values()) and len(nodes) > 1:  # top tier: spread evenly
            for i, v in enumerate(nodes):
                pos[v] = ((i + 0.5) / len(nodes), tier)
            continue
        for v in nodes:
            below = [pos[u][0] for u in topo.graph[v] if u in pos and abs(pos[u][1]) < abs(tier)]
            pos[v] = (float(np.mean(below)) if below else 0.5, tier)
        xs = [pos[v][0] for v in nodes]
        if len(nodes) > 1 and max(xs) - min(xs) < 0.5:  # crowded (e.g. rail leaves): spread evenly
            for i, v in enumerate(sorted(nodes, key=lambda u: pos[u][0])):
                pos[v] = ((i + 0.5) / len(nodes), tier)
            continue
        # fan out switches that landed on the same x (e.g. the aggregation switches of a pod)
        groups: dict = {}
        for v in nodes:
            groups.setdefault(round(pos[v][0], 6), []).append(v)
        width = 1.0 / max(len(groups), 1)
        for x, vs in groups.items():
            if len(vs) > 1:
                for i, v in enumerate(vs):
                    pos[v] = (x + (i - (len(vs) - 1) / 2) * 0.8 * width / len(vs), tier)
    return pos


def _wraps(topo: Topology, u, v) -> bool:
    """True for a torus wrap-around link drawn as stubs (2D and 3D layouts).

    A link wraps when it joins coordinates 0 and ``n - 1`` of a side ``n >= 3``
    (a side of 2 has one ordinary link). Deciding by coordinates rather than
    by drawn length also catches the short wrap links of a 3D torus's third
    axis, which would otherwise be drawn straight through the middle node.
    """
    if topo.kind != "torus" or len(topo.size["dims"]) < 2:
        return False
    return any(n >= 3 and abs(a - b) == n - 1 for a, b, n in zip(u, v, topo.size["dims"]))


def _segments(topo: Topology, pos: dict, edges) -> tuple:
    """Line segments for ``edges``; torus wrap-around links become two short stubs."""
    segs, owners = [], []
    for u, v in edges:
        (x1, y1), (x2, y2) = pos[u], pos[v]
        if _wraps(topo, u, v):
            # a wrap-around link: a stub leaving each end, pointing away from the other end
            dx, dy = x2 - x1, y2 - y1
            norm = math.hypot(dx, dy)
            ux, uy = dx / norm * 0.35, dy / norm * 0.35
            segs.append([(x1, y1), (x1 - ux, y1 - uy)])
            owners.append((u, v))
            segs.append([(x2, y2), (x2 + ux, y2 + uy)])
            owners.append((u, v))
        else:
            segs.append([(x1, y1), (x2, y2)])
            owners.append((u, v))
    return segs, owners


def draw_topology(ax, topo: Topology, ring=None, loads=None, *, node_size=None, labels: bool = False,
                  show_hosts: bool = True):
    """Draw ``topo`` on ``ax``; optionally a ring's hop pattern and link loads.

    Meant for networks of up to a few hundred nodes (the widget caps its
    sliders there); bigger ones draw, slowly, as a blur.

    Parameters
    ----------
    ax : matplotlib Axes
    topo : Topology
    ring : list, True or RingLoads, optional
        A host order (or ``True`` for :func:`distlib.topology.ring_order`):
        each ring message is drawn along its shortest path, as arrows.
    loads : RingLoads or dict, optional
        Link loads (``(u, v) -> messages``) to colour the links by; given a
        ring and no ``loads``, the ring's loads are used.
    node_size : float, optional
        Marker area; by default it shrinks as the network grows.
    labels : bool
        Write host names (small networks only).
    show_hosts : bool
        Draw host markers (turn off for big indirect networks).

    Returns
    -------
    dict
        The artists: ``"links"``, ``"hosts"``, ``"switches"``, ``"ring"``
        (list) and ``"loads"`` (the :class:`RingLoads`, if any).
    """
    pos = layout(topo)
    ring_loads = _ring_loads(topo, ring)
    if loads is None and ring_loads is not None:
        loads = ring_loads
    load_map = _load_map(loads)
    ax.set_aspect("auto" if topo.kind in ("fat_tree", "dgx") else "equal")
    ax.axis("off")
    links = _draw_links(ax, topo, pos, load_map)
    hosts_art, switches_art = _draw_nodes(ax, topo, pos, node_size=node_size, show_hosts=show_hosts)
    ring_art = []
    if ring_loads is not None:
        ring_art = _draw_ring(ax, topo, pos, ring_loads)
    if labels and topo.n_hosts <= 32:
        for h in topo.hosts:
            ax.annotate(_short(h), pos[h], fontsize=6, ha="center", va="bottom", xytext=(0, 3),
                        textcoords="offset points", zorder=4)
    _frame_drawing(ax, topo, pos)
    return {"links": links, "hosts": hosts_art, "switches": switches_art, "ring": ring_art, "loads": ring_loads}


def _ring_loads(topo: Topology, ring):
    """The :class:`RingLoads` that ``ring`` asks for (given, ``True``: :func:`ring_order`, a host order), or None."""
    if isinstance(ring, RingLoads):
        return ring
    if ring is True:
        return ring_link_loads(topo, ring_order(topo))
    if ring is not None:
        return ring_link_loads(topo, list(ring))
    return None


def _load_map(loads):
    """``{frozenset((u, v)): messages}``, the larger of a link's two directions; None without loads."""
    if loads is None:
        return None
    raw = loads.loads if isinstance(loads, RingLoads) else dict(loads)
    load_map = {}
    for (u, v), val in raw.items():
        key = frozenset((u, v))
        load_map[key] = max(load_map.get(key, 0), val)
    return load_map


def _draw_links(ax, topo: Topology, pos: dict, load_map):
    """Every link as one line collection: grey, or coloured and widened by its load."""
    segs, owners = _segments(topo, pos, list(topo.graph.edges))
    if load_map and topo.kind != "dgx":  # the DGX ring is drawn hop by hop instead (see _draw_ring_dgx)
        vmax = max(max(load_map.values()), 2)
        cmap = colormaps[_LOAD_CMAP]
        norm = Normalize(vmin=0, vmax=vmax)
        vals = np.array([load_map.get(frozenset(e), 0) for e in owners], dtype=float)
        colors = cmap(0.2 + 0.8 * np.asarray(norm(vals)))
        colors[vals <= 0] = to_rgba(_LINK_COLOR)
        widths = np.where(vals > 0, 0.8 + 2.6 * vals / vmax, 0.6)
    else:
        colors, widths = _LINK_COLOR, 0.8
    links = LineCollection(segs, colors=colors, linewidths=widths, zorder=1)
    ax.add_collection(links, autolim=False)
    return links


def _draw_nodes(ax, topo: Topology, pos: dict, *, node_size, show_hosts: bool):
    """Host dots and switch squares, sized for the network: ``(hosts, switches)`` artists (None if not drawn)."""
    n_nodes = topo.graph.number_of_nodes()
    size = node_size if node_size is not None else max(6.0, min(60.0, 2400.0 / max(n_nodes, 1)))
    hosts_art = switches_art = None
    # markers as Line2D (cheaper to build and draw than scatter); ``size`` is an area in pt^2
    if show_hosts and topo.hosts:
        xy = np.array([pos[h] for h in topo.hosts])
        (hosts_art,) = ax.plot(xy[:, 0], xy[:, 1], ls="none", marker="o", ms=math.sqrt(size), mfc=HOST_COLOR,
                               mec="white", mew=0.4, zorder=3)
    sw = topo.switches
    if sw:
        xy = np.array([pos[s] for s in sw])
        (switches_art,) = ax.plot(xy[:, 0], xy[:, 1], ls="none", marker="s", ms=math.sqrt(size * 1.3),
                                  mfc=SWITCH_COLOR, mec="white", mew=0.4, zorder=3)
    return hosts_art, switches_art


def _frame_drawing(ax, topo: Topology, pos: dict) -> None:
    """Axes limits around the nodes with a margin, and the panel's shape on a phone."""
    xy = np.array(list(pos.values()))
    extra = 0.4 if topo.kind == "torus" else 0.0  # room for the wrap-around stubs
    padx = 0.06 * max(np.ptp(xy[:, 0]), 1e-9) + extra
    pady = 0.06 * max(np.ptp(xy[:, 1]), 1e-9) + extra
    if ax.get_aspect() == 1.0:
        padx = pady = max(padx, pady)
    ax.set_xlim(xy[:, 0].min() - padx, xy[:, 0].max() + padx)
    ax.set_ylim(xy[:, 1].min() - pady, xy[:, 1].max() + pady)
    if ax.get_aspect() == 1.0:
        ratio = (ax.get_ylim()[1] - ax.get_ylim()[0]) / (ax.get_xlim()[1] - ax.get_xlim()[0])
    else:  # tiers stretched to the axes: a height that keeps the tiers apart
        ratio = 0.75 if topo.kind == "dgx" else 0.55
    # wide networks (many hosts on one row, or the dragonfly's clusters) need a phone's full width
    full = topo.kind in ("fat_tree", "dgx", "dragonfly") or topo.n_hosts > 32
    _panel(ax, ratio=ratio, full=full)


def clear_drawing(ax) -> None:
    """Remove what :func:`draw_topology` drew, keeping the axes (cheaper than ``ax.clear()``)."""
    for art in list(ax.collections) + list(ax.patches) + list(ax.lines) + list(ax.texts):
        art.remove()


def _short(node) -> str:
    if isinstance(node, tuple):
        return ",".join(str(x) for x in node if not isinstance(x, str))
    return str(node)


def _draw_ring(ax, topo, pos, ring_loads: RingLoads):
    """The ring's messages, each along its route, nudged to the left of travel, with arrowheads."""
    if topo.kind == "dgx":
        return _draw_ring_dgx(ax, topo, pos, ring_loads)
    xs = [x for x, _ in pos.values()]
    ys = [y for _, y in pos.values()]
    scale = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    nudge = 0.012 * scale
    segs, heads, dirs, jumps = [], [], [], []
    for path in ring_loads.routes:
        pts = [pos[v] for v in path]
        route = []
        jumped = False
        for (u, v), (x0, y0), (x1, y1) in zip(zip(path, path[1:]), pts, pts[1:]):
            dx, dy = x1 - x0, y1 - y0
            length = math.hypot(dx, dy) or 1e-12
            if _wraps(topo, u, v):  # route over a wrap-around link: mark both ends instead
                jumped = True
                break
            nx_, ny_ = -dy / length * nudge, dx / length * nudge
            route.append([(x0 + nx_, y0 + ny_), (x1 + nx_, y1 + ny_)])
        if jumped:
            jumps += [pts[0], pts[-1]]
            continue
        segs += route
        (ax0, ay0), (ax1, ay1) = route[-1]
        heads.append((ax0 + 0.75 * (ax1 - ax0), ay0 + 0.75 * (ay1 - ay0)))
        dirs.append((ax1 - ax0, ay1 - ay0))
    arts = []
    if segs:
        # arrowheads: two short barbs at 3/4 of each message's last link
        barb = 0.03 * scale
        cos, sin = math.cos(math.radians(28)), math.sin(math.radians(28))
        for (hx, hy), (dx, dy) in zip(heads, dirs):
            length = math.hypot(dx, dy) or 1e-12
            ux, uy = -dx / length * barb, -dy / length * barb
            segs.append([(hx, hy), (hx + ux * cos - uy * sin, hy + ux * sin + uy * cos)])
            segs.append([(hx, hy), (hx + ux * cos + uy * sin, hy - ux * sin + uy * cos)])
        lc = LineCollection(segs, colors=RING_COLOR, linewidths=1.4, zorder=2, capstyle="round")
        ax.add_collection(lc, autolim=False)
        arts.append(lc)
    if jumps:
        jumps = np.array(jumps)
        arts += ax.plot(jumps[:, 0], jumps[:, 1], ls="none", marker="o", ms=8, mfc="none", mec=RING_COLOR,
                        mew=1.5, zorder=4)
    return arts


def _draw_ring_dgx(ax, topo, pos, ring_loads: RingLoads):
    """The ring on DGX nodes, drawn so that it can be traced from GPU to GPU.

    A hop inside a node (GPU -> NVSwitch -> GPU) is an arc under the GPU row
    from one GPU to the next (it dips toward the NVSwitch, deeper for longer
    hops); a hop between nodes climbs to its rail switch and back down. Each
    hop ends in an arrowhead at the GPU it reaches, and each GPU is numbered
    by its place in the ring. Arrowheads and curves are sized in points, so
    they keep their shape on the stretched (aspect "auto") axes.
    """
    from matplotlib.patches import FancyArrowPatch

    arts = []
    order = [path[0] for path in ring_loads.routes]
    style = dict(color=RING_COLOR, linewidth=1.6, zorder=2, shrinkA=3, shrinkB=3)
    for path in ring_loads.routes:
        i = 0
        while i < len(path) - 1:
            u = path[i]
            if (i + 2 < len(path) and path[i + 1][0] == "nvswitch" and u[0] == "gpu" and path[i + 2][0] == "gpu"):
                v = path[i + 2]
                (x0, _), (x1, _) = pos[u], pos[v]
                rad = 0.6 if x1 > x0 else -0.6  # always bend below the GPU row
                last = i + 2 == len(path) - 1
                a = FancyArrowPatch(pos[u], pos[v], connectionstyle=f"arc3,rad={rad}",
                                    arrowstyle="-|>" if last else "-", mutation_scale=12, **style)
                i += 2
            else:
                v = path[i + 1]
                last = i + 1 == len(path) - 1
                a = FancyArrowPatch(pos[u], pos[v], arrowstyle="-|>" if last else "-", mutation_scale=12, **style)
                i += 1
            ax.add_patch(a)
            arts.append(a)
    # a halo of the background round each number: a link drawn under it cannot run into its digits
    halo = [patheffects.withStroke(linewidth=3.5, foreground=ax.get_facecolor())]
    for k, gpu in enumerate(order):
        x, y = pos[gpu]
        arts.append(ax.annotate(str(k), (x, y), xytext=(0, 7), textcoords="offset points", ha="center",
                                va="bottom", fontsize=11, color="#333333", zorder=5, gid=_RING_LABEL,
                                path_effects=halo))
    _place_ring_labels(ax)
    return arts


_RING_LABEL = "distlib-ring-position"


def _place_ring_labels(ax, axes_width_px=None) -> None:
    """Put the GPUs' ring numbers where they can be read: two rows, and none on top of another.

    With ``axes_width_px`` (CSS px) the axes is taken to be that wide (a
    phone's panel); otherwise its present width in the figure. Numbers are
    placed in ring order, each in the first of two rows where it overlaps no
    number already placed, from left to right; one that fits in neither is
    hidden (a big cluster on a narrow page shows every second or third number).
    """
    labels = [t for t in ax.texts if t.get_gid() == _RING_LABEL]
    if not labels:
        return
    if axes_width_px is None:
        axes_width_px = ax.get_position().width * ax.figure.get_figwidth() * 96
    x0, x1 = ax.get_xlim()
    per_unit = axes_width_px * 0.75 / (x1 - x0)  # points per data unit along x
    placed: list = [[], []]
    for t in sorted(labels, key=lambda t: t.xy[0]):
        x = t.xy[0] * per_unit
        half = 0.33 * t.get_fontsize() * len(t.get_text()) + 2.5  # DejaVu digits are 0.64 em wide
        t.set_visible(False)
        for row, taken in enumerate(placed):
            if all(abs(x - x2) >= half + h2 for x2, h2 in taken):
                taken.append((x, half))
                t.xyann = (0, 6 + 13 * row)
                t.set_visible(True)
                break


def plot_link_loads(ax, ring_loads: RingLoads):
    """Histogram of link loads: how many link directions carry 1, 2, ... ring messages."""
    if not isinstance(ring_loads, RingLoads):
        raise TypeError(f"ring_loads must be a RingLoads, got {type(ring_loads).__name__}")
    vals = np.array(list(ring_loads.loads.values()), dtype=float)
    if vals.size == 0:
        return ax.bar([], [])
    levels, counts = np.unique(np.round(vals, 6), return_counts=True)
    bars = ax.bar(levels, counts, width=0.6 if np.allclose(levels, np.round(levels)) else 0.05,
                  color=colormaps[_LOAD_CMAP](0.7))
    ax.set_xlabel("ring messages per link direction in one step")
    ax.set_ylabel("link directions")
    ax.set_title(f"congestion (max load) = {ring_loads.max_load:g}", fontsize=11)
    _panel(ax, ratio=0.32, full=True, extra=50)  # extra: the x label and tick labels
    return bars


# ---- phone layout ------------------------------------------------------------
# Every panel these functions draw records how it wants to be laid out on a phone
# (a distlib.static.phone.Panel), and its figure gets a phone_layout() that follows them:
# a grid of small drawings stays a grid, one with a wide network or a histogram
# becomes one column, each panel the phone's width.

_TITLE_PX = 36  # a panel's title and the gap above it, CSS px
_SUPTITLE_PX = 50
#: a panel that said nothing of itself
_DEFAULT_PANEL = Panel(ratio=0.6, full=True, extra=40.0)


def _panel(ax, *, ratio: float, full: bool, extra: float = 0.0) -> None:
    set_panel(ax, Panel(ratio=float(min(max(ratio, 0.3), 1.0)), full=bool(full), extra=float(extra)))
    layout = _phone_grid(ax.figure)
    phone_layout(ax.figure, height=None if layout is None else layout[2], adjust=phone_panels)


def _grid_axes(fig):
    """The figure's grid axes in reading order (row, then column)."""
    axes = [a for a in fig.axes if a.get_subplotspec() is not None]
    return sorted(axes, key=lambda a: (a.get_subplotspec().rowspan.start, a.get_subplotspec().colspan.start))


def _phone_grid(fig):
    """(axes, columns, height in CSS px) of ``fig`` on a phone; None for one drawing alone."""
    axes = _grid_axes(fig)
    if len(axes) < 2:
        return None
    specs = [panel(a) or _DEFAULT_PANEL for a in axes]
    ncols = axes[0].get_subplotspec().get_gridspec().ncols
    cols = 1 if any(s.full for s in specs) else min(ncols, 2)
    width = (NARROW - 20) / cols
    heights = [width * s.ratio + s.extra + _TITLE_PX for s in specs]
    rows = [max(heights[i:i + cols]) for i in range(0, len(heights), cols)]
    suptitle = _SUPTITLE_PX if getattr(fig, "_suptitle", None) is not None else 0
    return axes, cols, round(sum(rows) + suptitle + 10)


def phone_panels(fig) -> None:
    """Lay out a figure of topology panels for a phone (the ``adjust`` of its phone_layout).

    A grid of small drawings keeps two columns; any wide network or load
    histogram puts every panel in one column, in reading order (so each
    drawing sits above its histogram). The figure gets constrained layout,
    which makes room for wrapped titles; the ring numbers of DGX drawings
    are placed again for the narrower panels.
    """
    layout = _phone_grid(fig)
    if layout is None:
        axes, cols = _grid_axes(fig), 1
    else:
        axes, cols, _ = layout
        ncols = axes[0].get_subplotspec().get_gridspec().ncols
        if cols != ncols:
            specs = [panel(a) or _DEFAULT_PANEL for a in axes]
            width = NARROW - 20
            gs = fig.add_gridspec(len(axes), 1, height_ratios=[width * s.ratio + s.extra + _TITLE_PX
                                                               for s in specs])
            for i, ax in enumerate(axes):
                ax.set_subplotspec(gs[i, 0])
    for ax in axes:
        _place_ring_labels(ax, axes_width_px=(NARROW - 20) / cols)
