/* A stand-in libcuda.so.1 for the CPU build machine, which has no driver.
 *
 * libtvm_runtime_cuda.so links against these driver entry points; without a
 * libcuda.so.1 on the loader path it fails to load *silently* and tvm.compile
 * falls back to a source-only module that cannot be exported for the device
 * (../shared/docs/DEVICE.md, "Pitfalls").  Building only needs the symbols to
 * resolve: every function returns CUDA_ERROR_NO_DEVICE (100), so anything that
 * tried to use the GPU here would fail loudly.  It is never shipped to the GPU
 * machine, which has the real driver. */
#define NO_DEVICE 100
typedef int CUresult;
CUresult cuDeviceGetName(void) { return NO_DEVICE; }
CUresult cuFuncSetAttribute(void) { return NO_DEVICE; }
CUresult cuGetErrorName(int e, const char **s) { (void)e; if (s) *s = "CUDA_ERROR_NO_DEVICE (protosim stub libcuda)"; return 0; }
CUresult cuGetErrorString(int e, const char **s) { (void)e; if (s) *s = "no CUDA device: protosim's build-time stub libcuda.so.1"; return 0; }
CUresult cuLaunchKernelEx(void) { return NO_DEVICE; }
CUresult cuModuleGetFunction(void) { return NO_DEVICE; }
CUresult cuModuleLoadData(void) { return NO_DEVICE; }
CUresult cuModuleUnload(void) { return NO_DEVICE; }
CUresult cuTensorMapEncodeTiled(void) { return NO_DEVICE; }
