"""Stage 1, prepare: the raw Tatoeba TSV in, a verified folder of prepared text out.

`prepare.prepare(config)` reads the corpus (`corpus`), normalizes it (`normalize`), splits it
without leaks (`split`), segments Chinese with jieba or into characters and tokenizes English
Moses-style (`tokenize`, in parallel: `parallel`), optionally cuts both into sentencepiece pieces
(`subword`), builds the vocabularies (`vocab`) and writes data/prepared/<hash>/, a cache checked
on every use (`cache`). Stage 2, batching: `batching` turns the prepared lines into
length-bucketed batches sized in target tokens for training.
"""
