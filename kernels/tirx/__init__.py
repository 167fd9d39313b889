"""Kernel sources written in TIRx (needs the full tvm, the CPU build machine's): the seed
article's Blackwell steps (:mod:`.seed_sm100`), the sm_90a protocol kernels the H200 runs
(:mod:`.hopper`) and the one-rule mbarrier probe kernels (:mod:`.mbar_probes`)."""
