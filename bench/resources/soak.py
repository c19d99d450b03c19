#!/usr/bin/env python3
"""Issue 28's resource soak: what an anonymous (or write-key) client can make the server hold.

Black-box, against a fresh `vellum-server --demo` on SQLite (and Redis when --redis URL is given),
with the resource review's reproductions (../shared/security/review-2026-11-resources.md, R3, R5,
R6, R9, R12 and the stalled readers of R9):

  fanout    100 published articles x 1,000 tags each; one anonymous
            `include=tags&per_page=100` request: peak RSS growth (target <= 128 MiB), size, time
  filters   3,000 anonymous requests with unique 60 KB filters: one 60 KB operand (refused by the
            operand cap), then 59 `_in` values of 1,000 characters (accepted): RSS growth
            (target <= 64 MiB)
  relations unknown, foreign and 5,000 relation ids: statuses (target 422)
  uploads   rounds of 1 valid + 2 invalid uploads of identical bytes, and of 3 valid ones, in
            parallel: acknowledged uploads whose content is lost, and 503s (target 0 and 0)
  stalled   12 connections ask for the fan-out page and never read: every one is cut by the
            write timeout (VELLUM_WRITE_TIMEOUT=5 here); RSS while they hang and 12 s later
  redis     (with --redis) 1,000 anonymous requests differing only in an unknown parameter:
            keys added to the cache database (target <= 1)

Memory is the summed RSS of the server's process tree (sampled every 20 ms) and VmHWM, as in
bench/transforms/soak.py, whose measuring code this script shares. `--reduced` (CI, debug build)
uses smaller counts and bounds of about 3x the targets: it fails only when a bound is crossed by
far. Exit status 1 when a bound is crossed.

    python3 bench/resources/soak.py target/release/vellum-server [--redis redis://127.0.0.1:6379/12]
    python3 bench/resources/soak.py target/debug/vellum-server --reduced
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "transforms"))
from soak import (  # noqa: E402  (the shared measuring code of the transform soak)
    MIB,
    Sampler,
    free_port,
    hwm_bytes,
    kill_server,
    request,
    reset_hwm,
    upload,
)


def post_item(port: int, key: str, slug: str, data: dict) -> tuple[str, dict]:
    status, body = request(port, "POST", f"/api/v1/collections/{slug}/items",
                           json.dumps({"data": data}).encode(),
                           {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                           timeout=60)
    try:
        return status, json.loads(body) if body else {}
    except ValueError:
        return status, {}


def redis_command(url: str, *args: str) -> object:
    """One command over RESP (no client library needed); the database from the URL's path."""
    parsed = urllib.parse.urlparse(url)
    db = (parsed.path or "/0").lstrip("/") or "0"
    with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), 5) as s:
        f = s.makefile("rb")

        def send(*parts: str) -> object:
            out = f"*{len(parts)}\r\n".encode()
            for p in parts:
                b = p.encode()
                out += f"${len(b)}\r\n".encode() + b + b"\r\n"
            s.sendall(out)
            line = f.readline()
            if line[:1] in (b"+", b"-"):
                return line[1:].strip().decode()
            if line[:1] == b":":
                return int(line[1:])
            if line[:1] == b"$":
                n = int(line[1:])
                return None if n < 0 else f.read(n + 2)[:-2].decode()
            return line.decode()

        send("SELECT", db)
        return send(*args)


class Run:
    """The server under test and the rows of the report."""

    def __init__(self, binary: str, reduced: bool, redis: str | None, kill_mib: int) -> None:
        self.work = tempfile.mkdtemp(prefix="vellum-soak28-")
        self.port = free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("VELLUM_") and not k.startswith("AWS_")}
        env.update({
            "VELLUM_DATABASE_URL": f"sqlite://{self.work}/vellum.db?mode=rwc",
            "VELLUM_FILES_DIR": f"{self.work}/files",
            "VELLUM_LISTEN": f"127.0.0.1:{self.port}",
            "VELLUM_LOG": "warn",
            "VELLUM_WRITE_TIMEOUT": "5",
        })
        if redis:
            env["VELLUM_REDIS_URL"] = redis
        self.log_path = os.path.join(self.work, "server.log")
        self.server = subprocess.Popen([binary, "--demo"], env=env,
                                       stdout=open(self.log_path, "wb"),
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self.sampler = Sampler(self.server, kill_mib * MIB)
        self.reduced = reduced
        self.rows: list[dict] = []
        self.key = ""

    def start(self) -> bool:
        for _ in range(300):
            if self.server.poll() is not None:
                break
            with open(self.log_path, "rb") as f:
                m = re.search(r"ek_[A-Za-z0-9_-]+", f.read().decode(errors="replace"))
            if m and request(self.port, "GET", "/up", timeout=2)[0] == "200":
                self.key = m.group(0)
                self.sampler.start()
                time.sleep(0.5)
                return True
            time.sleep(0.1)
        with open(self.log_path, "rb") as f:
            print(f"the server did not start; its log:\n{f.read().decode(errors='replace')[-2000:]}",
                  file=sys.stderr)
        return False

    def settle(self, seconds: float = 12.0) -> int:
        """Waits for RSS to stop falling (idle threads exit, memory is returned)."""
        end = time.monotonic() + seconds
        last = self.sampler.last
        while time.monotonic() < end:
            time.sleep(1.0)
            now = self.sampler.last
            if abs(now - last) < 2 * MIB:
                break
            last = now
        return self.sampler.last

    def measure(self, work) -> tuple[int, int, object]:
        """(RSS before, peak RSS during, work's result): the peak is the larger of the sampled
        RSS and the tree's VmHWM."""
        before = self.settle()
        reset_hwm(self.server.pid)
        self.sampler.reset()
        result = work()
        time.sleep(0.1)
        peak = max(self.sampler.peak, hwm_bytes(self.server.pid))
        return before, peak, result

    def row(self, case: str, what: str, result: str, figure: str, target: str, ok: bool) -> None:
        self.rows.append({"case": case, "what": what, "result": result, "figure": figure,
                          "target": target, "pass": ok})
        print(f"{case}: {what}: {result}; {figure} (target {target}) "
              f"{'PASS' if ok else 'FAIL'}", file=sys.stderr)


def case_fanout(run: Run, articles: int, tags_each: int, bound_mib: int) -> None:
    t = time.monotonic()
    tags = []
    for i in range(tags_each):
        status, body = post_item(run.port, run.key, "tags", {"label": f"tag{i}"})
        if status != "201":
            run.row("fanout", "setup", f"tag {i}: {status}", "-", "-", False)
            return
        tags.append(body["data"]["id"])
    for i in range(articles):
        status, _ = post_item(run.port, run.key, "articles", {
            "title": f"fan {i}", "slug": f"fanx-{i}", "status": "published", "tags": tags})
        if status != "201":
            run.row("fanout", "setup", f"article {i}: {status}", "-", "-", False)
            return
    print(f"fanout: {tags_each} tags and {articles} articles in {time.monotonic() - t:.1f} s",
          file=sys.stderr)
    path = (f"/api/v1/collections/articles/items?per_page=100&include=tags"
            f"&filter[slug][_contains]=fanx&bust={random.random()}")
    def timed() -> tuple[str, bytes, float]:
        started = time.monotonic()
        status, body = request(run.port, "GET", path, timeout=60)
        return status, body, time.monotonic() - started

    before, peak, (status, body, took) = run.measure(timed)
    growth = (peak - before) / MIB
    expanded = lean = 0
    if status == "200":
        for item in json.loads(body)["data"]:
            for entry in item["data"]["tags"]:
                if "item" in entry:
                    expanded += 1
                else:
                    lean += 1
    run.row("fanout", f"{articles} articles x {tags_each} tags, include=tags&per_page=100",
            f"{status}, {len(body):,} B, {expanded:,} expanded + {lean:,} lean links",
            f"RSS {before / MIB:.0f} -> peak {peak / MIB:.0f} MiB (+{growth:.0f}), {took:.2f} s",
            f"growth <= {bound_mib} MiB", status == "200" and growth <= bound_mib)


def case_stalled(run: Run, connections: int, bound_mib: int) -> None:
    """Clients that ask for the fan-out page and never read: what they pin, and for how long."""
    path = "/api/v1/collections/articles/items?per_page=100&include=tags&filter[slug][_contains]=fanx"
    before = run.settle()
    socks = []
    for i in range(connections):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", run.port))
        s.sendall(f"GET {path}&stall={i} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        socks.append(s)
    # Every response has started (rendered, partly sent) once each socket has bytes to read.
    started = time.monotonic()
    waiting = list(socks)
    while waiting and time.monotonic() - started < 120:
        _, _, _ = select.select([], [], [], 0.1)
        waiting = [s for s in waiting if not select.select([s], [], [], 0)[0]]
    rendered = time.monotonic() - started
    held = run.sampler.last
    time.sleep(12)  # the write timeout (5 s), the kernel's last probe, the allocator's purge
    after = run.sampler.last
    cut = 0
    for s in socks:
        s.setblocking(False)
        try:
            while True:
                if not s.recv(1 << 20):
                    cut += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
        s.close()
    run.row("stalled", f"{connections} clients never read the fan-out page",
            f"{connections - len(waiting)} responses started within {rendered:.1f} s, "
            f"{cut} of {connections} connections cut 12 s later",
            f"RSS {before / MIB:.0f} -> {held / MIB:.0f} MiB while held -> {after / MIB:.0f} MiB",
            f"every connection cut, RSS held <= +{bound_mib} MiB",
            cut == connections and held - before <= bound_mib * MIB)


def case_filters(run: Run, count: int, bound_mib: int) -> None:
    def send(make) -> dict[str, int]:
        statuses: dict[str, int] = {}
        s = socket.create_connection(("127.0.0.1", run.port))
        f = s.makefile("rb")
        for i in range(count):
            s.sendall(f"GET /api/v1/collections/articles/items?{make(i)} HTTP/1.1\r\nHost: x\r\n\r\n"
                      .encode())
            status = f.readline().split()[1].decode()
            length = 0
            while (h := f.readline()) not in (b"\r\n", b""):
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":")[1])
            f.read(length)
            statuses[status] = statuses.get(status, 0) + 1
        s.close()
        return statuses

    long_one = lambda i: f"filter[title][_contains]={i:08d}" + "a" * 60000  # noqa: E731
    # 59 `_in` values of 1,000 characters: a 60 KB filter the operand cap accepts.
    accepted = lambda i: "filter[title][_in]=" + ",".join(  # noqa: E731
        f"{i:08d}{j:02d}{'b' * 990}" for j in range(59))
    for what, make in (("unique 60 KB filters (one 60 KB operand)", long_one),
                       ("unique 60 KB filters within the caps (59 x 1,000 characters)", accepted)):
        before, peak, statuses = run.measure(lambda: send(make))
        growth = (peak - before) / MIB
        run.row("filters", f"{count} anonymous requests, {what}",
                " ".join(f"{n}x{s}" for s, n in sorted(statuses.items())),
                f"RSS {before / MIB:.0f} -> peak {peak / MIB:.0f} MiB (+{growth:.0f})",
                f"growth <= {bound_mib} MiB", growth <= bound_mib and "500" not in statuses)


def case_relations(run: Run) -> None:
    _, body = post_item(run.port, run.key, "authors", {"name": "real"})
    author = body.get("data", {}).get("id", 0)
    cases = [
        ("unknown tag id", {"tags": [99_999_999]}),
        ("unknown author id", {"author": 99_999_999}),
        # Item ids are unique across collections: an author's id is never a tag's.
        ("an author's id as a tag", {"tags": [author]}),
        ("5,000 tag ids", {"tags": list(range(10_000_000, 10_005_000))}),
    ]
    for i, (what, data) in enumerate(cases):
        status, resp = post_item(run.port, run.key, "articles",
                                 {"title": "r", "slug": f"rel-{i}", **data})
        run.row("relations", what, f"{status} {json.dumps(resp.get('errors', {}))[:100]}", "-",
                "422", status == "422")


def case_uploads(run: Run, rounds: int) -> None:
    lost = unavailable = acknowledged = 0
    for kind in ("1 valid + 2 invalid", "3 valid"):
        for _ in range(rounds):
            content = os.urandom(200 * 1024)
            names = (["good.bin", "x" * 300 + ".bin", "x" * 300 + ".bin"] if kind.startswith("1")
                     else ["a.bin", "b.bin", "c.bin"])
            barrier = threading.Barrier(3)
            results: list[tuple[str, str | None]] = []

            def one(name: str) -> None:
                barrier.wait()
                results.append(upload(run.port, run.key, name, content, "application/octet-stream"))

            threads = [threading.Thread(target=one, args=(n,)) for n in names]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for status, fid in results:
                unavailable += status == "503"
                if status == "201" and fid:
                    acknowledged += 1
                    got, data = request(run.port, "GET", f"/api/v1/files/{fid}/content",
                                        headers={"Authorization": f"Bearer {run.key}"})
                    lost += got != "200" or data != content
    run.row("uploads", f"{rounds} rounds each of 1 valid + 2 invalid and of 3 valid identical "
            "uploads in parallel", f"{acknowledged} acknowledged",
            f"{lost} lost content, {unavailable} x 503", "0 lost, 0 x 503",
            lost == 0 and unavailable == 0)


def case_redis(run: Run, url: str, count: int) -> None:
    before = int(redis_command(url, "DBSIZE"))  # type: ignore[arg-type]
    statuses: dict[str, int] = {}
    for i in range(count):
        status, _ = request(run.port, "GET",
                            f"/api/v1/collections/articles/items?per_page=5&u={i}-{random.random()}")
        statuses[status] = statuses.get(status, 0) + 1
    added = int(redis_command(url, "DBSIZE")) - before  # type: ignore[arg-type]
    run.row("redis", f"{count} anonymous requests differing only in an unknown parameter",
            " ".join(f"{n}x{s}" for s, n in sorted(statuses.items())),
            f"{added} keys added", "<= 1 key", added <= 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default="target/release/vellum-server")
    ap.add_argument("--reduced", action="store_true", help="the CI form (debug build is fine)")
    ap.add_argument("--redis", metavar="URL",
                    help="run the server on this Redis database (flushed first) and the redis case")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--cases", default="relations,uploads,fanout,stalled,filters,redis",
                    help="which cases to run, comma-separated (stalled needs fanout's data)")
    args = ap.parse_args()
    cases = set(args.cases.split(","))
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        print(f"no server binary at {binary}", file=sys.stderr)
        return 2
    if args.redis:
        redis_command(args.redis, "FLUSHDB")
    reduced = args.reduced
    run = Run(binary, reduced, args.redis, 3072 if reduced else 6144)
    started = time.monotonic()
    try:
        if not run.start():
            return 2
        print(f"server pid {run.server.pid} on port {run.port}, idle RSS "
              f"{run.sampler.last / MIB:.0f} MiB", file=sys.stderr)
        if "relations" in cases:
            case_relations(run)
        if "uploads" in cases:
            case_uploads(run, 10 if reduced else 50)
        if "fanout" in cases:
            case_fanout(run, 100, 1000, 384 if reduced else 128)
        if "stalled" in cases:
            case_stalled(run, 12, 3072 if reduced else 1024)
        if "filters" in cases:
            case_filters(run, 1000 if reduced else 3000, 192 if reduced else 64)
        if args.redis and "redis" in cases:
            case_redis(run, args.redis, 1000)
    finally:
        run.sampler.stop.set()
        kill_server(run.server)
        run.server.wait()
    print(f"\n{len(run.rows)} cases in {time.monotonic() - started:.0f} s "
          f"({'reduced' if reduced else 'full'}), {binary}\n")
    print("| case | what | result | figure | target | |\n|---|---|---|---|---|---|")
    for r in run.rows:
        print(f"| {r['case']} | {r['what']} | {r['result']} | {r['figure']} | {r['target']} | "
              f"{'PASS' if r['pass'] else '**FAIL**'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(run.rows, f, indent=2)
    failed = [r for r in run.rows if not r["pass"]]
    print(f"\nresource soak: {len(run.rows) - len(failed)} of {len(run.rows)} bounds held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
