"""Every error a request can cause is answered as JSON {"error": message} with a 4xx status:
the route's own (BadRequest 400, UnknownRun 404, NotMaterialized 409: a run whose averages or
export are still to be written), FastAPI's checks of parameters and body (400,
naming the parameter), an unknown path or method (405 with every method the path serves in
Allow), a query that is not UTF-8, a body too long (413). A busy server says so: 503 with
Retry-After (Overloaded: a full queue, a deadline passed, a model still loading). Anything else
is logged and answered 500 without a traceback: the server stays up."""

import json
import logging
from urllib.parse import parse_qs, quote_from_bytes

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from nmt.errors import NMTError
from nmt.serve.batcher import Overloaded
from nmt.serve.runs import NotMaterialized, UnknownRun

log = logging.getLogger(__name__)

# Printable ASCII stays as sent ('%', '&', '=' included); only raw bytes above it get escaped.
PRINTABLE_ASCII = "".join(map(chr, range(0x21, 0x7F)))
BODY_HINT = 'send {"lines": ["汤姆喜欢猫。"], "beam": 5} as application/json'


class BadRequest(NMTError):
    """What the request asked for cannot be done: a 400 with the message."""


def add_error_handlers(app: FastAPI) -> None:
    """The handlers are async: Starlette runs a sync handler in its thread pool, so a 503 for a
    full queue would wait for a thread like any sync route."""

    @app.exception_handler(NMTError)
    async def user_error(request: Request, error: NMTError) -> JSONResponse:
        if isinstance(error, Overloaded):
            return JSONResponse({"error": str(error)}, status_code=503,
                                headers={"Retry-After": str(error.retry_after)})
        status = 404 if isinstance(error, UnknownRun) else 409 if isinstance(error, NotMaterialized) else 400
        return JSONResponse({"error": str(error)}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": "; ".join(map(describe_invalid, error.errors()))}, status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        headers = dict(error.headers or {})
        if error.status_code == 405:  # Starlette's Allow names the first route's methods only
            headers["Allow"] = ", ".join(served_methods(request))
        return JSONResponse({"error": f"{request.method} {request.url.path}: {error.detail}"},
                            status_code=error.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def server_error(request: Request, error: Exception) -> JSONResponse:
        log.error("request %s failed", request.url.path, exc_info=error)
        return JSONResponse({"error": f"internal error ({type(error).__name__}); see the server log"},
                            status_code=500)


def served_methods(request: Request) -> list[str]:
    """Every method some route serves at the request's path (GET and POST /api/translate are
    two routes)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


def describe_invalid(error: dict) -> str:
    """One of pydantic's complaints as a sentence naming the parameter: 'beam = 0: input should
    be greater than or equal to 1', 'lines[1] = 3: input should be a valid string'."""
    message = error["msg"][:1].lower() + error["msg"][1:]
    if error["type"] == "json_invalid":
        return f"the body is not JSON ({error['ctx']['error']} at character {error['loc'][-1]}): {BODY_HINT}"
    name = parameter_name(error["loc"])
    if not name:  # the body as a whole: absent, or not a JSON object
        return f"the body is missing: {BODY_HINT}" if error["type"] == "missing" else \
            f"the body: {message}: {BODY_HINT}"
    if error["type"] == "missing":
        return f"{name} is missing"
    if error["type"] == "string_pattern_mismatch" and name == "text":
        return "text is empty: give the Chinese to translate, e.g. ?text=汤姆喜欢猫。"
    value = error.get("input")
    if isinstance(value, str) and len(value) > 20:
        return f"{name} ({len(value)} characters): {message}"
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return f"{name} = {shown[:40]}: {message}"


def parameter_name(location: tuple) -> str:
    """('query', 'beam') → 'beam'; ('body', 'lines', 1) → 'lines[1]'; ('body',) → ''."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location[1:]).lstrip(".")


class RequestGuard:
    """What must be checked before FastAPI reads a request: the query must be UTF-8 (Starlette
    would quietly turn bad bytes into U+FFFD), and a body over `max_body_bytes` is refused
    without being read whole."""

    def __init__(self, app: ASGIApp, max_body_bytes: int):
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        raw = scope.get("query_string", b"")
        declared = Headers(scope=scope).get("content-length", "")
        if not is_utf8_query(raw):
            refusal = JSONResponse({"error": "the query is not valid UTF-8"}, status_code=400)
        elif declared.isdigit() and int(declared) > self.max_body_bytes:
            refusal = JSONResponse({"error": f"the body has {declared} bytes, over the limit of "
                                             f"{self.max_body_bytes}: send fewer lines"}, status_code=413)
        else:
            # Raw UTF-8 in the query (httptools passes it, h11 refuses it) is read as Latin-1 by
            # Starlette: escaped, it reads as what was sent.
            scope = {**scope, "query_string": quote_from_bytes(raw, safe=PRINTABLE_ASCII).encode()}
            return await self.app(scope, self._counting(receive), send)
        await refusal(scope, receive, send)

    def _counting(self, receive: Receive) -> Receive:
        """`receive` that stops a body sent without Content-Length at the limit (FastAPI
        answers it 400: 'There was an error parsing the body')."""
        received = 0

        async def counted():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:
                raise BadRequest(f"the body is over the limit of {self.max_body_bytes} bytes")
            return message
        return counted


def is_utf8_query(raw: bytes) -> bool:
    """Whether the query's fields decode as UTF-8, raw bytes and %XX escapes alike."""
    try:
        parse_qs(raw.decode("utf-8"), keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        return False
    return True
