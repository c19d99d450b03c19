#!/usr/bin/env python3
"""Cold transform latency (issue 23): uploads distinct 2000x1500 camera-like JPEGs to a running
server, then times the first `size-400` of each (computed, stored, served) and a second one
(served from the stored output). Prints p50/p90/max of both.

Usage: bench/transforms/cold.py BASE_URL EDITOR_KEY [COUNT]   (needs Pillow)
"""

import io
import json
import random
import statistics
import sys
import time
import urllib.request

from PIL import Image, ImageFilter


def photo(seed):
    rnd = random.Random(seed)
    small = Image.new("RGB", (40, 30))
    small.putdata([(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)) for _ in range(1200)])
    img = small.resize((2000, 1500), Image.BICUBIC).filter(ImageFilter.GaussianBlur(3))
    # Sensor-like grain: a camera JPEG of this size is 0.5 to 1 MB, and entropy decoding is most
    # of a decode's time; a smooth gradient would compress to a tenth and decode too fast.
    grain = Image.effect_noise((2000, 1500), 40).convert("RGB")
    img = Image.blend(img, grain, 0.12)
    out = io.BytesIO()
    img.save(out, "JPEG", quality=85, subsampling=2)
    return out.getvalue()


def upload(base, key, name, body):
    boundary = "vellumbench"
    data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: image/jpeg\r\n\r\n").encode() + body + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{base}/api/v1/files", data=data, method="POST", headers={
        "Authorization": f"Bearer {key}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req) as res:
        return json.load(res)["data"]["id"]


def timed(url, key):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as res:
        res.read()
    return (time.perf_counter() - start) * 1000


def summary(name, ms):
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{name}: p50 {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, max {ms[-1]:.1f} ms ({len(ms)} requests)")


def main(argv):
    base, key = argv[1].rstrip("/"), argv[2]
    count = int(argv[3]) if len(argv) > 3 else 20
    # Fresh content every run: outputs are stored per content hash, so a source seen before
    # would be served warm.
    first = time.time_ns()
    photos = [photo(first + i) for i in range(count)]
    print(f"{count} sources of {statistics.mean(len(p) for p in photos) / 1024:.0f} KiB on average")
    ids = [upload(base, key, f"cold-{i}.jpg", p) for i, p in enumerate(photos)]
    cold, warm = [], []
    for file_id in ids:
        url = f"{base}/api/v1/files/{file_id}/transforms/size-400"
        cold.append(timed(url, key))
        warm.append(timed(url, key))
    summary("cold size-400 of 2000x1500 JPEG", cold)
    summary("same, second request", warm)


if __name__ == "__main__":
    main(sys.argv)
