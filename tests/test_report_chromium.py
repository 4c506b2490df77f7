"""The HTML report in a real browser (Debian's headless Chromium, driven by
Playwright's Python client): no console errors, a plot with points, tooltips
with the knob settings, a non-blank screenshot, and hostile names shown as
text without running. Skipped where chromium is not installed."""

from __future__ import annotations

import io
import os
import shutil

import numpy as np
import pytest

from autotuner.report import write_report
from tests.test_report import HOSTILE, sample_result

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _ensure_chromium() -> str:
    """Debian's chromium where it is installed; the test installs nothing itself."""
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if not found:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; Playwright's own browser "
                    "download needs the network)")
    return found


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    exe = _ensure_chromium()
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=ARGS, timeout=60_000)
        yield b
        b.close()


def _open(browser, index):
    """A page showing `index`, and the list its console errors and page errors go to."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(index.resolve().as_uri(), wait_until="load", timeout=20_000)
    return page, errors


def _not_blank(png: bytes) -> float:
    from PIL import Image

    return float(np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float).std())


def test_report_renders(browser, tmp_path):
    result = sample_result()
    page, errors = _open(browser, write_report(result, tmp_path))
    try:
        # two views of two panels: every trial (the one losing 100 % too), and zoomed to the front
        assert page.locator("svg.plot").count() == 4
        n_front = len(result.front)
        assert page.locator("svg.plot .front").count() == 4 * n_front  # tuning + evaluation panels, each view
        assert page.locator("svg.plot .dom").count() >= 20
        fill = page.locator("svg.plot .dom").first.evaluate("e => getComputedStyle(e).fill")
        assert fill == "rgb(168, 168, 168)", fill  # dominated trials are grey, not hidden by a CSS rule
        assert page.locator("#tip").is_hidden()

        # Hover a dynamic front point: the tooltip names the knob and its ladder setting.
        point = page.locator("svg.plot path.front").first
        point.hover()
        tip = page.locator("#tip")
        tip.wait_for(state="visible", timeout=5_000)
        text = tip.inner_text()
        assert "dynamic front" in text and "mean = thresholds [3, 9] -> decisions [0, 2, 4]" in text
        assert "QoS loss 0.50 %" in text and "speedup 1.90x" in text
        # The same configuration is highlighted in the other panel and the table.
        assert page.locator(".hl").count() == 5  # both panels of both views, and the table row
        page.mouse.move(5, 5)
        assert page.locator("#tip").is_hidden()

        # Clicking a front point opens its IR.
        point.click()
        assert page.locator("details[open] pre").first.inner_text().startswith("func.func @mean")

        shot = page.locator("svg.plot").first.screenshot()
        assert _not_blank(shot) > 15, "the plot screenshot is blank"
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        assert not errors, errors
    finally:
        page.close()


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_names_show_as_text(browser, tmp_path, bad):
    result = sample_result(program=bad, knob=bad)
    result.front[0].ir = f'func.func @"{bad}"() {{ return }}'
    result.qos_metric, result.notes = bad, [bad]
    index = write_report(result, tmp_path)
    page, errors = _open(browser, index)
    try:
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert bad in page.locator("h1").inner_text()
        assert bad in page.locator("ul.meta").inner_text() and bad in page.locator("li", has_text=bad).last.inner_text()
        assert bad in page.title()
        assert page.locator("img").count() == 0
        assert bad in page.locator("table").nth(1).inner_text()  # the knob column
        page.locator("details").first.locator("summary").click()
        assert bad in page.locator("details pre").first.inner_text()
        page.locator("svg.plot .front").first.hover()
        assert f"{bad} = 0" in page.locator("#tip").inner_text()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not errors, errors
    finally:
        page.close()
    svg, _ = _open(browser, index.parent / "pareto.svg")  # the plot opened on its own: no script runs either
    try:
        assert svg.evaluate("typeof window.__pwned") == "undefined"
    finally:
        svg.close()


def test_zoom_to_the_front(browser, tmp_path):
    result = sample_result()
    result.budget = 0.5  # the front fills a fifth of the budget's range: a zoomed view is offered
    page, errors = _open(browser, write_report(result, tmp_path))
    try:
        assert page.locator("#view-full").is_visible() and page.locator("#view-zoom").is_hidden()
        assert page.locator("#view-full .budget").count() == 2
        page.click("[data-view=zoom]")
        assert page.locator("#view-zoom").is_visible() and page.locator("#view-full").is_hidden()
        assert "budget 50 %" in page.locator("#view-zoom svg.plot").first.text_content()
        page.locator("#view-zoom svg.plot .front").first.hover()
        assert "#1 static front" in page.locator("#tip").inner_text()
        page.click("[data-view=full]")
        assert page.locator("#view-full").is_visible()
        assert not errors, errors
    finally:
        page.close()
