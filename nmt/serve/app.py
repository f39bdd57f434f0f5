"""The web page and its JSON API: type Chinese, see the translation, its attention and its links.

    GET  /                 the page (static/index.html)
    GET  /api/translate    ?text=...&beam=5&nbest=1[&run=NAME] → one text's translation (TextResult)
    POST /api/translate    {"lines": [...], "beam": 5, "nbest": 1, "run": NAME} → one result per line
    GET  /api/runs         the trained runs under runs/, and the default one
    GET  /api/health       {"ok": true} once the default run is loaded (503 while it loads)
    GET  /font             the CJK font the attention plots use too (Chinese labels, offline)
    GET  /docs             the API, as Swagger UI renders /openapi.json

Parameters, bodies and answers are declared (FastAPI's Query, the pydantic models of
`schemas`), so /openapi.json describes them all, the limits of the config's serve section
included. One thread decodes (`batcher`): a full queue or a request past its deadline is a 503
with Retry-After. Errors: see `errors`.
"""

from collections.abc import Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from fastapi import FastAPI, Query
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from nmt.align.bidirectional import BidirectionalAligner
from nmt.align.extract import extract_links
from nmt.align.links import Link, join_units, parse_pairs
from nmt.align.translated import align_lines, aligner_of
from nmt.align.units import unit_links_to_tokens
from nmt.config.serve_schema import ServeConfig
from nmt.decoding.translator import Translation, Translator
from nmt.plot import cjk_font
from nmt.serve.errors import RequestGuard, add_error_handlers
from nmt.serve.runs import RunRegistry
from nmt.serve.schemas import (BEAM, MAX_BEAM, NBEST, RUN, BatchResult, Error, Health, Runs, TextResult,
                               TranslateBatch, batch_model)

STATIC = Path(__file__).parent / "static"
# Any 4xx is an Error; declaring "4XX" also keeps FastAPI from listing its own 422 body.
ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": Error, "description": "a bad request: what is wrong and what to do"},
    500: {"model": Error, "description": "a server error (logged; the server goes on)"},
    503: {"model": Error, "description": "busy: the queue is full (serve.queue_lines), the answer "
                                         "did not come within serve.deadline_seconds, the model "
                                         "is still loading, or the server is shutting down",
          "headers": {"Retry-After": {"description": "seconds to wait before asking again",
                                      "schema": {"type": "integer"}}}}}


def create_app(registry: RunRegistry, limits: ServeConfig | None = None) -> FastAPI:
    """The app over `registry`'s runs; `limits` (the config's serve section; default the
    registry's) bound each request, and the queue and deadline of the registry's decoding
    threads, and are declared in /openapi.json."""
    if limits is not None:
        registry.limits = limits
    limits = registry.limits
    app = FastAPI(title="nmt: translate and see the attention", redoc_url=None,
                  lifespan=lambda app: lifespan(registry),
                  description=f"Chinese → English translations with their attention and word "
                              f"links. A POST translates at most {limits.max_lines} lines of "
                              f"{limits.max_chars} characters, a GET a text of {limits.max_chars}.")
    app.add_middleware(RequestGuard, max_body_bytes=max_body_bytes(limits))
    add_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    add_page(app)
    add_api(app, registry, limits)
    return app


@asynccontextmanager
async def lifespan(registry: RunRegistry):
    """The default run loads in the background (health says when it is ready); at shutdown,
    once the server takes no more requests, the decoding threads finish what they hold."""
    registry.load_in_background()
    yield
    registry.drain()


def add_api(app: FastAPI, registry: RunRegistry, limits: ServeConfig) -> None:

    @app.get("/api/health", response_model=Health, responses=ERRORS)
    def health() -> dict:
        """Ready (200) once the default run's models are loaded; 503 while they load."""
        registry.check_ready()
        return {"ok": True, "run": registry.default_run}

    @app.get("/api/runs", response_model=Runs)
    def runs() -> dict:
        return {"runs": registry.names(), "default": registry.default_run}

    @app.get("/api/translate", response_model=TextResult, responses=ERRORS)
    def translate_text(
        text: Annotated[str, Query(max_length=limits.max_chars, pattern=r"\S", examples=["汤姆喜欢猫。"],
                                   description="Chinese, one sentence per line (blank lines are "
                                               "skipped); something to translate")],
        beam: Annotated[int, Query(ge=1, le=MAX_BEAM, description=BEAM)] = 5,
        nbest: Annotated[int, Query(ge=1, le=MAX_BEAM, description=NBEST)] = 1,
        run: Annotated[str | None, Query(description=RUN)] = None,
    ) -> dict:
        """The text's translation: the first line's fields at the top, every line in `lines`."""
        lines = [line for line in text.split("\n") if line.strip()]  # not empty: the pattern
        answer = translate(registry, lines, beam, nbest, run)
        return {**answer, **answer["lines"][0]}

    def translate_lines(batch: TranslateBatch) -> dict:
        """Each line's translation, in the order sent (a blank line gets an empty one)."""
        return translate(registry, batch.lines, batch.beam, batch.nbest, batch.run)

    # FastAPI reads the body's model from the annotation: the one with this server's limits
    translate_lines.__annotations__["batch"] = batch_model(limits)
    app.post("/api/translate", response_model=BatchResult, responses=ERRORS)(translate_lines)


def add_page(app: FastAPI) -> None:
    """The page and the font its Chinese labels use: no CDN, works offline."""
    font = cjk_font()

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/font", include_in_schema=False)
    def font_file():
        if font is None:
            return JSONResponse({"error": "no CJK font installed"}, status_code=404)
        # 8 MB: the browser keeps it for a day instead of asking again on every page load.
        return FileResponse(font[1], headers={"Cache-Control": "public, max-age=86400"})


def max_body_bytes(limits: ServeConfig) -> int:
    """The longest POST body worth reading: max_lines lines of max_chars characters even as
    JSON's 6-byte \\uXXXX escapes, with room for the rest of the JSON. Longer bodies are
    refused unread (413)."""
    return 8 * limits.max_lines * limits.max_chars + 64 * 1024


def translate(registry: RunRegistry, lines: list[str], beam: int, nbest: int, run: str | None) -> dict:
    """{"run", "architecture", "lines": one answer per line, in order, "warnings"}."""
    batcher = registry.get(run)
    translator = batcher.translator
    warnings = []
    widest = len(translator.tgt_vocab) // 2  # a beam search keeps 2 × beam candidates a step
    if beam > widest:  # only a toy model's vocabulary is this small
        warnings.append(f"beam = {beam} is more than this model's vocabulary allows: {widest} used")
        beam = widest
    if nbest > beam:  # a search keeps beam hypotheses: there are no more to return
        warnings.append(f"nbest = {nbest} is more than the beam ({beam}): {beam} returned")
        nbest = beam
    results = batcher.translate(lines, beam, nbest)
    both: Sequence[set[Link] | None] = bidirectional_links(translator, results) or [None] * len(results)
    answers = [describe(translator, result, links) for result, links in zip(results, both)]
    return {"run": translator.run_name, "architecture": translator.architecture,
            "model": translator.answered_by, "lines": answers, "warnings": warnings}


def bidirectional_links(translator: Translator, results: list[Translation]
                        ) -> list[set[Link]] | None:
    """With a channel (reverse) model in the run's plan, each line's links from both directions
    (nmt/align/translated.py: the forward model and the reverse one, teacher-forced on the
    translation), moved from characters and Moses tokens onto the words the page shows; else
    None."""
    if translator.reranker is None or not isinstance(aligner_of(translator), BidirectionalAligner):
        return None  # no channel model (an engine's student has none either)
    lines = [f"{join_units(r.src_tokens)}\t{r.text}" for r in results]
    pairs = parse_pairs(lines, "the page's translations")
    found = align_lines(translator, [p.src_text for p in pairs], [p.tgt_text for p in pairs])
    return [unit_links_to_tokens(set(links), r.src_tokens, p.src_units, r.tokens, p.tgt_units)
            for links, r, p in zip(found, results, pairs)]


def describe(translator: Translator, result: Translation, links: set[Link] | None = None) -> dict:
    """One line's answer (a LineResult): rows of `attention` are the target tokens (no </s>
    row), columns the source tokens; `links` are [source index, target index]: those given (both
    directions', bidirectional_links), else read from the attention (grow-diag-final-and of its
    row- and column-wise argmax); `layers`, for a Transformer, every layer's every head."""
    rows = len(result.tokens)
    attention = None if result.attention is None else np.asarray(result.attention)[:rows]
    if links is None:
        links = set() if attention is None else extract_links(attention, "grow-diag-final-and")
    layers = translator.cross_attention(result)
    return {
        "translation": result.text,
        "nbest": [{"text": text, "score": round(score, 4)} for text, score in result.n_best],
        "source_tokens": result.src_tokens,
        "target_tokens": result.tokens,
        "attention": None if attention is None else np.round(attention, 4).tolist(),
        "links": [[int(source), int(target)] for source, target in sorted(links)],
        "layers": None if layers is None else np.round(layers[:, :, :rows], 4).tolist(),
    }

