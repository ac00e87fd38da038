// The NVSHMEM bridge: host calls and the bridge's barrier kernel (moe_nvshmem.h describes the surface).
// Compiled with nvcc -rdc=true against NVSHMEM's headers and linked with libnvshmem_device.a and
// libnvshmem_host.so.3 by scripts/gpu-nvshmem-build.sh.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include <cstddef>

#include "moe_nvshmem.h"
#include "moe_nvshmem_device.cuh"

static_assert(sizeof(nvshmemx_uniqueid_t) == 128, "unexpected nvshmemx_uniqueid_t size");
static_assert(sizeof(mnv_error_record) == 48, "error record layout changed: update NvshmemNative");

// ---- errors ----

static thread_local std::string mnv_message;

static int mnv_fail(int code, const std::string& what) {
    mnv_message = what;
    return code;
}

static int mnv_cuda(cudaError_t e, const char* call) {
    if (e == cudaSuccess) {
        return 0;
    }
    mnv_message = std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
    return static_cast<int>(e);
}

#define MNV_CUDA(call)                            \
    do {                                          \
        int s_ = mnv_cuda((call), #call);         \
        if (s_ != 0) return s_;                   \
    } while (0)

static bool mnv_initialized() {
    return nvshmemx_init_status() >= NVSHMEM_STATUS_IS_INITIALIZED;
}

#define MNV_REQUIRE_INIT(what)                                                                    \
    do {                                                                                          \
        if (!mnv_initialized())                                                                   \
            return mnv_fail(MNV_ERR_NOT_INITIALIZED, std::string(what) + ": NVSHMEM is not initialised"); \
    } while (0)

#define MNV_STREAM(s) reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(s))
#define MNV_PTR(T, p) reinterpret_cast<T>(static_cast<uintptr_t>(p))

extern "C" {

int mnv_uniqueid_bytes(void) {
    return static_cast<int>(sizeof(nvshmemx_uniqueid_t));
}

int mnv_header_version(void) {
    return NVSHMEM_VENDOR_MAJOR_VERSION * 10000 + NVSHMEM_VENDOR_MINOR_VERSION * 100 + NVSHMEM_VENDOR_PATCH_VERSION;
}

const char* mnv_last_error(void) {
    return mnv_message.c_str();
}

// ---- environment ----

int mnv_setenv(const char* name, const char* value, int overwrite) {
    if (name == nullptr || value == nullptr || name[0] == '\0') {
        return mnv_fail(MNV_ERR_ARGUMENT, "setenv: empty name or value");
    }
    if (setenv(name, value, overwrite) != 0) {
        return mnv_fail(MNV_ERR_ARGUMENT, std::string("setenv(") + name + ") failed");
    }
    return 0;
}

const char* mnv_getenv(const char* name) {
    return name == nullptr ? nullptr : getenv(name);
}

// ---- device ----

int mnv_device_count(int* count) {
    *count = 0;
    MNV_CUDA(cudaGetDeviceCount(count));
    return 0;
}

int mnv_set_device(int device) {
    MNV_CUDA(cudaSetDevice(device));
    return 0;
}

int mnv_mem_get_info(long long* free_bytes, long long* total_bytes) {
    size_t f = 0, t = 0;
    MNV_CUDA(cudaMemGetInfo(&f, &t));
    *free_bytes = static_cast<long long>(f);
    *total_bytes = static_cast<long long>(t);
    return 0;
}

// ---- initialisation ----

int mnv_get_uniqueid(void* out, int out_bytes) {
    if (out == nullptr || out_bytes < static_cast<int>(sizeof(nvshmemx_uniqueid_t))) {
        return mnv_fail(MNV_ERR_ARGUMENT, "get_uniqueid: output smaller than nvshmemx_uniqueid_t");
    }
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    int s = nvshmemx_get_uniqueid(&id);
    if (s != 0) {
        return mnv_fail(MNV_ERR_NVSHMEM, "nvshmemx_get_uniqueid failed with status " + std::to_string(s));
    }
    memcpy(out, &id, sizeof(id));
    return 0;
}

int mnv_init_uniqueid(int rank, int nranks, const void* id_bytes, int id_len) {
    if (id_bytes == nullptr || id_len != static_cast<int>(sizeof(nvshmemx_uniqueid_t))) {
        return mnv_fail(MNV_ERR_ARGUMENT, "init_uniqueid: the id must have " +
                                              std::to_string(sizeof(nvshmemx_uniqueid_t)) + " bytes");
    }
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        return mnv_fail(MNV_ERR_ARGUMENT, "init_uniqueid: rank " + std::to_string(rank) + " outside [0, " +
                                              std::to_string(nranks) + ")");
    }
    if (mnv_initialized()) {
        return mnv_fail(MNV_ERR_NVSHMEM, "init_uniqueid: NVSHMEM is already initialised in this process");
    }
    nvshmemx_uniqueid_t id;
    memcpy(&id, id_bytes, sizeof(id));
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    int s = nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
    if (s != 0) {
        return mnv_fail(MNV_ERR_NVSHMEM, "nvshmemx_set_attr_uniqueid_args failed with status " + std::to_string(s));
    }
    // A failing initialisation makes NVSHMEM print its reason and end the process.
    s = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    if (s != 0 || !mnv_initialized()) {
        return mnv_fail(MNV_ERR_NVSHMEM, "nvshmemx_init_attr failed with status " + std::to_string(s));
    }
    return 0;
}

int mnv_init_default(void) {
    if (mnv_initialized()) {
        return mnv_fail(MNV_ERR_NVSHMEM, "init_default: NVSHMEM is already initialised in this process");
    }
    nvshmem_init();
    if (!mnv_initialized()) {
        return mnv_fail(MNV_ERR_NVSHMEM, "nvshmem_init did not initialise NVSHMEM (see NVSHMEM_BOOTSTRAP)");
    }
    return 0;
}

int mnv_init_status(void) {
    return nvshmemx_init_status();
}

int mnv_my_pe(void) {
    return mnv_initialized() ? nvshmem_my_pe() : MNV_ERR_NOT_INITIALIZED;
}

int mnv_n_pes(void) {
    return mnv_initialized() ? nvshmem_n_pes() : MNV_ERR_NOT_INITIALIZED;
}

int mnv_finalize(void) {
    MNV_REQUIRE_INIT("finalize");
    nvshmem_finalize();
    return 0;
}

static void mnv_exit_now(int status, void*) {
    fflush(nullptr);
    _exit(status);
}

int mnv_exit_without_teardown(void) {
    // exit handlers run in the reverse order of their registration: this one, registered after
    // CUDA's and NVSHMEM's, runs before them
    static std::atomic<bool> registered{false};
    if (!registered.exchange(true) && on_exit(mnv_exit_now, nullptr) != 0) {
        registered = false;
        return mnv_fail(MNV_ERR_NVSHMEM, "exit_without_teardown: on_exit failed");
    }
    return 0;
}

// ---- symmetric memory ----

int mnv_malloc_zeroed(long long* ptr, long long bytes, long long stream) {
    *ptr = 0;
    MNV_REQUIRE_INIT("malloc");
    if (bytes <= 0) {
        return mnv_fail(MNV_ERR_ARGUMENT, "malloc: size must be positive, got " + std::to_string(bytes));
    }
    void* p = nvshmem_malloc(static_cast<size_t>(bytes));
    if (p == nullptr) {
        return mnv_fail(MNV_ERR_OUT_OF_SYMMETRIC_MEMORY,
                        "nvshmem_malloc(" + std::to_string(bytes) + ") returned NULL: the symmetric heap "
                        "(NVSHMEM_SYMMETRIC_SIZE) is exhausted");
    }
    cudaStream_t s = MNV_STREAM(stream);
    int st = mnv_cuda(cudaMemsetAsync(p, 0, static_cast<size_t>(bytes), s), "cudaMemsetAsync");
    if (st == 0) {
        st = mnv_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    }
    // Every PE reaches this barrier, also after a local failure, so no PE is left waiting.
    nvshmem_barrier_all();
    if (st != 0) {
        return st;
    }
    *ptr = static_cast<long long>(reinterpret_cast<uintptr_t>(p));
    return 0;
}

int mnv_free(long long ptr) {
    MNV_REQUIRE_INIT("free");
    nvshmem_free(MNV_PTR(void*, ptr));
    return 0;
}

long long mnv_ptr(long long ptr, int pe) {
    if (!mnv_initialized()) {
        return 0;
    }
    return static_cast<long long>(reinterpret_cast<uintptr_t>(nvshmem_ptr(MNV_PTR(const void*, ptr), pe)));
}

int mnv_barrier_all(void) {
    MNV_REQUIRE_INIT("barrier_all");
    nvshmem_barrier_all();
    return 0;
}

// ---- error context ----

int mnv_error_create(long long* ctx, long long* host) {
    *ctx = 0;
    *host = 0;
    void* h = nullptr;
    MNV_CUDA(cudaHostAlloc(&h, sizeof(mnv_error_record), cudaHostAllocMapped | cudaHostAllocPortable));
    memset(h, 0, sizeof(mnv_error_record));
    void* hd = nullptr;
    int s = mnv_cuda(cudaHostGetDevicePointer(&hd, h, 0), "cudaHostGetDevicePointer");
    if (s != 0) {
        cudaFreeHost(h);
        return s;
    }
    mnv_error_ctx init;
    init.claim = 0;
    init.pad = 0;
    init.record = static_cast<mnv_error_record*>(hd);
    init.abort_word = nullptr;
    void* d = nullptr;
    s = mnv_cuda(cudaMalloc(&d, sizeof(mnv_error_ctx)), "cudaMalloc");
    if (s == 0) {
        s = mnv_cuda(cudaMemcpy(d, &init, sizeof(init), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    if (s != 0) {
        if (d != nullptr) cudaFree(d);
        cudaFreeHost(h);
        return s;
    }
    *ctx = static_cast<long long>(reinterpret_cast<uintptr_t>(d));
    *host = static_cast<long long>(reinterpret_cast<uintptr_t>(h));
    return 0;
}

int mnv_error_destroy(long long ctx, long long host) {
    int s = 0;
    if (ctx != 0) {
        s = mnv_cuda(cudaFree(MNV_PTR(void*, ctx)), "cudaFree");
    }
    if (host != 0) {
        int s2 = mnv_cuda(cudaFreeHost(MNV_PTR(void*, host)), "cudaFreeHost");
        if (s == 0) s = s2;
    }
    return s;
}

int mnv_error_read(long long host, long long* out) {
    for (int i = 0; i < MNV_ERROR_SLOTS; i++) out[i] = 0;
    if (host == 0) {
        return MNV_ERROR_NONE;
    }
    const mnv_error_record* r = MNV_PTR(const mnv_error_record*, host);
    int kind = r->kind;
    if (kind == MNV_ERROR_NONE) {
        return MNV_ERROR_NONE;
    }
    __sync_synchronize();  // the fields were written before kind
    out[0] = kind;
    out[1] = r->rank;
    out[2] = r->peer;
    out[3] = r->tag;
    out[4] = r->expected;
    out[5] = r->seen;
    out[6] = r->waited_ns;
    out[7] = r->detail;
    return kind;
}

int mnv_error_watch(long long ctx, long long abort_word) {
    if (ctx == 0) {
        return mnv_fail(MNV_ERR_ARGUMENT, "error_watch: no context");
    }
    const uint64_t* word = MNV_PTR(const uint64_t*, abort_word);
    MNV_CUDA(cudaMemcpy(MNV_PTR(char*, ctx) + offsetof(mnv_error_ctx, abort_word), &word, sizeof(word),
                        cudaMemcpyHostToDevice));
    return 0;
}

int mnv_error_clear(long long ctx, long long host) {
    if (ctx == 0 || host == 0) {
        return mnv_fail(MNV_ERR_ARGUMENT, "error_clear: no context");
    }
    MNV_CUDA(cudaDeviceSynchronize());
    MNV_CUDA(cudaMemset(MNV_PTR(void*, ctx), 0, sizeof(int)));
    MNV_CUDA(cudaDeviceSynchronize());
    memset(MNV_PTR(void*, host), 0, sizeof(mnv_error_record));
    return 0;
}

}  // extern "C"

// ---- kernels ----

__global__ void __launch_bounds__(1024) mnv_barrier_kernel(uint64_t* bar, uint64_t epoch, int n_pes, int me,
                                                           uint64_t timeout_ns, mnv_error_ctx* err, int tag) {
    if (threadIdx.x == 0) {
        nvshmem_quiet();  // every earlier put of this PE is complete before it announces itself
    }
    __syncthreads();
    for (int p = threadIdx.x; p < n_pes; p += blockDim.x) {
        nvshmemx_signal_op(bar + me, epoch, NVSHMEM_SIGNAL_SET, p);
    }
    if (mnv_dev_error_pending(err)) {
        return;
    }
    for (int p = threadIdx.x; p < n_pes; p += blockDim.x) {
        if (mnv_dev_wait_ge(bar + p, epoch, timeout_ns, err, MNV_ERROR_BARRIER_TIMEOUT, me, p, tag, nullptr) != 0) {
            return;
        }
    }
}

__global__ void mnv_abort_kernel(uint64_t* word, uint64_t value, int n_pes) {
    for (int p = threadIdx.x; p < n_pes; p += blockDim.x) {
        nvshmemx_signal_op(word, value, NVSHMEM_SIGNAL_SET, p);
    }
    nvshmem_quiet();
}

static int mnv_launched(const char* kernel) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        mnv_message = std::string("launch of ") + kernel + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
        return static_cast<int>(e);
    }
    return 0;
}

extern "C" {

int mnv_barrier_launch(long long stream, long long bar, long long epoch, int n_pes, int me, long long timeout_ns,
                       long long err_ctx, int tag) {
    MNV_REQUIRE_INIT("barrier");
    if (n_pes != nvshmem_n_pes() || me != nvshmem_my_pe() || timeout_ns <= 0) {
        return mnv_fail(MNV_ERR_ARGUMENT, "barrier: n_pes/me do not match NVSHMEM's or timeout not positive");
    }
    int threads = n_pes < 32 ? 32 : (n_pes > 1024 ? 1024 : ((n_pes + 31) / 32) * 32);
    mnv_barrier_kernel<<<1, threads, 0, MNV_STREAM(stream)>>>(MNV_PTR(uint64_t*, bar), static_cast<uint64_t>(epoch),
                                                               n_pes, me, static_cast<uint64_t>(timeout_ns),
                                                               MNV_PTR(mnv_error_ctx*, err_ctx), tag);
    return mnv_launched("mnv_barrier_kernel");
}

int mnv_abort_launch(long long stream, long long word, long long value, int n_pes) {
    MNV_REQUIRE_INIT("abort");
    if (n_pes != nvshmem_n_pes() || word == 0 || value == 0) {
        return mnv_fail(MNV_ERR_ARGUMENT, "abort: n_pes does not match NVSHMEM's, or no word, or a value of 0");
    }
    int threads = n_pes < 32 ? 32 : (n_pes > 1024 ? 1024 : ((n_pes + 31) / 32) * 32);
    mnv_abort_kernel<<<1, threads, 0, MNV_STREAM(stream)>>>(MNV_PTR(uint64_t*, word), static_cast<uint64_t>(value),
                                                             n_pes);
    return mnv_launched("mnv_abort_kernel");
}

int mnv_cumodule_init(long long module) {
    MNV_REQUIRE_INIT("cumodule_init");
    int s = nvshmemx_cumodule_init(MNV_PTR(CUmodule, module));
    return s == 0 ? 0 : mnv_fail(MNV_ERR_NVSHMEM, "nvshmemx_cumodule_init failed with status " + std::to_string(s));
}

int mnv_cumodule_finalize(long long module) {
    MNV_REQUIRE_INIT("cumodule_finalize");
    int s = nvshmemx_cumodule_finalize(MNV_PTR(CUmodule, module));
    return s == 0 ? 0
                  : mnv_fail(MNV_ERR_NVSHMEM, "nvshmemx_cumodule_finalize failed with status " + std::to_string(s));
}

}  // extern "C"
