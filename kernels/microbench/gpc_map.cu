// Which SMs share a GPC (issue 16: whether the L2 shares a line among readers in one GPC, in one
// TPC, or anywhere -- l2_queue --burst found sharing helps consecutive CTAs and hurts spread ones).
//
// A cluster's CTAs are co-scheduled within one GPC, so every cluster's %smid values name SMs of
// one GPC.  Three kernels, compiled cluster sizes 2, 4 and 8 (__cluster_dims__: a plain launch
// runs them as clusters), one CTA an SM (the host asks for most of an SM's shared memory); each
// CTA writes its %smid at out[blockIdx.x].  kernels/runner/gpc_map.py launches each many times and
// joins the SMs that ever shared a cluster.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o gpc_map.sm_90a.cubin gpc_map.cu
#include <cstdint>

__device__ __forceinline__ void write_smid(int *out) {
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (threadIdx.x == 0) out[blockIdx.x] = (int)smid;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(32, 1) gpc_map_2(int *out) { write_smid(out); }
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(32, 1) gpc_map_4(int *out) { write_smid(out); }
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(32, 1) gpc_map_8(int *out) { write_smid(out); }
