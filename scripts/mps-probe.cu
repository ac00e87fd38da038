// Health probe of the CUDA stack as a new client sees it (under MPS: of the MPS server): creates a
// context, launches one tiny kernel, copies its result back and checks it. Prints one line,
// "mps-probe: ok ..." or "mps-probe: FAILED at <step>: <error name> (<code>): <message>", and exits
// 0 or 1. Built on the GPU machine by scripts/mps.sh (nvcc -o mps-probe mps-probe.cu).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void probe_kernel(int *out) { *out = 42; }

static int fail(const char *step, cudaError_t e) {
    std::printf("mps-probe: FAILED at %s: %s (%d): %s\n", step, cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
    return 1;
}

int main() {
    cudaError_t e;
    int device = 0;
    // cudaFree(0) creates the context: where a faulted MPS server answers
    // cudaErrorMpsServerNotReady (or a sticky launch failure)
    if ((e = cudaSetDevice(device)) != cudaSuccess) return fail("cudaSetDevice", e);
    if ((e = cudaFree(0)) != cudaSuccess) return fail("context creation (cudaFree(0))", e);
    int *d = nullptr;
    if ((e = cudaMalloc(&d, sizeof(int))) != cudaSuccess) return fail("cudaMalloc", e);
    if ((e = cudaMemset(d, 0, sizeof(int))) != cudaSuccess) return fail("cudaMemset", e);
    probe_kernel<<<1, 1>>>(d);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("kernel launch", e);
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) return fail("cudaDeviceSynchronize", e);
    int h = 0;
    if ((e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("cudaMemcpy", e);
    cudaFree(d);
    if (h != 42) {
        std::printf("mps-probe: FAILED at the kernel's result: read %d, expected 42\n", h);
        return 1;
    }
    cudaDeviceProp p;
    const char *name = cudaGetDeviceProperties(&p, device) == cudaSuccess ? p.name : "?";
    std::printf("mps-probe: ok: context, kernel and copy on device %d (%s)\n", device, name);
    return 0;
}
