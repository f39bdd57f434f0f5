"""What /api/translate takes and answers, as pydantic models: FastAPI checks requests and
answers against them and lists them in /openapi.json (and so in /docs)."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, create_model

from nmt.config.serve_schema import ServeConfig

MAX_BEAM = 50

BEAM = ("hypotheses kept at each step of the beam search (1: greedy); default: the run's beam "
        "(its decoding plan's search.beam_size, tuned where make tune ran; GET /api/runs/{run})")
NBEST = ("translations returned per line, best first; more than the beam returns the beam's, "
         "with a warning; default: the run's n-best (its decoding plan's search.n_best)")
RUN = "a trained run: its folder's name under runs/ (GET /api/runs lists them); default: the server's"
ATTENTION = ("also each line's attention (and a Transformer's every layer and head): the page's "
             "heatmaps; without it they are null and the search keeps no attention")
LINKS = ("also each line's word links (with a channel model in the run, both directions "
         "teacher-forced once more); without it they are null")


class TranslateBatch(BaseModel):
    """POST /api/translate's body: several sentences, one search (its limits: `batch_model`)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt "beam_size" is an error, not ignored

    lines: list[str] = Field(min_length=1, description="Chinese sentences, one per item; the "
                                                       "answer keeps their order")
    beam: int | None = Field(None, ge=1, le=MAX_BEAM, description=BEAM)
    nbest: int | None = Field(None, ge=1, le=MAX_BEAM, description=NBEST)
    run: str | None = Field(None, description=RUN)
    attention: bool = Field(False, description=ATTENTION)
    links: bool = Field(False, description=LINKS)


def batch_model(limits: ServeConfig) -> type[TranslateBatch]:
    """TranslateBatch with the serve section's limits declared: at most max_lines lines of at
    most max_chars characters each."""
    line = Annotated[str, Field(max_length=limits.max_chars)]
    return create_model(
        "TranslateBatch", __base__=TranslateBatch,
        lines=(list[line], Field(min_length=1, max_length=limits.max_lines,  # type: ignore[valid-type]
                                 description="Chinese sentences, one per item; the answer keeps "
                                             "their order")))


class Scored(BaseModel):
    text: str
    score: float = Field(description="what the search ranks by: log-probability / length penalty")


class LineResult(BaseModel):
    """One line's translation with where the decoder looked."""

    translation: str = Field(description="the best translation ('' for a line with nothing to translate)")
    nbest: list[Scored]
    source_tokens: list[str] = Field(description="the Chinese words the model read")
    target_tokens: list[str] = Field(description="the English words it wrote (no </s>)")
    attention: list[list[float]] | None = Field(
        description="one row per target token, one column per source token, each row summing to 1; "
                    "null unless asked for (attention: true), for a model without attention or a "
                    "line of nothing")
    links: list[tuple[int, int]] | None = Field(
        description="[source index, target index] word links read from the attention "
                    "(grow-diag-final-and of both directions' argmax); with a channel (reverse) "
                    "model in the run, from both models' attention combined; null unless asked "
                    "for (links: true)")
    layers: list[list[list[list[float]]]] | None = Field(
        description="a Transformer's every decoder layer's every head, layers × heads × target × "
                    "source; null unless asked for (attention: true), and for a model with one "
                    "attention")


MODEL = ("what answered: PyTorch and the checkpoint files, or the inference engine of the run's "
         "export (e.g. ctranslate2 4.8.5, int8)")
WARNINGS = "what was asked but could not be done as asked (e.g. an n-best over the beam)"


class Search(BaseModel):
    beam: int = Field(description="hypotheses kept at each step of the beam search")
    nbest: int = Field(description="translations returned per line")


SEARCH = "the search the lines were decoded with: the request's, else the run's own"


class BatchResult(BaseModel):
    """POST /api/translate's answer: one entry of `lines` per line sent, in order."""

    run: str
    architecture: str = Field(description="the model family: rnn or transformer")
    model: str = Field(description=MODEL)
    search: Search = Field(description=SEARCH)
    lines: list[LineResult]
    warnings: list[str] = Field(default_factory=list, description=WARNINGS)


class TextResult(LineResult):
    """GET /api/translate's answer: the first line's fields at the top, and every non-blank
    line of the text in `lines`."""

    run: str
    architecture: str = Field(description="the model family: rnn or transformer")
    model: str = Field(description=MODEL)
    search: Search = Field(description=SEARCH)
    lines: list[LineResult]
    warnings: list[str] = Field(default_factory=list, description=WARNINGS)


class Error(BaseModel):
    """Every error a request can cause (with a 4xx status), and the rare server error (500)."""

    error: str = Field(description="what is wrong and what to do")


class Runs(BaseModel):
    runs: list[str] = Field(description="the trained runs under runs/")
    default: str


class RunInfo(BaseModel):
    """A run, loaded, and what a request that names it gets by default."""

    run: str
    architecture: str = Field(description="the model family: rnn or transformer")
    model: str = Field(description=MODEL)
    search: Search = Field(description="the run's own search (its decoding plan's, tuned where "
                                       "make tune ran): what a request that gives no beam or "
                                       "n-best is decoded with")


class Health(BaseModel):
    ok: bool
    run: str = Field(description="the default run, loaded")
