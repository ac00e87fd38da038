// Device functions with C linkage for kernels compiled from Java to PTX.
//
// The PTX our compiler emits declares these as `.extern .func` and calls them with the PTX
// calling convention; the CUDA driver's linker (or nvJitLink) links that PTX with this file's
// relocatable device code (moe_nvshmem_devfns.fatbin, built by scripts/gpu-nvshmem-build.sh)
// and libnvshmem_device.a, and the loaded module is registered with mnv_cumodule_init. The ABI
// is ours (plain pointers and integers), so the Java side does not follow NVSHMEM's inline
// device API from version to version. docs/nvshmem.md lists the signatures.
#include <nvshmem.h>
#include <nvshmemx.h>

#include "moe_nvshmem_device.cuh"

extern "C" {

// nvshmem_ptr on the device: the peer's copy of a symmetric address, or null when the peer is
// reachable only over the network (then use the put functions).
__device__ __noinline__ void* mnvd_ptr(const void* ptr, int pe) {
    return nvshmem_ptr(ptr, pe);
}

// Put of `bytes` from src to dst on pe by the whole calling warp, then the signal at sig on pe
// set to value (data visible before the signal). All 32 lanes call it with the same arguments.
__device__ __noinline__ void mnvd_put_signal_warp(void* dst, const void* src, unsigned long long bytes,
                                                  unsigned long long* sig, unsigned long long value, int pe) {
    nvshmemx_putmem_signal_warp(dst, src, static_cast<size_t>(bytes), reinterpret_cast<uint64_t*>(sig),
                                static_cast<uint64_t>(value), NVSHMEM_SIGNAL_SET, pe);
}

// The same by the whole calling block.
__device__ __noinline__ void mnvd_put_signal_block(void* dst, const void* src, unsigned long long bytes,
                                                   unsigned long long* sig, unsigned long long value, int pe) {
    nvshmemx_putmem_signal_block(dst, src, static_cast<size_t>(bytes), reinterpret_cast<uint64_t*>(sig),
                                 static_cast<uint64_t>(value), NVSHMEM_SIGNAL_SET, pe);
}

// The same, adding value to the signal at sig on pe instead of setting it: several blocks that
// each put part of one message and add their share let the receiver's wait for the total see
// all parts.
__device__ __noinline__ void mnvd_put_signal_add_block(void* dst, const void* src, unsigned long long bytes,
                                                       unsigned long long* sig, unsigned long long value, int pe) {
    nvshmemx_putmem_signal_block(dst, src, static_cast<size_t>(bytes), reinterpret_cast<uint64_t*>(sig),
                                 static_cast<uint64_t>(value), NVSHMEM_SIGNAL_ADD, pe);
}

// Put without a signal by the whole calling warp (non-blocking: complete after mnvd_quiet).
__device__ __noinline__ void mnvd_put_nbi_warp(void* dst, const void* src, unsigned long long bytes, int pe) {
    nvshmemx_putmem_nbi_warp(dst, src, static_cast<size_t>(bytes), pe);
}

// The same by the whole calling block: every thread calls it with the same arguments.
__device__ __noinline__ void mnvd_put_nbi_block(void* dst, const void* src, unsigned long long bytes, int pe) {
    nvshmemx_putmem_nbi_block(dst, src, static_cast<size_t>(bytes), pe);
}

// Signal operation by one thread: op 0 sets, 1 adds.
__device__ __noinline__ void mnvd_signal_op(unsigned long long* sig, unsigned long long value, int op, int pe) {
    nvshmemx_signal_op(reinterpret_cast<uint64_t*>(sig), static_cast<uint64_t>(value),
                       op == 1 ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET, pe);
}

// Orders this thread's earlier puts before its later ones to the same PE.
__device__ __noinline__ void mnvd_fence(void) {
    nvshmem_fence();
}

// Completes every earlier put of this thread.
__device__ __noinline__ void mnvd_quiet(void) {
    nvshmem_quiet();
}

// Bounded wait by one thread until the local word sig >= value (modulo 2^64, mnv_dev_reached).
// Returns the word's value it saw last: it has reached value when the value arrived; when it has
// not, the wait ran out (recorded as MNV_ERROR_WAIT_TIMEOUT in the error context err_ctx, the
// context the host created with mnv_error_create; may be null) or the context already held an
// error (then it returns after one load). The caller reads the value it waited for from the
// result, not with a load of its own: one round trip less after a wait that had to poll. A value
// already there returns after one load (the common case in a decode round).
__device__ __noinline__ unsigned long long mnvd_wait_ge(const unsigned long long* sig, unsigned long long value,
                                                        unsigned long long timeout_ns, void* err_ctx, int rank,
                                                        int peer, int tag) {
    const uint64_t* word = reinterpret_cast<const uint64_t*>(sig);
    uint64_t seen = mnv_dev_load_acquire_sys(word);
    if (mnv_dev_reached(seen, static_cast<uint64_t>(value))) {
        return seen;
    }
    mnv_error_ctx* ctx = static_cast<mnv_error_ctx*>(err_ctx);
    if (mnv_dev_error_pending(ctx)) {
        return seen;
    }
    mnv_dev_wait_ge(word, static_cast<uint64_t>(value), static_cast<uint64_t>(timeout_ns), ctx,
                    MNV_ERROR_WAIT_TIMEOUT, rank, peer, tag, &seen);
    return seen;
}

}  // extern "C"
