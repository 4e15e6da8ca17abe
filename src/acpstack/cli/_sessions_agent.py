"""`acpstack sessions agent`: an agent's own list of sessions (`session/list`), paged."""

from __future__ import annotations

import os
import sys

from acpstack.cli._errors import EXIT_ERROR, CliError
from acpstack.client import ClientRuntime, spawn_agent
from acpstack.rpc import ConnectionClosed
from acpstack.schema import v1 as acp
from acpstack.wire import CapabilityError, RequestError


async def list_agent_sessions(name: str | None, command: list[str] | None, cwd: str | None) -> int:
    from acpstack.cli._chat import default_agent_command
    from acpstack.cli._cmd_chat import resolve_name
    from acpstack.cli._config import load_config
    from acpstack.cli._paths import config_file

    env: dict[str, str] = {}
    name = name or (None if command else load_config(config_file()).default_agent)
    if name:
        launch = resolve_name(name, load_config(config_file()))
        command, env = launch.ready_command(_progress), launch.env
    runtime = ClientRuntime()
    try:
        async with spawn_agent(command or default_agent_command(), runtime, env=env) as _conn:
            await runtime.initialize()
            count = await _print_pages(runtime, cwd)
    except CapabilityError:
        raise CliError(
            "the agent does not list its sessions (it offers no session/list)", EXIT_ERROR
        ) from None
    except RequestError as err:
        raise CliError(
            f"error from the agent: {err.message} (code {err.code})", EXIT_ERROR
        ) from None
    except ConnectionClosed as exc:
        raise CliError(f"the agent stopped: {exc}", EXIT_ERROR) from None
    except OSError as exc:
        raise CliError(f"could not start the agent: {exc}", EXIT_ERROR) from None
    if count == 0:
        sys.stderr.write("no sessions\n")
    return 0


async def _print_pages(runtime: ClientRuntime, cwd: str | None) -> int:
    params = acp.ListSessionsRequest()
    if cwd:
        params.cwd = os.path.abspath(cwd)
    count = 0
    while True:
        listing = await runtime.agent.session_list(params)
        for info in listing.sessions:
            title = info.title if isinstance(info.title, str) else ""
            updated = info.updated_at if isinstance(info.updated_at, str) else ""
            sys.stdout.write(f"{info.session_id}\t{updated}\t{info.cwd}\t{title}\n")
            count += 1
        cursor = listing.next_cursor if isinstance(listing.next_cursor, str) else None
        if not cursor:
            return count
        params.cursor = cursor


def _progress(text: str) -> None:
    sys.stderr.write(text + "\n")
