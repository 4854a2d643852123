"""A 1-text request's latency while a 200k-token request runs on the same `sbert serve`.

python benchmarks/serve/serve_fairness.py [--max-batch-tokens 8192] [--repeats 5]

Starts a real server on 127.0.0.1 (CPU, the default model), sends 784 texts of 255 CJK
characters (about 200k tokens; --max-request-tokens and --max-chars raised to let it in), then, 3 s later and
every 2 s while it runs, a 1-text request. Prints each small latency, their median and the large
request's time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.serve_helpers import start_server

MODEL = "all-MiniLM-L6-v2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-batch-tokens", default="8192")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    log_dir = Path("/tmp")
    server = start_server(log_dir, "--model", MODEL, "--max-request-tokens", "262144", "--max-chars", "400000",
                          "--max-batch-tokens", args.max_batch_tokens)  # fmt: skip
    try:
        big = ["漢字仮名交じり文" * 32] * 784
        small: list[float] = []
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            start = time.monotonic()
            large = pool.submit(httpx.post, server.url + "/v1/embeddings",
                                json={"model": MODEL, "input": big}, timeout=300)  # fmt: skip
            time.sleep(3)
            while not large.done() and len(small) < args.repeats:
                t0 = time.monotonic()
                httpx.post(server.url + "/v1/embeddings", json={"model": MODEL, "input": "hi there"}, timeout=60)
                small.append(time.monotonic() - t0)
                time.sleep(2)
            status = large.result().status_code
            total = time.monotonic() - start
        print("small latencies (s):", " ".join(f"{s:.2f}" for s in small))
        print(f"median {statistics.median(small):.2f} s, max {max(small):.2f} s; large request {total:.1f} s "
              f"(status {status}); --max-batch-tokens {args.max_batch_tokens}")  # fmt: skip
    finally:
        server.stop()


if __name__ == "__main__":
    main()
