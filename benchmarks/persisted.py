"""W9, the path real agents run: `python -m benchmarks.persisted [--reps 3] [--quick]`.

W1 (one prompt streaming 20,000 message chunks of 40 bytes, updates/s at the client)
with the agent written on `SessionAgent` (every chunk through `Turn.say`, recorded in the
session store before the client gets it) for each store (memory, SQLite, PostgreSQL),
beside the raw `Agent` (nothing stored) and the official Python SDK's agent (nothing
stored), all driven by acpstack's client over real pipes, in one run, alternating the
agents repetition by repetition. Also W1 over protocol v2 with `SessionAgent` and SQLite.
Prints medians and each one's ratio to the raw `Agent`, and writes the JSON to
`benchmarks/results/`.

PostgreSQL is a throwaway server started here (tools/cluster; skipped with a note when
PostgreSQL is not installed). The official SDK's venv is the main benchmark's
(`benchmarks/.venv-pysdk-3.X`, made on first use).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks._runner import pinned
from benchmarks._setup import acpstack_python, python_sdk

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"


@contextlib.contextmanager
def postgres_url(database: str = "w9") -> Iterator[str | None]:
    try:
        from tools.cluster._postgres import LocalPostgres
    except ImportError:
        yield None
        return
    try:
        server = LocalPostgres()
    except Exception as exc:  # not installed here
        print(f"note: no PostgreSQL ({exc}); its column is left out", file=sys.stderr)
        yield None
        return
    with server as pg:
        yield pg.create_database(database)


def run(client: list[str], agent: list[str], env: dict[str, str]) -> float:
    return float(measure(client, agent, env, "W1")["value"])


def measure(
    client: list[str], agent: list[str], env: dict[str, str], workload: str
) -> dict[str, float]:
    """What `client` printed for `workload` against `agent` (both pinned to CPU 0)."""
    done = subprocess.run(
        pinned([*client, workload, "--", *agent]),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{agent[-2:]}: exit {done.returncode}: {done.stderr[-400:]}")
    result: dict[str, float] = json.loads(lines[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.persisted")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 updates instead of 20,000")
    parser.add_argument("--no-sdk", action="store_true", help="leave the official SDK out")
    args = parser.parse_args()
    env = {**os.environ, "ACPSTACK_BENCH_QUICK": "1" if args.quick else "0"}
    ours = str(acpstack_python(sys.executable))
    client = [ours, str(PEERS / "acpstack_client.py")]
    client_v2 = [ours, str(PEERS / "acpstack_client_v2.py")]
    session_agent = [ours, str(PEERS / "acpstack_session_agent.py")]
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, postgres_url() as pg:
        agents: dict[str, tuple[list[str], list[str]]] = {
            "Agent (raw, not stored)": (client, [ours, str(PEERS / "acpstack_agent.py")]),
            "SessionAgent + memory": (client, [*session_agent, "memory"]),
            "SessionAgent + SQLite": (client, [*session_agent, f"{tmp}/w9.sqlite3"]),
        }
        if pg is not None:
            agents["SessionAgent + PostgreSQL"] = (client, [*session_agent, pg])
        agents["SessionAgent + SQLite, protocol v2"] = (
            client_v2,
            [*session_agent, f"{tmp}/w9v2.sqlite3"],
        )
        if not args.no_sdk:
            sdk = str(python_sdk(sys.executable))
            agents["official Python SDK agent (not stored)"] = (
                client,
                [sdk, str(PEERS / "pysdk_agent.py")],
            )
        for rep in range(args.reps):
            for name, (driver, agent) in agents.items():
                value = run(driver, agent, env)
                samples.setdefault(name, []).append(value)
                print(f"rep {rep + 1} {name}: {value:,.0f} updates/s", file=sys.stderr)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    raw = medians["Agent (raw, not stored)"]
    print(f"\nW9: {'quick' if args.quick else '20,000'} updates, medians of {args.reps}\n")
    print("| agent | updates/s | vs raw Agent |\n| --- | ---: | ---: |")
    for name, value in medians.items():
        print(f"| {name} | {value:,.0f} | {value / raw:.2f} |")
    out = HERE / "results" / f"w9-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"samples": samples, "medians": medians}, indent=2))
    print(f"\n(written to {out.relative_to(HERE.parent)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
