"""Running built kernels on the GPU machine, which has only tvm's runtime (no module here
imports the tvm compiler).  :mod:`.launch` is the one child-process launcher (fork or
spawn, timeouts, a host-side record for a launch that hung or killed its process);
:mod:`.gemm` runs a plan bundle's protocol kernels, :mod:`.mbar_probes` a probe bundle."""
