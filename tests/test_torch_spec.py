"""`make setup`'s torch choice (scripts/torch_spec.py): PyTorch's CPU index when it answers, else the
default index at once, against servers on loopback."""

from __future__ import annotations

import http.server
import importlib.util
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "torch_spec.py"
spec = importlib.util.spec_from_file_location("torch_spec", SCRIPT)
torch_spec = importlib.util.module_from_spec(spec)
spec.loader.exec_module(torch_spec)


@pytest.fixture
def index_server():
    """Start a loopback HTTP server answering every GET with ``status``; yield a function that returns its URL."""
    servers = []

    def start(status: int) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"

    yield start
    for server in servers:
        server.shutdown()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/whl/cpu"  # nothing listens there now: connection refused


def test_cpu_index_used_when_it_answers(index_server):
    url = index_server(200)
    spec, why = torch_spec.torch_spec("2.13.0", cuda=False, index=url, timeout_s=5)
    assert spec == f"torch==2.13.0+cpu --extra-index-url {url}"
    assert "+cpu" in why


@pytest.mark.parametrize("status", [403, 503])
def test_error_status_falls_back_to_default_index(index_server, status):
    spec, why = torch_spec.torch_spec("2.13.0", cuda=False, index=index_server(status), timeout_s=5)
    assert spec == "torch==2.13.0"
    assert "did not answer" in why


def test_unreachable_index_falls_back_at_once_from_the_command_line():
    url = closed_port_url()
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--version", "2.13.0", "--index", url, "--timeout", "5"],
        capture_output=True, text=True, check=True, timeout=30,
    )
    assert out.stdout.strip() == "torch==2.13.0"
    assert f"PyTorch's CPU index {url} did not answer" in out.stderr


def test_cuda_takes_the_default_index_without_probing():
    spec, _ = torch_spec.torch_spec("2.13.0", cuda=True, index=closed_port_url(), timeout_s=0.001)
    assert spec == "torch==2.13.0"


def test_make_setup_takes_the_fallback_when_the_index_is_unreachable():
    """The Makefile's TORCH_SPEC comes from the probe (dry run: nothing is installed)."""
    root = SCRIPT.parents[1]
    out = subprocess.run(
        ["make", "-n", "-B", "-C", str(root), ".venv/bin/.installed"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "TORCH_CPU_INDEX": closed_port_url()},
    )
    install = [line for line in out.stdout.splitlines() if "pip install -q torch" in line]
    assert install and install[0].rstrip().endswith("pip install -q torch==2.13.0"), out.stdout + out.stderr
