"""nmt: Chinese→English translation with attention, from the raw corpus to BLEU.

The folders are the stages of the data's path: `data` (prepare, batching) → `training` →
`checkpoints` → `decoding` → `evaluation`, with `model` (both families behind one interface),
`align` (attention as word alignment), `config` (the schema and its loader) beside them.

    from nmt import Translator
    translator = Translator.from_run("runs/tatoeba")
    print(translator.translate(["汤姆喜欢猫。"])[0].text)
"""


def __getattr__(name: str):
    # Imported on first use: `import nmt.cli` (which decoding scripts run before torch loads)
    # must not load torch.
    if name == "Translator":
        from nmt.decoding.translator import Translator

        return Translator
    if name == "materialize_run":
        from nmt.decoding.plan import materialize_run

        return materialize_run
    raise AttributeError(f"module 'nmt' has no attribute {name!r}")


__all__ = ["Translator", "materialize_run"]
