"""Checkpoints: what training writes and what decoding, evaluation and alignment read.

`file`: the one `.pt` format (`make_checkpoint`, save, safe load, the model rebuilt from it);
`averaging`: the mean of the last or best N kept checkpoints; `choose`: which checkpoint(s) a
config scores and translates with — best, last, an average, an ensemble — and loading them as
one model.
"""
