"""`acpstack inspect`: a transparent proxy that records (and shows live) an agent's traffic
(`--hops DIR`: the hops a proxy chain recorded, as one view);
`acpstack replay`: replay a recording's client side and report where the answers differ.

stdout belongs to the proxied protocol: everything these commands say goes to stderr
(replay, which proxies nothing, prints its report on stdout)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acpstack.cli._args import with_agent_command


def add_parsers(sub: Any) -> None:
    inspect = sub.add_parser(
        "inspect", help="proxy an agent's stdio, recording (and showing) every frame"
    )
    inspect.add_argument("--record", metavar="FILE", help="write the traffic to FILE (NDJSON)")
    inspect.add_argument(
        "--web",
        nargs="?",
        const=0,
        type=int,
        metavar="PORT",
        help="serve a live page on 127.0.0.1 (default: any free port); its URL goes to stderr",
    )
    inspect.add_argument(
        "--view",
        metavar="FILE",
        help="no proxy: serve the page for a recording until Ctrl-C (with --web PORT)",
    )
    inspect.add_argument(
        "--hops",
        metavar="DIR",
        help="no proxy: print the hops a chain recorded (acpstack conduct --record DIR) as "
        "one view, in time order",
    )
    inspect.add_argument("--json", action="store_true", help="with --hops: JSON lines")
    inspect.add_argument(
        "--unstable", action="store_true", help="check messages against the unstable schema"
    )
    with_agent_command(inspect, "the agent's command line, run behind the proxy")
    replay = sub.add_parser(
        "replay", help="send a recording's client side to an agent again and compare"
    )
    replay.add_argument("recording", metavar="FILE", help="a recording from acpstack inspect")
    replay.add_argument("--json", action="store_true", help="print the report as JSON")
    replay.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for each answer (default 30)",
    )
    with_agent_command(replay, "the agent's command line, to replay the recording to")


def _say(line: str) -> None:
    sys.stderr.write(f"acpstack inspect: {line}\n")
    sys.stderr.flush()


def run_inspect(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    from acpstack.traffic import RecordingError, inspect_agent, view_recording

    if args.hops:
        return _show_hops(Path(args.hops), as_json=args.json)
    if args.view:
        try:
            asyncio.run(
                view_recording(
                    Path(args.view),
                    port=args.web or 0,
                    on_url=lambda url: _say(f"page: {url}  (Ctrl-C to stop)"),
                    unstable=args.unstable,
                )
            )
        except (OSError, RecordingError) as exc:
            _say(f"cannot show {args.view}: {exc}")
            return 2
        except KeyboardInterrupt:
            pass
        return 0
    if not agent_command:
        _say("name the agent: acpstack inspect [--record FILE] [--web [PORT]] -- AGENT ...")
        return 2
    record = Path(args.record) if args.record else None
    try:
        return asyncio.run(
            inspect_agent(
                agent_command,
                record=record,
                web_port=args.web,
                on_url=lambda url: _say(f"live page: {url}"),
                unstable=args.unstable,
            )
        )
    except OSError as exc:
        _say(f"cannot run `{agent_command[0]}`: {exc.strerror or exc}")
        return 127
    except KeyboardInterrupt:
        return 130


def _show_hops(directory: Path, *, as_json: bool) -> int:
    from acpstack.traffic import RecordingError, hop_lines, read_hops

    try:
        hops = read_hops(directory)
    except (OSError, RecordingError, UnicodeDecodeError) as exc:
        _say(f"cannot show the hops in {directory}: {exc}")
        return 2
    if as_json:
        lines = [json.dumps(hop.to_json(), ensure_ascii=False) for hop in hops]
    else:
        lines = hop_lines(hops)
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def run_replay(args: argparse.Namespace, agent_command: list[str] | None) -> int:
    from acpstack.conformance import AgentTarget, TargetUnavailable
    from acpstack.traffic import RecordingError, read_recording, replay_recording

    if not agent_command:
        sys.stderr.write("acpstack replay: name the agent: acpstack replay FILE -- AGENT ...\n")
        return 2
    try:
        records = read_recording(Path(args.recording))
    except (OSError, RecordingError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"acpstack replay: cannot read {args.recording}: {exc}\n")
        return 2
    target = AgentTarget(command=tuple(agent_command), env=dict(os.environ))

    def note(text: str) -> None:
        sys.stderr.write(f"acpstack replay: note: {text}\n")
        sys.stderr.flush()

    try:
        report = asyncio.run(replay_recording(records, target, timeout=args.timeout, on_note=note))
    except TargetUnavailable as exc:
        sys.stderr.write(f"acpstack replay: {exc}\n")
        return 2
    if args.json:
        data = {
            "requests": report.requests,
            "seconds": round(report.seconds, 3),
            "differences": [d.__dict__ for d in report.differences],
            "notes": report.notes,
        }
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        for difference in report.differences:
            sys.stdout.write(f"DIFF {difference}\n")
        found = (
            f"{len(report.differences)} difference(s)" if report.differences else "no difference"
        )
        sys.stdout.write(
            f"replayed {report.requests} request(s) in {report.seconds:.1f} s: {found}\n"
        )
    return report.exit_code
