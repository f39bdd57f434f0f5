"""Score Joey NMT's dev hypotheses both ways: as Joey does, and as this project does.

    python bench/joey/score_joey.py JOEY_MODEL_DIR PREPARED_DIR

Joey writes `<step>.hyps` at every validation: tokens joined by spaces. Joey's own BLEU compares
them with the tokenized references; this project detokenizes (Moses) and compares with the raw
references. Prints both for every step, so Joey's figures can be set beside this project's.
"""

import argparse
import re
from pathlib import Path

import sacrebleu

from nmt.data.tokenize import EnglishTokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("prepared_dir", type=Path)
    args = parser.parse_args()

    raw_refs = (args.prepared_dir / "dev.en").read_text(encoding="utf-8").splitlines()
    tokenized_refs = (args.prepared_dir / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    detokenizer = EnglishTokenizer()
    steps = sorted(int(re.fullmatch(r"(\d+)\.hyps", p.name)[1]) for p in args.model_dir.glob("*.hyps"))
    print("step  Joey's BLEU (tokenized)  this project's BLEU (detokenized)")
    for step in steps:
        hyps = (args.model_dir / f"{step}.hyps").read_text(encoding="utf-8").splitlines()
        tokenized = sacrebleu.corpus_bleu(hyps, [tokenized_refs], force=True).score
        detokenized = sacrebleu.corpus_bleu([detokenizer.detokenize(h.split()) for h in hyps],
                                            [raw_refs]).score
        print(f"{step:5d}  {tokenized:23.2f}  {detokenized:33.2f}")


if __name__ == "__main__":
    main()
