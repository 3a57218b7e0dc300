"""The workshop kit, tried the way an instructor and a room use it.

- ``scripts/workshop.sh`` starts JupyterLab on 127.0.0.1 only over a working
  copy of the reader notebooks, prints the URL with its token, and stops
  cleanly on Ctrl-C;
- in headless Chromium (network off), chapter 1 runs in that JupyterLab and
  its ring slider redraws the picture;
- a chapter page's "Live code" button runs the page's cells on that server,
  with no request leaving the machine;
- the slides exist for every chapter and open offline;
- (the bundle: tests/test_bundle.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from conftest import ROOT, PageVisit, toc_chapters

pytestmark = pytest.mark.slow
#: roughly what these tests cost on CI's machine (the workshop's server started and stopped, on one worker): tests/conftest.py starts the longest first
BOOK_PHASE_SECONDS = 150
STEMS = [Path(c).name for c in toc_chapters()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ctrl_c_as_in_a_terminal():
    """SIGINT back to its default in the child: a test run started in the background (``cmd &``)
    inherits SIGINT ignored, and bash cannot trap a signal that was ignored when it started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Workshop:
    """scripts/workshop.sh running in its own process group."""

    def __init__(self, built: Path, tmp: Path, **extra):
        self.port, self.book_port = free_port(), free_port()
        self.dir = tmp / "room"
        env = dict(os.environ, PORT=str(self.port), BOOK_PORT=str(self.book_port),
                   READER_DIR=str(built / "reader"), BOOK_DIR=str(built / "html"),
                   WORKSHOP_DIR=str(self.dir), **extra)
        self.proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "workshop.sh")], env=env, cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, preexec_fn=_ctrl_c_as_in_a_terminal)
        self.lines, self.lab_url, self.book_url = [], None, None
        deadline = time.monotonic() + 180
        for line in self.proc.stdout:
            self.lines.append(line)
            if "http://127.0.0.1:" in line and "/lab?token=" in line:
                self.lab_url = re.search(r"(http://127\.0\.0\.1:\S+)", line).group(1)
            if "#jupyter=" in line:
                self.book_url = re.search(r"(http://127\.0\.0\.1:\S+)", line).group(1)
            if self.lab_url and self.book_url or time.monotonic() > deadline:
                break
        assert self.lab_url and self.book_url, "".join(self.lines)
        self.token = self.lab_url.split("token=")[1]

    def kernels(self) -> list[str]:
        url = self.lab_url.split("/lab?")[0] + f"/api/kernels?token={self.token}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            return [k["id"] for k in json.load(reply)]

    def tree(self):
        parent = psutil.Process(self.proc.pid)
        return [parent, *parent.children(recursive=True)]

    def listening(self):
        """Addresses the tree listens on. A short-lived child (workshop.sh's own polling) can exit
        between listing the tree and reading its sockets; it listened on nothing, so skip it."""
        found = []
        for p in self.tree():
            try:
                found += [c.laddr for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
            except psutil.NoSuchProcess:
                continue
        return found

    def stop(self) -> float:
        """Ctrl-C (SIGINT to the process group); seconds until all are gone."""
        procs = self.tree()
        t0 = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        finally:
            gone, alive = psutil.wait_procs(procs, timeout=20)
            for p in alive:
                p.kill()
        assert not alive, f"left running after Ctrl-C: {[p.pid for p in alive]}"
        return time.monotonic() - t0


@pytest.fixture(scope="module")
def workshop(built, tmp_path_factory):
    ws = Workshop(built, tmp_path_factory.mktemp("workshop"))
    yield ws
    if ws.proc.poll() is None:
        ws.stop()


def test_workshop_serves_the_reader_notebooks_on_loopback_only(workshop, built):
    listening = workshop.listening()
    ports = {a.port for a in listening}
    assert {workshop.port, workshop.book_port} <= ports, listening
    assert all(a.ip == "127.0.0.1" for a in listening), listening
    with urllib.request.urlopen(f"http://127.0.0.1:{workshop.port}/api/contents?token={workshop.token}") as r:
        names = {c["name"] for c in json.load(r)["content"] if c["type"] == "notebook"}
    assert names == {f"{stem}.ipynb" for stem in STEMS}
    # a working copy: the room's edits never touch the reader notebooks
    copy = workshop.dir / f"{STEMS[0]}.ipynb"
    assert copy.read_bytes() == (built / "reader" / copy.name).read_bytes()
    assert not copy.samefile(built / "reader" / copy.name)
    # without the token the server refuses
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"http://127.0.0.1:{workshop.port}/api/contents")
    assert err.value.code == 403


def test_no_process_carries_the_token_on_its_command_line(workshop):
    """Any local user reads /proc/<pid>/cmdline: the token goes to JupyterLab in its environment."""
    seen = []
    for p in workshop.tree():
        try:
            seen.append((p.pid, " ".join(p.cmdline())))
        except psutil.NoSuchProcess:
            continue
    assert any("jupyter-lab" in cmd for _, cmd in seen), seen
    leaking = [(pid, cmd) for pid, cmd in seen if workshop.token in cmd]
    assert not leaking, leaking


def test_the_extension_manager_is_read_only_and_asks_nothing(workshop):
    """Offline, the Extension Manager's PyPI search fails behind a "fetch data from web services?"
    prompt; the room gets the read-only manager, which lists what is installed and fetches nothing."""
    base = f"http://127.0.0.1:{workshop.port}"
    auth = {"Authorization": f"token {workshop.token}"}

    def get(path):
        with urllib.request.urlopen(urllib.request.Request(base + path, headers=auth), timeout=30) as r:
            return json.load(r)

    settings = get("/lab/api/settings/@jupyterlab/extensionmanager-extension:plugin")
    # the room's answer is an override: the schema's default, which the panel reads as its composite
    assert settings["schema"]["properties"]["disclaimed"]["default"] is True, settings["schema"]["properties"]
    assert "disclaimed" not in settings["settings"], settings["settings"]
    with urllib.request.urlopen(urllib.request.Request(base + "/lab", headers=auth), timeout=30) as r:
        page = r.read().decode()
    config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                  page, re.S).group(1))
    manager = json.loads(config["extensionManager"]) if isinstance(config["extensionManager"], str) \
        else config["extensionManager"]
    assert manager["can_install"] is False and manager["name"] == "read-only", manager
    installed = get("/lab/api/extensions")  # no query: the installed ones
    names = {e["name"] for e in installed}
    assert "@jupyter-widgets/jupyterlab-manager" in names, names


def test_workshop_refuses_a_bad_port_by_name(built, tmp_path):
    env = dict(os.environ, PORT="80", READER_DIR=str(built / "reader"), BOOK_DIR=str(built / "html"),
               WORKSHOP_DIR=str(tmp_path / "ws"))
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "workshop.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "PORT must be a port number from 1024 to 65535" in proc.stderr


def test_workshop_keeps_edits_and_stops_cleanly_on_ctrl_c(built, tmp_path):
    ws = Workshop(built, tmp_path)
    first = "".join(ws.lines)
    assert f"({len(STEMS)} notebook(s) copied)" in first and "kept" not in first, first
    layout = ws.dir / ".jupyter" / "lab" / "workspaces"
    edited = ws.dir / f"{STEMS[0]}.ipynb"
    edited.write_text(edited.read_text() + "\n")  # a participant's edit
    mark = edited.read_bytes()
    ws.stop()
    assert ws.proc.returncode == 0
    assert "stopped" in ws.proc.stdout.read()
    with socket.socket() as s:  # the port is free again (TIME_WAIT aside, as servers bind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", ws.port))
    layout.mkdir(parents=True, exist_ok=True)  # the layout JupyterLab saved, with notebooks open
    (layout / "default-37a8.jupyterlab-workspace").write_text('{"data": {}, "metadata": {"id": "default"}}')
    again = Workshop(built, tmp_path)  # a restart keeps the room's edits, not the old layout
    try:
        assert (again.dir / edited.name).read_bytes() == mark
        assert any(f"({len(STEMS)} notebook(s) kept with their edits, 0 copied" in line for line in again.lines)
        assert not (layout / "default-37a8.jupyterlab-workspace").exists()
    finally:
        again.stop()


def test_ctrl_c_ends_the_workshop_even_when_a_server_will_not_stop(built, tmp_path):
    """A server that never acts on TERM (here: JupyterLab frozen with SIGSTOP) is killed, with its
    children, about 10 s after Ctrl-C; nothing is left running and nothing hangs."""
    ws = Workshop(built, tmp_path)
    lab = next(p for p in ws.tree()[1:] if "jupyter-lab" in " ".join(p.cmdline()))
    lab.send_signal(signal.SIGSTOP)
    took = ws.stop()  # asserts that no process of the tree is left
    assert 9 < took < 40, took
    assert "did not stop within 10 s" in ws.proc.stdout.read()


# --- in the browser -----------------------------------------------------------


def test_chapter_1_runs_in_jupyterlab_and_its_slider_redraws(workshop, browser, built):
    url = f"http://127.0.0.1:{workshop.port}/lab/tree/{STEMS[0]}.ipynb?token={workshop.token}"
    visit = PageVisit(browser, url, context={"viewport": {"width": 1280, "height": 900}}, settle_ms=0)
    page = visit.page
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    # the kernel is up when the status bar says so
    page.get_by_text("Python 3 (ipykernel) | Idle").first.wait_for(timeout=120_000)
    # Run > Run All Cells, from JupyterLab's own menu
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    item = page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first
    item.wait_for(timeout=30_000)
    item.click()
    # JupyterLab renders only the cells near the viewport: bring the ring
    # widget (the first widget of the chapter) into view before using it
    first_widget = page.locator(".jp-OutputArea .widget-slider").first
    first_widget.wait_for(state="attached", timeout=240_000)
    first_widget.evaluate("el => el.scrollIntoView({block: 'center'})")
    box = first_widget.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')][1]")
    img = box.locator(".widget-image").first
    img.wait_for(timeout=60_000)
    before = img.get_attribute("src")
    handle = box.locator(".widget-slider .noUi-handle").first
    handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("([el, before]) => el.getAttribute('src') !== before",
                           arg=[img.element_handle(), before], timeout=60_000)
    page.screenshot(path=str(built / "jupyterlab-ring.png"))
    assert not visit.outside, visit.outside[:3]
    visit.context.close()


def test_live_code_runs_a_chapter_page_on_the_workshop_server(workshop, browser, built):
    chapter = toc_chapters()[0]
    # the address workshop.sh prints, as printed: it lands on the intro (no code there), and the
    # reader then goes to a chapter; the server and token must come along, with no prompt
    visit = PageVisit(browser, workshop.book_url, context={"viewport": {"width": 1280, "height": 900}}, settle_ms=0)
    page = visit.page
    prompts = []
    page.on("dialog", lambda d: (prompts.append(d.message), d.dismiss()))
    page.wait_for_url(re.compile(r".*/book/intro\.html.*"), timeout=30_000)
    page.goto(workshop.book_url.split("/index.html")[0] + f"/{chapter}.html")
    before = set(workshop.kernels())
    page.click("#distbook-live-button")
    page.wait_for_function(
        "() => /^live:/.test(document.getElementById('distbook-live-status').textContent)", timeout=120_000)
    started = set(workshop.kernels()) - before
    assert len(started) == 1, started
    assert not prompts, prompts
    cells = page.locator(".thebe-cell")
    assert cells.count() >= 5
    # the first cell's "run all" runs the whole chapter on the workshop's kernel
    cells.first.locator(".thebe-runall-button").click()
    page.wait_for_function(
        "() => document.querySelectorAll('.thebe-cell [data-output] .jp-OutputArea-output, "
        ".thebe-cell ~ [data-output] .jp-OutputArea-output, [data-output] .jp-OutputArea-output').length >= 3",
        timeout=240_000)
    text = page.locator("[data-output]").all_inner_texts()
    assert not any("Traceback" in t for t in text), [t for t in text if "Traceback" in t][:2]
    page.screenshot(path=str(built / "live-code.png"))
    assert not visit.outside, visit.outside[:3]
    assert not visit.errors, visit.errors[:3]
    page.close(run_before_unload=True)  # as a reader closes the tab: the page's unload handlers run
    # the page's kernel ends with its tab, not at the end of the workshop
    deadline = time.monotonic() + 30
    while started & set(workshop.kernels()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not started & set(workshop.kernels()), "the Live code kernel outlived its page"
    visit.context.close()


def test_slides_exist_for_every_chapter_and_open_offline(built, browser):
    slides = built / "slides"
    decks = sorted(slides.glob("*.html"))
    assert {d.stem for d in decks} - {"index"} == set(STEMS)
    for deck in decks:
        if deck.stem == "index":
            continue
        page = deck.read_text()
        assert "{glue" not in page and ":::" not in page, deck.name
        assert not re.search(r'(src|href)="(https?:)?//', page), deck.name
        assert page.count("<section") >= 8, deck.name
        assert "data:image/png;base64," in page, f"{deck.name} carries no figure"
    assert 'class="animation"' in (slides / f"{STEMS[0]}.html").read_text()
    visit = PageVisit(browser, (slides / f"{STEMS[0]}.html").as_uri(), settle_ms=0)
    page = visit.page
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    assert page.evaluate("() => Reveal.getTotalSlides()") >= 8
    page.evaluate("() => Reveal.slide(1)")
    page.wait_for_timeout(500)
    page.screenshot(path=str(built / "slides-first.png"))
    assert not visit.errors, visit.errors[:3]
    assert not visit.outside, visit.outside[:3]
    visit.context.close()
