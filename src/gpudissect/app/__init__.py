"""Library- and application-level pieces of the `app` suite (000 §6.3-6.4), built on PyTorch.

Transformer Engine is not available here, so its FP8 recipe is rebuilt in the open (`float8`),
swapped into our own Llama decoder layer (`layer`) and into transformers' LlamaForCausalLM
(`llm`). Nothing in this package imports torch or transformers at import time: `deps` does that
lazily, so the package stays importable (and its pure parts testable) without them.
"""
