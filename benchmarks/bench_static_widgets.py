"""The kernel-free widgets of the static book, measured side by side.

    .venv/bin/python benchmarks/bench_static_widgets.py            # uses _build/html as built
    .venv/bin/python benchmarks/bench_static_widgets.py --build    # also times a clean and a cached build
    .venv/bin/python benchmarks/bench_static_widgets.py --html DIR # another built book

Prints, per chapter: the bytes a reader downloads on opening the page (HTML,
scripts, styles, the pictures shown first; measured in Chromium with the
network off), the frame files on disk for the page (fetched only when a
control picks them), how many frames, and the time from a slider move (a key
press on its handle) to the new frame loaded and visible, median and p95 over
every enabled slider of every widget. Then the clean and cached build times
and the frame-rendering share of them (the widgets' build time, from a
per-widget timing in Python). Targets: page <= 4 MB, clean build <= 4 min,
cached <= 30 s, slider-to-frame median <= 50 ms. Asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
JB = Path(sys.executable).with_name("jupyter-book")
sys.path.insert(0, str(ROOT / "tests"))
from conftest import serve, toc_chapters  # noqa: E402

MOVE_JS = r"""
async ([i, k]) => {
  const w = document.querySelectorAll('.distlib-widget')[i];
  const visible = () => [...w.querySelectorAll('img.distlib-frame')].filter(img => img.offsetParent !== null);
  const handles = [...w.querySelectorAll('.widget-slider .noUi-handle')].filter(h => h.offsetParent !== null
      && !h.closest('.noUi-target').hasAttribute('disabled'));
  if (k >= handles.length) return null;
  const h = handles[k];
  const now = h.getAttribute('aria-valuenow'), max = h.getAttribute('aria-valuemax');
  const key = now === max ? 'ArrowLeft' : 'ArrowRight';
  const before = JSON.stringify(visible().map(i => i.getAttribute('src')));
  const t0 = performance.now();
  h.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
  return await new Promise((resolve) => {
    const check = () => {
      const imgs = visible();
      const s = JSON.stringify(imgs.map(i => i.getAttribute('src')));
      if (s !== before && imgs.length && imgs.every(i => i.complete && i.naturalWidth > 0)) {
        requestAnimationFrame(() => resolve(performance.now() - t0));
      } else if (performance.now() - t0 > 5000) resolve(-1);
      else requestAnimationFrame(check);
    };
    check();
  });
}
"""


def build(out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(JB), "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
                   check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t0


def page_figures(browser, base: str, html: Path, chapter: str, moves: int) -> dict:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    loaded = {"bytes": 0, "shared": 0}

    def route(r):
        url = r.request.url
        if url.startswith(("data:", "blob:")) or urlparse(url).hostname == "127.0.0.1":
            r.continue_()
        else:
            r.abort()

    def on_response(resp):
        try:
            n = len(resp.body())
        except Exception:
            return
        loaded["bytes"] += n
        if "/_static/" in resp.url:  # the theme, widget manager, MathJax, fonts: the same on every page
            loaded["shared"] += n

    page.route("**/*", route)
    page.on("response", on_response)
    page.goto(f"{base}/{chapter}.html", wait_until="load")
    page.wait_for_selector(".distlib-widget img.distlib-frame", timeout=20000)
    page.wait_for_timeout(1500)
    on_open, shared = loaded["bytes"], loaded["shared"]
    folder = (html / chapter).parent / "widget-frames"
    frames = sorted(set(p for p in folder.glob("*.png") if p.name in _frame_names(html / f"{chapter}.html")))
    samples = []
    n_widgets = page.evaluate("() => document.querySelectorAll('.distlib-widget').length")
    for i in range(n_widgets):
        for k in range(8):
            for _ in range(moves):
                ms = page.evaluate(MOVE_JS, [i, k])
                if ms is None:
                    break
                if ms >= 0:
                    samples.append(ms)
            else:
                continue
            break
    ctx.close()
    return {"on_open": on_open, "shared": shared, "html": (html / f"{chapter}.html").stat().st_size,
            "frames_bytes": sum(p.stat().st_size for p in frames), "frames": len(frames),
            "samples": samples}


def _frame_names(page: Path) -> set:
    """Picture files the page refers to: its figures and every frame of its widgets, both sizes."""
    import re

    return set(re.findall(r"widget-frames/([0-9a-f]{16}\.png)", page.read_text()))


def phone_bytes(browser, base: str, chapter: str) -> int:
    """Bytes a 390 px phone fetches to open the page, less the shared theme, widget manager and MathJax."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    page = ctx.new_page()
    got = {"n": 0}

    def on_response(resp):
        try:
            if "/_static/" not in resp.url:
                got["n"] += len(resp.body())
        except Exception:
            pass

    page.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in ("127.0.0.1", None)
               else r.abort())
    page.on("response", on_response)
    page.goto(f"{base}/{chapter}.html", wait_until="load")
    page.wait_for_selector(".distlib-widget img.distlib-frame", timeout=20000)
    page.wait_for_timeout(1500)
    ctx.close()
    return got["n"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--build", action="store_true", help="time a clean and a cached build first (minutes)")
    ap.add_argument("--moves", type=int, default=4, help="key presses per slider")
    ap.add_argument("--keep", type=Path, help="with --build: build into this folder and keep it")
    args = ap.parse_args()
    html = args.html
    builds = {}
    tmp = None
    if args.build:
        tmp = args.keep or Path(tempfile.mkdtemp(prefix="bench-static-"))
        shutil.rmtree(tmp / "_build", ignore_errors=True)
        builds["clean"] = build(tmp)
        builds["cached"] = build(tmp)
        html = tmp / "_build" / "html"
    if not (html / "index.html").exists():
        sys.exit(f"no built book in {html}: run scripts/build_book.sh or pass --build")
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    server, base = serve(html)
    all_samples = []
    print("on open: all bytes Chromium fetched to show the page (of which shared: theme, widget manager and "
          "MathJax, the same on every page and cached after the first); page: on open less shared; "
          "phone: the same page opened on a 390 px phone, less shared (its pictures are the narrow ones)")
    print(f"{'chapter':<16} {'on open':>9} {'shared':>8} {'page':>8} {'phone':>8} {'html':>8} {'frames on disk':>15} {'frames':>7} "
          f"{'move->frame median':>19} {'p95':>7} {'n':>4}  verdict")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True,
                               args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"])
        for chapter in toc_chapters():
            f = page_figures(b, base, html, chapter, args.moves)
            phone = phone_bytes(b, base, chapter)
            s = sorted(f["samples"])
            all_samples += s
            med = statistics.median(s) if s else float("nan")
            p95 = s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))] if s else float("nan")
            page_bytes = f["on_open"] - f["shared"]
            ok = page_bytes <= 4e6 and phone <= 4e6 and (med <= 50)
            print(f"{chapter.split('/')[-1]:<16} {f['on_open'] / 1e6:>7.2f}MB {f['shared'] / 1e6:>6.2f}MB "
                  f"{page_bytes / 1e6:>6.2f}MB {phone / 1e6:>6.2f}MB {f['html'] / 1e6:>6.2f}MB {f['frames_bytes'] / 1e6:>13.2f}MB "
                  f"{f['frames']:>7} {med:>16.1f} ms {p95:>7.1f} {len(s):>4}  "
                  f"{'ok' if ok else 'MISS (page <= 4 MB, median <= 50 ms)'}")
        b.close()
    server.shutdown()
    if all_samples:
        print(f"{'all chapters':<16} median slider move -> new frame {statistics.median(all_samples):.1f} ms "
              f"over {len(all_samples)} moves")
    if builds:
        print(f"clean build {builds['clean']:.0f} s (target 240 s) {'ok' if builds['clean'] <= 240 else 'MISS'}; "
              f"cached rebuild {builds['cached']:.1f} s (target 30 s) {'ok' if builds['cached'] <= 30 else 'MISS'}")
    print("frame rendering at build time (Python, per widget):")
    frame_times()
    if tmp and not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


def frame_times() -> None:
    """How long each widget takes to draw its static frames (the build's extra cost)."""
    from distlib.widgets import _base
    from distlib.widgets.collectives import CollectivesWidget
    from distlib.widgets.overlap import OverlapWidget
    from distlib.widgets.ring import ClusterWidget, RingWidget
    from distlib.widgets.roofline import RooflineWidget
    from distlib.widgets.topology import TopologyWidget
    from distlib.widgets.walls import WallsWidget

    tmp = Path(tempfile.mkdtemp(prefix="bench-frames-"))
    _base.static_frames(tmp, url="f")
    total = 0.0
    try:
        for cls in (RingWidget, ClusterWidget, WallsWidget, RooflineWidget, TopologyWidget, CollectivesWidget,
                    OverlapWidget):
            t0 = time.perf_counter()
            t1 = time.perf_counter()
            wdg = cls()
            live0 = time.perf_counter()
            _base.static_frames(None)
            cls()
            live = time.perf_counter() - live0
            _base.static_frames(tmp, url="f")
            dt = live0 - t1
            total += dt
            print(f"  {cls.__name__:<20} {wdg.frame_count:>4} frames {dt:>6.1f} s "
                  f"({1e3 * dt / wdg.frame_count:.0f} ms each; the live widget alone {live:.2f} s)")
    finally:
        _base.static_frames("env")
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"  {'all widgets':<20} {'':>4}        {total:>6.1f} s")


if __name__ == "__main__":
    main()
