"""bench/joey/score_joey.py scores Joey NMT's hypotheses of the trained smoke run's dev split both
ways: tokenized, as Joey does, and detokenized against the raw references, as this project does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_it_prints_both_scores_of_every_validation_step(trained, tmp_path, run_bench):
    prepared = next(Path(trained.config.data.prepared_dir).glob("*/manifest.json")).parent
    references = (prepared / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    joey = tmp_path / "joey_model"
    joey.mkdir()
    (joey / "1000.hyps").write_text("\n".join(references) + "\n", encoding="utf-8")  # perfect
    (joey / "500.hyps").write_text("\n".join(r.split()[0] for r in references) + "\n",
                                   encoding="utf-8")  # one word each
    status, out, err = run_bench("joey/score_joey.py", [str(joey), str(prepared)])
    assert status == 0, err
    rows = [re.fullmatch(r" *(\d+) +([\d.]+) +([\d.]+)", line) for line in out.splitlines()[1:]]
    assert [row.group(1) for row in rows if row] == ["500", "1000"]  # by step, not by name
    first, last = ([float(row.group(k)) for k in (2, 3)] for row in rows if row)
    assert last == [100.0, 100.0] and max(first) < 10
