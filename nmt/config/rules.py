"""Config rules that involve more than one key, checked once every key has its type
(nmt/config/loader.py's build_config); each error names the file and the keys."""

from __future__ import annotations

from nmt.config.schema import Config, RNNConfig, TransformerConfig
from nmt.errors import NMTError


def check_together(config: Config, source: str) -> None:
    """Rules that involve more than one key."""
    model, data = config.model, config.data
    if data.min_length > data.max_length:
        raise NMTError(f"{source}: data.min_length must be <= data.max_length")
    if config.eval.average and config.eval.ensemble:
        raise NMTError(f"{source}: eval.average and eval.ensemble are both set; choose one "
                       f"(an averaged checkpoint file can be one of the ensemble's members)")
    if len(config.eval.rerank_weights) != len(config.eval.rerank):
        raise NMTError(f"{source}: eval.rerank_weights has {len(config.eval.rerank_weights)} "
                       f"weight(s) but eval.rerank names {len(config.eval.rerank)} checkpoint(s); "
                       f"give one weight each, e.g. eval.rerank_weights=[0.5] (the channel "
                       f"members' weight is eval.channel_weight)")
    if model.direction == "reverse" and config.training.channel_members:
        raise NMTError(f"{source}: training.channel_members trains reverse models beside forward "
                       f"ones, but model.direction = reverse; leave one of them out")
    if model.direction == "reverse" and config.training.distill_from:
        raise NMTError(f"{source}: training.distill_from gives English targets, but a "
                       f"model.direction = reverse model writes Chinese; leave one of them out")
    if model.direction == "reverse" and (config.eval.rerank or config.eval.ensemble):
        raise NMTError(f"{source}: a model.direction = reverse model does not translate, so "
                       f"eval.rerank and eval.ensemble do not apply to it; name it in a forward "
                       f"run's eval.rerank instead")
    if (config.search.coverage_penalty > 0 and model.architecture == "rnn"
            and model.rnn.attention == "none"):
        raise NMTError(f"{source}: search.coverage_penalty reads the attention, but "
                       f"model.rnn.attention = none; set search.coverage_penalty=0")
    _check_student(config, source)
    if model.architecture == "transformer":
        _check_transformer(model.transformer, source)
    else:
        _check_rnn(model.rnn, model.tie_embeddings, config.training.guided_alignment, source)


def _check_rnn(rnn: RNNConfig, tie_embeddings: bool, guided_alignment: float, source: str) -> None:
    if guided_alignment > 0 and rnn.attention == "none":
        raise NMTError(f"{source}: training.guided_alignment trains the attention, but "
                       f"model.rnn.attention = none; set training.guided_alignment=0")
    if rnn.attention in ("dot", "scaled_dot") and rnn.decoder_hidden != 2 * rnn.encoder_hidden:
        raise NMTError(
            f"{source}: model.rnn.attention = {rnn.attention} compares decoder and encoder states "
            f"directly, so model.rnn.decoder_hidden ({rnn.decoder_hidden}) must equal "
            f"2 * model.rnn.encoder_hidden ({2 * rnn.encoder_hidden}); or use 'general' or 'additive'"
        )
    if tie_embeddings and rnn.embed_size != rnn.readout_size:
        raise NMTError(
            f"{source}: model.tie_embeddings needs model.rnn.embed_size ({rnn.embed_size}) "
            f"== model.rnn.readout_size ({rnn.readout_size})"
        )


def _check_transformer(transformer: TransformerConfig, source: str) -> None:
    d_model, heads, layers = transformer.d_model, transformer.heads, transformer.decoder_layers
    if d_model % heads:
        raise NMTError(f"{source}: model.transformer.d_model ({d_model}) must be a multiple of "
                       f"model.transformer.heads ({heads}): each head gets d_model / heads dimensions")
    if transformer.positions == "sinusoidal" and d_model % 2:
        raise NMTError(f"{source}: model.transformer.d_model ({d_model}) must be even for "
                       f"model.transformer.positions = sinusoidal (sine and cosine pairs)")
    if not -layers <= transformer.alignment_layer < layers:
        raise NMTError(f"{source}: model.transformer.alignment_layer = {transformer.alignment_layer} "
                       f"names no layer of the {layers} decoder layers; use 0..{layers - 1} or -1 "
                       f"for the last")


def _check_student(config: Config, source: str) -> None:
    """distill.* and export.*: one way to distil, and an engine that can run the model."""
    if config.distill.teacher and config.training.distill_from:
        raise NMTError(f"{source}: distill.teacher (a teacher run) and training.distill_from "
                       f"(teacher checkpoints) are both set; choose one")
    if config.distill.teacher and config.model.direction == "reverse":
        raise NMTError(f"{source}: distill.teacher gives English targets, but a "
                       f"model.direction = reverse model writes Chinese; leave one of them out")
    if config.export.engine == "none":
        return
    model, training = config.model, config.training
    if model.architecture != "transformer" or model.target_order != "left_to_right":
        raise NMTError(f"{source}: export.engine = {config.export.engine} runs Transformers that "
                       f"write left to right; this run is model.architecture = "
                       f"{model.architecture}, model.target_order = {model.target_order}")
    if training.members > 1 or config.eval.ensemble or config.eval.rerank or (
            training.channel_members and config.eval.channel_weight > 0):
        raise NMTError(f"{source}: export.engine decodes one model alone; set training.members=1 "
                       f"and leave eval.ensemble, eval.rerank and the channel members "
                       f"(eval.channel_weight=0) out")
