"""A dev score and a test score of the same decoding are two results files, and two rows of the
tables: scoring dev never replaces the test score that the tables report."""

from __future__ import annotations

import dataclasses
import json

from nmt.evaluation.evaluate import results_path, split_label, write_results
from nmt.evaluation.labelled_rows import labelled_rows


def test_a_dev_score_never_replaces_the_test_score(smoke_config):
    scores = {"step": 1, "bleu": 30.0, "chrf": 50.0, "label": "ensemble"}  # as evaluate() writes
    test = dataclasses.replace(smoke_config, eval=dataclasses.replace(smoke_config.eval, split="test"))
    dev = dataclasses.replace(smoke_config, eval=dataclasses.replace(smoke_config.eval, split="dev"))
    write_results(test, "ensemble", ["a"], scores)
    write_results(dev, "ensemble", ["b"], {**scores, "bleu": 20.0})
    run = smoke_config.run_dir
    assert json.loads(results_path(run, "ensemble").read_text())["bleu"] == 30.0
    assert json.loads((run / "results.ensemble.dev.json").read_text())["split"] == "dev"
    assert split_label(None, "dev") == "dev" and split_label(None, "test") is None
    write_results(dev, None, ["c"], {**scores, "label": None, "bleu": 10.0})  # results.dev.json
    rows = {row["name"]: row["test_bleu"] for row in labelled_rows(run, {"name": run.name}, {})}
    assert rows == {f"{run.name} (ensemble)": 30.0, f"{run.name} (ensemble.dev)": "20.00 (dev)",
                    f"{run.name} (dev)": "10.00 (dev)"}
