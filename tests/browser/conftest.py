"""The web UI's browser suite (issue 19): Playwright for Python driving Debian's Chromium against
`vellum-server --demo` on a fresh database, served at http://localhost:PORT (browsers refuse
WebAuthn on a bare IP).

Every test fails on a console error or a failed request of the page (`page` fixture). Pages are
checked with axe-core (`assert_accessible`). Screenshots of the main pages go to
docs/screenshots/ when VELLUM_SCREENSHOTS=1.

Environment: VELLUM_BROWSER_SERVER (the server binary; default target/debug/vellum-server),
VELLUM_BROWSER_DATABASE_URL (default: SQLite in a temporary directory), VELLUM_BROWSER_CHROMIUM
(default /usr/bin/chromium).
"""

import http.server
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

import pytest
from playwright.sync_api import sync_playwright

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER = os.environ.get("VELLUM_BROWSER_SERVER") or str(ROOT / "target" / "debug" / "vellum-server")
CHROMIUM = os.environ.get("VELLUM_BROWSER_CHROMIUM") or "/usr/bin/chromium"
SCREENSHOTS = ROOT / "docs" / "screenshots"


@dataclass
class Server:
    base: str
    email: str
    password: str
    log: pathlib.Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def mailed_code(self, email: str, after: int = 0) -> str:
        """The last sign-in code mailed to `email` (logged: no SMTP in tests), waiting for it."""
        for _ in range(100):
            text = self.log_text()[after:]
            codes = re.findall(
                r"to=" + re.escape(email) + r".*?Your sign-in code is (\d{6})", text
            )
            if codes:
                return codes[-1]
            time.sleep(0.05)
        raise AssertionError(f"no code mailed to {email}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeAi(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible provider for the AI chat page: streams its answer a token at a time
    (`[slow]` in the prompt: 200 tokens, 0.1 s apart; else a short sentence, 0.25 s apart)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b'{"object":"list","data":[{"id":"fake"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
        if "[slow]" in last:
            tokens, pause = [f"t{i} " for i in range(200)], 0.1
        else:
            tokens, pause = ["Once ", "upon ", "a ", "time ", "there ", "was ", "a ", "CMS."], 0.25
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for token in tokens:
                chunk = {"choices": [{"index": 0, "delta": {"content": token}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(pause)
            self.wfile.write(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


@pytest.fixture(scope="session")
def fake_ai():
    """The fake provider's base URL (`VELLUM_AI_BASE_URL` of the test server)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAi)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


@pytest.fixture(scope="session")
def server(fake_ai):
    work = pathlib.Path(tempfile.mkdtemp(prefix="vellum-browser-"))
    port = free_port()
    database = os.environ.get("VELLUM_BROWSER_DATABASE_URL") or f"sqlite://{work}/vellum.db?mode=rwc"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELLUM_")}
    env.update(
        VELLUM_DATABASE_URL=database,
        VELLUM_FILES_DIR=str(work / "files"),
        VELLUM_LISTEN=f"127.0.0.1:{port}",
        VELLUM_BASE_URL=f"http://localhost:{port}",
        VELLUM_LOG="info",
        VELLUM_AI_BASE_URL=fake_ai,
        VELLUM_AI_MODEL="fake",
    )
    log = work / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([SERVER, "--demo"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        password = None
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"vellum-server exited: {log.read_text()[-2000:]}")
            found = re.search(r"Demo admin \(shown once\): (\S+) / (\S+)", log.read_text(errors="replace"))
            if found:
                email, password = found.groups()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    pass
            time.sleep(0.1)
        else:
            raise RuntimeError(f"vellum-server did not start: {log.read_text()[-2000:]}")
        yield Server(f"http://localhost:{port}", email, password, log)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        args = ["--host-resolver-rules=MAP localhost 127.0.0.1"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        yield browser
        browser.close()


@pytest.fixture
def allowed():
    """(status, URL suffix) pairs a test expects a fetch to be refused with."""
    return set()


@pytest.fixture
def aborted():
    """URL suffixes of requests a test aborts on purpose (the AI page's Stop button)."""
    return set()


@pytest.fixture
def page(browser, server, allowed, aborted):
    """A fresh browser context (no cookies) whose page fails the test on any console error,
    uncaught exception or failed request."""
    context = browser.new_context(base_url=server.base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    problems, consoles, refused_documents = [], [], set()
    page.on("console", lambda m: m.type == "error" and consoles.append(m))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    def failed(r):
        if r.failure == "net::ERR_ABORTED" and any(r.url.endswith(s) for s in aborted):
            return
        problems.append(f"request failed: {r.url} {r.failure}")

    page.on("requestfailed", failed)

    def bad_response(res):
        # A 4xx page is a form's expected answer (422 with the errors next to the fields, 429);
        # a 4xx of anything a page loads, or any 5xx, is a failure.
        if res.status >= 400 and res.status < 500 and res.request.resource_type == "document":
            refused_documents.add(res.url)
        elif any(res.status == status and res.url.endswith(suffix) for status, suffix in allowed):
            refused_documents.add(res.url)
        elif res.status >= 400:
            problems.append(f"HTTP {res.status}: {res.url}")

    page.on("response", bad_response)
    yield page
    context.close()
    for m in consoles:
        # Chromium logs every 4xx document as "Failed to load resource"; those were expected.
        expected = m.text.startswith("Failed to load resource: the server responded with a status of 4")
        if not (expected and m.location.get("url") in refused_documents):
            problems.append(f"console: {m.text} ({m.location.get('url')})")
    assert not problems, "\n".join(problems)


def sign_in(page, server, email=None, password=None, expect_dashboard=True):
    page.goto("/login")
    page.get_by_label("Email").fill(email or server.email)
    page.get_by_label("Password").fill(password or server.password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if expect_dashboard:
        page.get_by_role("heading", name="Dashboard").wait_for()


def assert_accessible(page):
    """axe-core's WCAG 2 A/AA rules on the page as it is: no violation."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options={"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa"]}})
    violations = results.response["violations"]
    assert not violations, "\n".join(
        f"{v['id']}: {v['help']} ({[n['target'] for n in v['nodes']]})" for v in violations
    )


def screenshot(page, name):
    if os.environ.get("VELLUM_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))
