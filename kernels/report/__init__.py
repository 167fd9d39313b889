"""Tables of recorded silicon runs: the protocol kernels' outcomes and benchmarks
(:mod:`.gemm`) and the mbarrier probes against the model (:mod:`.mbar_probes`).  Nothing
here judges a run or touches a GPU."""
