"""Stage 5, evaluate: a trained run in, BLEU and chrF (with sacrebleu signatures) out.

`evaluate`: translate a prepared split with beam search, score it, write results.json;
`report`: one table of every run under runs/ (and docs/results.md); `curves`: dev BLEU against
wall-clock and CPU minutes, read back from each run's TensorBoard events.
"""
