"""Instruction encoders (sentence embeddings), cached on disk per string."""

from imaginebench.language.encoders import (
    DEFAULT_ENCODER,
    MINILM,
    InstructionEncoder,
    SegmentPooledEncoder,
    as_encoder,
    encoder_names,
    get_encoder,
    register_encoder,
)

__all__ = ["DEFAULT_ENCODER", "MINILM", "InstructionEncoder", "SegmentPooledEncoder", "as_encoder", "encoder_names", "get_encoder", "register_encoder"]
