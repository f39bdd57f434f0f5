"""Word alignment: the model's attention (or eflomal) turned into Chinese–English links and scored.

- `links`: Pharaoh links (`i-j`), the gold file and the input pairs to align;
- `metrics`: precision, recall and alignment error rate against Sure/Possible gold links;
- `units`: the model's tokens (jieba words, characters, subword pieces) mapped onto the gold's
  units (Chinese characters, English Moses tokens) by character offsets;
- `extract`: soft attention matrices → links (argmax, threshold, both directions);
- `symmetrize`: grow-diag-final-and, for two directional alignments;
- `forced`: teacher-forced decoding of the given English → attention matrices (or, for a recurrent
  model, the posterior alignment: the attention reweighted by the English token that came);
- `aligner`: all of it with a trained checkpoint; `statistical`: eflomal beside it;
- `bidirectional`: the forward and the reverse (English → Chinese) model both align each pair,
  and `agreement` combines the two directions (grow-diag-final-and, product, mean, ...);
- `translated`: a Translator's own models aligning (the Python API, the web page);
- `stage`: `make align` and `make align-eval`, with the run's decoding plan.
"""
