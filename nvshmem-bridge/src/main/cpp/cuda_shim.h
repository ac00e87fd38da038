// A small C surface over the CUDA driver API for the JavaCPP binding in
// org.moecomm.bridge.cuda.CudaNative.
//
// The driver library is opened at run time (dlopen of libcuda.so.1), never linked, so the
// JNI library loads on machines without a driver and reports that condition instead of
// failing to load. Each driver entry point is typed from cuda.h with decltype and looked up
// under the symbol the header maps its name to (cuMemAlloc -> cuMemAlloc_v2, ...), so the
// function type and the symbol always agree.
//
// Conventions: every function returns a CUresult (0 = success) or one of the negative
// MC_ERROR_* codes below; handles and device/host addresses travel as 64-bit integers;
// results come back through one-element arrays. All policy lives in Java.
#ifndef MOECOMM_CUDA_SHIM_H
#define MOECOMM_CUDA_SHIM_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <mutex>
#include <string>

// The driver library could not be opened (mcLoadError() says why).
#define MC_ERROR_NO_DRIVER (-1)
// The driver library lacks an entry point this shim needs (mcLoadError() names it).
#define MC_ERROR_MISSING_SYMBOL (-2)
// A shim-side failure (out of host memory, bad handle).
#define MC_ERROR_SHIM (-3)

// Two-step stringizing: the symbol the header maps a name to (cuMemAlloc -> "cuMemAlloc_v2").
#define MC_STR_(x) #x
#define MC_STR(x) MC_STR_(x)

// The driver entry points used, typed from cuda.h.
#define MC_DRIVER_FUNCTIONS(X) \
    X(cuInit) \
    X(cuDriverGetVersion) \
    X(cuGetErrorName) \
    X(cuGetErrorString) \
    X(cuDeviceGetCount) \
    X(cuDeviceGet) \
    X(cuDeviceGetName) \
    X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem) \
    X(cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxRelease) \
    X(cuCtxSetCurrent) \
    X(cuCtxSynchronize) \
    X(cuMemGetInfo) \
    X(cuMemAlloc) \
    X(cuMemFree) \
    X(cuMemAllocHost) \
    X(cuMemFreeHost) \
    X(cuMemsetD8) \
    X(cuMemsetD8Async) \
    X(cuMemsetD32) \
    X(cuMemsetD32Async) \
    X(cuMemcpyHtoD) \
    X(cuMemcpyDtoH) \
    X(cuMemcpyDtoD) \
    X(cuMemcpyHtoDAsync) \
    X(cuMemcpyDtoHAsync) \
    X(cuMemcpyDtoDAsync) \
    X(cuPointerGetAttribute) \
    X(cuLinkCreate) \
    X(cuLinkAddData) \
    X(cuLinkAddFile) \
    X(cuLinkComplete) \
    X(cuLinkDestroy) \
    X(cuModuleLoadData) \
    X(cuModuleUnload) \
    X(cuModuleGetFunction) \
    X(cuModuleGetGlobal) \
    X(cuFuncGetAttribute) \
    X(cuFuncSetAttribute) \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuLaunchKernel) \
    X(cuStreamCreate) \
    X(cuStreamDestroy) \
    X(cuStreamSynchronize) \
    X(cuStreamQuery) \
    X(cuStreamWaitEvent) \
    X(cuEventCreate) \
    X(cuEventDestroy) \
    X(cuEventRecord) \
    X(cuEventSynchronize) \
    X(cuEventQuery) \
    X(cuEventElapsedTime) \
    X(cuStreamBeginCapture) \
    X(cuStreamEndCapture) \
    X(cuGraphInstantiateWithFlags) \
    X(cuGraphLaunch) \
    X(cuGraphExecDestroy) \
    X(cuGraphDestroy)

#define MC_DECLARE_POINTER(name) static decltype(&name) mc_p_##name = nullptr;
MC_DRIVER_FUNCTIONS(MC_DECLARE_POINTER)
#undef MC_DECLARE_POINTER

static void* mc_driver_handle = nullptr;
static int mc_load_status = MC_ERROR_NO_DRIVER;
static std::string mc_load_message;
static std::once_flag mc_load_once;

static void mc_do_load() {
    const char* path = getenv("MOECOMM_LIBCUDA");  // optional override, for unusual installs
    if (path == nullptr || path[0] == '\0') {
        path = "libcuda.so.1";
    }
    mc_driver_handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (mc_driver_handle == nullptr) {
        const char* why = dlerror();
        mc_load_message = std::string("cannot open the CUDA driver library ") + path + ": "
                + (why != nullptr ? why : "unknown reason");
        mc_load_status = MC_ERROR_NO_DRIVER;
        return;
    }
    std::string missing;
#define MC_RESOLVE(name) \
    mc_p_##name = reinterpret_cast<decltype(&name)>(dlsym(mc_driver_handle, MC_STR(name))); \
    if (mc_p_##name == nullptr) { missing += (missing.empty() ? "" : ", "); missing += MC_STR(name); }
    MC_DRIVER_FUNCTIONS(MC_RESOLVE)
#undef MC_RESOLVE
    if (!missing.empty()) {
        mc_load_message = std::string("the CUDA driver library ") + path
                + " lacks entry points (driver older than the CUDA " MC_STR(CUDA_VERSION) " headers?): " + missing;
        mc_load_status = MC_ERROR_MISSING_SYMBOL;
        return;
    }
    mc_load_message = std::string("loaded ") + path;
    mc_load_status = 0;
}

// Opens the driver library once; returns 0 or a MC_ERROR_* code. Does not call cuInit.
static inline int mcLoad() {
    std::call_once(mc_load_once, mc_do_load);
    return mc_load_status;
}

static inline const char* mcLoadMessage() {
    mcLoad();
    return mc_load_message.c_str();
}

// Guards every entry point: the driver must be loaded.
#define MC_REQUIRE_DRIVER() do { int s_ = mcLoad(); if (s_ != 0) return s_; } while (0)

// ---- errors ----

static inline const char* mcErrorName(int code) {
    if (code == MC_ERROR_NO_DRIVER) return "MC_ERROR_NO_DRIVER";
    if (code == MC_ERROR_MISSING_SYMBOL) return "MC_ERROR_MISSING_SYMBOL";
    if (code == MC_ERROR_SHIM) return "MC_ERROR_SHIM";
    if (mcLoad() != 0) return nullptr;
    const char* s = nullptr;
    return mc_p_cuGetErrorName(static_cast<CUresult>(code), &s) == CUDA_SUCCESS ? s : nullptr;
}

static inline const char* mcErrorString(int code) {
    if (code < 0) return mcLoadMessage();
    if (mcLoad() != 0) return nullptr;
    const char* s = nullptr;
    return mc_p_cuGetErrorString(static_cast<CUresult>(code), &s) == CUDA_SUCCESS ? s : nullptr;
}

// ---- driver, devices, contexts ----

static inline int mcInit(int flags) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuInit(static_cast<unsigned int>(flags));
}

static inline int mcDriverGetVersion(int* version) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuDriverGetVersion(version);
}

// The CUDA version of the headers the shim was compiled with (e.g. 13000).
static inline int mcHeaderVersion() {
    return CUDA_VERSION;
}

static inline int mcDeviceGetCount(int* count) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuDeviceGetCount(count);
}

static inline int mcDeviceGet(int* device, int ordinal) {
    MC_REQUIRE_DRIVER();
    CUdevice d = 0;
    CUresult r = mc_p_cuDeviceGet(&d, ordinal);
    *device = static_cast<int>(d);
    return r;
}

static inline int mcDeviceGetName(char* name, int length, int device) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuDeviceGetName(name, length, static_cast<CUdevice>(device));
}

static inline int mcDeviceGetAttribute(int* value, int attribute, int device) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attribute), static_cast<CUdevice>(device));
}

static inline int mcDeviceTotalMem(long long* bytes, int device) {
    MC_REQUIRE_DRIVER();
    size_t b = 0;
    CUresult r = mc_p_cuDeviceTotalMem(&b, static_cast<CUdevice>(device));
    *bytes = static_cast<long long>(b);
    return r;
}

static inline int mcDevicePrimaryCtxRetain(long long* context, int device) {
    MC_REQUIRE_DRIVER();
    CUcontext c = nullptr;
    CUresult r = mc_p_cuDevicePrimaryCtxRetain(&c, static_cast<CUdevice>(device));
    *context = static_cast<long long>(reinterpret_cast<uintptr_t>(c));
    return r;
}

static inline int mcDevicePrimaryCtxRelease(int device) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuDevicePrimaryCtxRelease(static_cast<CUdevice>(device));
}

static inline int mcCtxSetCurrent(long long context) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuCtxSetCurrent(reinterpret_cast<CUcontext>(static_cast<uintptr_t>(context)));
}

static inline int mcCtxSynchronize() {
    MC_REQUIRE_DRIVER();
    return mc_p_cuCtxSynchronize();
}

// ---- memory ----

static inline int mcMemGetInfo(long long* freeBytes, long long* totalBytes) {
    MC_REQUIRE_DRIVER();
    size_t f = 0, t = 0;
    CUresult r = mc_p_cuMemGetInfo(&f, &t);
    *freeBytes = static_cast<long long>(f);
    *totalBytes = static_cast<long long>(t);
    return r;
}

static inline int mcMemAlloc(long long* devicePtr, long long bytes) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr p = 0;
    CUresult r = mc_p_cuMemAlloc(&p, static_cast<size_t>(bytes));
    *devicePtr = static_cast<long long>(p);
    return r;
}

static inline int mcMemFree(long long devicePtr) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuMemFree(static_cast<CUdeviceptr>(devicePtr));
}

// Page-locked host memory (the host can dereference it; async copies from it overlap).
static inline int mcMemAllocHost(long long* hostPtr, long long bytes) {
    MC_REQUIRE_DRIVER();
    void* p = nullptr;
    CUresult r = mc_p_cuMemAllocHost(&p, static_cast<size_t>(bytes));
    *hostPtr = static_cast<long long>(reinterpret_cast<uintptr_t>(p));
    return r;
}

static inline int mcMemFreeHost(long long hostPtr) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuMemFreeHost(reinterpret_cast<void*>(static_cast<uintptr_t>(hostPtr)));
}

#define MC_STREAM(s) reinterpret_cast<CUstream>(static_cast<uintptr_t>(s))

// Sets count bytes; async on stream when async != 0.
static inline int mcMemsetD8(long long devicePtr, int value, long long count, long long stream, int async) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr p = static_cast<CUdeviceptr>(devicePtr);
    unsigned char v = static_cast<unsigned char>(value);
    return async ? mc_p_cuMemsetD8Async(p, v, static_cast<size_t>(count), MC_STREAM(stream))
                 : mc_p_cuMemsetD8(p, v, static_cast<size_t>(count));
}

// Sets count 32-bit words (devicePtr 4-byte aligned).
static inline int mcMemsetD32(long long devicePtr, int value, long long count, long long stream, int async) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr p = static_cast<CUdeviceptr>(devicePtr);
    unsigned int v = static_cast<unsigned int>(value);
    return async ? mc_p_cuMemsetD32Async(p, v, static_cast<size_t>(count), MC_STREAM(stream))
                 : mc_p_cuMemsetD32(p, v, static_cast<size_t>(count));
}

#define MC_HOST(p) reinterpret_cast<void*>(static_cast<uintptr_t>(p))

static inline int mcMemcpyHtoD(long long dst, long long srcHost, long long bytes, long long stream, int async) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr d = static_cast<CUdeviceptr>(dst);
    return async ? mc_p_cuMemcpyHtoDAsync(d, MC_HOST(srcHost), static_cast<size_t>(bytes), MC_STREAM(stream))
                 : mc_p_cuMemcpyHtoD(d, MC_HOST(srcHost), static_cast<size_t>(bytes));
}

static inline int mcMemcpyDtoH(long long dstHost, long long src, long long bytes, long long stream, int async) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr s = static_cast<CUdeviceptr>(src);
    return async ? mc_p_cuMemcpyDtoHAsync(MC_HOST(dstHost), s, static_cast<size_t>(bytes), MC_STREAM(stream))
                 : mc_p_cuMemcpyDtoH(MC_HOST(dstHost), s, static_cast<size_t>(bytes));
}

static inline int mcMemcpyDtoD(long long dst, long long src, long long bytes, long long stream, int async) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr d = static_cast<CUdeviceptr>(dst);
    CUdeviceptr s = static_cast<CUdeviceptr>(src);
    return async ? mc_p_cuMemcpyDtoDAsync(d, s, static_cast<size_t>(bytes), MC_STREAM(stream))
                 : mc_p_cuMemcpyDtoD(d, s, static_cast<size_t>(bytes));
}

// The allocation that holds ptr: its start and size (fails for memory CUDA does not know).
static inline int mcPointerGetRange(long long* start, long long* size, long long ptr) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr base = 0;
    size_t bytes = 0;
    CUresult r = mc_p_cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, static_cast<CUdeviceptr>(ptr));
    if (r == CUDA_SUCCESS) {
        r = mc_p_cuPointerGetAttribute(&bytes, CU_POINTER_ATTRIBUTE_RANGE_SIZE, static_cast<CUdeviceptr>(ptr));
    }
    *start = static_cast<long long>(base);
    *size = static_cast<long long>(bytes);
    return r;
}

// ---- JIT linking and modules ----

#define MC_LINK_LOG_BYTES (64 * 1024)

// The option arrays live as long as the link: the driver writes the log sizes back into
// optionValues when the link completes.
struct mc_link {
    CUlinkState state;
    CUjit_option options[6];
    void* values[6];
    char info[MC_LINK_LOG_BYTES];
    char error[MC_LINK_LOG_BYTES];
};

#define MC_LINK(h) reinterpret_cast<mc_link*>(static_cast<uintptr_t>(h))

// Starts a link for the current context's device. verbose != 0 asks for a verbose info log;
// optLevel in 0..4 sets the optimisation level, negative keeps the driver's default (4).
static inline int mcLinkCreate(long long* handle, int verbose, int optLevel) {
    MC_REQUIRE_DRIVER();
    *handle = 0;
    mc_link* l = static_cast<mc_link*>(calloc(1, sizeof(mc_link)));
    if (l == nullptr) return MC_ERROR_SHIM;
    CUjit_option* options = l->options;
    void** values = l->values;
    unsigned n = 0;
    options[n] = CU_JIT_INFO_LOG_BUFFER; values[n++] = l->info;
    options[n] = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES; values[n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(MC_LINK_LOG_BYTES));
    options[n] = CU_JIT_ERROR_LOG_BUFFER; values[n++] = l->error;
    options[n] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES; values[n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(MC_LINK_LOG_BYTES));
    options[n] = CU_JIT_LOG_VERBOSE; values[n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(verbose ? 1 : 0));
    if (optLevel >= 0) {
        options[n] = CU_JIT_OPTIMIZATION_LEVEL; values[n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(optLevel));
    }
    CUresult r = mc_p_cuLinkCreate(n, options, values, &l->state);
    if (r != CUDA_SUCCESS) {
        free(l);
        return r;
    }
    *handle = static_cast<long long>(reinterpret_cast<uintptr_t>(l));
    return CUDA_SUCCESS;
}

// Adds an input held in memory; type is a CUjitInputType (PTX data must end with a NUL byte,
// counted in size).
static inline int mcLinkAddData(long long handle, int type, const void* data, long long size, const char* name) {
    MC_REQUIRE_DRIVER();
    if (handle == 0) return MC_ERROR_SHIM;
    return mc_p_cuLinkAddData(MC_LINK(handle)->state, static_cast<CUjitInputType>(type),
            const_cast<void*>(data), static_cast<size_t>(size), name, 0, nullptr, nullptr);
}

// Adds an input file (a PTX, cubin, fatbin, object or static library such as a device library).
static inline int mcLinkAddFile(long long handle, int type, const char* path) {
    MC_REQUIRE_DRIVER();
    if (handle == 0) return MC_ERROR_SHIM;
    return mc_p_cuLinkAddFile(MC_LINK(handle)->state, static_cast<CUjitInputType>(type), path, 0, nullptr, nullptr);
}

// Completes the link and loads the linked image as a module of the current context.
static inline int mcLinkCompleteAndLoad(long long handle, long long* module) {
    MC_REQUIRE_DRIVER();
    *module = 0;
    if (handle == 0) return MC_ERROR_SHIM;
    void* image = nullptr;
    size_t bytes = 0;
    CUresult r = mc_p_cuLinkComplete(MC_LINK(handle)->state, &image, &bytes);
    if (r != CUDA_SUCCESS) return r;
    CUmodule m = nullptr;
    r = mc_p_cuModuleLoadData(&m, image);
    *module = static_cast<long long>(reinterpret_cast<uintptr_t>(m));
    return r;
}

static inline const char* mcLinkInfoLog(long long handle) {
    return handle == 0 ? "" : MC_LINK(handle)->info;
}

static inline const char* mcLinkErrorLog(long long handle) {
    return handle == 0 ? "" : MC_LINK(handle)->error;
}

static inline int mcLinkDestroy(long long handle) {
    MC_REQUIRE_DRIVER();
    if (handle == 0) return CUDA_SUCCESS;
    CUresult r = mc_p_cuLinkDestroy(MC_LINK(handle)->state);
    free(MC_LINK(handle));
    return r;
}

#define MC_MODULE(m) reinterpret_cast<CUmodule>(static_cast<uintptr_t>(m))
#define MC_FUNCTION(f) reinterpret_cast<CUfunction>(static_cast<uintptr_t>(f))

static inline int mcModuleUnload(long long module) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuModuleUnload(MC_MODULE(module));
}

static inline int mcModuleGetFunction(long long* function, long long module, const char* name) {
    MC_REQUIRE_DRIVER();
    CUfunction f = nullptr;
    CUresult r = mc_p_cuModuleGetFunction(&f, MC_MODULE(module), name);
    *function = static_cast<long long>(reinterpret_cast<uintptr_t>(f));
    return r;
}

static inline int mcModuleGetGlobal(long long* devicePtr, long long* bytes, long long module, const char* name) {
    MC_REQUIRE_DRIVER();
    CUdeviceptr p = 0;
    size_t b = 0;
    CUresult r = mc_p_cuModuleGetGlobal(&p, &b, MC_MODULE(module), name);
    *devicePtr = static_cast<long long>(p);
    *bytes = static_cast<long long>(b);
    return r;
}

static inline int mcFuncGetAttribute(int* value, int attribute, long long function) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuFuncGetAttribute(value, static_cast<CUfunction_attribute>(attribute), MC_FUNCTION(function));
}

// Blocks of `threads` threads (and `dynamicSharedBytes` of dynamic shared memory) of `function` that one
// multiprocessor keeps resident at once.
static inline int mcOccupancyMaxActiveBlocks(int* blocks, long long function, int threads, long long dynamicSharedBytes) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, MC_FUNCTION(function), threads,
            static_cast<size_t>(dynamicSharedBytes));
}

static inline int mcFuncSetAttribute(long long function, int attribute, int value) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuFuncSetAttribute(MC_FUNCTION(function), static_cast<CUfunction_attribute>(attribute), value);
}

// Launches function. Parameter i is read from the 8-byte slot params[i]: the driver copies as
// many bytes as the kernel's parameter i has (little-endian, so 4-byte values sit in the low
// half of their slot).
#define MC_MAX_KERNEL_PARAMS 256
static inline int mcLaunchKernel(long long function, int gridX, int gridY, int gridZ,
        int blockX, int blockY, int blockZ, int sharedBytes, long long stream,
        long long* params, int paramCount) {
    MC_REQUIRE_DRIVER();
    if (paramCount < 0 || paramCount > MC_MAX_KERNEL_PARAMS) return MC_ERROR_SHIM;
    void* pointers[MC_MAX_KERNEL_PARAMS];
    for (int i = 0; i < paramCount; i++) {
        pointers[i] = &params[i];
    }
    return mc_p_cuLaunchKernel(MC_FUNCTION(function),
            static_cast<unsigned>(gridX), static_cast<unsigned>(gridY), static_cast<unsigned>(gridZ),
            static_cast<unsigned>(blockX), static_cast<unsigned>(blockY), static_cast<unsigned>(blockZ),
            static_cast<unsigned>(sharedBytes), MC_STREAM(stream), paramCount > 0 ? pointers : nullptr, nullptr);
}

// ---- streams and events ----

#define MC_EVENT(e) reinterpret_cast<CUevent>(static_cast<uintptr_t>(e))

static inline int mcStreamCreate(long long* stream, int flags) {
    MC_REQUIRE_DRIVER();
    CUstream s = nullptr;
    CUresult r = mc_p_cuStreamCreate(&s, static_cast<unsigned>(flags));
    *stream = static_cast<long long>(reinterpret_cast<uintptr_t>(s));
    return r;
}

static inline int mcStreamDestroy(long long stream) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuStreamDestroy(MC_STREAM(stream));
}

static inline int mcStreamSynchronize(long long stream) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuStreamSynchronize(MC_STREAM(stream));
}

// CUDA_SUCCESS when all work is done, CUDA_ERROR_NOT_READY while some is pending.
static inline int mcStreamQuery(long long stream) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuStreamQuery(MC_STREAM(stream));
}

static inline int mcStreamWaitEvent(long long stream, long long event) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuStreamWaitEvent(MC_STREAM(stream), MC_EVENT(event), 0);
}

static inline int mcEventCreate(long long* event, int flags) {
    MC_REQUIRE_DRIVER();
    CUevent e = nullptr;
    CUresult r = mc_p_cuEventCreate(&e, static_cast<unsigned>(flags));
    *event = static_cast<long long>(reinterpret_cast<uintptr_t>(e));
    return r;
}

static inline int mcEventDestroy(long long event) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuEventDestroy(MC_EVENT(event));
}

static inline int mcEventRecord(long long event, long long stream) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuEventRecord(MC_EVENT(event), MC_STREAM(stream));
}

static inline int mcEventSynchronize(long long event) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuEventSynchronize(MC_EVENT(event));
}

static inline int mcEventQuery(long long event) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuEventQuery(MC_EVENT(event));
}

static inline int mcEventElapsedTime(float* milliseconds, long long start, long long end) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuEventElapsedTime(milliseconds, MC_EVENT(start), MC_EVENT(end));
}

// ---- graphs ----

#define MC_GRAPH(g) reinterpret_cast<CUgraph>(static_cast<uintptr_t>(g))
#define MC_GRAPH_EXEC(g) reinterpret_cast<CUgraphExec>(static_cast<uintptr_t>(g))

// mode is a CUstreamCaptureMode (0 global, 1 thread-local, 2 relaxed).
static inline int mcStreamBeginCapture(long long stream, int mode) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuStreamBeginCapture(MC_STREAM(stream), static_cast<CUstreamCaptureMode>(mode));
}

static inline int mcStreamEndCapture(long long* graph, long long stream) {
    MC_REQUIRE_DRIVER();
    CUgraph g = nullptr;
    CUresult r = mc_p_cuStreamEndCapture(MC_STREAM(stream), &g);
    *graph = static_cast<long long>(reinterpret_cast<uintptr_t>(g));
    return r;
}

static inline int mcGraphInstantiate(long long* exec, long long graph, long long flags) {
    MC_REQUIRE_DRIVER();
    CUgraphExec e = nullptr;
    CUresult r = mc_p_cuGraphInstantiateWithFlags(&e, MC_GRAPH(graph), static_cast<unsigned long long>(flags));
    *exec = static_cast<long long>(reinterpret_cast<uintptr_t>(e));
    return r;
}

static inline int mcGraphLaunch(long long exec, long long stream) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuGraphLaunch(MC_GRAPH_EXEC(exec), MC_STREAM(stream));
}

static inline int mcGraphExecDestroy(long long exec) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuGraphExecDestroy(MC_GRAPH_EXEC(exec));
}

static inline int mcGraphDestroy(long long graph) {
    MC_REQUIRE_DRIVER();
    return mc_p_cuGraphDestroy(MC_GRAPH(graph));
}

#endif  // MOECOMM_CUDA_SHIM_H
