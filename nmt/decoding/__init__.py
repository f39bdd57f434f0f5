"""Stage 4, decode: a trained model and Chinese lines in, English lines (and attention) out.

`search`: greedy and beam search over whole batches, with `hypothesis` scores and the
`finished` pool; `translate`: encoded sentences in, n-best hypotheses out, in input order;
`translator`: the Python API, raw text in and out (`Translator.from_run(...).translate(...)`);
`rerank`: rescoring models (eval.rerank, e.g. a right-to-left one) choose among the n-best list;
`streaming`: a file, a pipe or a terminal translated line by line, with attention pictures.
"""
