// Where the forked rank processes of pplx_baseline.cu run, by the rule of our launcher's `--gpus`
// (LocalLauncher.placement, docs/gpu.md): per-rank puts rank r on GPU r mod n of the visible GPUs
// (CUDA_VISIBLE_DEVICES' entries, else every GPU the driver sees), shared puts every rank on the
// first; ranks that share a GPU get 100 / (ranks on it) percent of its SMs under MPS. So that both
// libraries of a same-run comparison are placed alike on a machine of one GPU or of several.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "forked_ranks.h"

struct RankPlacement {
    std::vector<std::string> rankDevices; // rank r's CUDA_VISIBLE_DEVICES entry

    int ranksOn(const std::string& device) const {
        return static_cast<int>(std::count(rankDevices.begin(), rankDevices.end(), device));
    }

    int gpus() const {
        std::vector<std::string> d = rankDevices;
        std::sort(d.begin(), d.end());
        return static_cast<int>(std::unique(d.begin(), d.end()) - d.begin());
    }

    int ranksPerGpu() const {
        int most = 1;
        for (const std::string& d : rankDevices) {
            most = std::max(most, ranksOn(d));
        }
        return most;
    }

    // What results record as "mode", in the words of our benchmark's (GpuRunner.mode).
    std::string mode() const {
        int world = static_cast<int>(rankDevices.size());
        char buf[128];
        if (gpus() == 1) {
            std::snprintf(buf, sizeof(buf), "%d processes on 1 GPU under MPS", world);
        } else if (ranksPerGpu() == 1) {
            std::snprintf(buf, sizeof(buf), "%d processes on %d GPUs, one each", world, gpus());
        } else {
            std::snprintf(buf, sizeof(buf), "%d processes on %d GPUs, up to %d per GPU under MPS", world, gpus(),
                          ranksPerGpu());
        }
        return buf;
    }

    // In rank r's process, before its first CUDA call: its GPU as device 0, and its share of the SMs
    // where it shares that GPU (unless the caller set one).
    void apply(int rank) const {
        const std::string& mine = rankDevices[rank];
        setenv("CUDA_VISIBLE_DEVICES", mine.c_str(), 1);
        int perGpu = ranksOn(mine);
        if (perGpu > 1) {
            setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(std::max(1, 100 / perGpu)).c_str(), 0);
        }
    }
};

// The GPUs the driver sees, counted in a child process so that this one makes no CUDA call before
// it forks its ranks (a CUDA context does not survive a fork); 1 when it cannot tell.
inline int deviceCountFromChild() {
    int* count = mapShared<int>();
    if (count == nullptr) {
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int n = 0;
        *count = cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
        _exit(0);
    }
    if (pid > 0) {
        int status = 0;
        waitpid(pid, &status, 0);
    }
    return std::max(1, *count);
}

// The placement of `world` ranks by `policy` ("per-rank" or "shared"); an empty one for another word.
inline RankPlacement placeRanks(int world, const std::string& policy) {
    RankPlacement p;
    if (policy != "per-rank" && policy != "shared") {
        return p;
    }
    std::vector<std::string> devices;
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible != nullptr) {
        std::string entry;
        for (const char* c = visible;; c++) {
            if (*c == ',' || *c == '\0') {
                size_t from = entry.find_first_not_of(" \t"), to = entry.find_last_not_of(" \t");
                if (from != std::string::npos) {
                    devices.push_back(entry.substr(from, to - from + 1));
                }
                entry.clear();
                if (*c == '\0') {
                    break;
                }
            } else {
                entry += *c;
            }
        }
    }
    if (devices.empty()) {
        int n = policy == "per-rank" ? deviceCountFromChild() : 1;
        for (int i = 0; i < n; i++) {
            devices.push_back(std::to_string(i));
        }
    }
    for (int r = 0; r < world; r++) {
        p.rankDevices.push_back(policy == "shared" ? devices.front() : devices[r % devices.size()]);
    }
    return p;
}
