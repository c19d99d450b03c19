"""The AI chat benchmark's client (asyncio, raw HTTP/1.1, so nothing buffers the stream).

  load.py latency BASE COOKIES_FILE N     N prompts in turn (spread over the users): how long
                                          the provider's first fragment took to reach us
  load.py streams BASE COOKIES_FILE N PID N prompts at once, each a 10-second answer: all
                                          complete? the server's RSS meanwhile and its peak
  load.py limit BASE_A BASE_B COOKIE      31 prompts of one user, alternating between two
                                          replicas: the statuses

Prints one JSON line. COOKIES_FILE holds one `vellum_session=…` pair per line (a user each:
the server allows 30 AI requests a minute per user).
"""

import asyncio
import json
import statistics
import sys
import time
import urllib.parse


async def prompt(base: str, cookie: str, message: str, on_delta=None) -> tuple[int, bool]:
    """POSTs /ai/chat and reads the answer; calls on_delta(content) per delta. Answers the
    status and whether the stream ended with [DONE]."""
    url = urllib.parse.urlsplit(base)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    body = json.dumps({"message": message}).encode()
    writer.write(
        (
            f"POST /ai/chat HTTP/1.1\r\nhost: {url.netloc}\r\ncookie: {cookie}\r\n"
            "content-type: application/json\r\naccept: text/event-stream\r\n"
            # Compression is on in the app: the stream must not be held back by it.
            "accept-encoding: gzip, br\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        + body
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    chunked = b"transfer-encoding: chunked" in head.lower()
    buffer, done = b"", False
    while not done:
        data = await reader.read(65536)
        if not data:
            break
        buffer += data
        # Chunked framing: the SSE text is what is between the size lines; events never
        # contain "\r\n", so dropping the size lines is enough for parsing.
        while b"\n\n" in buffer:
            raw, _, buffer = buffer.partition(b"\n\n")
            for line in raw.split(b"\n"):
                line = line.strip(b"\r")
                if chunked and line and all(c in b"0123456789abcdefABCDEF" for c in line):
                    continue
                if line.startswith(b"data: "):
                    payload = line[6:]
                    if payload == b"[DONE]":
                        done = True
                    elif on_delta:
                        event = json.loads(payload)
                        if event.get("type") == "delta":
                            on_delta(event["content"])
    writer.close()
    return status, done


def percentiles(samples: list[float]) -> dict:
    s = sorted(samples)
    pick = lambda q: round(s[min(len(s) - 1, int(q * len(s)))], 3)
    return {"n": len(s), "p50_ms": pick(0.5), "p95_ms": pick(0.95), "p99_ms": pick(0.99),
            "max_ms": round(s[-1], 3), "mean_ms": round(statistics.fmean(s), 3)}


async def latency(base: str, cookies: list[str], n: int) -> dict:
    samples = []
    for i in range(n):
        first = []

        def seen(content, first=first):
            if not first and content.startswith("ts:"):
                first.append((time.time_ns() - int(content[3:])) / 1e6)

        status, done = await prompt(base, cookies[i % len(cookies)], "[latency] go", seen)
        assert status == 200 and done and first, (status, done, first)
        samples.append(first[0])
    return {"scenario": "first-delta", "latency": percentiles(samples)}


def rss(pid: int) -> dict:
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = round(int(value.split()[0]) / 1024, 1)
    return fields


async def streams(base: str, cookies: list[str], n: int, pid: int) -> dict:
    before = rss(pid)
    started = time.monotonic()
    tasks = [asyncio.create_task(prompt(base, cookies[i % len(cookies)], "[long] go")) for i in range(n)]
    peak = 0.0
    while not all(t.done() for t in tasks):
        peak = max(peak, rss(pid)["VmRSS"])
        await asyncio.sleep(0.2)
    results = [t.result() for t in tasks]
    return {
        "scenario": "streams",
        "streams": n,
        "completed": sum(1 for status, done in results if status == 200 and done),
        "statuses": sorted({status for status, _ in results}),
        "seconds": round(time.monotonic() - started, 1),
        "rss_before_mib": before["VmRSS"],
        "rss_peak_sampled_mib": peak,
        "rss_hwm_mib": rss(pid)["VmHWM"],
    }


async def limit(base_a: str, base_b: str, cookie: str) -> dict:
    statuses = []
    for i in range(31):
        status, _ = await prompt(base_a if i % 2 == 0 else base_b, cookie, "hello")
        statuses.append(status)
    return {"scenario": "limit", "statuses": statuses,
            "first_30_ok": all(s == 200 for s in statuses[:30]), "31st": statuses[30]}


def main() -> None:
    kind = sys.argv[1]
    if kind == "latency":
        cookies = open(sys.argv[3]).read().split()
        out = asyncio.run(latency(sys.argv[2], cookies, int(sys.argv[4])))
    elif kind == "streams":
        cookies = open(sys.argv[3]).read().split()
        out = asyncio.run(streams(sys.argv[2], cookies, int(sys.argv[4]), int(sys.argv[5])))
    else:
        out = asyncio.run(limit(sys.argv[2], sys.argv[3], sys.argv[4]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
