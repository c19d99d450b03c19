#!/usr/bin/env python3
"""The table of bench/run.sh: reads its results (one JSON object per line) and prints a table for
people on stdout, the same as Markdown into the file named by the second argument (if given).

Each line is either {"idle": {"cache": "on", "rss_kib": N}} or one scenario:
{"name", "cache", "kind" ("read" or "write"), "target_rps", "seconds", "rss_kib", "cpu_s", "oha": …}
where "oha" is oha's JSON output (`--output-format json`, formerly `-j`).
"""

import json
import sys

P99_READ_MS = 10.0
# Issue 23: a create's p99 at 32 connections, and the whole server's peak RSS under any scenario.
P99_WRITE_MS = 25.0
IDLE_RSS_MIB = 30.0
LOAD_RSS_MIB = 60.0


def mark(ok):
    return "PASS" if ok else "MISS"


def rows(lines):
    idle, scenarios = [], []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        record = json.loads(line)
        (idle if "idle" in record else scenarios).append(record)
    return idle, scenarios


def summarize(s):
    oha = s["oha"]
    summary = oha.get("summary", {})
    pct = oha.get("latencyPercentiles", {})
    codes = oha.get("statusCodeDistribution", {})
    # Requests still in flight when the duration ends are cut off by oha: not failures.
    errors = {k: v for k, v in oha.get("errorDistribution", {}).items()
              if "aborted due to deadline" not in k}
    total = sum(codes.values())
    ok = sum(n for code, n in codes.items() if str(code).startswith("2") or str(code) == "304")
    rps = summary.get("requestsPerSec") or 0.0
    p50 = (pct.get("p50") or 0.0) * 1000
    p99 = (pct.get("p99") or 0.0) * 1000
    rss = s["rss_kib"] / 1024
    cpu = 100 * s["cpu_s"] / s["seconds"] if s["seconds"] else 0
    checks = []
    if s.get("target_rps"):
        checks.append(f">= {s['target_rps']:,} req/s {mark(rps >= s['target_rps'])}")
    if s["kind"] == "read":
        checks.append(f"p99 < {P99_READ_MS:g} ms {mark(p99 < P99_READ_MS)}")
    else:
        checks.append(f"p99 <= {P99_WRITE_MS:g} ms {mark(p99 <= P99_WRITE_MS)}")
    checks.append(f"RSS < {LOAD_RSS_MIB:g} MiB {mark(rss < LOAD_RSS_MIB)}")
    bad = total - ok + sum(errors.values())
    return {
        "scenario": s["name"],
        "cache": s["cache"],
        "req/s": f"{rps:,.0f}",
        "p50 ms": f"{p50:.2f}",
        "p99 ms": f"{p99:.2f}",
        "RSS MiB": f"{rss:.1f}",
        "server CPU": f"{cpu:.0f}%",
        "non-2xx/errors": f"{bad}" + (f" ({', '.join(f'{k}: {v}' for k, v in codes.items() if not str(k).startswith('2'))}"
                                       f"{'; ' if errors else ''}{', '.join(f'{k}: {v}' for k, v in errors.items())})"
                                       if bad else ""),
        "targets": ", ".join(checks),
    }


def table(header, body, markdown):
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        out += ["| " + " | ".join(r[h] for h in header) + " |" for r in body]
        return "\n".join(out)
    widths = [max(len(h), *(len(r[h]) for r in body)) for h in header]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(header), line(["-" * w for w in widths])]
    out += [line([r[h] for h in header]) for r in body]
    return "\n".join(out)


def render(idle, scenarios, markdown):
    header = ["scenario", "cache", "req/s", "p50 ms", "p99 ms", "RSS MiB", "server CPU",
              "non-2xx/errors", "targets"]
    body = [summarize(s) for s in scenarios]
    parts = [table(header, body, markdown)] if body else []
    for i in idle:
        rss = i["idle"]["rss_kib"] / 1024
        parts.append(f"Idle RSS after start (cache {i['idle']['cache']}): {rss:.1f} MiB, "
                     f"target < {IDLE_RSS_MIB:g} MiB {mark(rss < IDLE_RSS_MIB)}")
    return ("\n\n" if markdown else "\n").join(parts)


def main(argv):
    with open(argv[1]) as f:
        idle, scenarios = rows(f)
    print(render(idle, scenarios, markdown=False))
    if len(argv) > 2:
        with open(argv[2], "w") as f:
            f.write(render(idle, scenarios, markdown=True) + "\n")


if __name__ == "__main__":
    main(sys.argv)
