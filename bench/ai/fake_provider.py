"""An OpenAI-compatible provider for the AI chat benchmark (asyncio, so hundreds of streams cost
little): `POST /v1/chat/completions` streams server-sent events chosen by a marker in the last
user message, `GET /v1/models` answers 200.

- `[latency]`: after 100 ms, a fragment `ts:<time.time_ns()>` stamped as it is written, then five
  fragments 20 ms apart: the client measures how long the stamp took to reach it;
- `[long]`: 20 fragments, 500 ms apart (a 10-second answer);
- anything else: one fragment `ok`.

Usage: python3 fake_provider.py PORT
"""

import asyncio
import json
import sys
import time


def chunk(content: str) -> bytes:
    body = {"choices": [{"index": 0, "delta": {"content": content}}]}
    return f"data: {json.dumps(body)}\n\n".encode()


DONE = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = await reader.readexactly(length) if length else b""
        if lines[0].startswith("GET"):
            payload = b'{"object":"list","data":[{"id":"fake"}]}'
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                + f"content-length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
            return
        request = json.loads(body)
        last = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        await writer.drain()
        if "[latency]" in last:
            await asyncio.sleep(0.1)
            writer.write(chunk(f"ts:{time.time_ns()}"))
            await writer.drain()
            for _ in range(5):
                await asyncio.sleep(0.02)
                writer.write(chunk("."))
                await writer.drain()
        elif "[long]" in last:
            for _ in range(20):
                writer.write(chunk("x"))
                await writer.drain()
                await asyncio.sleep(0.5)
        else:
            writer.write(chunk("ok"))
        writer.write(DONE)
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
