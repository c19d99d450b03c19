"""First page load on the demo (issue 19's < 300 ms target): the release server with --demo on a
fresh SQLite database at http://localhost:PORT, Chromium headless with a cold cache per run;
Playwright's navigation timing (loadEventEnd) of /login, and of / after signing in.

Usage: python bench/ui/first_load.py target/release [RUNS]
Needs Playwright for Python and Debian's /usr/bin/chromium (the browser suite's virtualenv,
~/.cache/vellum-ci/browser-1, has both). Run by hand on an idle machine, never in CI."""
import statistics, sys

from demo import demo_server
from playwright.sync_api import sync_playwright

bin_dir = sys.argv[1]  # the directory with the release vellum-server
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
with demo_server(bin_dir) as (port, email, password):
    base = f"http://localhost:{port}"
    timing = "() => { const n = performance.getEntriesByType('navigation')[0]; return [n.loadEventEnd - n.startTime, n.responseStart - n.requestStart, n.transferSize]; }"
    login, dash = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--host-resolver-rules=MAP localhost 127.0.0.1"])
        for i in range(runs + 1):
            ctx = browser.new_context()  # a cold cache and no cookies each run
            page = ctx.new_page()
            page.goto(base + "/login", wait_until="load")
            a = page.evaluate(timing)
            page.get_by_label("Email").fill(email); page.get_by_label("Password").fill(password)
            page.get_by_role("button", name="Sign in", exact=True).click()
            page.wait_for_url(base + "/")
            page.wait_for_load_state("load")
            b = page.evaluate(timing)
            ctx.close()
            if i:  # the first run warms the server
                login.append(a); dash.append(b)
        browser.close()
    for name, xs in [("/login (first visit, cold cache)", login), ("/ dashboard (after the sign-in post)", dash)]:
        loads = sorted(x[0] for x in xs); ttfb = sorted(x[1] for x in xs)
        print(f"{name}: load median {statistics.median(loads):.0f} ms, max {loads[-1]:.0f} ms; server time to first byte median {statistics.median(ttfb):.1f} ms; {runs} runs")
