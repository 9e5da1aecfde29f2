"""Tensor-core numerics: bit-level formats and a bit-exact CPU model of tensor-core dot products."""

from gpudissect.numerics.formats import FORMATS, Format, decode, encode, exact
from gpudissect.numerics.model import TCParams, dot
from gpudissect.numerics.presets import is_verified, known_instructions, model

__all__ = [
    "FORMATS",
    "Format",
    "TCParams",
    "decode",
    "dot",
    "encode",
    "exact",
    "is_verified",
    "known_instructions",
    "model",
]
