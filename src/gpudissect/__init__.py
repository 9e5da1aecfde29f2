"""gpudissect: dissect NVIDIA GPUs by microbenchmarking."""

__version__ = "0.1.0"
