"""The page in a real browser: headless Chromium (Debian's) driven by Playwright types a
sentence, waits for the heatmap, hovers an English word and checks what lights up."""

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

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags that keep Chromium off the network on a closed machine, as root, without a GPU.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(registry):
    """The app on a free loopback port, in a thread, until the test ends."""
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


def test_type_translate_hover_and_see_the_attention(server, tmp_path):
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
            page.fill("#text", "汤姆喜欢猫。")
            page.click("#go")
            page.wait_for_selector("table.heatmap td.cell", timeout=30_000)

            translation = page.inner_text(".translation")
            assert translation.strip(), "no translation on the page"
            sources = page.locator(".links .row.source .token").all_inner_texts()
            assert sources == ["汤姆", "喜欢", "猫", "。"]  # the Chinese labels
            assert page.locator("table.heatmap thead th[data-source]").count() == 4
            assert page.evaluate("document.fonts.check('16px NmtCJK', '汤姆')")
            page.wait_for_function("document.fonts.status === 'loaded'")
            assert page.evaluate("[...document.fonts].some(f => f.family.includes('NmtCJK') && f.status === 'loaded')")

            page.hover(".links .row.target .token[data-target='0']")
            lit = page.locator(".links .row.source .token.highlight").all_inner_texts()
            assert lit and set(lit) <= set(sources), "hovering an English word lit no Chinese word"
            assert page.locator("table.heatmap tbody th.active").count() == 1
            assert page.locator(".links svg line").count() >= 1  # the word links are drawn
            shot = Path(os.environ.get("NMT_SCREENSHOT") or tmp_path / "serve.png")
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()


def test_the_page_loads_nothing_from_outside():
    page = (REPO / "nmt" / "serve" / "static" / "index.html").read_text(encoding="utf-8")
    styles = (REPO / "nmt" / "serve" / "static" / "style.css").read_text(encoding="utf-8")
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert "http" not in styles
