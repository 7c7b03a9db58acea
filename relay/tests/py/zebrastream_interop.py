"""Drives the real ZebraStream Python client (zebrastream-io) against an httpipe relay.

Usage (prints one result line on stdout):
  zebrastream_interop.py produce API PATH SIZE SEED   -> "sha256 <hex> <size>"
  zebrastream_interop.py consume API PATH             -> "sha256 <hex> <size>"
  zebrastream_interop.py produce-until-error API PATH -> "error <ExceptionClass>"
API is the Connect API base, e.g. http://127.0.0.1:8080/connect/v0/
"""
import asyncio
import hashlib
import random
import sys

from zebrastream.io._core import AsyncReader, AsyncWriter


async def produce(api, path, size, seed):
    data = random.Random(seed).randbytes(size)
    async with AsyncWriter(stream_path=path, connect_api_url=api, connect_timeout=60) as w:
        for i in range(0, size, 65536):
            await w.write(data[i : i + 65536])
    print("sha256", hashlib.sha256(data).hexdigest(), size, flush=True)


async def consume(api, path):
    h = hashlib.sha256()
    n = 0
    async with AsyncReader(stream_path=path, connect_api_url=api, connect_timeout=60) as r:
        while True:
            block = await r.read_variable_block(1 << 20)
            if not block:
                break
            h.update(block)
            n += len(block)
    print("sha256", h.hexdigest(), n, flush=True)


async def produce_until_error(api, path):
    chunk = b"z" * 65536
    try:
        async with AsyncWriter(stream_path=path, connect_api_url=api, connect_timeout=60) as w:
            for _ in range(100_000):  # up to 6.5 GB: the consumer hangs up long before
                await w.write(chunk)
    except BaseException as e:  # report what the client raised
        chain = []
        while e is not None and len(chain) < 5:
            chain.append(type(e).__name__)
            e = e.__cause__ or e.__context__
        print("error", " ".join(chain), flush=True)
        return
    print("no-error", flush=True)


def main():
    cmd, api, path = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "produce":
        asyncio.run(produce(api, path, int(sys.argv[4]), int(sys.argv[5])))
    elif cmd == "consume":
        asyncio.run(consume(api, path))
    elif cmd == "produce-until-error":
        asyncio.run(produce_until_error(api, path))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
