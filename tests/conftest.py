"""Shared fixtures: one clean book build per test session, served on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]

# In the tests, a picture that fits a page only by being drawn smaller than its
# text allows is a failure (distlib/plots/pictures.py shrinks it for a reader's
# build instead). Set before any test runs, so the book build and every kernel
# the tests start inherit it.
os.environ.setdefault("DISTLIB_PICTURES_STRICT", "1")


def have_mpi() -> bool:
    """mpi4py is importable and the library finds an ``mpiexec`` to launch ranks with."""
    import importlib.util

    from distlib.engines import find_mpiexec

    if importlib.util.find_spec("mpi4py") is None:
        return False
    try:
        find_mpiexec()
    except FileNotFoundError:
        return False
    return True


NO_MPI = "mpi4py / mpiexec not installed (pip install mpi4py mpich)"
needs_mpi = pytest.mark.skipif(not have_mpi(), reason=NO_MPI)
"""Skip a test where MPI ranks cannot be started here."""


def _cluster_reason():
    from distlib.minicluster import minicluster_support

    return minicluster_support()


needs_cluster = pytest.mark.skipif(_cluster_reason() is not None, reason=f"mini cluster unavailable: {_cluster_reason()}")
"""Skip a test where a mini cluster cannot be made here (not root, no network namespaces, or turned off)."""


def copy_worktree(dest: Path, *paths: str) -> Path:
    """This working tree as it is now (tracked and new files, not ignored ones) copied into ``dest``; only those
    under ``paths`` when given. Returns ``dest``."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z", "--", *paths],
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def toc_chapters() -> list[str]:
    """Chapter pages in book order, read from _toc.yml (e.g. "notebooks/01_ring").

    Only the notebook chapters: pages such as the instructor's guide are not
    chapters."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("notebooks/")]


#: Where the one book build of a test run goes; set by the first process of the run (pytest, or xdist's
#: controller before it starts its workers, which inherit it), so that every worker shares one build.
BUILD_DIR_VAR = "DISTBOOK_BUILD_DIR"


def _build_dir() -> Path:
    return Path(os.environ[BUILD_DIR_VAR])


def _start_book_build(out: Path) -> None:
    """The book build, warnings as errors, into ``out``, in the background, once per test run.

    The first process to ask starts it (under a lock: with pytest-xdist every worker asks); it writes its
    log to ``out/build.log`` and, when it ends, its exit status to ``out/rc``. Nothing waits here.
    """
    import fcntl

    out.mkdir(parents=True, exist_ok=True)
    with open(out / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "pid").exists():
            return
        build = ROOT / "tools" / "build_book.py"  # jupyter-book build, reading several chapters at once
        cmd = (f'"{sys.executable}" "{build}" "{ROOT}" --path-output "{out}" -W -n --keep-going > "{out}/build.log" 2>&1; '
               f'echo $? > "{out}/rc.tmp"; mv "{out}/rc.tmp" "{out}/rc"')
        # No MPLBACKEND for the kernels: under "Agg" plt.show() draws nothing and every figure would be missing.
        env = {**{k: v for k, v in os.environ.items() if k != "MPLBACKEND"}, "DISTBOOK_BUILD_JOBS": build_jobs()}
        proc = subprocess.Popen(["bash", "-c", cmd], cwd=ROOT, start_new_session=True, stdin=subprocess.DEVNULL,
                                env=env,
                                preexec_fn=_ahead_of_the_tests)
        (out / "pid").write_text(str(proc.pid))


def build_jobs() -> str:
    """Chapters the suite's build reads at once: DISTBOOK_BUILD_JOBS as set (tools/build_book.py checks it), else
    two (one on a single core); beside the tests, more only slowed each chapter."""
    return os.environ.get("DISTBOOK_BUILD_JOBS", "").strip() or str(max(1, min(2, len(os.sched_getaffinity(0)))))


def _ahead_of_the_tests() -> None:
    """The build's processes get the cores before the tests' (nice -10, where allowed): a third of the suite waits
    for it, and its chapters' cells must each end within the book's 180 s while the other tests run beside it
    (at -5 the tests' many ranks outweighed two chapters read at once, and chapter 9 missed its time)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except (PermissionError, OSError):  # not root: the build runs at the tests' priority
        pass


def _wait_for_build(out: Path, timeout: float = 2400.0) -> tuple:
    """``(returncode, log)`` of the run's book build, once it has ended (stopped after ``timeout`` s)."""
    import time

    deadline = time.monotonic() + timeout
    while not (out / "rc").exists():
        if time.monotonic() > deadline:
            _stop_build(out)
            return -9, (out / "build.log").read_text() + f"\n(stopped: the build ran past {timeout:.0f} s)"
        time.sleep(1.0)
    return int((out / "rc").read_text().strip() or -1), (out / "build.log").read_text()


def _stop_build(out: Path) -> None:
    """End a build still running (the run ended first: -x, Ctrl-C, a timeout), so none is left behind."""
    try:
        pid = int((out / "pid").read_text())
    except (OSError, ValueError):
        return
    if not (out / "rc").exists():
        try:
            os.killpg(pid, 9)
        except ProcessLookupError:
            pass


#: Fixtures that need the build: book_build, and test_slides.py's slides_dir, which asks for it
#: only at run time (not when DISTBOOK_SLIDES names decks made without a build).
BUILD_FIXTURES = {"book_build", "slides_dir"}


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")  # an xdist worker; the controller and a plain run have none


def pytest_configure(config):
    """The run's build folder, made once by the first process (workers inherit it through the environment)."""
    import tempfile

    if not _is_worker(config) and BUILD_DIR_VAR not in os.environ:
        os.environ[BUILD_DIR_VAR] = tempfile.mkdtemp(prefix="distbook-build-")
        config._distbook_owns_build = True


def _module_group(item) -> str | None:
    """The test module's name if the item uses a fixture of module (or session) scope defined in that module:
    its tests then run on one xdist worker, so the fixture runs once (``--dist loadgroup``)."""
    if getattr(getattr(item, "module", None), "SPREAD_OVER_WORKERS", False):
        return None  # the module says its tests are cheaper spread out, each worker making the fixture again
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    module = item.nodeid.split("::")[0]
    for fixturedefs in defs.values():
        for fd in fixturedefs:
            if fd.scope in ("module", "session") and (fd.baseid or "").split("::")[0] == module:
                return module
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """The tests that read the book build run last, the build starts now, in the background, and tests that share
    a module's fixture are kept together.

    About a third of the suite reads the built book; the rest (the library, the engines, the mini cluster, ...)
    runs while the build executes the chapters, instead of after it. With pytest-xdist (``-n``, as
    scripts/test.sh runs) every worker collects, the first to get here starts the one build, and each
    module whose tests share a fixture of its own goes to one worker (an ``xdist_group`` per module, for
    ``--dist loadgroup``). Order is otherwise kept.
    """
    for item in items:
        group = _module_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    uses_book = [item for item in items if BUILD_FIXTURES & set(getattr(item, "fixturenames", ()))]
    if not uses_book:
        return
    later = set(uses_book)
    # longest first among them (a module says its tests' rough cost in BOOK_PHASE_SECONDS): a long chain of one
    # worker started last would end the run alone
    uses_book.sort(key=lambda item: -getattr(getattr(item, "module", None), "BOOK_PHASE_SECONDS", 0))
    items[:] = [item for item in items if item not in later] + uses_book
    if os.environ.get("DISTBOOK_HTML") or getattr(config.option, "collectonly", False):
        return
    _start_book_build(_build_dir())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session):
    """In an xdist worker under ``--dist loadgroup``, every grouped test's id must carry its group (xdist adds
    ``@group`` to it): pytest 9.2 keeps ids where xdist 3.8 cannot write, and the groups then vanished with no
    error, so each worker built every module fixture again (about 700 s of the suite's time)."""
    config = session.config
    if not (_is_worker(config) and config.getvalue("loadgroup")):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if lost:
        why = (f"pytest-xdist did not group {len(lost)} tests (e.g. {lost[0]}): pytest and pytest-xdist must be "
               "the versions requirements.txt pins")
        print(f"\nconftest.py: {why}", file=sys.__stderr__, flush=True)  # a worker's error reaches no report
        raise pytest.UsageError(why)


def pytest_unconfigure(config):
    """The process that made the build folder ends a build still running and removes the folder."""
    if getattr(config, "_distbook_owns_build", False):
        out = _build_dir()
        _stop_build(out)
        shutil.rmtree(out, ignore_errors=True)
        os.environ.pop(BUILD_DIR_VAR, None)


@pytest.fixture(scope="session")
def book_build(request):
    """The book built from a clean output folder, warnings as errors: ``(returncode, log, html_dir)``.

    The build started when the tests were collected (see above); this waits for it. Set DISTBOOK_HTML to
    reuse a build already made (e.g. by scripts/build_book.sh) while working on page tests.
    """
    reuse = os.environ.get("DISTBOOK_HTML")
    if reuse:
        yield 0, "(reused)", Path(reuse)
        return
    out = _build_dir()
    _start_book_build(out)  # a no-op when collection started it (but not when a plugin's item asked first)
    code, log = _wait_for_build(out)
    yield code, log, out / "_build" / "html"


@pytest.fixture(scope="session")
def built(book_build) -> Path:
    """The build's folder (``html/``, ``reader/``, ``slides/`` in it); fails the test if the book did not build."""
    code, log, html = book_build
    if code != 0:
        pytest.fail("the book did not build:\n" + log[-4000:])
    return html.parent


class JupyterLab:
    """A JupyterLab server of ``python`` on 127.0.0.1 over ``work``, settings and state under ``root``:
    every cell rendered (no windowing, so a page holds the whole notebook), no news pop-up, no
    update check. ``.url`` and ``.token``; ``.stop()`` ends it and its kernels."""

    def __init__(self, python, root: Path, work: Path, env: dict | None = None, *extra: str):
        import json
        import re
        import secrets
        import time

        settings = root / "settings" / "@jupyterlab"
        (settings / "notebook-extension").mkdir(parents=True, exist_ok=True)
        (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "none"}))
        (settings / "apputils-extension").mkdir(parents=True, exist_ok=True)
        (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        self.token = secrets.token_hex(16)
        env = {**(os.environ if env is None else env), "JUPYTER_CONFIG_DIR": str(root / "config"),
               "JUPYTER_DATA_DIR": str(root / "data"), "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
               "JUPYTERLAB_SETTINGS_DIR": str(root / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces")}
        self.proc = subprocess.Popen(
            [str(python), "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", "--port=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={work}",
             "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=work, start_new_session=True)
        self.url, self.lines, deadline = None, [], time.monotonic() + 120
        while self.url is None and time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"(http://127\.0\.0\.1:\d+)/lab", line)
            self.url = m.group(1) if m else None
        if self.url is None:
            self.stop()
            pytest.fail("JupyterLab did not start:\n" + "".join(self.lines[-40:]))
        # keep reading its log, so that a full pipe never stops the server
        threading.Thread(target=lambda: [self.lines.append(x) for x in self.proc.stdout], daemon=True).start()

    def stop(self):
        import signal

        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=20)
                return
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``folder`` on 127.0.0.1 (only), on a free port, from a thread: (server, base URL)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="session")
def book_server(book_build):
    """Serve the built book on 127.0.0.1 (only) on a free port."""
    code, log, html = book_build
    if code != 0:
        pytest.fail("the book did not build:\n" + log[-4000:])
    server, base = serve(html)
    yield base, html
    server.shutdown()


# ---- headless Chromium, network off ------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic",
    # the network is off: every host name but the local server fails to resolve
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, for every browser test of the session."""
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed (scripts/install_system.sh installs Debian's package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


class PageVisit:
    """Open ``url`` in a fresh context, recording errors and every request that would leave the machine.

    Only 127.0.0.1, ``file:``, ``data:`` and ``blob:`` URLs load; any other
    request is aborted and listed in ``outside``. ``errors`` collects page
    errors and console errors. ``context``: options for the browser context
    (e.g. a phone's viewport); ``wait_for``: a selector to wait for after
    loading; ``settle_ms``: a pause after that.
    """

    def __init__(self, browser, url, *, context=None, wait_for=None, settle_ms=1500, on_response=None):
        self.errors, self.outside, self.requested = [], [], []
        self.context = browser.new_context(**(context or {}))
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            url = r.request.url
            self.requested.append(url)
            if url.startswith(("data:", "blob:", "file:")) or urlparse(url).hostname == "127.0.0.1":
                r.continue_()
            else:
                self.outside.append(url)
                r.abort()

        self.page.route("**/*", route)
        if on_response is not None:  # e.g. to weigh every response of the first load
            self.page.on("response", on_response)
        self.page.goto(url, wait_until="load")
        if wait_for:
            self.page.wait_for_selector(wait_for, timeout=20000)
        if settle_ms:
            self.page.wait_for_timeout(settle_ms)

    def close(self):
        self.context.close()


# --------------------------------------------------------------------------
# Where the run's wall time went (printed at the end of every run with workers, so each CI log says it)
# --------------------------------------------------------------------------

_TIMELINE: dict = {}  # nodeid -> [worker, first start, last stop]


def pytest_runtest_logreport(report):
    """Each test's span on its worker, as the controller hears of it (setup, call and teardown together)."""
    node = getattr(report, "node", None)
    if node is None or not getattr(report, "start", None):
        return
    worker = node.gateway.id
    span = _TIMELINE.setdefault(report.nodeid, [worker, report.start, report.stop])
    span[1], span[2] = min(span[1], report.start), max(span[2], report.stop)


def timeline_summary(spans: dict, t0: float, build_end: float | None, top: int = 8) -> list[str]:
    """Lines saying where a run's wall time went: per worker its tests, its busy time and when it ended; when
    the book build ended; and the tests still running in the run's last tenth (the tail that sets its length)."""
    if not spans:
        return []
    end = max(s[2] for s in spans.values())
    lines = [f"wall {end - t0:.0f} s from the first test"]
    if build_end is not None:
        lines.append(f"book build ended at {build_end - t0:.0f} s")
    for worker in sorted({s[0] for s in spans.values()}):
        mine = [s for s in spans.values() if s[0] == worker]
        busy = sum(s[2] - s[1] for s in mine)
        last = max(s[2] for s in mine)
        lines.append(f"{worker}: {len(mine)} tests, busy {busy:.0f} s, ended at {last - t0:.0f} s")
    tail = sorted(((s[2] - s[1], nodeid, s) for nodeid, s in spans.items() if s[2] > end - (end - t0) / 10),
                  reverse=True)[:top]
    lines.append("running in the last tenth:")
    lines += [f"  {d:6.0f} s  {s[1] - t0:5.0f}-{s[2] - t0:5.0f}  {s[0]}  {nodeid}" for d, nodeid, s in tail]
    return lines


def pytest_terminal_summary(terminalreporter, config):
    if _is_worker(config) or not _TIMELINE:
        return
    t0 = min(s[1] for s in _TIMELINE.values())
    build_end = None
    if BUILD_DIR_VAR in os.environ and (_build_dir() / "rc").exists():
        build_end = (_build_dir() / "rc").stat().st_mtime
    terminalreporter.write_sep("=", "where the time went")
    for line in timeline_summary(_TIMELINE, t0, build_end):
        terminalreporter.write_line(line)
    dump = os.environ.get("DISTBOOK_TIMELINE")  # every test's span, tab-separated, for a closer look
    if dump:
        Path(dump).write_text("".join(f"{s[0]}\t{s[1] - t0:.1f}\t{s[2] - t0:.1f}\t{nodeid}\n"
                                      for nodeid, s in sorted(_TIMELINE.items(), key=lambda kv: kv[1][1])))
