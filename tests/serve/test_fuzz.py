"""schemathesis, a third-party API fuzzer, reads /openapi.json and sends the app in-process
what the schema allows (positive) and what it forbids (negative): no answer may be a server
error or stray from the declared status codes, content type and JSON shapes, and every request
the schema forbids must be refused with a 4xx."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings, strategies
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, negative_data_rejection,
                                               response_schema_conformance, status_code_conformance)

from helpers import REPO
from random_checkpoint import single_thread, write_random_run
from nmt.config.loader import load_config
from nmt.config.serve_schema import ServeConfig
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection]
# (operation, generation mode, examples): the translate operations get most of the examples.
FUZZED = [("GET /api/translate", "positive", 30), ("GET /api/translate", "negative", 30),
          ("POST /api/translate", "positive", 30), ("POST /api/translate", "negative", 30),
          ("GET /api/runs", "positive", 2), ("GET /api/health", "positive", 2),
          ("GET /api/runs/{run}", "positive", 4)]  # any string is a name: nothing negative
RUNS = ["rnn", "transformer", None, "nosuchrun"]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    """The app over a random-weights recurrent run and Transformer, as schemathesis sees it.
    (Built here rather than with `schemathesis.pytest.from_fixture`, which pytest 9 breaks.)"""
    runs = tmp_path_factory.mktemp("fuzz") / "runs"
    smoke = load_config(REPO / "configs" / "smoke.yaml", [f"runs_dir={runs}"])
    write_random_run(runs, "rnn", smoke, "rnn")
    write_random_run(runs, "transformer", smoke, "transformer")
    app = create_app(RunRegistry(runs, "rnn"), ServeConfig(max_chars=30, max_lines=4))
    with single_thread():
        yield schemathesis.openapi.from_asgi("/openapi.json", app)


def test_every_operation_is_fuzzed(api_schema):
    labels = {result.ok().label for result in api_schema.get_all_operations()}
    assert labels == {label for label, _, _ in FUZZED}


@pytest.mark.parametrize("label, mode, examples", FUZZED)
def test_the_api_keeps_its_openapi_promises(api_schema, label, mode, examples):
    cases = api_schema.find_operation_by_label(label).as_strategy(GenerationMode(mode))
    if mode == "positive":
        cases = strategies.builds(naming_a_trained_run, cases, strategies.sampled_from(RUNS))
    statuses = []

    @given(case=cases)
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    def fuzz(case):
        statuses.append(case.call_and_validate(checks=CHECKS).status_code)

    fuzz()
    if mode == "positive":
        assert 200 in statuses, f"no request was translated: {statuses}"


def naming_a_trained_run(case, run: str | None):
    """The case asking a trained run, or none (the default): made-up names would all be 404s,
    and the fuzzer would never reach a model."""
    if case.path_parameters and "run" in case.path_parameters:  # GET /api/runs/{run}
        case.path_parameters["run"] = run or "rnn"
        return case
    fields = case.body if case.method.upper() == "POST" else case.query
    if isinstance(fields, dict):
        fields.pop("run", None)
        if run is not None:
            fields["run"] = run
    return case
