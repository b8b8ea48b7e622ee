"""The lessons in a real browser: one JupyterLab server and one Chromium for all e2e tests, closed
once the last of them is done (the rest of the suite runs without them).

JupyterLab serves a temporary copy of notebooks/ (autosave must never write into the repository),
bound to 127.0.0.1 with a token, with fresh settings and workspaces. Chromium is Debian's
(/usr/bin/chromium), driven by Playwright for Python; no browser is downloaded. Without either,
every e2e test is skipped with a one-line reason.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from e2e.lesson_page import ARTIFACTS, NOTEBOOKS, LessonPage

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# Settings a fresh JupyterLab gets: no news pop-up, and every cell kept in the page (the default
# windowing leaves cells scrolled out of view unrendered, so their pictures could not be checked).
OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}
SERVER_START_S = 90


def unavailable_reason():
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "e2e: Playwright for Python not installed (pip install playwright)"
    if not CHROMIUM.exists():
        return f"e2e: no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return "e2e: JupyterLab not installed (pip install -e '.[lab]')"
    return None


def pytest_collection_modifyitems(items):
    reason = unavailable_reason()
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.e2e)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
    # Keep each lesson's tests together, so that each lesson is opened and run once.
    e2e = [i for i, item in enumerate(items) if here in Path(item.fspath).parents]
    ordered = sorted((items[i] for i in e2e), key=_lesson_of)
    for i, item in zip(e2e, ordered, strict=True):
        items[i] = item


def _lesson_of(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("name", "") if callspec else ""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab: its URL, token and the folder it serves."""

    def __init__(self, root, port, token, process, log):
        self.root, self.port, self.token = root, port, token
        self.process, self.log = process, log
        self.url = f"http://127.0.0.1:{port}"

    def lesson_url(self, name):
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"

    def status(self):
        with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
            return json.load(r)


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1, serving a temporary copy of the lessons."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "lessons"
    root.mkdir()
    for notebook in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    # overrides.json is read from the app settings dir (JUPYTERLAB_SETTINGS_DIR holds the user's
    # own settings, which a fresh server starts without).
    app_settings = base / "app-settings"
    app_settings.mkdir()
    (app_settings / "overrides.json").write_text(json.dumps(OVERRIDES))
    env = dict(os.environ,
               JUPYTERLAB_SETTINGS_DIR=str(base / "user-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               JUPYTER_CONFIG_DIR=str(base / "config"),
               # The kernel imports the kit this suite tests (a worktree, not only an install).
               PYTHONPATH=os.pathsep.join([str(NOTEBOOKS.parent),
                                           *filter(None, [os.environ.get("PYTHONPATH")])]))
    port, token = _free_port(), secrets.token_hex(16)
    log = open(base / "jupyterlab.log", "w")  # noqa: SIM115 (closed at teardown)
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
         f"--LabApp.app_settings_dir={app_settings}", "--allow-root"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    server = Lab(root, port, token, process, base / "jupyterlab.log")
    deadline = time.monotonic() + SERVER_START_S
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}:\n"
                            + server.log.read_text()[-3000:])
            try:
                server.status()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab not up after {SERVER_START_S} s:\n"
                                + server.log.read_text()[-3000:])
                time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="package")
def browser_context(tmp_path_factory):
    """Debian's Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="package")
def artifacts():
    """The git-ignored folder the screenshots go to; printed at the end of the run."""
    ARTIFACTS.mkdir(exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    _screenshots_taken.append(True)
    return ARTIFACTS


_screenshots_taken = []


def pytest_terminal_summary(terminalreporter):
    if _screenshots_taken:
        shots = sorted(ARTIFACTS.glob("*.png"))
        terminalreporter.write_line(f"e2e screenshots: {len(shots)} in {ARTIFACTS}")


@pytest.fixture(scope="package")
def ran_lesson(lab, browser_context, artifacts):
    """`ran_lesson(name)`: the lesson's tab after Run All (each lesson opened and run once; only
    the last one is kept open)."""
    current = {}

    def get(name):
        if name not in current:
            for page in current.values():
                if isinstance(page, LessonPage):
                    page.close()
            current.clear()
            page = LessonPage(browser_context, lab, name, artifacts)
            try:
                page.open()
                page.screenshot("opened")
                page.run_all()
                page.screenshot_notebook("after-run-all")
            except Exception as error:
                current[name] = error
                raise
            current[name] = page
        if isinstance(current[name], Exception):
            pytest.fail(f"{name} did not open and run: {current[name]}")
        return current[name]

    yield get
    for page in current.values():
        if not isinstance(page, Exception):
            page.close()
