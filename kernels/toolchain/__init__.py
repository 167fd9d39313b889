"""Building kernels on the CPU machine (no driver): PrimFunc to ``.so``
(:mod:`.compiler`, with the stub ``libcuda``), plan bundles for the GPU machine
(:mod:`.build`), probe bundles (:mod:`.mbar_probes`) and child-process builds that hand
back CUDA sources (:mod:`.sources`)."""
