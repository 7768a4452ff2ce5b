"""Fault campaign against the test S3 server: ``python benches/faults.py [--rounds N] [--faults a,b]``.

The operations and checks of ``tests/test_s3_faults.py`` (one-shot and two-phase writes,
compaction, expiry, orphan cleaning, read, lookup, each checked with the fault off), ``--rounds``
times per fault class on one table instead of once, through the same proxies in front of a moto
server (``make fault-proxies`` installs toxiproxy and nginx). Prints, per fault class, how the
operations ended and how long the class took; stops with the failed check on the first broken
invariant (a lost acknowledged write, a partly landed one, an unreadable snapshot, an untyped
error, an operation past its time bound).
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import test_s3_faults as suite  # noqa: E402
from _faults import FaultProxies, nginx, toxiproxy  # noqa: E402
from _s3 import moto_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="operation rounds per fault class")
    parser.add_argument("--faults", default=",".join([*suite.TCP, *suite.HTTP]), help="comma-separated classes")
    args = parser.parse_args()
    with moto_server() as server:
        port = int(server.endpoint.rsplit(":", 1)[1])
        with toxiproxy(port) as tcp, nginx(port) as web:
            proxies = FaultProxies(server, tcp, web)
            for name in args.faults.split(","):
                started = time.monotonic()
                with suite.fault(proxies, name) as (endpoint, seen):
                    lake = suite.new_lake(f"s3://{server.new_bucket()}/t", server.options,
                                          proxies.options(endpoint, **suite.CLIENT))
                    for round_ in range(1, args.rounds + 1):
                        suite.operations(lake, round_)
                # "what: ok, 0.3 s" or "what: StorageError (message), 0.3 s" -> "what: ok" / "what: StorageError"
                outcomes = collections.Counter(o.split(" (")[0].rsplit(",", 1)[0] for o in lake.outcomes)
                faulted = f", {seen['faulted']} of {seen['requests']} requests faulted" if seen else ""
                print(f"{name}: {args.rounds} rounds in {time.monotonic() - started:.1f} s{faulted}; "
                      + ", ".join(f"{what} x{n}" for what, n in sorted(outcomes.items())), flush=True)


if __name__ == "__main__":
    main()
