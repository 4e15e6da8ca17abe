"""Authentication of a `SessionAgent` (a mixin): `authenticate` and `logout` (v2's
`auth/login` and `auth/logout` go through the same `_login` / `_logout`).

With no `auth_methods` every session request is allowed; with some, session requests
answer -32000 (`auth_required`, listing the methods) until one succeeds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acpstack.schema import v1 as acp
from acpstack.wire import RequestError


class AuthMethods:
    """`authenticate` / `logout` over the `auth_methods` and `authenticated` attributes
    `SessionAgent.__init__` sets."""

    auth_methods: list[acp.AuthMethodAgent]
    authenticated: bool

    if TYPE_CHECKING:  # what SessionAgent provides (declared for the type checker only)

        async def check_authentication(self, method_id: str) -> bool:
            raise NotImplementedError

        async def report_auth_status(self) -> None:
            raise NotImplementedError

    async def authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        """`authenticate`: log in with one of `auth_methods` (-32602 for a method not
        offered, -32000 when `check_authentication` refuses it)."""
        await self._login(params.method_id)
        return acp.AuthenticateResponse()

    async def logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        """`logout`: session requests need `authenticate` again (-32601 without
        `auth_methods`)."""
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
