"""Developer tools of the repository, not shipped by `pip install`: make_results (committed results and the
README's generated tables), numerics_examples (the README's tensor-core model examples), gemm_device_check
(GEMM experiments on the GPU). headline_keys/ holds the README's headline keys per suite."""
