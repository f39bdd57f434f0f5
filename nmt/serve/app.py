"""The web page and its JSON API: type Chinese, see the translation, its attention and its links.

    GET /                 the page (static/index.html)
    GET /api/translate    ?text=...&beam=5&nbest=1[&run=NAME] → JSON, see `translate`
    GET /api/runs         the trained runs under runs/, and the default one
    GET /api/health       {"ok": true} once the default run is loaded
    GET /font             the CJK font the attention plots use too (Chinese labels, offline)

Every error a request can cause is a JSON {"error": message} with a 4xx status; anything else is
logged and answered 500 without a traceback: the server stays up.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from nmt.align.extract import extract_links
from nmt.decoding.translator import Translation, Translator
from nmt.errors import NMTError
from nmt.plot import cjk_font
from nmt.serve.runs import RunRegistry, UnknownRun

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
MAX_BEAM = 50


class BadRequest(NMTError):
    """What the request asked for cannot be done: a 400 with the message."""


def create_app(registry: RunRegistry, max_chars: int = 2000) -> FastAPI:
    app = FastAPI(title="nmt: translate and see the attention", docs_url=None, redoc_url=None)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    font = cjk_font()

    @app.exception_handler(NMTError)
    def user_error(request: Request, error: NMTError) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=404 if isinstance(error, UnknownRun) else 400)

    @app.exception_handler(Exception)
    def server_error(request: Request, error: Exception) -> JSONResponse:
        log.exception("request %s failed", request.url.path)
        return JSONResponse({"error": f"internal error ({type(error).__name__}); see the server log"},
                            status_code=500)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/font", include_in_schema=False)
    def font_file():
        if font is None:
            return JSONResponse({"error": "no CJK font installed"}, status_code=404)
        # 8 MB: the browser keeps it for a day instead of asking again on every page load.
        return FileResponse(font[1], headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/api/health")
    def health() -> dict:
        registry.get()
        return {"ok": True, "run": registry.default_run}

    @app.get("/api/runs")
    def runs() -> dict:
        return {"runs": registry.names(), "default": registry.default_run}

    @app.get("/api/translate")
    def translate(request: Request) -> dict:
        query = parse_query(request.scope.get("query_string", b""))
        text, beam, nbest = check_request(query, max_chars)
        run = registry.get(query.get("run"))
        lines = [line for line in text.split("\n") if line.strip()]
        translator, results = run.translator, run.translate(lines, beam, nbest)
        answers = [describe(translator, result) for result in results]
        return {"run": translator.run_name, "architecture": translator.architecture,
                **answers[0], "lines": answers}

    return app


def parse_query(raw: bytes) -> dict[str, str]:
    """The query's fields, decoded strictly: bytes that are not UTF-8 are a 400, not U+FFFD."""
    try:
        # Raw bytes (uvicorn's h11 refuses them, httptools passes them) and %XX escapes alike.
        fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True, encoding="utf-8",
                          errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("the query is not valid UTF-8") from None
    return {key: values[-1] for key, values in fields.items()}


def check_request(query: dict[str, str], max_chars: int) -> tuple[str, int, int]:
    """(text, beam, nbest) of a translate request, or a BadRequest saying what is wrong."""
    text = query.get("text", "")
    if not text.strip():
        raise BadRequest("text is empty: give the Chinese to translate, e.g. ?text=汤姆喜欢猫。")
    if len(text) > max_chars:
        raise BadRequest(f"text has {len(text)} characters; at most {max_chars} per request")
    beam, nbest = _integer(query, "beam", 5), _integer(query, "nbest", 1)
    if not 1 <= beam <= MAX_BEAM:
        raise BadRequest(f"beam = {beam}: use 1 to {MAX_BEAM}")
    if not 1 <= nbest <= beam:
        raise BadRequest(f"nbest = {nbest}: use 1 to beam ({beam})")
    return text, beam, nbest


def _integer(query: dict[str, str], key: str, default: int) -> int:
    try:
        return int(query.get(key, default))
    except ValueError:
        raise BadRequest(f"{key} = {query[key]!r} is not a whole number") from None


def describe(translator: Translator, result: Translation) -> dict:
    """One line's answer: rows of `attention` are the target tokens (no </s> row), columns the
    source tokens; `links` are [source index, target index] read from it (grow-diag-final-and
    of both directions' argmax); `layers`, for a Transformer, every layer's every head."""
    rows = len(result.tokens)
    attention = None if result.attention is None else np.asarray(result.attention)[:rows]
    links = [] if attention is None else sorted(extract_links(attention, "grow-diag-final-and"))
    layers = translator.cross_attention(result)
    return {
        "translation": result.text,
        "nbest": [{"text": text, "score": round(score, 4)} for text, score in result.n_best],
        "source_tokens": result.src_tokens,
        "target_tokens": result.tokens,
        "attention": None if attention is None else np.round(attention, 4).tolist(),
        "links": [[int(source), int(target)] for source, target in links],
        "layers": None if layers is None else np.round(layers[:, :, :rows], 4).tolist(),
    }
