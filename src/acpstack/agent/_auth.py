"""Authentication of a `SessionAgent` (a mixin), the same on both protocol versions:
`authenticate`/`logout` on v1, `auth/login`/`auth/logout` on v2 (see `_v2_agent.py`).
Sessions answer -32000 (auth required) until a login with an advertised method succeeds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpstack.schema import v1 as acp
from acpstack.wire import RequestError


class AuthMethods:
    """`auth_methods` and `authenticated` as `SessionAgent.__init__` sets them."""

    auth_methods: list[acp.AuthMethodAgent]
    authenticated: bool

    if TYPE_CHECKING:  # what SessionAgent provides (declared for the type checker only)

        async def check_authentication(self, method_id: str) -> bool:
            raise NotImplementedError

        async def report_auth_status(self) -> None:
            raise NotImplementedError

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        await self._login(params.method_id)
        return acp.AuthenticateResponse()

    async def logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        await self._logout("logout")
        return acp.LogoutResponse()

    async def _login(self, method_id: str) -> None:
        if method_id not in {m.id for m in self.auth_methods}:
            raise RequestError.invalid_params(
                {"methodId": method_id}, f"Unknown authentication method: {method_id}"
            )
        if not await self.check_authentication(method_id):
            raise RequestError.auth_required({"authMethods": self._auth_methods_data()})
        self.authenticated = True
        await self.report_auth_status()

    async def _logout(self, method: str) -> None:
        if not self.auth_methods:
            raise RequestError.method_not_found(method)
        self.authenticated = False
        await self.report_auth_status()

    def _require_auth(self) -> None:
        if not self.authenticated:
            raise RequestError.auth_required({"authMethods": self._auth_methods_data()})

    def _auth_methods_data(self) -> list[dict[str, Any]]:
        return [{"id": m.id, "name": m.name} for m in self.auth_methods]


__all__ = ["AuthMethods"]
