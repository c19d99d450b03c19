#!/usr/bin/env python3
"""Transform soak of issue 27: hostile images against a real `vellum-server`, black-box.

Generates every file of the issue in memory (standard library only), starts the server on a fresh
SQLite database in a temporary directory with `--demo` on a free loopback port, uploads the files
with the demo editor key, requests transforms anonymously and measures, per case, the summed RSS
of the server and every process it starts (VmRSS of the whole process tree, sampled every 20 ms),
their CPU time (utime+stime from /proc/<pid>/stat, plus the server's reaped children) and the
growth of `<files dir>/derived/`. Prints one table with PASS/FAIL against the issue's targets.

Usage:
    python3 bench/transforms/soak.py [SERVER_BINARY] [--reduced] [--json FILE] [--keep]

SERVER_BINARY defaults to target/release/vellum-server. `--reduced` is the CI form (a debug build
is fine): fewer requests and smaller images where the bound still discriminates, and bounds that
fail only when a target is crossed by far. The exit status is 1 when any bound is crossed, 2 when
the soak itself could not run (server did not start, upload failed, ...).

Safety: every request has a timeout; when the summed RSS passes 6 GiB (--rss-kill-mib) the server
is killed and the case recorded as ">6 GiB (killed)"; the server (its whole process group) is
killed at the end whatever happens. Loopback only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")

# --------------------------------------------------------------------------------------------
# Generators (small, deterministic, no Pillow)
# --------------------------------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_solid(w: int, h: int, color_type: int = 6, bitdepth: int = 8) -> bytes:
    """A solid-colour (all zero) PNG: the review's generator."""
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    row = b"\x00" + b"\x00" * (w * ch * bitdepth // 8)
    co = zlib.compressobj(9)
    idat = b"".join(co.compress(row) for _ in range(h)) + co.flush()
    ihdr = struct.pack(">IIBBBBB", w, h, bitdepth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def png_iccp(inflated_mib: int) -> bytes:
    """R4: a 10x10 RGB PNG whose iCCP profile's zlib stream inflates to INFLATED_MIB MiB."""
    co = zlib.compressobj(9)
    block = b"\0" * MIB
    prof = b"".join(co.compress(block) for _ in range(inflated_mib)) + co.flush()
    ihdr = struct.pack(">IIBBBBB", 10, 10, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"iCCP", b"icc\0\0" + prof)
            + _chunk(b"IDAT", zlib.compress(b"\0" * (10 * (1 + 30)))) + _chunk(b"IEND", b""))


def gif_canvas(screen: int = 7071) -> bytes:
    """The 35-byte GIF: a SCREEN x SCREEN logical screen and one 1x1 frame."""
    out = b"GIF89a" + struct.pack("<HHBBB", screen, screen, 0, 0, 0)
    # Image descriptor: at (0,0), 1x1, a 2-entry local colour table.
    out += b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0x80) + b"\x00\x00\x00\xff\xff\xff"
    # LZW, minimum code size 2: clear(4), index 0, end(5) in 3-bit codes = 0x44 0x01.
    out += b"\x02\x02\x44\x01\x00" + b"\x3b"
    assert len(out) == 35
    return out


class LsbBits:
    """Bit writer, least significant bit first (VP8L); bits are kept as a '0'/'1' string."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def put(self, value: int, n: int) -> None:
        if n:
            self.parts.append(format(value, f"0{n}b")[::-1])

    def code(self, code: int, n: int) -> None:
        """A prefix code: its most significant bit first (as in deflate)."""
        if n:
            self.parts.append(format(code, f"0{n}b"))

    def bits(self) -> str:
        return "".join(self.parts)


def _pack_lsb(bits: str) -> bytes:
    nbytes = (len(bits) + 7) // 8
    return int(bits[::-1] or "0", 2).to_bytes(nbytes, "little")


def _canonical(lengths: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Canonical prefix codes (deflate order) for {symbol: length}: {symbol: (code, length)}."""
    codes, code, prev = {}, 0, 0
    for sym, ln in sorted(lengths.items(), key=lambda kv: (kv[1], kv[0])):
        code <<= ln - prev
        codes[sym] = (code, ln)
        code += 1
        prev = ln
    return codes


def webp_huffman_groups(groups: int = 65536) -> bytes:
    """R10: a 4x4 lossless WebP (VP8L) whose entropy image names meta prefix code GROUPS-1, so
    the decoder reads and builds GROUPS x 5 prefix codes (each a complete code with lengths
    1..10,10, i.e. a 1,024-entry table) before the first of its 16 transparent pixels."""
    assert 2 <= groups <= 65536
    w = h = 4
    b = LsbBits()
    b.put(w - 1, 14)
    b.put(h - 1, 14)
    b.put(1, 1)  # alpha is used
    b.put(0, 3)  # version
    b.put(0, 1)  # no transform
    b.put(0, 1)  # main image: no colour cache
    b.put(1, 1)  # meta prefix codes present
    b.put(0, 3)  # prefix bits 2: a 1x1 entropy image for 4x4 pixels
    # The entropy image: no colour cache, five simple one-symbol codes (zero bits per pixel):
    # green = (g-1) & 0xff, red = (g-1) >> 8, so the one pixel names group GROUPS-1.
    b.put(0, 1)
    meta = groups - 1
    for sym in (meta & 0xFF, meta >> 8, 0, 0, 0):  # green, red, blue, alpha, distance
        b.put(1, 1)  # simple code
        b.put(0, 1)  # one symbol
        b.put(1, 1)  # 8-bit symbol
        b.put(sym, 8)
    # One normal code: symbols 0..10 with lengths 1,2,...,10,10 (complete), written through a
    # code-length code where lengths 1..6 take 3 bits and 7..10 take 4.
    tree = LsbBits()
    tree.put(0, 1)  # normal code
    order = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    cl_lengths = {s: 3 for s in range(1, 7)} | {s: 4 for s in range(7, 11)}
    used = order.index(10) + 1
    tree.put(used - 4, 4)
    for s in order[:used]:
        tree.put(cl_lengths.get(s, 0), 3)
    cl_codes = _canonical(cl_lengths)
    lengths = list(range(1, 11)) + [10]  # for symbols 0..10
    tree.put(1, 1)  # max_symbol is written
    tree.put(1, 3)  # length_nbits = 2 + 2*1 = 4
    tree.put(len(lengths) - 2, 4)  # max_symbol = 2 + 9 = 11
    for ln in lengths:
        tree.code(*cl_codes[ln])
    tree_bits = tree.bits()
    group = tree_bits * 5
    body = b.bits() + group * groups
    # 16 pixels, each green, red, blue, alpha = symbol 0 (the 1-bit code '0').
    body += "0" * (4 * w * h)
    data = b"\x2f" + _pack_lsb(body)
    pad = b"\0" * (len(data) % 2)
    chunk = b"VP8L" + struct.pack("<I", len(data)) + data + pad
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


class MsbBits:
    """Bit writer, most significant bit first (JPEG entropy-coded data, with 0xFF stuffing)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def put(self, value: int, n: int) -> None:
        if n:
            self.parts.append(format(value, f"0{n}b"))

    def data(self) -> bytes:
        bits = "".join(self.parts)
        bits += "1" * (-len(bits) % 8)  # pad with 1-bits
        raw = int(bits or "0", 2).to_bytes(len(bits) // 8, "big")
        return raw.replace(b"\xff", b"\xff\x00")


def _segment(marker: int, payload: bytes) -> bytes:
    return struct.pack(">HH", marker, len(payload) + 2) + payload


def _dht(cls_id: int, by_length: dict[int, list[int]]) -> bytes:
    counts = bytes(len(by_length.get(n, [])) for n in range(1, 17))
    syms = bytes(s for n in range(1, 17) for s in by_length.get(n, []))
    return _segment(0xFFC4, bytes([cls_id]) + counts + syms)


def _jpeg_codes(by_length: dict[int, list[int]]) -> dict[int, tuple[int, int]]:
    codes, code = {}, 0
    for n in range(1, 17):
        for s in by_length.get(n, []):
            codes[s] = (code, n)
            code += 1
        code <<= 1
    return codes


def jpeg_scan_bomb(side: int = 7071, scans: int = 10000) -> bytes:
    """R7: a progressive (SOF2) grey SIDE x SIDE JPEG of SCANS AC scans (Ss=1, Se=63), each one
    end-of-band runs over every block; the first with Ah=0 Al=0, the others refinements (Ah=1,
    Al=0), which walk all 63 coefficients of every block. Built as the review built it."""
    blocks = ((side + 7) // 8) ** 2
    dc = {1: [0x00, 0x01]}
    ac = {1: [0xE0], 5: [n << 4 for n in range(14)]}  # EOB14, then EOB0..EOB13
    codes = _jpeg_codes(ac)
    bits = MsbBits()
    left = blocks
    while left:
        run = min(left, 32767)
        n = run.bit_length() - 1
        bits.put(*codes[n << 4])
        bits.put(run - (1 << n), n)
        left -= run
    data = bits.data()
    head = (b"\xff\xd8" + _segment(0xFFDB, b"\x00" + b"\x01" * 64)
            + _segment(0xFFC2, struct.pack(">BHHB", 8, side, side, 1) + b"\x01\x11\x00")
            + _dht(0x00, dc) + _dht(0x10, ac))

    def sos(ahal: int) -> bytes:
        return _segment(0xFFDA, bytes([1, 1, 0x00, 1, 63, ahal])) + data

    return head + sos(0x00) + sos(0x10) * (scans - 1) + b"\xff\xd9"


def jpeg_textured(w: int = 1600, h: int = 1067, seed: int = 27) -> bytes:
    """A valid baseline YCbCr 4:4:4 JPEG of W x H whose blocks carry pseudo-random low-frequency
    AC coefficients (written directly, no DCT needed): it decodes to a photo-like texture, so its
    re-encoded derivatives weigh what a photo's do (a solid colour would make them tiny)."""
    import random

    rnd = random.Random(seed)
    dc = {3: [0]}  # every DC difference is 0 (category 0)
    # AC: EOB and (run 0, size 1..4), plus (run 1, size 1..2); 4-bit codes (never all ones).
    ac_syms = [0x00, 0x01, 0x02, 0x03, 0x04, 0x11, 0x12]
    ac = {4: ac_syms}
    dcc, acc = _jpeg_codes(dc), _jpeg_codes(ac)

    def block_bits(k: int) -> str:
        out = MsbBits()
        out.put(*dcc[0])
        for _ in range(k):
            v = rnd.choice([-1, 1]) * rnd.randint(1, 15)
            size = abs(v).bit_length()
            out.put(*acc[size])
            out.put(v if v > 0 else v + (1 << size) - 1, size)
        out.put(*acc[0x00])
        return "".join(out.parts)

    luma = [block_bits(9) for _ in range(509)]
    chroma = [block_bits(2) for _ in range(127)]
    mcus = ((w + 7) // 8) * ((h + 7) // 8)
    parts = []
    for i in range(mcus):
        parts.append(luma[(i * 7919 + (i >> 3)) % 509])
        parts.append(chroma[(i * 31) % 127])
        parts.append(chroma[(i * 57 + 3) % 127])
    bits = MsbBits()
    bits.parts = parts
    data = bits.data()
    sof = struct.pack(">BHHB", 8, h, w, 3) + b"\x01\x11\x00\x02\x11\x01\x03\x11\x01"
    return (b"\xff\xd8" + _segment(0xFFDB, b"\x00" + b"\x08" * 64)
            + _segment(0xFFDB, b"\x01" + b"\x0c" * 64) + _segment(0xFFC0, sof)
            + _dht(0x00, dc) + _dht(0x10, ac)
            + _segment(0xFFDA, b"\x03\x01\x00\x02\x00\x03\x00\x00\x3f\x00") + data + b"\xff\xd9")


# --------------------------------------------------------------------------------------------
# Measurement of the server's process tree
# --------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(x) for x in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(_children(p))
    return seen


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def reset_hwm(root: int) -> None:
    """Resets VmHWM of every process of the tree (`5` to clear_refs: our own processes)."""
    for p in tree(root):
        try:
            with open(f"/proc/{p}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


def hwm_bytes(root: int) -> int:
    """Summed VmHWM of the live tree: catches peaks shorter than the 20 ms sampling."""
    total = 0
    for p in tree(root):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            pass
    return total


def cpu_seconds(root: int) -> float:
    """utime+stime of the tree, plus the root's reaped children (cutime+cstime)."""
    total = 0
    for p in tree(root):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
        if p == root:
            total += int(fields[13]) + int(fields[14])  # cutime, cstime
    return total / TICK


class Sampler(threading.Thread):
    """Summed RSS of the server's process tree every 20 ms; kills it past the limit."""

    def __init__(self, server: subprocess.Popen, kill_bytes: int) -> None:
        super().__init__(daemon=True)
        self.server, self.kill_bytes = server, kill_bytes
        self.lock = threading.Lock()
        self.peak = 0
        self.last = 0
        self.killed = False
        self.stop = threading.Event()

    def reset(self) -> int:
        with self.lock:
            self.peak = self.last
            return self.last

    def run(self) -> None:
        while not self.stop.is_set() and self.server.poll() is None:
            r = rss_bytes(tree(self.server.pid))
            with self.lock:
                self.last = r
                self.peak = max(self.peak, r)
            if r > self.kill_bytes and not self.killed:
                self.killed = True
                kill_server(self.server)
                print(f"!! summed RSS {r / MIB:.0f} MiB passed the limit: server killed",
                      file=sys.stderr)
            time.sleep(0.02)


def kill_server(server: subprocess.Popen) -> None:
    try:
        os.killpg(server.pid, signal.SIGKILL)  # the group the server leads (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass


def dir_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------


def request(port: int, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None, timeout: float = 30.0) -> tuple[str, bytes]:
    """(status, body); status is the code as text, or 'timeout' / 'error' / 'closed'."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return str(resp.status), data
    except (socket.timeout, TimeoutError):
        return "timeout", b""
    except (ConnectionError, http.client.HTTPException):
        return "closed", b""
    except OSError:
        return "error", b""
    finally:
        conn.close()


def upload(port: int, key: str, name: str, data: bytes, mime: str) -> tuple[str, str | None]:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: {mime}\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    status, resp = request(port, "POST", "/api/v1/files", body, {
        "Authorization": f"Bearer {key}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }, timeout=60)
    if status == "201":
        return status, str(json.loads(resp)["data"]["id"])
    return status, None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# The soak
# --------------------------------------------------------------------------------------------


def fmt_status(statuses: list[str]) -> str:
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s] = counts.get(s, 0) + 1
    return " ".join(f"{n}x{s}" if n > 1 else s for s, n in sorted(counts.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default="target/release/vellum-server")
    ap.add_argument("--reduced", action="store_true", help="the CI form (debug build is fine)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--rss-kill-mib", type=int, default=None,
                    help="kill the server when the summed RSS passes this many MiB "
                         "(default 6144, reduced 3072)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="requests stop (and count as failed) past this many seconds from the "
                         "start (default 300, reduced 240)")
    args = ap.parse_args()
    reduced = args.reduced
    if args.rss_kill_mib is None:
        args.rss_kill_mib = 3072 if reduced else 6144
    started = time.monotonic()
    deadline = started + (args.max_seconds or (240.0 if reduced else 300.0))

    def budget(timeout: float) -> float:
        """A request's timeout: its own, cut to what is left of the run."""
        return min(timeout, deadline - time.monotonic())

    # Sizes and bounds. Full: the files and targets. Reduced: smaller where the bound
    # still discriminates, and bounds of about 3x the target ("crossed by far").
    if reduced:
        big_side, big_keys, rss_a_bound, rss_f_bound = 4000, 8, 576, 300
        iccp_mib, small_growth = 200, 192
        wide_growth = 768
        bomb_scans, bomb_answer, bomb_rising = 10000, 20.0, 1.0
        derived_n, derived_bound = 40, 6 * 1000 * 1000
    else:
        big_side, big_keys, rss_a_bound, rss_f_bound = 7071, 8, 600, 100
        iccp_mib, small_growth = 200, 64
        wide_growth = 256
        bomb_scans, bomb_answer, bomb_rising = 10000, 10.0, 0.3
        derived_n, derived_bound = 100, 2 * 1000 * 1000
    wide = 50_000_000

    t = time.monotonic()
    files = {
        "big": (f"big-{big_side}.png", png_solid(big_side, big_side), "image/png"),
        "iccp": ("iccp.png", png_iccp(iccp_mib), "image/png"),
        "webp": ("huffman.webp", webp_huffman_groups(65536), "image/webp"),
        "gif": ("canvas.gif", gif_canvas(7071), "image/gif"),
        "wide": ("wide.png", png_solid(wide, 1, color_type=0), "image/png"),
        "bomb": ("scans.jpg", jpeg_scan_bomb(7071, bomb_scans), "image/jpeg"),
        "photo": ("photo.jpg", jpeg_textured(1600, 1067), "image/jpeg"),
    }
    print(f"generated {len(files)} files in {time.monotonic() - t:.1f} s: "
          + ", ".join(f"{k} {len(v[1]):,} B" for k, v in files.items()), file=sys.stderr)

    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        print(f"no server binary at {binary}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="vellum-soak-")
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VELLUM_") and not k.startswith("AWS_")}
    env.update({
        "VELLUM_DATABASE_URL": f"sqlite://{work}/vellum.db?mode=rwc",
        "VELLUM_FILES_DIR": f"{work}/files",
        "VELLUM_LISTEN": f"127.0.0.1:{port}",
        "VELLUM_LOG": "warn",
    })
    log_path = os.path.join(work, "server.log")
    log = open(log_path, "wb")
    server = subprocess.Popen([binary, "--demo"], env=env, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    sampler = Sampler(server, args.rss_kill_mib * MIB)
    rows: list[dict] = []
    failed_to_run = None
    try:
        key = None
        for _ in range(300):
            if server.poll() is not None:
                break
            with open(log_path, "rb") as f:
                text = f.read().decode(errors="replace")
            m = re.search(r"ek_[A-Za-z0-9_-]+", text)
            if m and request(port, "GET", "/up", timeout=2)[0] == "200":
                key = m.group(0)
                break
            time.sleep(0.1)
        if key is None:
            with open(log_path, "rb") as f:
                tail = f.read().decode(errors="replace")[-2000:]
            print(f"the server did not start or printed no key; its log:\n{tail}", file=sys.stderr)
            return 2
        sampler.start()
        time.sleep(0.5)
        idle = sampler.last
        print(f"server pid {server.pid} on port {port}, idle RSS {sampler.last / MIB:.0f} MiB",
              file=sys.stderr)

        ids: dict[str, str | None] = {}
        upload_status: dict[str, str] = {}
        for name, (fname, data, mime) in files.items():
            status, fid = upload(port, key, fname, data, mime)
            ids[name], upload_status[name] = fid, status
            print(f"upload {fname}: {status} id {fid}", file=sys.stderr)
            if status != "201" and not status.startswith("4"):
                failed_to_run = f"upload of {fname} answered {status}"
        if failed_to_run:
            print(failed_to_run, file=sys.stderr)
            return 2
        derived_dir = os.path.join(work, "files", "derived")

        def transform_path(name: str, key_: str) -> str:
            return f"/api/v1/files/{ids[name]}/transforms/{key_}"

        def alive() -> bool:
            return server.poll() is None

        def settle(limit: float = 12.0) -> None:
            """Waits (at most LIMIT s) until the RSS is back near the idle figure, so that a
            case's growth is not measured on memory the previous case left behind."""
            t_end = time.monotonic() + limit
            while alive() and time.monotonic() < t_end and sampler.last > idle + 48 * MIB:
                time.sleep(0.2)

        def case(label: str, name: str, keys: list[str], timeout: float, parallel: bool):
            """Runs the requests; returns (statuses, peak bytes, baseline bytes, cpu s, secs)."""
            if ids.get(name) is None:
                return [f"upload {upload_status.get(name)}"], 0, 0, 0.0, 0.0
            if not alive():
                return ["server dead"], 0, 0, 0.0, 0.0
            if label != "a":
                settle()
            base = sampler.reset()
            reset_hwm(server.pid)
            cpu0 = cpu_seconds(server.pid)
            t0 = time.monotonic()
            statuses = [""] * len(keys)

            def one(i: int) -> None:
                left = budget(timeout)
                statuses[i] = (request(port, "GET", transform_path(name, keys[i]),
                                       timeout=left)[0] if left > 1 else "skipped (deadline)")

            if parallel:
                threads = [threading.Thread(target=one, args=(i,)) for i in range(len(keys))]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
            else:
                for i in range(len(keys)):
                    one(i)
                    if not alive():
                        break
            secs = time.monotonic() - t0
            time.sleep(0.1)  # let the sampler see the tail
            cpu1 = cpu_seconds(server.pid) if alive() else cpu0
            with sampler.lock:
                peak = sampler.peak
            hwm[0] = hwm_bytes(server.pid) if alive() else 0
            # The sampled peak can miss a peak shorter than 20 ms; VmHWM cannot.
            return statuses, max(peak, hwm[0]), base, cpu1 - cpu0, secs

        def killed_note(peak: int) -> str:
            return (f">{args.rss_kill_mib / 1024:.0f} GiB (killed)" if sampler.killed
                    else f"{peak / MIB:.0f}")

        def peak_growth(peak: int, base: int) -> str:
            """'PEAK (+GROWTH)' in MiB, or the kill note."""
            if sampler.killed:
                return killed_note(peak)
            return f"{peak / MIB:.0f} (+{(peak - base) / MIB:.0f})"

        hwm = [0]  # summed VmHWM after the last case (reset at its start)

        def add(case_id, label, statuses, peak_txt, cpu, secs, derived, target, ok, **extra):
            rows.append({"case": case_id, "what": label, "statuses": fmt_status(statuses),
                         "rss": peak_txt, "hwm_mib": round(hwm[0] / MIB) if hwm[0] else None,
                         "cpu_s": round(cpu, 2), "time_s": round(secs, 2),
                         "derived": derived, "target": target, "pass": bool(ok), **extra})
            hwm[0] = 0
            print(f"  {case_id} {label}: {rows[-1]['statuses']} rss {peak_txt} cpu {cpu:.2f} s "
                  f"time {secs:.2f} s -> {'PASS' if ok else 'FAIL'}", file=sys.stderr)

        def answered(statuses: list[str]) -> bool:
            """Every request got an HTTP answer (any status) in time."""
            return all(s.isdigit() for s in statuses)

        def ok_or_422(statuses: list[str]) -> bool:
            return all(s == "422" or s.startswith("upload 4") for s in statuses)

        # (a) 8 parallel distinct size-N on the big PNG.
        keys = [f"size-{2000 + i}" if not reduced else f"size-{1000 + i}" for i in range(big_keys)]
        st, peak, base, cpu, secs = case("a", "big", keys, 120, True)
        done_a = time.monotonic()
        ok = not sampler.killed and peak <= rss_a_bound * MIB and alive() and answered(st)
        add("a", f"{big_keys} parallel distinct size-N, {big_side}x{big_side} PNG "
            f"({len(files['big'][1]):,} B)", st, peak_growth(peak, base), cpu, secs, None,
            f"peak <= {rss_a_bound} MiB", ok)

        # (f) RSS 12 s after (a).
        if alive():
            time.sleep(max(0.0, 12 - (time.monotonic() - done_a)))
            after = sampler.last
            ok = alive() and after <= rss_f_bound * MIB
            add("f", "RSS 12 s after (a)", ["-"], f"{after / MIB:.0f}", 0.0, 12.0, None,
                f"<= {rss_f_bound} MiB", ok)
        else:
            add("f", "RSS 12 s after (a)", ["server dead"], "-", 0.0, 0.0, None,
                f"<= {rss_f_bound} MiB", False)

        # (b) the iCCP PNG, the WebP Huffman file, the GIF canvas file: once each.
        # The keys the review used: thumbnail, size-2 and size-100.
        for name, tkey, label in (
                ("iccp", "thumbnail", f"10x10 PNG, iCCP inflating to {iccp_mib} MiB"),
                ("webp", "size-2", "4x4 WebP (VP8L), 65,536 Huffman groups"),
                ("gif", "size-100", "35-byte GIF, 7071x7071 screen, 1x1 frame")):
            st, peak, base, cpu, secs = case("b", name, [tkey], 60, False)
            growth = peak - base
            ok = alive() and not sampler.killed and (
                (growth <= small_growth * MIB and answered(st)) or ok_or_422(st))
            add("b", f"{label} ({len(files[name][1]):,} B), {tkey}", st,
                peak_growth(peak, base), cpu, secs, None, f"growth <= {small_growth} MiB or 422", ok)

        # (c) the 50,000,000x1 PNG once.
        st, peak, base, cpu, secs = case("c", "wide", ["size-1"], 120, False)
        growth = peak - base
        ok = alive() and not sampler.killed and (
            (growth <= wide_growth * MIB and answered(st)) or ok_or_422(st))
        add("c", f"{wide:,}x1 PNG ({len(files['wide'][1]):,} B), size-1", st,
            peak_growth(peak, base), cpu, secs, None, f"growth <= {wide_growth} MiB or 422", ok)

        # (e) distinct size-N above the 1600x1067 JPEG's size, sequential: derived/ growth.
        d0 = dir_bytes(derived_dir)
        keys = [f"size-{1601 + i}" for i in range(derived_n)]
        st, peak, base, cpu, secs = case("e", "photo", keys, 30, False)
        grown = dir_bytes(derived_dir) - d0
        ok = alive() and grown <= derived_bound and answered(st)
        add("e", f"{derived_n} distinct size-N > 1600 on a 1600x1067 JPEG "
            f"({len(files['photo'][1]):,} B)", st, peak_growth(peak, base), cpu, secs,
            grown, f"derived/ +<= {derived_bound / 1e6:.0f} MB", ok)

        # (d) the scan-bomb JPEG once, last: CPU that keeps burning would skew the other cases.
        rising = None
        if ids.get("bomb") is not None and alive():
            settle()
            base = sampler.reset()
            reset_hwm(server.pid)
            cpu0 = cpu_seconds(server.pid)
            t0 = time.monotonic()
            left = budget(45)
            status = (request(port, "GET", transform_path("bomb", "thumbnail"), timeout=left)[0]
                      if left > 1 else "skipped (deadline)")
            secs = time.monotonic() - t0
            time.sleep(5)
            c5 = cpu_seconds(server.pid) if alive() else 0.0
            time.sleep(3)
            c8 = cpu_seconds(server.pid) if alive() else c5
            rising = c8 - c5
            with sampler.lock:
                peak = sampler.peak
            hwm[0] = hwm_bytes(server.pid) if alive() else 0
            peak = max(peak, hwm[0])
            ok = (alive() and status.isdigit() and secs <= bomb_answer
                  and rising <= bomb_rising)
            add("d", f"progressive JPEG, {bomb_scans:,} scans, 7071x7071 "
                f"({len(files['bomb'][1]):,} B), thumbnail", [status],
                peak_growth(peak, base), c8 - cpu0, secs, None,
                f"answer <= {bomb_answer:.0f} s; CPU from 5 s to 8 s after it "
                f"+{rising:.2f} s (<= {bomb_rising} s)", ok, cpu_rising_5_8=round(rising, 2))
        else:
            st = [f"upload {upload_status.get('bomb')}"] if ids.get("bomb") is None else ["server dead"]
            add("d", f"progressive JPEG, {bomb_scans:,} scans", st, "-", 0.0, 0.0, None,
                f"answer <= {bomb_answer:.0f} s", ids.get("bomb") is None and alive())
    finally:
        sampler.stop.set()
        kill_server(server)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        log.close()
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    total = time.monotonic() - started
    mode = "reduced" if reduced else "full"
    print(f"\nTransform soak ({mode}), {os.path.relpath(binary)}, {total:.0f} s in all\n")
    print("| case | what | statuses | RSS peak (+growth) MiB | VmHWM MiB | CPU s | time s "
          "| derived bytes | target | result |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        derived = f"{r['derived']:,}" if r["derived"] is not None else "-"
        hwm_txt = f"{r['hwm_mib']:,}" if r["hwm_mib"] else "-"
        print(f"| {r['case']} | {r['what']} | {r['statuses']} | {r['rss']} | {hwm_txt} | "
              f"{r['cpu_s']:.2f} | "
              f"{r['time_s']:.2f} | {derived} | {r['target']} | {'PASS' if r['pass'] else 'FAIL'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mode": mode, "binary": binary, "seconds": round(total, 1),
                       "rows": rows}, f, indent=1)
    failed = [r["case"] for r in rows if not r["pass"]]
    print(f"\n{'FAIL: ' + ', '.join(failed) if failed else 'all bounds held'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
