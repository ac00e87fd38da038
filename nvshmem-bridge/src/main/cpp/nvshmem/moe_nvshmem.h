// The C surface of the NVSHMEM bridge, bound from Java by org.moecomm.bridge.nvshmem.NvshmemNative
// (JavaCPP). Implemented in moe_nvshmem.cu, which is compiled with nvcc against NVSHMEM's headers
// on a machine that has them (scripts/gpu-nvshmem-build.sh).
//
// This header uses plain C types only, so the JNI glue generated from the Java class compiles
// with nothing but jni.h and this file.
//
// Conventions:
// - every function that can fail returns an int status: 0 on success, a positive cudaError_t
//   for a CUDA runtime failure, or one of the negative MNV_ERR_* codes below;
//   mnv_last_error() then describes the last failure of the calling thread in words;
// - device addresses, host addresses and stream handles travel as 64-bit integers (a CUDA
//   driver CUstream and a runtime cudaStream_t are the same handle);
// - results come back through one-element arrays.
//
// Launches are asynchronous on the given stream. The bridge's one kernel (the bounded barrier)
// runs as a single thread block, so that the kernels of several processes sharing one GPU
// (several PEs per GPU under MPS) are all resident at once. Puts, signals and waits are made by
// kernels compiled from Java, through the device functions of moe_nvshmem_devfns.cu.
#ifndef MOECOMM_NVSHMEM_H
#define MOECOMM_NVSHMEM_H

#ifdef __cplusplus
extern "C" {
#endif

// NVSHMEM is not initialised (or already finalised) in this process.
#define MNV_ERR_NOT_INITIALIZED (-1)
// NVSHMEM initialisation failed or an NVSHMEM host call reported an error.
#define MNV_ERR_NVSHMEM (-2)
// nvshmem_malloc returned NULL: the symmetric heap (NVSHMEM_SYMMETRIC_SIZE) is exhausted.
#define MNV_ERR_OUT_OF_SYMMETRIC_MEMORY (-3)
// An argument is out of range (mnv_last_error() names it).
#define MNV_ERR_ARGUMENT (-4)

// Kinds of the device error record (mnv_error_read, slot 0).
#define MNV_ERROR_NONE 0
// A bounded wait ran out: peer, tag, expected and seen are filled in.
#define MNV_ERROR_WAIT_TIMEOUT 1
// (2 was MNV_ERROR_PUT_COUNT, of the removed put kernel; the other kinds keep their numbers.)
// The bounded barrier ran out: peer is a PE that did not arrive, tag is the barrier's tag.
#define MNV_ERROR_BARRIER_TIMEOUT 3
// A wait (a kernel's or the barrier's) found the context's abort word raised: peer and tag are
// the wait's, seen is the abort word (its meaning is the caller's: AbortReason on the Java side).
#define MNV_ERROR_PEER_ABORTED 4

// Slots of the record copied out by mnv_error_read.
#define MNV_ERROR_SLOTS 8
// slot 0 kind, 1 rank, 2 peer, 3 tag, 4 expected, 5 seen, 6 waited nanoseconds, 7 detail

// Bytes of an NVSHMEM unique id (nvshmemx_uniqueid_t).
int mnv_uniqueid_bytes(void);

// The NVSHMEM version the bridge was compiled against, as major * 10000 + minor * 100 + patch.
int mnv_header_version(void);

// Description of the calling thread's last failure ("" when none).
const char* mnv_last_error(void);

// ---- process environment (before initialisation) ----

// setenv(name, value, overwrite); NVSHMEM reads its NVSHMEM_* variables at initialisation.
int mnv_setenv(const char* name, const char* value, int overwrite);

// getenv(name), or NULL.
const char* mnv_getenv(const char* name);

// ---- CUDA device ----

// cudaGetDeviceCount; count[0] = devices visible to this process.
int mnv_device_count(int* count);

// cudaSetDevice(device): the device NVSHMEM and the bridge's launches use in this process.
int mnv_set_device(int device);

// cudaMemGetInfo on the current device.
int mnv_mem_get_info(long long* free_bytes, long long* total_bytes);

// ---- initialisation ----

// Writes a fresh unique id (mnv_uniqueid_bytes() bytes) into out; rank 0 calls this and hands
// the bytes to the other ranks.
int mnv_get_uniqueid(void* out, int out_bytes);

// Initialises NVSHMEM as PE `rank` of `nranks` from a unique id (NVSHMEMX_INIT_WITH_UNIQUEID).
int mnv_init_uniqueid(int rank, int nranks, const void* id, int id_bytes);

// Initialises NVSHMEM with its default bootstrap, chosen by NVSHMEM_BOOTSTRAP (PMI, MPI, ...):
// for jobs started by mpirun or srun.
int mnv_init_default(void);

// nvshmemx_init_status(): 0 not initialised, 1 bootstrapped, 2 initialised.
int mnv_init_status(void);

int mnv_my_pe(void);

int mnv_n_pes(void);

// Finalises NVSHMEM (collective).
int mnv_finalize(void);

// For a process that leaves NVSHMEM unfinalised (a failed rank: its peers may be gone): makes the
// process's exit end it at once with its status (stdio flushed, then _exit), before the exit
// handlers registered earlier run: CUDA's and NVSHMEM's teardown, which raced with NVSHMEM's
// still running proxy thread (SIGSEGV in nvshmemi_proxy_progress_minimal). Idempotent.
int mnv_exit_without_teardown(void);

// ---- symmetric memory ----

// Collective: nvshmem_malloc(bytes), then zeroes the block (on `stream`, synchronised) and
// ends with nvshmem_barrier_all, so no peer writes into it before every PE has zeroed its copy.
// ptr[0] = the local address.
int mnv_malloc_zeroed(long long* ptr, long long bytes, long long stream);

// Collective nvshmem_free.
int mnv_free(long long ptr);

// nvshmem_ptr: the address at which this process can load and store `pe`'s copy of the
// symmetric address `ptr`, or 0 when `pe` is reachable only through a network transport.
long long mnv_ptr(long long ptr, int pe);

// Host-side nvshmem_barrier_all (collective, unbounded: prefer the bounded mnv_barrier_launch).
int mnv_barrier_all(void);

// ---- device error record ----

// Creates an error context: a claim word in device memory and the record in page-locked host
// memory mapped into the device's address space. ctx[0] is passed to the launches; host[0] is
// read by mnv_error_read without any synchronisation (the kernels write it with a system
// fence before its kind). The first failure of a context wins; later ones are dropped.
int mnv_error_create(long long* ctx, long long* host);

int mnv_error_destroy(long long ctx, long long host);

// Makes every wait given this context also watch the 64-bit word at device address abort_word
// (0: none): a nonzero word ends the wait as MNV_ERROR_PEER_ABORTED.
int mnv_error_watch(long long ctx, long long abort_word);

// Copies the record into out[MNV_ERROR_SLOTS]; returns its kind (MNV_ERROR_*).
int mnv_error_read(long long host, long long* out);

// Clears the record (synchronises the device first).
int mnv_error_clear(long long ctx, long long host);

// ---- launches on a stream ----

// Bounded barrier of all PEs on the stream: nvshmem_quiet, then sets word `me` of the
// symmetric array bar[n_pes] to epoch on every PE, then waits until every word of the local
// bar is >= epoch, at most timeout_ns nanoseconds of GPU global time; on timeout records
// MNV_ERROR_BARRIER_TIMEOUT (me, a PE that did not arrive, tag, epoch, last value seen) and
// returns, so the stream never hangs; when the context already holds an error, it does not wait.
// Epochs must grow from call to call.
int mnv_barrier_launch(long long stream, long long bar, long long epoch, int n_pes, int me,
                       long long timeout_ns, long long err_ctx, int tag);

// Sets the symmetric 64-bit word `word` to `value` on every PE (nvshmemx_signal_op, then quiet),
// one thread per PE, on `stream`: how a rank raises its abort on its peers. Never waits.
int mnv_abort_launch(long long stream, long long word, long long value, int n_pes);

// Registers a module loaded with the CUDA driver whose code calls NVSHMEM device functions
// (nvshmemx_cumodule_init), and unregisters it.
int mnv_cumodule_init(long long module);

int mnv_cumodule_finalize(long long module);

#ifdef __cplusplus
}
#endif

#endif  // MOECOMM_NVSHMEM_H
