"""Preview a chapter's pictures as the static book shows them, without building the book.

    .venv/bin/python tools/preview_pictures.py notebooks/05_alpha_beta.ipynb [...] [--out DIR]

Executes each notebook the way the book build does (static frames on, no
MPLBACKEND), then writes ``DIR/<chapter>/index.html``: every figure,
animation and widget picture of the chapter (widgets: the frame shown first)
in a column as wide as the book's, styled by the book's own CSS. Chromium
screenshots it at 390 px (a phone) and 1280 px (a desktop):
``DIR/<chapter>/phone.png`` and ``desktop.png``. It prints each picture's
files and flags any figure output that is not a two-size ``<picture>``, and
any picture the page shows smaller than its CSS size (its text would fall
below the page's small print).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CSS = ROOT / "book" / "_ext" / "static" / "distbook.css"


def execute(nb_path: Path, out: Path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(nb_path, as_version=4)
    frames = out / "widget-frames"
    env_before = dict(os.environ)
    os.environ["DISTLIB_STATIC_WIDGETS"] = str(frames)
    os.environ["DISTLIB_STATIC_URL"] = "widget-frames/"
    os.environ.pop("MPLBACKEND", None)
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(nb_path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    return nb


def _widget_pictures(state: dict, model_id: str) -> list[str]:
    """The <picture> HTML a widget view shows first: Stacks follow their selected child."""
    out = []

    def walk(mid):
        m = state.get(mid)
        if m is None:
            return
        st = m.get("state", {})
        kids = [c.removeprefix("IPY_MODEL_") for c in st.get("children", []) if isinstance(c, str)]
        if m.get("model_name") == "StackModel":
            i = st.get("selected_index")
            kids = [kids[i]] if i is not None and 0 <= i < len(kids) else []
        if m.get("model_name") == "HTMLModel" and "<picture" in st.get("value", ""):
            out.append(st["value"])
        for k in kids:
            walk(k)

    walk(model_id)
    return out


def page(nb, title: str) -> tuple[str, list[str]]:
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    blocks, problems = [], []
    for n, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            html = data.get("text/html", "")
            if isinstance(html, list):
                html = "".join(html)
            if o.get("output_type") == "error":
                problems.append(f"cell {n}: {o.get('ename')}: {o.get('evalue')}")
            elif "<picture" in html or 'class="animation"' in html:
                blocks.append(f"<h3>cell {n}</h3>{html}")
            elif "application/vnd.jupyter.widget-view+json" in data:
                mid = data["application/vnd.jupyter.widget-view+json"]["model_id"]
                pics = _widget_pictures(state, mid)
                blocks.append(f"<h3>cell {n}: widget</h3>" + "".join(pics))
            elif "image/png" in data:
                problems.append(f"cell {n}: a figure shown as a plain PNG (not a two-size <picture>)")
    body = "\n".join(blocks)
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{title}</title>"
            f"<link rel='stylesheet' href='distbook.css'><style>body{{font:16px sans-serif;margin:0}}"
            f"main{{max-width:688px;padding:0 16px;margin:auto}} h3{{font-size:13px;color:#888}}</style>"
            f"</head><body><main><h1>{title}</h1>{body}</main></body></html>"), problems


def shoot(folder: Path) -> list[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import CHROMIUM, CHROMIUM_FLAGS, serve  # noqa: E402
    from playwright.sync_api import sync_playwright

    srv, base = serve(folder)
    shrunk = []
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
            for name, width in (("phone", 390), ("desktop", 1280)):
                ctx = b.new_context(viewport={"width": width, "height": 900}, device_scale_factor=1)
                p = ctx.new_page()
                p.goto(f"{base}/index.html", wait_until="load")
                p.wait_for_timeout(800)
                p.screenshot(path=str(folder / f"{name}.png"), full_page=True)
                for src, shown, natural in p.evaluate(
                        "() => [...document.querySelectorAll('img')].filter(i => i.offsetParent !== null)"
                        ".map(i => [i.currentSrc.slice(-40), i.getBoundingClientRect().width, i.naturalWidth])"):
                    if shown < natural / 2 - 1:
                        shrunk.append(f"{name}: {src} shown {shown:.0f} px, drawn for {natural / 2:.0f}")
                ctx.close()
            b.close()
    finally:
        srv.shutdown()
    return shrunk


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("/tmp/preview"))
    args = ap.parse_args(argv)
    bad = 0
    for nb_path in args.notebooks:
        folder = args.out / nb_path.stem
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copy(CSS, folder / "distbook.css")
        nb = execute(nb_path.resolve(), folder)
        html, problems = page(nb, nb_path.stem)
        (folder / "index.html").write_text(html)
        for m in re.finditer(r'srcset="([^"]+)"><img [^>]*src="([^"]+)"', html):
            print(f"  narrow {folder / m.group(1)}   wide {folder / m.group(2)}")
        problems += shoot(folder)
        print(f"{nb_path.stem}: {folder}/index.html, phone.png, desktop.png")
        for p in problems:
            print("  PROBLEM", p)
        bad += len(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
