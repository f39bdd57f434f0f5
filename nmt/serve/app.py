"""The web page and its JSON API: type Chinese, see the translation, its attention and its links.

    GET  /                 the page (static/index.html)
    GET  /api/translate    ?text=...[&beam=5&nbest=1&run=NAME&attention=true&links=true]
                           → one text's translation (TextResult)
    POST /api/translate    {"lines": [...], "beam": 5, "nbest": 1, "run": NAME, "attention": true,
                            "links": true} → one result per line (only "lines" is required)
    GET  /api/runs         the trained runs under runs/, and the default one
    GET  /api/runs/{run}   a run and its own search (the beam and n-best a request gets by default)
    GET  /api/health       {"ok": true} once the default run is loaded (503 while it loads)
    GET  /font             the CJK font the attention plots use too (Chinese labels, offline)
    GET  /docs             the API, as Swagger UI renders /openapi.json

Parameters, bodies and answers are declared (FastAPI's Query, the pydantic models of
`schemas`), so /openapi.json describes them all, the limits of the config's serve section
included. Each run's one thread decodes (`batcher`) and makes the answers, attention and links
included (`answers`): the translate routes are async and await it, so a full queue is a 503
with Retry-After at once, however many requests wait elsewhere, and so is a request past its
deadline. Errors: see `errors`.
"""

from contextlib import asynccontextmanager
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from nmt.config.serve_schema import ServeConfig
from nmt.plot import cjk_font
from nmt.serve.answers import Asked
from nmt.serve.batcher import Batcher
from nmt.serve.errors import RequestGuard, add_error_handlers
from nmt.serve.runs import RunRegistry
from nmt.serve.schemas import (ATTENTION, BEAM, LINKS, MAX_BEAM, NBEST, RUN, BatchResult, Error, Health,
                               RunInfo, Runs, TextResult, TranslateBatch, batch_model)

STATIC = FilePath(__file__).parent / "static"
# Any 4xx is an Error; declaring "4XX" also keeps FastAPI from listing its own 422 body.
ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": Error, "description": "a bad request: what is wrong and what to do"},
    500: {"model": Error, "description": "a server error (logged; the server goes on)"},
    503: {"model": Error, "description": "busy: the queue is full (serve.queue_lines), the answer "
                                         "did not come within serve.deadline_seconds, the model "
                                         "is still loading, the run was just unloaded to make "
                                         "room (serve.max_runs), or the server is shutting down",
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

    @app.get("/api/runs/{run}", response_model=RunInfo, responses=ERRORS)
    async def run_info(run: Annotated[str, Path(description=RUN)]) -> dict:
        """The run (loaded by this request if it is not yet) and its own search: what a request
        naming it gets when it gives no beam or n-best."""
        translator = (await batcher_for(registry, run)).translator
        return {"run": translator.run_name, "architecture": translator.architecture,
                "model": translator.answered_by, "search": {"beam": translator.search.beam_size,
                                                            "nbest": translator.search.n_best}}

    @app.get("/api/translate", response_model=TextResult, responses=ERRORS)
    async def translate_text(
        text: Annotated[str, Query(max_length=limits.max_chars, pattern=r"\S", examples=["汤姆喜欢猫。"],
                                   description="Chinese, one sentence per line (blank lines are "
                                               "skipped); something to translate")],
        beam: Annotated[int | None, Query(ge=1, le=MAX_BEAM, description=BEAM)] = None,
        nbest: Annotated[int | None, Query(ge=1, le=MAX_BEAM, description=NBEST)] = None,
        run: Annotated[str | None, Query(description=RUN)] = None,
        attention: Annotated[bool, Query(description=ATTENTION)] = False,
        links: Annotated[bool, Query(description=LINKS)] = False,
    ) -> dict:
        """The text's translation: the first line's fields at the top, every line in `lines`."""
        lines = [line for line in text.split("\n") if line.strip()]  # not empty: the pattern
        answer = await translate(registry, lines, (beam, nbest), run, Asked(attention, links))
        return {**answer, **answer["lines"][0]}

    async def translate_lines(batch: TranslateBatch) -> dict:
        """Each line's translation, in the order sent (a blank line gets an empty one)."""
        return await translate(registry, batch.lines, (batch.beam, batch.nbest), batch.run,
                               Asked(batch.attention, batch.links))

    # FastAPI reads the body's model from the annotation: the one with this server's limits
    translate_lines.__annotations__["batch"] = batch_model(limits)
    app.post("/api/translate", response_model=BatchResult, responses=ERRORS)(translate_lines)


async def batcher_for(registry: RunRegistry, run: str | None) -> Batcher:
    """The run's batcher: at once when it is loaded (no thread of the pool is waited for, so a
    full queue is refused at once however many requests the pool holds); else loaded in a
    thread of the pool."""
    batcher = registry.loaded(run)
    return batcher if batcher is not None else await run_in_threadpool(registry.get, run)


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


async def translate(registry: RunRegistry, lines: list[str], search: tuple[int | None, int | None],
                    run: str | None, asked: Asked) -> dict:
    """{"run", "architecture", "model", "search", "lines": one answer per line, in order,
    "warnings"}. `search`: the request's (beam, n-best); None: the run's own. The decoding
    thread makes the answers (nmt/serve/answers.py): search, links and layers alike."""
    batcher = await batcher_for(registry, run)
    translator = batcher.translator
    beam, nbest = search[0] or translator.search.beam_size, search[1] or translator.search.n_best
    warnings = []
    widest = len(translator.tgt_vocab) // 2  # a beam search keeps 2 × beam candidates a step
    if beam > widest:  # only a toy model's vocabulary is this small
        warnings.append(f"beam = {beam} is more than this model's vocabulary allows: {widest} used")
        beam = widest
    if nbest > beam:  # a search keeps beam hypotheses: there are no more to return
        warnings.append(f"nbest = {nbest} is more than the beam ({beam}): {beam} returned")
        nbest = beam
    answers = await batcher.answer(lines, beam, nbest, asked)
    return {"run": translator.run_name, "architecture": translator.architecture,
            "model": translator.answered_by, "search": {"beam": beam, "nbest": nbest},
            "lines": answers, "warnings": warnings}
