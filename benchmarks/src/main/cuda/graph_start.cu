// What starting a CUDA graph costs W processes that share one GPU (under MPS when its daemon runs),
// with no library in the way: the floor under a replayed dispatch's time (docs/benchmarks.md, "The
// floor under a W = 4 round").
//
//   graph_start W ROUNDS [BLOCKS [THREADS [join|wide|shared]]]
//
// Forks W processes before any CUDA call; each sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE to 100 / W
// (as the benchmark's ranks do; the environment's GRAPH_START_PERCENT, 1-100, instead when set),
// captures once a graph of one kernel (BLOCKS x THREADS, default 1 x 1, of which the first thread
// writes %globaltimer, the GPU's clock for every process: give the dispatch kernel's grid to see
// whether its shape costs anything), and per round: meets the others at a spin barrier in shared
// memory, records a start event, replays the graph, records an end event and waits for it, the
// way `moecomm bench` times a replayed half (GRAPH_START_LAUNCH=plain: the kernel launched with
// cuLaunchKernel every round instead, as the benchmark's plain mode launches). The first tenth of
// the rounds is warm-up. Prints one
// JSON line of medians and p90s over the timed rounds, in us: the slowest process's event time per
// round (the benchmark's method), process 0's (pplx-kernels'), and the spread of the kernels'
// entries across the processes.
//
// With `join` the kernel is an exchange that carries nothing but its own synchronisation, the
// shape of a decode dispatch with the work taken out: every block writes a row of 7168 bytes into
// a buffer of process 0's (opened by the others through CUDA IPC), then its thread 0 makes the
// block's row visible with a system-scope fence and adds 1 to a counter beside it, and waits until
// every block of every process has added its own for the round. So each process's kernel ends only
// once the last process's has started: the slowest process's time is what an all-to-all pays
// before it moves a byte, and the JSON adds the fence's median and the time from the last
// process's entry to the round's end.
//
// `wide` is `stamp` with 40 more 8-byte parameters that it does not read: a launch that carries
// about as many parameter bytes as the one-launch dispatch, to tell the parameters' share.
// `shared` is `stamp` in a block that also holds kSharedBytes of static shared memory, which every
// thread writes (the one-launch dispatch of a DeepSeek-V3 decode handle has 45068 bytes), to tell
// the share of a block's resources.
#include "driver_util.h"
#include "forked_ranks.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

constexpr int kWideParams = 40;      // the wide kernel's parameters after out
constexpr int kSharedBytes = 45056;  // the shared kernel's static shared memory (the dispatch has 45068 bytes)

// stamp's body: the grid's first thread writes %globaltimer to out[0]
static const char* kStampBody =
    "{\n .reg .b64 %rd<4>;\n .reg .b32 %r<3>;\n .reg .pred %p<1>;\n"
    " mov.u32 %r0, %tid.x;\n mov.u32 %r1, %ctaid.x;\n or.b32 %r2, %r0, %r1;\n"
    " setp.ne.u32 %p0, %r2, 0;\n @%p0 bra DONE;\n"
    " ld.param.u64 %rd0, [out];\n cvta.to.global.u64 %rd1, %rd0;\n"
    " mov.u64 %rd2, %globaltimer;\n st.global.u64 [%rd1], %rd2;\n"
    "DONE:\n ret;\n}\n";

// shared's prologue, before stamp's body (a nested scope): every thread writes its index into the
// block's shared memory `pool`, then the block meets at a barrier
static const char* kSharedPrologue =
    " .reg .b32 %sh<3>;\n mov.u32 %sh0, %tid.x;\n mov.u32 %sh1, pool;\n shl.b32 %sh2, %sh0, 2;\n"
    " add.u32 %sh1, %sh1, %sh2;\n st.shared.u32 [%sh1], %sh0;\n bar.sync 0;\n";

static const char* kJoinPtx =
    // join(out, counter, payload, roundWord, arrivals): out[0..3] = entry, before the fence, after
    // it, every arrival seen (the first thread of the grid); the round lives in roundWord. A wait
    // is bounded (1 s of %globaltimer): past it the first thread writes the counter as last seen
    // and its target into out[4..5] and every block leaves, so a process that died cannot hang
    // the others' kernels
    ".visible .entry join(.param .u64 out, .param .u64 counter, .param .u64 payload, .param .u64 roundWord,"
    " .param .u32 arrivals)\n"
    "{\n .reg .b64 %rd<20>;\n .reg .b32 %r<8>;\n .reg .pred %p<4>;\n"
    " mov.u32 %r0, %tid.x;\n mov.u32 %r1, %ctaid.x;\n mov.u32 %r2, %ntid.x;\n"
    " ld.param.u64 %rd0, [out];\n cvta.to.global.u64 %rd1, %rd0;\n"
    " ld.param.u64 %rd2, [counter];\n cvta.to.global.u64 %rd3, %rd2;\n"
    " ld.param.u64 %rd4, [payload];\n cvta.to.global.u64 %rd5, %rd4;\n"
    " ld.param.u64 %rd6, [roundWord];\n cvta.to.global.u64 %rd7, %rd6;\n"
    " ld.param.u32 %r3, [arrivals];\n"
    " or.b32 %r4, %r0, %r1;\n setp.eq.u32 %p0, %r4, 0;\n"
    " @!%p0 bra ENTERED;\n mov.u64 %rd8, %globaltimer;\n st.global.u64 [%rd1], %rd8;\n"
    "ENTERED:\n"
    // every block reads the round before it arrives, block 0 advances it after every arrival
    " ld.global.u64 %rd9, [%rd7];\n add.u64 %rd9, %rd9, 1;\n cvt.u32.u64 %r6, %rd9;\n"
    " mul.wide.u32 %rd10, %r1, 7168;\n add.u64 %rd11, %rd5, %rd10;\n mov.u32 %r5, %r0;\n"
    "ROW:\n setp.ge.u32 %p1, %r5, 1792;\n @%p1 bra WRITTEN;\n"
    " mul.wide.u32 %rd12, %r5, 4;\n add.u64 %rd13, %rd11, %rd12;\n st.global.u32 [%rd13], %r6;\n"
    " add.u32 %r5, %r5, %r2;\n bra ROW;\n"
    "WRITTEN:\n bar.sync 0;\n setp.ne.u32 %p2, %r0, 0;\n @%p2 bra DONE;\n"
    " @%p0 mov.u64 %rd8, %globaltimer;\n @%p0 st.global.u64 [%rd1+8], %rd8;\n"
    " fence.acq_rel.sys;\n"
    " @%p0 mov.u64 %rd8, %globaltimer;\n @%p0 st.global.u64 [%rd1+16], %rd8;\n"
    " red.relaxed.sys.global.add.u64 [%rd3], 1;\n"
    " cvt.u64.u32 %rd14, %r3;\n mul.lo.u64 %rd15, %rd9, %rd14;\n mov.u64 %rd17, %globaltimer;\n"
    "WAIT:\n ld.acquire.sys.global.u64 %rd16, [%rd3];\n setp.ge.u64 %p3, %rd16, %rd15;\n @%p3 bra ARRIVED;\n"
    " mov.u64 %rd18, %globaltimer;\n sub.u64 %rd19, %rd18, %rd17;\n setp.lt.u64 %p3, %rd19, 1000000000;\n"
    " @%p3 bra WAIT;\n @!%p0 bra DONE;\n st.global.u64 [%rd1+32], %rd16;\n st.global.u64 [%rd1+40], %rd15;\n"
    " bra DONE;\n"
    "ARRIVED:\n @!%p0 bra DONE;\n mov.u64 %rd8, %globaltimer;\n st.global.u64 [%rd1+24], %rd8;\n"
    " st.global.u64 [%rd7], %rd9;\n"
    "DONE:\n ret;\n}\n";

// The module: stamp, wide (stamp's body behind kWideParams more parameters), shared and join.
static std::string modulePtx() {
    std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
    ptx += std::string(".visible .entry stamp(.param .u64 out)\n") + kStampBody;
    ptx += ".visible .entry wide(.param .u64 out";
    for (int i = 0; i < kWideParams; i++) {
        ptx += ", .param .u64 unused" + std::to_string(i);
    }
    ptx += std::string(")\n") + kStampBody;
    ptx += ".visible .entry shared(.param .u64 out)\n{\n .shared .align 16 .b8 pool[" + std::to_string(kSharedBytes)
           + "];\n" + kSharedPrologue + kStampBody + "}\n";
    return ptx + kJoinPtx;
}

constexpr int kMaxWorld = 64;
constexpr int kMaxRounds = 20000;
constexpr int kMaxJoinBlocks = 64;
constexpr size_t kRowBytes = 7168;   // the join kernel's row per block (deepseek-v3's fp8 token)
constexpr size_t kCounterBytes = 128; // the counter's line, before the rows
constexpr int kStampWords = 6;        // the kernels' out words (stamp writes the first)

// Lives in memory shared by the forked processes (mapped before the fork).
struct Shared {
    RankSync sync;
    std::atomic<int> handleReady; // join: process 0 has published its buffer
    CUipcMemHandle handle;
    float eventMs[kMaxWorld][kMaxRounds];
    unsigned long long entryNs[kMaxWorld][kMaxRounds];
    unsigned long long fenceNs[kMaxWorld][kMaxRounds];  // join: the fence of block 0
    unsigned long long joinedNs[kMaxWorld][kMaxRounds]; // join: every arrival seen by block 0
};

// The join kernel's buffer: process 0 allocates the counter's line and every process's rows and
// publishes it; the others open it. 0 on success.
static int openJoinBuffer(Shared* s, int rank, size_t bytes, CUdeviceptr* buf) {
    if (rank == 0) {
        CHECK(cuMemAlloc(buf, bytes));
        CHECK(cuMemsetD8(*buf, 0, kCounterBytes));
        CHECK(cuIpcGetMemHandle(&s->handle, *buf));
        s->handleReady.store(1);
        return 0;
    }
    while (s->handleReady.load() == 0 && s->sync.failed.load() == 0) {
    }
    if (s->sync.failed.load() != 0) {
        return 1;
    }
    CHECK(cuIpcOpenMemHandle(buf, s->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    return 0;
}

// How a process runs: the kernel (stamp, wide, shared or join), its grid, and whether it is replayed from a
// graph or launched plainly every round.
struct Setup {
    int world;
    int rounds;
    int percent;
    unsigned blocks;
    unsigned threads;
    std::string kernel;
    bool plain;
};

static int runProcess(Shared* s, int rank, const Setup& setup) {
    const int world = setup.world, rounds = setup.rounds;
    const unsigned blocks = setup.blocks, threads = setup.threads;
    const bool join = setup.kernel == "join";
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(setup.percent).c_str(), 1);
    DriverKernel k;
    const std::string ptx = modulePtx();
    if (openKernel(ptx.c_str(), setup.kernel.c_str(), &k) != 0) {
        return 1;
    }
    CUstream stream = k.stream;
    CUdeviceptr stamps, joinBuf = 0, payload = 0, roundWord = 0;
    unsigned arrivals = world * blocks;
    CHECK(cuMemAlloc(&stamps, kStampWords * sizeof(unsigned long long)));
    CHECK(cuMemsetD8(stamps, 0, kStampWords * sizeof(unsigned long long)));
    void* stampParams[] = {&stamps};
    unsigned long long unused[kWideParams] = {};
    void* wideParams[1 + kWideParams] = {&stamps};
    for (int i = 0; i < kWideParams; i++) {
        wideParams[1 + i] = &unused[i];
    }
    void* joinParams[] = {&stamps, &joinBuf, &payload, &roundWord, &arrivals};
    if (join) {
        if (openJoinBuffer(s, rank, kCounterBytes + world * blocks * kRowBytes, &joinBuf) != 0) {
            return 1;
        }
        payload = joinBuf + kCounterBytes + rank * blocks * kRowBytes;
        CHECK(cuMemAlloc(&roundWord, sizeof(unsigned long long)));
        CHECK(cuMemsetD8(roundWord, 0, sizeof(unsigned long long)));
    }

    void** params = join ? joinParams : setup.kernel == "wide" ? wideParams : stampParams;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    if (!setup.plain) {
        CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        CHECK(cuLaunchKernel(k.fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr));
        CHECK(cuStreamEndCapture(stream, &graph));
        CHECK(cuGraphInstantiate(&exec, graph, 0));
        CHECK(cuGraphUpload(exec, stream));
    }
    CUevent start, end;
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&end, CU_EVENT_DEFAULT));
    CHECK(cuStreamSynchronize(stream));

    for (int round = 0; round < rounds; round++) {
        if (!spinBarrier(&s->sync, round + 1, world)) {
            return 1;
        }
        CHECK(cuEventRecord(start, stream));
        if (setup.plain) {
            CHECK(cuLaunchKernel(k.fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr));
        } else {
            CHECK(cuGraphLaunch(exec, stream));
        }
        CHECK(cuEventRecord(end, stream));
        CHECK(cuEventSynchronize(end));
        CHECK(cuEventElapsedTime(&s->eventMs[rank][round], start, end));
        unsigned long long t[kStampWords] = {};
        CHECK(cuMemcpyDtoH(t, stamps, (join ? kStampWords : 1) * sizeof(unsigned long long)));
        if (t[5] != 0) {
            std::fprintf(stderr, "graph_start: process %d, round %d: the join waited 1 s for every process's "
                         "blocks and saw the counter at %llu of %llu\n", rank, round, t[4], t[5]);
            return 1;
        }
        s->entryNs[rank][round] = t[0];
        s->fenceNs[rank][round] = t[2] - t[1];
        s->joinedNs[rank][round] = t[3];
    }
    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(end));
    if (!setup.plain) {
        CHECK(cuGraphExecDestroy(exec));
        CHECK(cuGraphDestroy(graph));
    }
    CHECK(cuMemFree(stamps));
    if (join) {
        CHECK(cuMemFree(roundWord));
        if (rank != 0) {
            CHECK(cuIpcCloseMemHandle(joinBuf));
        }
        // process 0 frees its buffer once the others have closed it (or one has failed)
        if (spinBarrier(&s->sync, rounds + 1, world) && rank == 0) {
            CHECK(cuMemFree(joinBuf));
        }
    }
    return closeKernel(&k);
}

int main(int argc, char** argv) {
    int world = argc > 1 ? std::atoi(argv[1]) : 0;
    int rounds = argc > 2 ? std::atoi(argv[2]) : 0;
    int blocks = argc > 3 ? std::atoi(argv[3]) : 1;
    int threads = argc > 4 ? std::atoi(argv[4]) : 1;
    std::string kernel = argc > 5 ? argv[5] : "stamp";
    bool join = kernel == "join";
    const char* launchSetting = std::getenv("GRAPH_START_LAUNCH");
    std::string launch = launchSetting != nullptr ? launchSetting : "graph";
    if (launch != "graph" && launch != "plain") {
        std::fprintf(stderr, "graph_start: GRAPH_START_LAUNCH must be graph or plain, not %s\n", launch.c_str());
        return 2;
    }
    const char* percentSetting = std::getenv("GRAPH_START_PERCENT");
    int percent = percentSetting != nullptr ? std::atoi(percentSetting) : 100 / std::max(world, 1);
    if (percent < 1 || percent > 100) {
        std::fprintf(stderr, "graph_start: GRAPH_START_PERCENT must be 1-100, not %s\n", percentSetting);
        return 2;
    }
    if (world < 1 || world > kMaxWorld || rounds < 10 || rounds > kMaxRounds || blocks < 1 || blocks > 65535
        || threads < 1 || threads > 1024 || (kernel != "stamp" && kernel != "wide" && kernel != "shared" && !join)
        || (join && blocks > kMaxJoinBlocks) || argc > 6) {
        std::fprintf(stderr,
                     "usage: graph_start W ROUNDS [BLOCKS [THREADS [join|wide|shared]]] "
                     "(1 <= W <= %d, 10 <= ROUNDS <= %d, 1 <= BLOCKS <= 65535, at most %d with join, "
                     "1 <= THREADS <= 1024)\n",
                     kMaxWorld, kMaxRounds, kMaxJoinBlocks);
        return 2;
    }
    Shared* s = mapShared<Shared>();
    if (s == nullptr) {
        return 1;
    }
    // a failed process stops the others at the barrier instead of letting them launch without it
    if (runForked(&s->sync, world,
                  [&](int rank) {
                      return runProcess(s, rank, Setup{world, rounds, percent, static_cast<unsigned>(blocks),
                                                       static_cast<unsigned>(threads), kernel, launch == "plain"});
                  })) {
        std::fprintf(stderr, "graph_start: a process failed\n");
        return 1;
    }
    std::vector<double> slowest, rank0, spread, fence, lastEntryToJoined;
    for (int round = rounds / 10; round < rounds; round++) {
        double most = 0;
        unsigned long long first = ~0ull, last = 0, joined = 0;
        for (int rank = 0; rank < world; rank++) {
            most = std::max(most, 1e3 * s->eventMs[rank][round]);
            first = std::min(first, s->entryNs[rank][round]);
            last = std::max(last, s->entryNs[rank][round]);
            if (join) {
                joined = std::max(joined, s->joinedNs[rank][round]);
                fence.push_back(s->fenceNs[rank][round] / 1e3);
            }
        }
        slowest.push_back(most);
        rank0.push_back(1e3 * s->eventMs[0][round]);
        spread.push_back((last - first) / 1e3);
        if (join) {
            lastEntryToJoined.push_back((static_cast<double>(joined) - static_cast<double>(last)) / 1e3);
        }
    }
    std::printf("{\"world\": %d, \"mpsPercent\": %d, \"blocks\": %d, \"threads\": %d, \"kernel\": \"%s\", "
                "\"launch\": \"%s\", \"rounds\": %zu, "
                "\"slowestMedianUs\": %.2f, \"slowestP90Us\": %.2f, \"rank0MedianUs\": %.2f, \"rank0P90Us\": %.2f, "
                "\"entrySpreadMedianUs\": %.2f, \"entrySpreadP90Us\": %.2f",
                world, percent, blocks, threads, kernel.c_str(), launch.c_str(), slowest.size(),
                quantile(slowest, 0.5), quantile(slowest, 0.9), quantile(rank0, 0.5), quantile(rank0, 0.9),
                quantile(spread, 0.5), quantile(spread, 0.9));
    if (join) {
        std::printf(", \"fenceMedianUs\": %.2f, \"fenceP90Us\": %.2f, \"lastEntryToJoinedMedianUs\": %.2f",
                    quantile(fence, 0.5), quantile(fence, 0.9), quantile(lastEntryToJoined, 0.5));
    }
    std::printf("}\n");
    return 0;
}
