"""scripts/serve.py as a user runs it: a real server process on a loopback port, and a clear
error without a traceback when the config's run is not trained yet."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers import REPO
from random_checkpoint import write_random_run

pytestmark = pytest.mark.e2e

SMOKE = str(REPO / "configs" / "smoke.yaml")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_script_serves_the_configs_run_on_loopback(tmp_path: Path, smoke):
    runs = tmp_path / "elsewhere"  # --runs-dir wins over the config's runs_dir
    write_random_run(runs, "smoke", smoke)
    port = free_port()
    server = subprocess.Popen([sys.executable, "scripts/serve.py", SMOKE, "training.threads=1",
                               "--runs-dir", str(runs), "--port", str(port)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"the server exited: {server.stdout.read()}"
            assert time.monotonic() < deadline, "the server did not answer within 60 s"
            try:
                if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        answer = httpx.get(f"{url}/api/translate", params={"text": "汤姆喜欢猫。", "beam": 2}, timeout=30)
        assert answer.status_code == 200 and answer.json()["run"] == "smoke"
        assert httpx.get(f"{url}/api/runs").json() == {"runs": ["smoke"], "default": "smoke"}
        assert httpx.get(f"{url}/api/translate", params={"text": ""}).status_code == 400
        batch = httpx.post(f"{url}/api/translate", json={"lines": ["汤姆喜欢猫。", "玛丽喜欢狗。"]}, timeout=30)
        assert batch.status_code == 200 and len(batch.json()["lines"]) == 2
        # 2,001 characters, 18 kB of URL: the app itself says no, in JSON, not the HTTP layer.
        too_long = httpx.get(f"{url}/api/translate", params={"text": "猫" * 2001})
        assert too_long.status_code == 400 and "at most 2000 characters" in too_long.json()["error"]
        assert httpx.get(f"{url}/api/health").status_code == 200  # still up after a bad request
    finally:
        server.terminate()
        server.wait(30)


def test_an_untrained_run_is_one_line_of_error(tmp_path: Path):
    done = subprocess.run([sys.executable, "scripts/serve.py", SMOKE, "--runs-dir", str(tmp_path),
                           "--port", str(free_port())], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "error: run 'smoke': no trained run" in done.stderr and "Traceback" not in done.stderr
