// Device-side building blocks of the NVSHMEM bridge, shared by the bridge's own kernels
// (moe_nvshmem.cu) and by the exported device functions that compiled Java kernels call
// (moe_nvshmem_devfns.cu). Include after nvshmem.h and nvshmemx.h.
#ifndef MOECOMM_NVSHMEM_DEVICE_CUH
#define MOECOMM_NVSHMEM_DEVICE_CUH

#include <stdint.h>

#include "moe_nvshmem.h"

// The record the host reads (page-locked host memory, mapped into the device's address space).
// kind is written last, after a system-scope fence, so a host that sees a kind sees the rest.
struct mnv_error_record {
    volatile int kind;
    volatile int rank;
    volatile int peer;
    volatile int tag;
    volatile long long expected;
    volatile long long seen;
    volatile long long waited_ns;
    volatile long long detail;
};

// The context the kernels get (device memory): the claim word makes the first failure win
// without atomics on host memory.
// abort_word (or null) is the handle's abort word in symmetric memory: every bounded wait watches
// it besides its own signal (mnv_error_watch).
struct mnv_error_ctx {
    int claim;
    int pad;
    mnv_error_record* record;  // device view of the host record
    const uint64_t* abort_word;
};

__device__ __forceinline__ uint64_t mnv_dev_global_time_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ uint64_t mnv_dev_load_acquire_sys(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// True when the context already holds an error (a later wait then returns at once instead of
// spending its whole bound on a round that has failed anyway).
__device__ __forceinline__ bool mnv_dev_error_pending(const mnv_error_ctx* ctx) {
    return ctx != nullptr && *reinterpret_cast<const volatile int*>(&ctx->claim) != 0;
}

// Records a failure unless one is already recorded. Any thread may call it.
__device__ __forceinline__ void mnv_dev_error_record(mnv_error_ctx* ctx, int kind, int rank, int peer, int tag,
                                                  long long expected, long long seen, long long waited_ns,
                                                  long long detail) {
    if (ctx == nullptr) {
        return;
    }
    if (atomicCAS(&ctx->claim, 0, kind) != 0) {
        return;
    }
    mnv_error_record* r = *reinterpret_cast<mnv_error_record* volatile*>(&ctx->record);
    r->rank = rank;
    r->peer = peer;
    r->tag = tag;
    r->expected = expected;
    r->seen = seen;
    r->waited_ns = waited_ns;
    r->detail = detail;
    __threadfence_system();
    r->kind = kind;
    __threadfence_system();
}

// The abort word the context watches, or 0 (none watched, or not raised).
__device__ __forceinline__ uint64_t mnv_dev_abort_seen(const mnv_error_ctx* ctx) {
    const uint64_t* word = ctx != nullptr ? ctx->abort_word : nullptr;
    return word != nullptr ? mnv_dev_load_acquire_sys(word) : 0;
}

// Whether a signal word that counts up has reached value: compared modulo 2^64 (the difference
// as a signed number), so the words may wrap around and a wait is right as long as it is less
// than 2^63 ahead of the word (a round's signals are a few counts of 2^32 apart).
__device__ __forceinline__ bool mnv_dev_reached(uint64_t seen, uint64_t value) {
    return static_cast<int64_t>(seen - value) >= 0;
}

// Waits until *sig >= value (mnv_dev_reached), at most timeout_ns of global time. Returns 0 when the value
// arrived, 1 on timeout (recorded in ctx as `kind`) or when the context's abort word is raised
// (recorded as MNV_ERROR_PEER_ABORTED, the word in `seen`). One thread calls it. When last is
// not null it receives the signal's value the wait saw last (the arrived value on success).
//
// A poll is one load of the signal: the abort word (two dependent loads: the context's pointer,
// then the word) is read every MNV_ABORT_POLLS polls only, so that a signal arriving is seen
// within about one round trip to memory, not three (decode latency), while an abort is still
// seen within microseconds.
#define MNV_ABORT_POLLS 32u
__device__ __forceinline__ int mnv_dev_wait_ge(const uint64_t* sig, uint64_t value, uint64_t timeout_ns,
                                            mnv_error_ctx* ctx, int kind, int rank, int peer, int tag,
                                            uint64_t* last) {
    uint64_t seen = mnv_dev_load_acquire_sys(sig);
    if (mnv_dev_reached(seen, value)) {
        if (last != nullptr) {
            *last = seen;
        }
        return 0;
    }
    const uint64_t start = mnv_dev_global_time_ns();
    unsigned polls = 0;
    while (true) {
        seen = mnv_dev_load_acquire_sys(sig);
        if (last != nullptr) {
            *last = seen;
        }
        if (mnv_dev_reached(seen, value)) {
            return 0;
        }
        ++polls;
        if (polls % MNV_ABORT_POLLS == 0) {
            const uint64_t waited = mnv_dev_global_time_ns() - start;
            const uint64_t aborted = mnv_dev_abort_seen(ctx);
            if (aborted != 0) {
                mnv_dev_error_record(ctx, MNV_ERROR_PEER_ABORTED, rank, peer, tag, (long long)value,
                                     (long long)aborted, (long long)waited, 0);
                return 1;
            }
            if (waited >= timeout_ns) {
                mnv_dev_error_record(ctx, kind, rank, peer, tag, (long long)value, (long long)seen, (long long)waited,
                                     0);
                return 1;
            }
        }
        // Poll hard for the first few hundred polls (decode latency), then back off a little
        // so a long wait does not hammer the memory system.
        if (polls > 256) {
            __nanosleep(polls > 4096 ? 1000 : 100);
        }
    }
}

#endif  // MOECOMM_NVSHMEM_DEVICE_CUH
