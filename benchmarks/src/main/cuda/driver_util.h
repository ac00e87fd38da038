// What the small driver-API programs here (launch_floor.cu, graph_start.cu) share: CHECK(call),
// which prints the failed call and its error and makes the calling function return 1, and
// openKernel, which makes device 0's primary context current and loads one kernel from PTX.
#pragma once
#include <cuda.h>

#include <cstdio>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char* s_ = nullptr;                                                    \
            cuGetErrorName(r_, &s_);                                                     \
            std::fprintf(stderr, "%s failed: %s\n", #call, s_ != nullptr ? s_ : "?");    \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

// Device 0's primary context made current, kernel `name` of `ptx` loaded, and a non-blocking
// stream; 0 on success, else 1 (the failed call printed). Release with closeKernel.
struct DriverKernel {
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction fn;
    CUstream stream;
};

static int openKernel(const char* ptx, const char* name, DriverKernel* k) {
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&k->dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&k->ctx, k->dev));
    CHECK(cuCtxSetCurrent(k->ctx));
    CHECK(cuModuleLoadData(&k->module, ptx));
    CHECK(cuModuleGetFunction(&k->fn, k->module, name));
    CHECK(cuStreamCreate(&k->stream, CU_STREAM_NON_BLOCKING));
    return 0;
}

static int closeKernel(DriverKernel* k) {
    CHECK(cuStreamDestroy(k->stream));
    CHECK(cuModuleUnload(k->module));
    CHECK(cuDevicePrimaryCtxRelease(k->dev));
    return 0;
}
