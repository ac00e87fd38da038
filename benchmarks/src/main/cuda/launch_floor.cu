// The driver's own cost of a kernel launch, measured from C++ with no JVM or JNI in the way: the
// floor under LaunchCostBenchmark's Java figures (scripts/gpu-bench.sh builds and runs it in the
// same run). Host time per call of
//   - cuLaunchKernel of an empty kernel with 24 eight-byte parameters (as many as the
//     all-to-all kernels take), enqueued on one stream and drained every 64 launches;
//   - cuStreamQuery on an idle stream.
// Prints one JSON line: {"launchNs": median, "launchP90Ns": ..., "streamQueryNs": median}.
#include "driver_util.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

static const char* kPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry empty(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3,"
    " .param .u64 p4, .param .u64 p5, .param .u64 p6, .param .u64 p7, .param .u64 p8,"
    " .param .u64 p9, .param .u64 p10, .param .u64 p11, .param .u64 p12, .param .u64 p13,"
    " .param .u64 p14, .param .u64 p15, .param .u64 p16, .param .u64 p17, .param .u64 p18,"
    " .param .u64 p19, .param .u64 p20, .param .u64 p21, .param .u64 p22, .param .u64 p23)\n"
    "{\n ret;\n}\n";

// Median and p90 (nanoseconds per call) of `batches` batches of `perBatch` calls of f.
template <typename F>
static void perCall(int batches, int perBatch, F f, double* median, double* p90) {
    std::vector<double> ns;
    for (int b = 0; b < batches; b++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < perBatch; i++) {
            f();
        }
        auto t1 = std::chrono::steady_clock::now();
        ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / perBatch);
    }
    std::sort(ns.begin(), ns.end());
    *median = ns[ns.size() / 2];
    *p90 = ns[(ns.size() * 9) / 10];
}

int main() {
    DriverKernel k;
    if (openKernel(kPtx, "empty", &k) != 0) {
        return 1;
    }
    CUstream stream = k.stream;

    unsigned long long values[24] = {};
    void* params[24];
    for (int i = 0; i < 24; i++) {
        params[i] = &values[i];
    }
    CUresult failed = CUDA_SUCCESS;
    auto launch = [&] {
        CUresult r = cuLaunchKernel(k.fn, 1, 1, 1, 256, 1, 1, 0, stream, params, nullptr);
        if (r != CUDA_SUCCESS) failed = r;
    };
    auto query = [&] { cuStreamQuery(stream); };
    // warm-up, then measured batches of 64 launches (drained between batches, untimed)
    double launchMedian = 0, launchP90 = 0, queryMedian = 0, queryP90 = 0;
    for (int round = 0; round < 2; round++) {
        std::vector<double> ns;
        for (int b = 0; b < 200; b++) {
            double m = 0, p = 0;
            perCall(1, 64, launch, &m, &p);
            ns.push_back(m);
            CHECK(cuStreamSynchronize(stream));
        }
        std::sort(ns.begin(), ns.end());
        launchMedian = ns[ns.size() / 2];
        launchP90 = ns[(ns.size() * 9) / 10];
    }
    CHECK(failed);
    perCall(200, 64, query, &queryMedian, &queryP90);
    std::printf("{\"launchNs\": %.1f, \"launchP90Ns\": %.1f, \"streamQueryNs\": %.1f, \"streamQueryP90Ns\": %.1f}\n",
                launchMedian, launchP90, queryMedian, queryP90);
    return closeKernel(&k);
}
