"""Driving one lesson in JupyterLab: open it, Run All, read back what ran and what the page shows.
"""

import json
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"  # git-ignored
LESSONS = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))

RUN_ALL_TIMEOUT_MS = 240_000
UI_TIMEOUT_MS = 60_000
MAX_SHOT_HEIGHT = 16_000  # pixels; Chromium's screenshots stop near 16384

_PANEL = "window.jupyterapp.shell.currentWidget"
_KERNEL_IDLE = f"""() => {{
    const panel = {_PANEL};
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return Boolean(panel && panel.context && panel.context.isReady && kernel
                   && kernel.status === 'idle');
}}"""
# Run All's promise settles once every queued cell has run, or the queue stopped at an error.
# NOTE: it also settles early, while the kernel is still running the queue, when a cell tagged
# raises-exception raises (JupyterLab's runCells catches "KernelReplyNotOK" and marks the cells
# not yet run as idle), and the kernel is briefly idle between two queued cells. So Run All has
# settled only once every non-empty code cell has run, or an untagged error stopped the queue.
_RUN_ALL = """() => {
    window.kitRunAll = null;
    window.jupyterapp.commands.execute('notebook:run-all-cells').then(
        () => { window.kitRunAll = 'done'; },
        error => { window.kitRunAll = 'failed: ' + error; });
}"""
_RUN_ALL_SETTLED = f"""() => {{
    const panel = {_PANEL};
    const cells = Array.from(panel.content.model.cells);
    const code = cells.filter(c => c.type === 'code' && c.sharedModel.getSource().trim() !== '');
    const stopped = code.some(c => !(c.getMetadata('tags') || []).includes('raises-exception')
        && c.outputs.toJSON().some(o => o.output_type === 'error'));
    return window.kitRunAll !== null && panel.sessionContext.session.kernel.status === 'idle'
        && cells.every(c => c.type !== 'code' || c.executionState !== 'running')
        && (stopped || code.every(c => c.executionCount !== null));
}}"""
_IMAGES_LOADED = """() => Array.from(document.querySelectorAll('.jp-Notebook img'))
    .every(img => img.complete)"""
_PICTURES = """() => {
    const notebook = document.querySelector('.jp-Notebook');
    const images = Array.from(notebook.querySelectorAll('img')).map(img => {
        const box = img.getBoundingClientRect();
        return {kind: 'img', width: img.naturalWidth, height: img.naturalHeight,
                shown_width: box.width, shown_height: box.height,
                cell: Array.from(notebook.querySelectorAll('.jp-Cell'))
                    .indexOf(img.closest('.jp-Cell'))};
    });
    const svgs = Array.from(notebook.querySelectorAll('.jp-OutputArea-output svg'))
        .filter(svg => !svg.parentElement.closest('svg'))
        .map(svg => {
            const box = svg.getBoundingClientRect();
            return {kind: 'svg', width: box.width, height: box.height,
                    cell: Array.from(notebook.querySelectorAll('.jp-Cell'))
                        .indexOf(svg.closest('.jp-Cell'))};
        });
    return images.concat(svgs);
}"""


def is_expected_error(cell):
    """A cell that is meant to raise: tagged raises-exception, or marked for nbval."""
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    return ("raises-exception" in cell.get("metadata", {}).get("tags", [])
            or "NBVAL_RAISES_EXCEPTION" in source)


class LessonPage:
    """One lesson open in its own browser tab."""

    def __init__(self, context, lab, name, artifacts):
        self.lab, self.name, self.artifacts = lab, name, artifacts
        self.page = context.new_page()
        self.page.set_default_timeout(UI_TIMEOUT_MS)
        self.console_errors = []
        self.page.on("pageerror", lambda error: self.console_errors.append(str(error)))
        self.shots = []
        self.run_all_result = None
        self.text_before_run = None

    def open(self):
        self.page.goto(self.lab.lesson_url(self.name))
        self.page.wait_for_selector("#jupyterlab-splash", state="detached")
        self.page.wait_for_function(_KERNEL_IDLE, timeout=UI_TIMEOUT_MS)
        # What a reader sees before running anything: the stored outputs.
        self.text_before_run = self.page.locator(".jp-Notebook").inner_text()
        return self

    def run_all(self):
        """Run All, then wait until it has settled and the kernel is idle; `run_all_result` says
        how it ended ("done")."""
        self.page.evaluate(_RUN_ALL)
        self.page.wait_for_function(_RUN_ALL_SETTLED, timeout=RUN_ALL_TIMEOUT_MS, polling=250)
        self.page.wait_for_function(_IMAGES_LOADED, timeout=UI_TIMEOUT_MS)
        self.run_all_result = self.page.evaluate("() => window.kitRunAll")

    def notebook(self):
        """The notebook as it is now in the browser (nbformat, with the outputs)."""
        return json.loads(self.page.evaluate(
            f"() => JSON.stringify({_PANEL}.context.model.toJSON())"))

    def expect_no_text(self, text):
        """Wait (auto-retrying) until `text` appears nowhere on the page."""
        from playwright.sync_api import expect

        expect(self.page.get_by_text(text)).to_have_count(0)

    def pictures(self):
        return self.page.evaluate(_PICTURES)

    def screenshot(self, label, locator=None):
        """Save the page (or one element of it) under the artifacts folder."""
        path = self.artifacts / f"{self.name.removesuffix('.ipynb')}--{label}.png"
        (locator or self.page).screenshot(path=str(path))
        self.shots.append(path)
        return path

    def screenshot_notebook(self, label):
        """Save the whole notebook in one picture: the window is made as tall as the notebook
        (up to Chromium's limit) for the shot, then put back."""
        size = self.page.viewport_size
        scroller = self.page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").first
        height = scroller.evaluate("el => el.scrollHeight - el.clientHeight")
        self.page.set_viewport_size({"width": size["width"],
                                     "height": min(size["height"] + height, MAX_SHOT_HEIGHT)})
        scroller.evaluate("el => el.scrollTo(0, 0)")
        try:
            return self.screenshot(label)
        finally:
            self.page.set_viewport_size(size)

    def output_of(self, last_line):
        """The output area of the one code cell whose last line is `last_line` (or, if none,
        starts with it)."""
        last = [(i, c["source"].strip().splitlines()[-1])
                for i, c in enumerate(self.notebook()["cells"])
                if c["cell_type"] == "code" and c["source"].strip()]
        (index,) = ([i for i, line in last if line == last_line]
                    or [i for i, line in last if line.startswith(last_line)])
        output = self.page.locator(".jp-Notebook .jp-Cell").nth(index).locator(
            ".jp-OutputArea-output")
        output.first.scroll_into_view_if_needed()
        return output.first

    def close(self):
        """Shut the kernel down and close the tab (a kernel per lesson would pile up)."""
        self.page.evaluate(f"() => {_PANEL}.sessionContext.shutdown()")
        self.page.close()
