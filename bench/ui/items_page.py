"""The items list page with 100 items (issue 19's target: server time p95 < 20 ms): the release
server with --demo on a fresh SQLite database, 100 more articles created through the admin JSON
API, then `GET /collections/articles/items?per_page=100` as a browser asks for it (`Accept:
text/html`, the session cookie) over one keep-alive connection, sequentially, so each figure is
the server's own time (routing, session, query, rendering of 100 rows into the page) plus a
loopback round trip. The JSON list of the same query is measured beside it.

Usage: python3 bench/ui/items_page.py target/release [REQUESTS]     (default 1000)
Run by hand on an idle machine, never in CI."""
import http.client, json, re, sys, time

from demo import demo_server

bin_dir = sys.argv[1]
requests = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
with demo_server(bin_dir) as (port, email, password):
    conn = http.client.HTTPConnection("127.0.0.1", port)

    def call(method, path, body=None, headers=None):
        conn.request(method, path, body=body, headers=headers or {})
        res = conn.getresponse()
        return res, res.read()

    res, _ = call("POST", "/login", json.dumps({"email": email, "password": password}),
                  {"content-type": "application/json", "accept": "application/json"})
    cookie = re.search(r"vellum_session=[^;]+", res.getheader("set-cookie")).group(0)
    for i in range(100):
        item = {"data": {"title": {"en": f"Article number {i}", "de": f"Artikel Nummer {i}"},
                         "slug": f"bench-{i}", "status": "published" if i % 3 else "draft",
                         "views": i * 37, "body": {"en": "Some body text. " * 20}, "author": 1}}
        res, body = call("POST", "/collections/articles/items", json.dumps(item),
                         {"cookie": cookie, "content-type": "application/json", "accept": "application/json"})
        assert res.status == 201, body[:300]
    path = "/collections/articles/items?per_page=100"
    cases = [("page (text/html), 100 rows", "text/html,application/xhtml+xml,*/*;q=0.8"),
             ("JSON (application/json), 100 rows", "application/json")]
    print(f"{requests} sequential requests each, one keep-alive connection, release build, SQLite")
    print(f"{'GET ' + path:46} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'bytes':>8}")
    for name, accept in cases:
        headers = {"cookie": cookie, "accept": accept}
        for _ in range(100):
            call("GET", path, headers=headers)
        times = []
        for _ in range(requests):
            t = time.perf_counter()
            res, body = call("GET", path, headers=headers)
            times.append((time.perf_counter() - t) * 1000)
            assert res.status == 200, body[:300]
        if accept.startswith("text/html"):
            assert body.count(b'name="ids"') == 100, "the page does not show 100 rows"
        times.sort()
        p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
        print(f"{name:46} {p(0.5):7.2f} {p(0.95):7.2f} {p(0.99):7.2f} {len(body):8}")
