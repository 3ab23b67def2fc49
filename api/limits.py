"""ASGI middleware capping the request body size (413 above ``max_bytes``; paths in
``path_limits`` have their own cap, e.g. uploads to ``/v1/jobs``, and paths in ``json_limits``
a cap of their own for JSON bodies, with advice in the 413)."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodySizeLimit:
    """Reject bodies larger than ``max_bytes`` with 413, whether or not ``Content-Length`` is
    sent (a chunked body is counted as it arrives and buffered, at most ``max_bytes``)."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        path_limits: dict[str, tuple[int, str]] | None = None,
        json_limits: dict[str, tuple[int, str, str]] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        #: path -> (cap, the setting that sets it)
        self.path_limits = dict(path_limits or {})
        #: path -> (cap of an ``application/json`` body, the setting, what to do instead)
        self.json_limits = dict(json_limits or {})

    def _limit(self, scope: Scope) -> tuple[int, str, str]:
        path = scope.get("path", "")
        if path in self.json_limits:
            content_type = dict(scope.get("headers", [])).get(b"content-type", b"")
            if content_type.split(b";")[0].strip().lower() == b"application/json":
                return self.json_limits[path]
        cap, setting = self.path_limits.get(path, (self.max_bytes, "MOLPROP_MAX_BODY_BYTES"))
        return cap, setting, ""

    async def _reject(self, send: Send, limit: tuple[int, str, str]) -> None:
        cap, setting, advice = limit
        detail = f"request body larger than {cap} bytes ({setting})"
        body = json.dumps({"detail": f"{detail}: {advice}" if advice else detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        max_bytes = limit[0]
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > max_bytes:
            await self._reject(send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # client disconnected
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > max_bytes:
                await self._reject(send, limit)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
