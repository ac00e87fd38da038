// What starting a CUDA graph costs W processes that share one GPU (under MPS when its daemon runs),
// with no library in the way: the floor under a replayed dispatch's time outside its kernels
// (docs/benchmarks.md, "Where a W = 4 decode round's time lies outside the kernels").
//
//   graph_start W ROUNDS [BLOCKS [THREADS]]
//
// Forks W processes before any CUDA call; each sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE to 100 / W
// (as the benchmark's ranks do), captures once a graph of one kernel (BLOCKS x THREADS, default
// 1 x 1, of which the first thread writes %globaltimer, the GPU's clock for every process: give the
// dispatch kernel's grid to see whether its shape costs anything), and per round: meets the others at a spin
// barrier in shared memory, records a start event, replays the graph, records an end event and
// waits for it, the way `moecomm bench` times a replayed half. The first tenth of the rounds is
// warm-up. Prints one JSON line of medians and p90s over the timed rounds, in us: the slowest
// process's event time per round (the benchmark's method), process 0's (pplx-kernels'), and the
// spread of the kernels' entries across the processes.
#include "driver_util.h"

#include <cuda.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

static const char* kPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry stamp(.param .u64 out)\n"
    "{\n .reg .b64 %rd<4>;\n .reg .b32 %r<3>;\n .reg .pred %p<1>;\n"
    " mov.u32 %r0, %tid.x;\n mov.u32 %r1, %ctaid.x;\n or.b32 %r2, %r0, %r1;\n"
    " setp.ne.u32 %p0, %r2, 0;\n @%p0 bra DONE;\n"
    " ld.param.u64 %rd0, [out];\n cvta.to.global.u64 %rd1, %rd0;\n"
    " mov.u64 %rd2, %globaltimer;\n st.global.u64 [%rd1], %rd2;\n"
    "DONE:\n ret;\n}\n";

constexpr int kMaxWorld = 64;
constexpr int kMaxRounds = 20000;

// Lives in memory shared by the forked processes (mapped before the fork).
struct Shared {
    std::atomic<long> arrived;
    std::atomic<int> failed;
    float eventMs[kMaxWorld][kMaxRounds];
    unsigned long long entryNs[kMaxWorld][kMaxRounds];
};

// Every process arrives at its epoch-th barrier, then all leave within a spin of one another.
static void barrier(Shared* s, long epoch, int world) {
    s->arrived.fetch_add(1);
    while (s->arrived.load() < epoch * world && s->failed.load() == 0) {
    }
}

static int runProcess(Shared* s, int rank, int world, int rounds, unsigned blocks, unsigned threads) {
    std::string share = std::to_string(100 / world);
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", share.c_str(), 1);
    DriverKernel k;
    if (openKernel(kPtx, "stamp", &k) != 0) {
        return 1;
    }
    CUstream stream = k.stream;
    CUdeviceptr stampWord;
    CHECK(cuMemAlloc(&stampWord, sizeof(unsigned long long)));
    void* params[] = {&stampWord};

    CUgraph graph;
    CUgraphExec exec;
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK(cuLaunchKernel(k.fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr));
    CHECK(cuStreamEndCapture(stream, &graph));
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    CHECK(cuGraphUpload(exec, stream));
    CUevent start, end;
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&end, CU_EVENT_DEFAULT));
    CHECK(cuStreamSynchronize(stream));

    for (int round = 0; round < rounds; round++) {
        barrier(s, round + 1, world);
        CHECK(cuEventRecord(start, stream));
        CHECK(cuGraphLaunch(exec, stream));
        CHECK(cuEventRecord(end, stream));
        CHECK(cuEventSynchronize(end));
        CHECK(cuEventElapsedTime(&s->eventMs[rank][round], start, end));
        CHECK(cuMemcpyDtoH(&s->entryNs[rank][round], stampWord, sizeof(unsigned long long)));
    }
    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(end));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuMemFree(stampWord));
    return closeKernel(&k);
}

static double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

int main(int argc, char** argv) {
    int world = argc > 1 ? std::atoi(argv[1]) : 0;
    int rounds = argc > 2 ? std::atoi(argv[2]) : 0;
    int blocks = argc > 3 ? std::atoi(argv[3]) : 1;
    int threads = argc > 4 ? std::atoi(argv[4]) : 1;
    if (world < 1 || world > kMaxWorld || rounds < 10 || rounds > kMaxRounds || blocks < 1 || blocks > 65535
        || threads < 1 || threads > 1024) {
        std::fprintf(stderr,
                     "usage: graph_start W ROUNDS [BLOCKS [THREADS]] (1 <= W <= %d, 10 <= ROUNDS <= %d, "
                     "1 <= BLOCKS <= 65535, 1 <= THREADS <= 1024)\n",
                     kMaxWorld, kMaxRounds);
        return 2;
    }
    void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    Shared* s = new (mem) Shared();
    std::vector<pid_t> children;
    for (int rank = 0; rank < world; rank++) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc = runProcess(s, rank, world, rounds, blocks, threads);
            if (rc != 0) {
                s->failed.store(1);  // the others stop waiting at the barrier
            }
            _exit(rc);
        }
        if (pid < 0) {
            std::perror("fork");
            s->failed.store(1);
            break;
        }
        children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failed = 1;
        }
    }
    if (failed || s->failed.load() != 0 || static_cast<int>(children.size()) != world) {
        std::fprintf(stderr, "graph_start: a process failed\n");
        return 1;
    }
    std::vector<double> slowest, rank0, spread;
    for (int round = rounds / 10; round < rounds; round++) {
        double most = 0;
        unsigned long long first = ~0ull, last = 0;
        for (int rank = 0; rank < world; rank++) {
            most = std::max(most, 1e3 * s->eventMs[rank][round]);
            first = std::min(first, s->entryNs[rank][round]);
            last = std::max(last, s->entryNs[rank][round]);
        }
        slowest.push_back(most);
        rank0.push_back(1e3 * s->eventMs[0][round]);
        spread.push_back((last - first) / 1e3);
    }
    std::printf("{\"world\": %d, \"blocks\": %d, \"threads\": %d, \"rounds\": %zu, \"slowestMedianUs\": %.2f, \"slowestP90Us\": %.2f, "
                "\"rank0MedianUs\": %.2f, \"rank0P90Us\": %.2f, \"entrySpreadMedianUs\": %.2f, "
                "\"entrySpreadP90Us\": %.2f}\n",
                world, blocks, threads, slowest.size(), quantile(slowest, 0.5), quantile(slowest, 0.9), quantile(rank0, 0.5),
                quantile(rank0, 0.9), quantile(spread, 0.5), quantile(spread, 0.9));
    return 0;
}
