// pplx-kernels measured beside ours, on the same GPU in the same call, by both libraries' methods
// (docs/benchmarks.md, "pplx-kernels by our method"). Built by scripts/gpu-pplx-baseline.sh
// against a checkout of pplx-kernels (its public source, commit 12cecfd: the AllToAllInterNode
// class, its NVSHMEM path, which the reference figures of BENCHMARKS.md measured); none of its
// code is part of this project, this program only calls its API.
//
//   [PPLX_GPUS=per-rank|shared] pplx_baseline W TOKENS [SAMPLES]
//
// Forks W processes before any CUDA call, placed on the GPUs as our benchmark places its ranks
// (rank_placement.h; PPLX_GPUS=per-rank, the default, or shared, as `moecomm bench --gpus`: one
// GPU each on a machine of W GPUs, all on the one GPU of a machine with one, ranks that share a GPU
// with 100 / (ranks on it) percent of its SMs under MPS); each
// joins one NVSHMEM job through a unique id shared in memory, and builds the deepseek-v3 shape
// (256 experts, top-8, hidden 7168, fp8 e4m3 tokens with an fp32 scale per 128, bf16 out) with
// m = TOKENS on every rank and uniformly random distinct experts per token (seeded by the rank).
// Then, one JSON line each, three ways of timing the same fused dispatch and combine kernels:
//   stream      pplx-kernels' own loop: an on-stream NVSHMEM barrier before each sample, events
//               around dispatch and around combine back to back, ten samples queued before the
//               host waits (its benchmark, bench_all_to_all.cpp);
//   host-plain  our method with plain launches: the processes meet at a spin barrier, each records
//               a start event, launches, records an end event and waits; again before combine
//               (`moecomm bench --launch plain --start host`, whole operations);
//   host-graph  the same with each operation captured once as a CUDA graph and replayed
//               (`moecomm bench --launch graph`, the mode of the issue's table).
// Every line has rank 0's median and p90 (the figure pplx-kernels reports), the slowest rank's per
// sample (ours), each rank's median and how often each rank was the slowest. 30 warm-up samples,
// then SAMPLES (default 200).
//
// The results are checked, not only timed: after the first dispatch of each way every rank
// compares its received rows (as a multiset per local expert, with their scales) and its per-expert
// counts against all ranks' inputs, regenerated from their seeds; each expert then returns its
// rows unchanged as bf16, so combine must give each token its own row times the sum of its weights.
#include "all_to_all/internode.h"
#include "core/buffer.h"
#include "forked_ranks.h"
#include "rank_placement.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kMaxWorld = 8;
constexpr int kMaxSamples = 2000;
constexpr int kWarmup = 30;
constexpr int kQueued = 10; // samples queued per host wait in pplx-kernels' loop
constexpr int kExperts = 256;
constexpr int kTopK = 8;
constexpr int kHidden = 7168;
constexpr int kScaleBlock = 128;
constexpr int kScales = kHidden / kScaleBlock;
constexpr int kWays = 3;
const char* const kWayNames[kWays] = {"stream", "host-plain", "host-graph"};

#define CUDA_OK(call)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, #call, cudaGetErrorString(e_)); \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

int g_rank = -1;

struct Shared {
    RankSync sync;
    std::atomic<int> uidReady;
    nvshmemx_uniqueid_t uid;
    float dispatchMs[kWays][kMaxWorld][kMaxSamples];
    float combineMs[kWays][kMaxWorld][kMaxSamples];
    int captured[kMaxWorld];              // host-graph: the rank captured its graphs
    int wayRan[kWays];                    // rank 0: the way ran (host-graph: every rank captured)
    char problem[kMaxWorld][256];         // a rank's failed check, empty when it passed
    char gpu[256];                        // rank 0: the device's name
};

// One rank's inputs, a pure function of its rank (every rank regenerates every rank's to check).
struct Inputs {
    std::vector<uint8_t> x;         // [m][H] fp8 e4m3
    std::vector<float> scale;       // [m][H/128]
    std::vector<uint32_t> indices;  // [m][K] distinct experts
    std::vector<float> weights;     // [m][K]
};

Inputs makeInputs(int rank, int m) {
    std::mt19937 gen(1000 + rank);
    Inputs in;
    in.x.resize(static_cast<size_t>(m) * kHidden);
    in.scale.resize(static_cast<size_t>(m) * kScales);
    in.indices.resize(static_cast<size_t>(m) * kTopK);
    in.weights.resize(static_cast<size_t>(m) * kTopK);
    std::uniform_real_distribution<float> value(-8.0f, 8.0f), weight(0.05f, 1.0f), scale(0.5f, 2.0f);
    std::vector<uint32_t> experts(kExperts);
    for (int t = 0; t < m; t++) {
        for (int e = 0; e < kExperts; e++) {
            experts[e] = e;
        }
        std::shuffle(experts.begin(), experts.end(), gen);
        for (int k = 0; k < kTopK; k++) {
            in.indices[t * kTopK + k] = experts[k];
            in.weights[t * kTopK + k] = weight(gen);
        }
        for (int h = 0; h < kHidden; h++) {
            in.x[static_cast<size_t>(t) * kHidden + h] = __nv_cvt_float_to_fp8(value(gen), __NV_SATFINITE, __NV_E4M3);
        }
        for (int j = 0; j < kScales; j++) {
            in.scale[t * kScales + j] = scale(gen);
        }
    }
    return in;
}

// A row's identity for the multiset check: its bytes and its scales.
std::string rowKey(const uint8_t* row, const float* scales) {
    std::string key(reinterpret_cast<const char*>(row), kHidden);
    key.append(reinterpret_cast<const char*>(scales), kScales * sizeof(float));
    return key;
}

float fp8ToFloat(uint8_t v) {
    __half_raw h = __nv_cvt_fp8_to_halfraw(v, __NV_E4M3);
    return __half2float(__half(h));
}

struct Rank {
    int rank, world, m, localExperts, capacity; // capacity: rows per local expert (m * W)
    cudaStream_t stream;
    pplx::AllToAllInterNode* a2a;
    uint8_t *x, *outExpert;
    float *xScale, *outScale, *weights;
    uint32_t* indices;
    int32_t* outCount;
    __nv_bfloat16 *inExpert, *outTokens;

    void dispatch() {
        a2a->dispatch(pplx::Strided1D<int32_t>(outCount, 1),
                      pplx::Strided2D<std::byte>(reinterpret_cast<std::byte*>(outExpert), kHidden,
                                                 static_cast<size_t>(kHidden) * capacity),
                      pplx::Strided3D<float>(outScale, 1, kScales, static_cast<size_t>(kScales) * capacity),
                      pplx::Strided1D<std::byte>(reinterpret_cast<std::byte*>(x), kHidden),
                      pplx::Strided2D<float>(xScale, 1, kScales), pplx::Strided2D<uint32_t>(indices, 1, kTopK), m,
                      nullptr, pplx::SplitMode::NONE, stream);
    }

    void combine() {
        a2a->combine<__nv_bfloat16, __nv_bfloat16>(
            pplx::Strided1D<__nv_bfloat16>(outTokens, kHidden), pplx::Strided2D<uint32_t>(indices, 1, kTopK),
            pplx::Strided2D<float>(weights, 1, kTopK),
            pplx::Strided2D<__nv_bfloat16>(inExpert, kHidden, static_cast<size_t>(kHidden) * capacity), m, nullptr,
            pplx::SplitMode::NONE, stream);
    }
};

// After a dispatch has completed: are the received rows and counts those the inputs route here?
// Then fills inExpert with each received row as bf16 (an identity expert) for the combine check.
// Returns "" when they are, else what differs.
std::string checkDispatch(Rank& r, const std::vector<Inputs>& all) {
    std::vector<int32_t> count(r.localExperts);
    std::vector<uint8_t> rows(static_cast<size_t>(r.localExperts) * r.capacity * kHidden);
    std::vector<float> scales(static_cast<size_t>(r.localExperts) * r.capacity * kScales);
    if (cudaMemcpy(count.data(), r.outCount, count.size() * sizeof(int32_t), cudaMemcpyDeviceToHost) != cudaSuccess
        || cudaMemcpy(rows.data(), r.outExpert, rows.size(), cudaMemcpyDeviceToHost) != cudaSuccess
        || cudaMemcpy(scales.data(), r.outScale, scales.size() * sizeof(float), cudaMemcpyDeviceToHost)
               != cudaSuccess) {
        return "copying the dispatch outputs back failed";
    }
    std::vector<__nv_bfloat16> expertRows(rows.size());
    for (int l = 0; l < r.localExperts; l++) {
        int expert = r.rank * r.localExperts + l;
        std::map<std::string, int> expected;
        for (int src = 0; src < r.world; src++) {
            for (int t = 0; t < r.m; t++) {
                for (int k = 0; k < kTopK; k++) {
                    if (static_cast<int>(all[src].indices[t * kTopK + k]) == expert) {
                        expected[rowKey(&all[src].x[static_cast<size_t>(t) * kHidden], &all[src].scale[t * kScales])]++;
                    }
                }
            }
        }
        int want = 0;
        for (auto& e : expected) {
            want += e.second;
        }
        if (count[l] != want) {
            return "expert " + std::to_string(expert) + ": count " + std::to_string(count[l]) + ", expected "
                   + std::to_string(want);
        }
        for (int j = 0; j < count[l]; j++) {
            size_t row = static_cast<size_t>(l) * r.capacity + j;
            auto it = expected.find(rowKey(&rows[row * kHidden], &scales[row * kScales]));
            if (it == expected.end() || it->second == 0) {
                return "expert " + std::to_string(expert) + ": row " + std::to_string(j)
                       + " is no token routed to it (or one too many times)";
            }
            it->second--;
            for (int h = 0; h < kHidden; h++) {
                expertRows[row * kHidden + h] = __float2bfloat16(fp8ToFloat(rows[row * kHidden + h]));
            }
        }
    }
    if (cudaMemcpy(r.inExpert, expertRows.data(), expertRows.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice)
        != cudaSuccess) {
        return "writing the experts' rows failed";
    }
    return "";
}

// After a combine whose experts returned their rows unchanged: token t must be its own row times
// the sum of its weights (bf16, so within 2% plus a small absolute term).
std::string checkCombine(Rank& r, const Inputs& mine) {
    std::vector<__nv_bfloat16> out(static_cast<size_t>(r.m) * kHidden);
    if (cudaMemcpy(out.data(), r.outTokens, out.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost)
        != cudaSuccess) {
        return "copying the combine output back failed";
    }
    for (int t = 0; t < r.m; t++) {
        float sum = 0;
        for (int k = 0; k < kTopK; k++) {
            sum += mine.weights[t * kTopK + k];
        }
        for (int h = 0; h < kHidden; h++) {
            float want = sum * __bfloat162float(__float2bfloat16(fp8ToFloat(mine.x[static_cast<size_t>(t) * kHidden + h])));
            float got = __bfloat162float(out[static_cast<size_t>(t) * kHidden + h]);
            if (!(std::fabs(got - want) <= 0.02f * std::fabs(want) + 0.05f)) {
                return "token " + std::to_string(t) + ", element " + std::to_string(h) + ": " + std::to_string(got)
                       + ", expected " + std::to_string(want);
            }
        }
    }
    return "";
}

template <typename T>
int deviceCopy(T** dst, const std::vector<T>& src) {
    CUDA_OK(cudaMalloc(dst, std::max<size_t>(1, src.size()) * sizeof(T)));
    CUDA_OK(cudaMemcpy(*dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
    return 0;
}

// Keeps a rank's check result for the parent to print; true when the check failed.
bool failedCheck(Shared* s, int rank, const std::string& problem) {
    std::snprintf(s->problem[rank], sizeof(s->problem[rank]), "%s", problem.c_str());
    return !problem.empty();
}

// Captures dispatch and combine as one graph each; false (and nothing captured) when the driver
// refuses, which every rank then learns at the next host barrier.
bool captureGraphs(Rank& r, cudaGraphExec_t* dispatchGraph, cudaGraphExec_t* combineGraph) {
    cudaGraph_t g = nullptr;
    for (int op = 0; op < 2; op++) {
        cudaGraphExec_t* exec = op == 0 ? dispatchGraph : combineGraph;
        if (cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            return false;
        }
        if (op == 0) {
            r.dispatch();
        } else {
            r.combine();
        }
        if (cudaStreamEndCapture(r.stream, &g) != cudaSuccess || cudaGraphInstantiate(exec, g, 0) != cudaSuccess
            || cudaGraphUpload(*exec, r.stream) != cudaSuccess) {
            std::fprintf(stderr, "rank %d: capturing pplx-kernels' %s failed: %s\n", r.rank,
                         op == 0 ? "dispatch" : "combine", cudaGetErrorString(cudaGetLastError()));
            return false;
        }
        cudaGraphDestroy(g);
    }
    return true;
}

// One way of timing: warm-up and timed samples into s->{dispatch,combine}Ms[way][rank]; the first
// sample (warm-up) is checked, its dispatch waited for before its combine. The caller's epoch
// counts host barriers across ways. Sets *ran to false when host-graph could not capture.
int runWay(Shared* s, Rank& r, int way, int samples, long* epoch, const std::vector<Inputs>& all, bool* ran) {
    const int total = kWarmup + samples;
    cudaGraphExec_t dispatchGraph = nullptr, combineGraph = nullptr;
    *ran = true;
    if (way == 2) {
        s->captured[r.rank] = captureGraphs(r, &dispatchGraph, &combineGraph) ? 1 : 0;
        cudaGetLastError();
        if (!spinBarrier(&s->sync, ++*epoch, r.world)) {
            return 1;
        }
        for (int rank = 0; rank < r.world; rank++) {
            *ran = *ran && s->captured[rank] == 1;
        }
        if (!*ran) {
            return 0;
        }
    }
    std::vector<cudaEvent_t> ev(4 * total);
    for (auto& e : ev) {
        CUDA_OK(cudaEventCreate(&e));
    }
    CUDA_OK(cudaMemset(r.outExpert, 0xff, static_cast<size_t>(r.localExperts) * r.capacity * kHidden));
    CUDA_OK(cudaMemset(r.outTokens, 0xff, static_cast<size_t>(r.m) * kHidden * sizeof(__nv_bfloat16)));
    CUDA_OK(cudaStreamSynchronize(r.stream));
    nvshmem_barrier_all();
    for (int i = 0; i < total; i++) {
        cudaEvent_t* e = &ev[4 * i];
        bool check = i == 0;
        if (way == 0) {
            nvshmemx_barrier_all_on_stream(r.stream);
        } else if (!spinBarrier(&s->sync, ++*epoch, r.world)) {
            return 1;
        }
        CUDA_OK(cudaEventRecord(e[0], r.stream));
        if (way == 2) {
            CUDA_OK(cudaGraphLaunch(dispatchGraph, r.stream));
        } else {
            r.dispatch();
        }
        CUDA_OK(cudaEventRecord(e[1], r.stream));
        if (way != 0 || check) {
            CUDA_OK(cudaEventSynchronize(e[1]));
        }
        if (check && failedCheck(s, r.rank, checkDispatch(r, all))) {
            return 1;
        }
        if (way != 0 && !spinBarrier(&s->sync, ++*epoch, r.world)) {
            return 1;
        }
        CUDA_OK(cudaEventRecord(e[2], r.stream));
        if (way == 2) {
            CUDA_OK(cudaGraphLaunch(combineGraph, r.stream));
        } else {
            r.combine();
        }
        CUDA_OK(cudaEventRecord(e[3], r.stream));
        if (way != 0 || check || (i + 1) % kQueued == 0 || i == total - 1) {
            CUDA_OK(cudaEventSynchronize(e[3]));
        }
        if (check && failedCheck(s, r.rank, checkCombine(r, all[r.rank]))) {
            return 1;
        }
    }
    CUDA_OK(cudaStreamSynchronize(r.stream));
    for (int i = 0; i < samples; i++) {
        cudaEvent_t* e = &ev[4 * (kWarmup + i)];
        CUDA_OK(cudaEventElapsedTime(&s->dispatchMs[way][r.rank][i], e[0], e[1]));
        CUDA_OK(cudaEventElapsedTime(&s->combineMs[way][r.rank][i], e[2], e[3]));
    }
    for (auto& e : ev) {
        CUDA_OK(cudaEventDestroy(e));
    }
    if (dispatchGraph != nullptr) {
        CUDA_OK(cudaGraphExecDestroy(dispatchGraph));
        CUDA_OK(cudaGraphExecDestroy(combineGraph));
    }
    return 0;
}

int runProcess(Shared* s, const RankPlacement& placement, int rank, int world, int m, int samples) {
    g_rank = rank;
    placement.apply(rank);
    setenv("NVSHMEM_REMOTE_TRANSPORT", "none", 1);
    setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
    // pplx-kernels sizes its combine buffers for every token at every expert in fp32
    long long symmetric = 2LL * m * kExperts * kHidden * 4 + m * (kExperts + 1LL) * 8192 + (256LL << 20);
    setenv("NVSHMEM_SYMMETRIC_SIZE", std::to_string(symmetric).c_str(), 0);
    CUDA_OK(cudaSetDevice(0));
    if (rank == 0) {
        cudaDeviceProp props;
        CUDA_OK(cudaGetDeviceProperties(&props, 0));
        std::snprintf(s->gpu, sizeof(s->gpu), "%s", props.name);
        if (nvshmemx_get_uniqueid(&s->uid) != 0) {
            std::fprintf(stderr, "rank 0: nvshmemx_get_uniqueid failed\n");
            return 1;
        }
        s->uidReady.store(1);
    }
    while (s->uidReady.load() == 0 && s->sync.failed.load() == 0) {
    }
    if (s->sync.failed.load() != 0) {
        return 1;
    }
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, world, &s->uid, &attr) != 0
        || nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        std::fprintf(stderr, "rank %d: NVSHMEM init failed\n", rank);
        return 1;
    }
    std::vector<Inputs> all;
    for (int src = 0; src < world; src++) {
        all.push_back(makeInputs(src, m));
    }
    Rank r{};
    r.rank = rank;
    r.world = world;
    r.m = m;
    r.localExperts = kExperts / world;
    r.capacity = m * world;
    CUDA_OK(cudaStreamCreate(&r.stream));
    r.a2a = new pplx::AllToAllInterNode(m, kExperts, kTopK, rank, world, 1, kHidden, kHidden, kScales * sizeof(float));
    const Inputs& mine = all[rank];
    if (deviceCopy(&r.x, mine.x) || deviceCopy(&r.xScale, mine.scale) || deviceCopy(&r.indices, mine.indices)
        || deviceCopy(&r.weights, mine.weights)) {
        return 1;
    }
    size_t slots = static_cast<size_t>(r.localExperts) * r.capacity;
    CUDA_OK(cudaMalloc(&r.outCount, r.localExperts * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&r.outExpert, slots * kHidden));
    CUDA_OK(cudaMalloc(&r.outScale, slots * kScales * sizeof(float)));
    CUDA_OK(cudaMalloc(&r.inExpert, slots * kHidden * sizeof(__nv_bfloat16)));
    CUDA_OK(cudaMemset(r.inExpert, 0, slots * kHidden * sizeof(__nv_bfloat16)));
    CUDA_OK(cudaMalloc(&r.outTokens, static_cast<size_t>(m) * kHidden * sizeof(__nv_bfloat16)));
    long epoch = 0;
    for (int way = 0; way < kWays; way++) {
        bool ran = false;
        if (runWay(s, r, way, samples, &epoch, all, &ran) != 0) {
            return 1;
        }
        if (rank == 0) {
            s->wayRan[way] = ran ? 1 : 0;
        }
    }
    CUDA_OK(cudaStreamSynchronize(r.stream));
    nvshmem_barrier_all();
    delete r.a2a;
    nvshmem_finalize();
    return 0;
}

// "name": {"rank0MedianUs": .., "rank0P90Us": .., "slowestMedianUs": .., "slowestP90Us": ..,
// "rankMediansUs": [one per rank], "slowestRankShare": [how often each rank was the slowest]}
std::string stats(const char* name, float (*ms)[kMaxSamples], int world, int samples) {
    std::vector<double> slowest;
    std::vector<std::vector<double>> perRank(world);
    std::vector<int> slowestCount(world);
    for (int i = 0; i < samples; i++) {
        int most = 0;
        for (int rank = 0; rank < world; rank++) {
            perRank[rank].push_back(1e3 * ms[rank][i]);
            most = ms[rank][i] > ms[most][i] ? rank : most;
        }
        slowest.push_back(1e3 * ms[most][i]);
        slowestCount[most]++;
    }
    std::string medians, shares;
    for (int rank = 0; rank < world; rank++) {
        char one[64];
        std::snprintf(one, sizeof(one), "%s%.2f", rank == 0 ? "" : ", ", quantile(perRank[rank], 0.5));
        medians += one;
        std::snprintf(one, sizeof(one), "%s%.2f", rank == 0 ? "" : ", ", static_cast<double>(slowestCount[rank]) / samples);
        shares += one;
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "\"%s\": {\"rank0MedianUs\": %.2f, \"rank0P90Us\": %.2f, \"slowestMedianUs\": %.2f, "
                  "\"slowestP90Us\": %.2f, ",
                  name, quantile(perRank[0], 0.5), quantile(perRank[0], 0.9), quantile(slowest, 0.5),
                  quantile(slowest, 0.9));
    return buf + ("\"rankMediansUs\": [" + medians + "], \"slowestRankShare\": [" + shares + "]}");
}

} // namespace

int main(int argc, char** argv) {
    int world = argc > 1 ? std::atoi(argv[1]) : 0;
    int tokens = argc > 2 ? std::atoi(argv[2]) : 0;
    int samples = argc > 3 ? std::atoi(argv[3]) : 200;
    if (argc < 3 || argc > 4 || world < 2 || world > kMaxWorld || kExperts % world != 0 || tokens < 1
        || tokens > 1024 || samples < 10 || samples > kMaxSamples - kWarmup) {
        std::fprintf(stderr, "usage: [PPLX_GPUS=per-rank|shared] pplx_baseline W TOKENS [SAMPLES] (2 <= W <= %d, W divides %d, 1 <= TOKENS <= 1024, "
                     "10 <= SAMPLES <= %d)\n", kMaxWorld, kExperts, kMaxSamples - kWarmup);
        return 2;
    }
    const char* policy = std::getenv("PPLX_GPUS");
    RankPlacement placement = placeRanks(world, policy != nullptr ? policy : "per-rank");
    if (placement.rankDevices.empty()) {
        std::fprintf(stderr, "pplx_baseline: PPLX_GPUS is '%s', give per-rank or shared\n", policy);
        return 2;
    }
    Shared* s = mapShared<Shared>();
    if (s == nullptr) {
        return 1;
    }
    int failed = runForked(&s->sync, world,
                           [&](int rank) { return runProcess(s, placement, rank, world, tokens, samples); });
    for (int rank = 0; rank < world; rank++) {
        if (s->problem[rank][0] != 0) {
            std::fprintf(stderr, "pplx_baseline: W = %d, %d tokens, rank %d: %s\n", world, tokens, rank, s->problem[rank]);
        }
    }
    if (failed) {
        std::fprintf(stderr, "pplx_baseline: W = %d, %d tokens: a process failed\n", world, tokens);
        return 1;
    }
    // what the results record beside the figures (BENCHMARKS.md, "Record")
    char date[16];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
    const char* pplxCommit = std::getenv("PPLX_KERNELS_COMMIT");
    char record[512];
    std::snprintf(record, sizeof(record),
                  "\"gpu\": \"%s\", \"mode\": \"%s\", \"date\": \"%s\", \"pplxCommit\": \"%s\"",
                  s->gpu, placement.mode().c_str(), date, pplxCommit != nullptr ? pplxCommit : "unknown");
    for (int way = 0; way < kWays; way++) {
        if (s->wayRan[way] == 0) {
            std::printf("{\"library\": \"pplx-kernels\", \"world\": %d, \"tokens\": %d, \"timing\": \"%s\", "
                        "%s, \"ran\": false, \"why\": \"its kernels could not be captured as CUDA graphs\"}\n",
                        world, tokens, kWayNames[way], record);
            continue;
        }
        std::printf("{\"library\": \"pplx-kernels\", \"preset\": \"deepseek-v3\", \"world\": %d, \"tokens\": %d, "
                    "\"timing\": \"%s\", \"samples\": %d, %s, \"verified\": true, %s, %s}\n",
                    world, tokens, kWayNames[way], samples, record,
                    stats("dispatch", s->dispatchMs[way], world, samples).c_str(),
                    stats("combine", s->combineMs[way], world, samples).c_str());
    }
    return 0;
}
