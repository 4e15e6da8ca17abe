"""Modes and config options of a `SessionAgent` (a mixin), the same on both protocol
versions: the modes are also a config option of category "mode" (the only form v2 has);
`session/set_mode` and `session/set_config_option` change the same stored value (on a
session another process took over, SESSION_BUSY: see `SessionAgent._writing`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from acpstack.agent._requests import select_values
from acpstack.schema import v1 as acp
from acpstack.wire import RequestError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from acpstack.agent._session import Session

MODE_CONFIG_ID = "mode"


class ConfigOptionMethods:
    """`modes` and `extra_config_options` as `SessionAgent.__init__` sets them."""

    modes: list[tuple[str, str]]
    extra_config_options: list[acp.SessionConfigOption]

    if TYPE_CHECKING:  # what SessionAgent provides (declared for the type checker only)

        def _active(self, session_id: str) -> Session:
            raise NotImplementedError

        def _writing(self, session: Session) -> AbstractAsyncContextManager[None]:
            raise NotImplementedError

    def _default_config_values(self) -> dict[str, Any]:
        return {o.id: o.current_value for o in self.extra_config_options}

    def _mode_state(self, session: Session) -> acp.SessionModeState | None:
        if not self.modes:
            return None
        current = session.mode_id or self.modes[0][0]
        return acp.SessionModeState(
            current_mode_id=current,
            available_modes=[acp.SessionMode(id=i, name=n) for i, n in self.modes],
        )

    def _config_options(self, session: Session) -> list[acp.SessionConfigOption] | None:
        options: list[acp.SessionConfigOption] = []
        if self.modes:
            current = session.mode_id or self.modes[0][0]
            choices = [acp.SessionConfigSelectOption(value=i, name=n) for i, n in self.modes]
            options.append(
                acp.SessionConfigOption(
                    id=MODE_CONFIG_ID,
                    name="Mode",
                    category="mode",
                    type="select",
                    current_value=current,
                    options=choices,
                )
            )
        for option in self.extra_config_options:
            current_value = session.config_values.get(option.id, option.current_value)
            options.append(msgspec.structs.replace(option, current_value=current_value))
        return options or None

    async def session_set_mode(
        self, params: acp.SetSessionModeRequest
    ) -> acp.SetSessionModeResponse:
        """`session/set_mode`: switch an active session to one of `modes` (-32602 for an
        unknown one); sends `current_mode_update` and the config options."""
        session = self._active(params.session_id)
        async with self._writing(session):
            await self._set_mode(session, params.mode_id)
        return acp.SetSessionModeResponse()

    async def _set_mode(self, session: Session, mode_id: str) -> None:
        if mode_id not in {i for i, _ in self.modes}:
            raise RequestError.invalid_params({"modeId": mode_id}, f"Unknown mode: {mode_id}")
        session.mode_id = mode_id
        await session.save()
        await session.send(acp.CurrentModeUpdate(current_mode_id=mode_id))
        options = self._config_options(session)
        if options:
            await session.send(acp.ConfigOptionUpdate(config_options=options))

    async def session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        """`session/set_config_option`: set one option of an active session (the "mode"
        option switches the mode); -32602 for an unknown option or a wrong value. Answers
        every option with its current value."""
        session = self._active(params.session_id)
        async with self._writing(session):
            await self._set_config_value(session, params.config_id, params.value)
        return acp.SetSessionConfigOptionResponse(
            config_options=self._config_options(session) or []
        )

    async def _set_config_value(self, session: Session, config_id: str, value: Any) -> None:
        """Set one option (the mode option switches the mode); -32602 for what is unknown."""
        if config_id == MODE_CONFIG_ID and self.modes:
            if not isinstance(value, str):
                raise RequestError.invalid_params(
                    {"configId": config_id}, "The mode option takes a value id"
                )
            await self._set_mode(session, value)
            return
        option = next((o for o in self.extra_config_options if o.id == config_id), None)
        if option is None:
            raise RequestError.invalid_params(
                {"configId": config_id}, f"Unknown config option: {config_id}"
            )
        if (option.type == "boolean") != isinstance(value, bool):
            raise RequestError.invalid_params(
                {"configId": config_id}, "Wrong value type for this option"
            )
        if option.type == "select" and value not in select_values(option):
            raise RequestError.invalid_params(
                {"configId": config_id, "value": value}, "Unknown value for this option"
            )
        session.config_values[option.id] = value
        await session.save()


__all__ = ["MODE_CONFIG_ID", "ConfigOptionMethods"]
