"""A reader's own JupyterLab, first contact: the widget front end arrives with the set-up cell.

A fresh venv holds JupyterLab and nothing of the book (no ipywidgets, so no
widget front end in the page). The reader opens chapter 1's reader notebook
and runs it. Its set-up cell installs the library and ipywidgets from a
folder of wheels (``DISTBOOK_WHEELS``, as from the workshop kit, no index),
and, because the page loaded before the widget front end existed, says the
one step to take. The test takes that step as written (reload the page,
restart the kernel and run everything), and then the ring widget is a
widget, not text, and its picture follows its slider.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT, JupyterLab

pytestmark = [pytest.mark.browser, pytest.mark.book, pytest.mark.slow]
#: roughly what these tests cost on CI's machine (a fresh JupyterLab installed, then a reader's first run, on one worker): tests/conftest.py starts the longest first
BOOK_PHASE_SECONDS = 180
pytest.importorskip("playwright.sync_api")


def _pip(py, *args, **kw):
    done = subprocess.run([str(py), "-m", "pip", *args], capture_output=True, text=True, timeout=1200, **kw)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.fixture(scope="module")
def fresh_lab(built, tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh-lab")
    wheels = root / "wheels"
    # the kit's wheels: the library with its widgets extra and everything those need
    _pip(sys.executable, "wheel", "-q", "--wheel-dir", str(wheels), f"{ROOT}[widgets]", "-c",
         str(ROOT / "constraints.txt"), cwd=root)
    _pip(sys.executable, "wheel", "-q", "--wheel-dir", str(wheels), "jupyterlab", "ipykernel", "-c",
         str(ROOT / "constraints.txt"), cwd=root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    offline = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    offline["PIP_CONFIG_FILE"] = os.devnull
    _pip(py, "install", "-q", "--no-index", "--find-links", str(wheels), "jupyterlab", "ipykernel", env=offline)
    has = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('ipywidgets') is None)"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert has == "True", "the fresh JupyterLab must start without ipywidgets"
    work = root / "work"
    work.mkdir()
    (work / "01_ring.ipynb").write_text((built / "reader" / "01_ring.ipynb").read_text())
    env = {**offline, "DISTBOOK_WHEELS": str(wheels), "HOME": str(root),
           "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    env.pop("MPLBACKEND", None)
    server = JupyterLab(py, root, work, env, "--LabApp.expose_app_in_browser=True")
    yield server.url, server.token, root
    server.stop()


def _run(page, command):
    """Start a JupyterLab command without waiting for it (one that asks in a dialog waits for the answer)."""
    page.evaluate("c => { window.jupyterapp.commands.execute(c); }", command)


def _kernel_ready(page, timeout=120_000):
    page.wait_for_function("() => { const w = window.jupyterapp.shell.currentWidget;"
                           " const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;"
                           " return k && k.status === 'idle'; }", timeout=timeout)


def _idle(page, timeout=600_000):
    page.wait_for_function("() => { const s = document.querySelector('.jp-Notebook');"
                           " return s && ![...document.querySelectorAll('.jp-InputArea-prompt')]"
                           "   .some(p => p.textContent.includes('[*]')); }", timeout=timeout)


def test_widgets_work_after_the_one_step_the_set_up_cell_names(fresh_lab, browser):
    url, token, root = fresh_lab
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/lab/tree/01_ring.ipynb?token={token}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')",
                           timeout=60_000)
    _kernel_ready(page)
    _run(page, "notebook:run-all-cells")
    page.wait_for_function("() => [...document.querySelectorAll('.jp-InputArea-prompt')].some(p => /\\[[*0-9]/.test(p.textContent))",
                           timeout=60_000)
    # the set-up cell installs from the wheels and names the one step to take
    hint = page.locator(".jp-OutputArea-output", has_text="reload this page")
    hint.first.wait_for(timeout=600_000)
    said = hint.first.inner_text()
    _idle(page)
    page.screenshot(path=str(root / "before-reload.png"))
    assert "Restart Kernel and Run All Cells" in said, said
    # before the step: no widget front end in this page, so the widget shows as its text
    assert page.locator(".jp-Notebook .widget-slider").count() == 0
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:restart-run-all')",
                           timeout=60_000)
    _kernel_ready(page)
    _run(page, "notebook:restart-run-all")
    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=30_000)
    slider = page.locator(".jp-Notebook .widget-slider").first
    slider.wait_for(timeout=600_000)
    _idle(page)
    widget = page.locator(".jp-OutputArea-output", has=page.locator(".widget-slider")).first
    widget.scroll_into_view_if_needed()
    img = widget.locator("img").first
    before = img.get_attribute("src")
    handle = widget.locator(".widget-slider .ui-slider-handle, .widget-slider .noUi-handle").last
    handle.focus()
    changed = "([el, b]) => el.getAttribute('src') !== b"
    for key in ("End", "Home"):  # the start value may already be the last one
        page.keyboard.press(key)
        try:
            page.wait_for_function(changed, arg=[img.element_handle(), before], timeout=20_000)
            break
        except Exception:
            continue
    assert img.get_attribute("src") != before, "the picture did not follow its slider"
    page.screenshot(path=str(root / "after-step.png"))
    text = page.locator(".jp-Notebook").inner_text()
    assert "RingWidget(children=" not in text, "a widget still shows as text"
    context.close()
    print(f"\nscreenshots: {root / 'before-reload.png'} and {root / 'after-step.png'}")
