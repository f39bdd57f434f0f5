"""The page in a real browser: headless Chromium (Debian's) driven by Playwright types two
sentences, waits for the heatmaps, hovers an English word and checks what lights up.

docs/serve.png is this test's screenshot, taken with a trained run:
    NMT_SCREENSHOT=docs/serve.png NMT_SCREENSHOT_RUN=runs/bahdanau .venv/bin/python -m pytest tests/serve/test_browser.py
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from helpers import REPO
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags that keep Chromium off the network on a closed machine, as root, without a GPU.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(registry):
    """The app on a free loopback port, in a thread, until the test ends: the random runs, or
    the trained run NMT_SCREENSHOT_RUN names (for the docs' screenshot)."""
    if os.environ.get("NMT_SCREENSHOT_RUN"):
        run = Path(os.environ["NMT_SCREENSHOT_RUN"]).resolve()
        registry = RunRegistry(run.parent, run.name, device="cpu")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app_server = uvicorn.Server(uvicorn.Config(create_app(registry), host="127.0.0.1", port=port,
                                               log_level="warning"))
    thread = threading.Thread(target=app_server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not app_server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    app_server.should_exit = True
    thread.join(10)


@pytest.fixture
def page(server):
    """A fresh headless Chromium tab on the page (a fresh profile: launch() makes one)."""
    if not Path(CHROMIUM).is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip("no Chromium here: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 700})
            page.goto(server)
            page.wait_for_selector("#run option", state="attached")  # the runs are listed
            yield page
        finally:
            browser.close()


def test_type_translate_hover_and_see_the_attention(page, tmp_path):
    page.fill("#text", "我喜欢音乐。\n这本书很有意思。")
    page.click("#go")
    page.wait_for_selector("table.heatmap td.cell", timeout=30_000)
    assert page.locator(".line").count() == 2  # one section per input line
    first = page.locator(".line").first

    assert first.locator(".translation").inner_text().strip(), "no translation on the page"
    sources = first.locator(".links .row.source .token").all_inner_texts()
    assert "".join(sources) == "我喜欢音乐。"  # the Chinese labels
    assert first.locator("table.heatmap thead th[data-source]").count() == len(sources)
    page.wait_for_function("document.fonts.status === 'loaded'")
    assert page.evaluate("[...document.fonts].some(f => f.family.includes('NmtCJK') && f.status === 'loaded')")
    assert page.evaluate("document.fonts.check('16px NmtCJK', '音乐')")

    first.locator(".links .row.target .token[data-target='0']").hover()
    lit = first.locator(".links .row.source .token.highlight").all_inner_texts()
    assert lit and set(lit) <= set(sources), "hovering an English word lit no Chinese word"
    assert first.locator("table.heatmap tbody th.active").count() == 1
    assert first.locator(".links svg line").count() >= 1  # the word links are drawn
    shot = Path(os.environ.get("NMT_SCREENSHOT") or tmp_path / "serve.png")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_a_transformer_gets_a_layer_and_head_picker_and_errors_show(page, registry):
    if os.environ.get("NMT_SCREENSHOT_RUN"):
        pytest.skip("the screenshot's run is the only one served")
    page.select_option("#run", "transformer")
    own = registry.get("transformer").translator.search  # the fields show the run's own search
    page.wait_for_function("([beam, nbest]) => document.querySelector('#beam').value === beam "
                           "&& document.querySelector('#nbest').value === nbest",
                           arg=[str(own.beam_size), str(own.n_best)], timeout=30_000)
    assert f"beam {own.beam_size}" in page.inner_text("#search")
    page.fill("#text", "汤姆喜欢猫。")
    page.click("#go")
    page.wait_for_selector(".pickers select.layer", timeout=30_000)
    colours = "[...document.querySelectorAll('td.cell')].map(c => c.style.background).join()"
    average = page.evaluate(colours)
    page.select_option(".pickers select.layer", "0")
    page.select_option(".pickers select.head", "1")
    assert page.evaluate(colours) != average  # one head is not the average of two
    assert "transformer" in page.inner_text("#status")

    page.fill("#text", "")  # the server says what is wrong; the page shows it
    page.click("#go")
    page.wait_for_selector("#status.error")
    assert "text is empty" in page.inner_text("#status")


def test_the_page_loads_nothing_from_outside():
    page = (REPO / "nmt" / "serve" / "static" / "index.html").read_text(encoding="utf-8")
    styles = (REPO / "nmt" / "serve" / "static" / "style.css").read_text(encoding="utf-8")
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert "http" not in styles
