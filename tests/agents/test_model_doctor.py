"""``bees doctor`` checks each enabled model agent's server: one that does not answer is a
warning that names the agent, the URL and what starts it; the agent stays eligible."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import BeesRunner
from tests.mcp_server import free_port


def workspace(root: Path, agents: dict[str, str]) -> Path:
    files = {"bees.yaml": "name: doctor\n",
             "processes/p.yaml": "stages:\n  - {name: Work, kind: work, agents: [writer]}\n"
                                 "  - {name: Done, kind: done}\n"}
    for name, url in agents.items():
        enabled = "false" if name.startswith("off") else "true"
        files[f"agents/{name}.yaml"] = (f"enabled: {enabled}\nrunner:\n  model:\n"
                                        f"    base_url: {url}\n    name: smollm2\n")
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


@pytest.fixture
def model_server() -> Iterator[str]:
    """A stand-in model server answering ``GET /v1/models``; yields its base URL."""

    class Models(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = b'{"object": "list", "data": [{"id": "smollm2"}]}'
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_doctor_warns_when_a_model_agents_server_does_not_answer(
        tmp_path: Path, bees: BeesRunner, model_server: str) -> None:
    down = f"http://127.0.0.1:{free_port()}/v1"
    root = workspace(tmp_path / "w", {"writer": down, "reviewer": model_server,
                                      "off-agent": f"http://127.0.0.1:{free_port()}/v1"})
    done = bees("doctor", "-w", str(root))
    lines = [line for line in done.stdout.splitlines() if " agent " in line or "process" in line]
    assert lines == [
        f"ok    agent reviewer: model server {model_server} answers",
        f"warn  agent writer: model server {down} not reachable: start it with bees model serve",
        "ok    process p: could run here now",
    ]
    report = json.loads(bees("doctor", "-w", str(root), "--json").stdout)
    agents = [c for c in report["checks"] if c["check"].startswith("agent ")]
    assert agents == [
        {"check": "agent reviewer", "ok": True, "agent": "reviewer", "url": model_server},
        {"check": "agent writer", "ok": False, "warning": True, "agent": "writer",
         "url": down, "error": "model_unreachable", "message": "ConnectError",
         "hint": "start it with bees model serve"},
    ]
    # a warning does not fail the doctor: only the engine and bees run are down here
    failed = [c["check"] for c in report["checks"] if not c["ok"] and not c.get("warning")]
    assert failed == ["engine", "bees run"]
    assert [p["can_run"] for p in report["processes"]] == [True]
