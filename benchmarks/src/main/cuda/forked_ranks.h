// What the programs here that run W processes on one GPU (graph_start.cu, pplx_baseline.cu)
// share: the processes are forked before any CUDA call, meet at a spin barrier in memory mapped
// before the fork, and stop waiting for one another once any of them has failed.
#pragma once

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <new>
#include <vector>

// The barrier's and the failure's words, at the start of each program's shared memory.
struct RankSync {
    std::atomic<long> arrived;
    std::atomic<int> failed;
};

// Every process arrives at its epoch-th barrier (epochs count from 1 and every process passes the
// same ones), then all leave within a spin of one another; false once a process has failed.
inline bool spinBarrier(RankSync* sync, long epoch, int world) {
    sync->arrived.fetch_add(1);
    while (sync->arrived.load() < epoch * world && sync->failed.load() == 0) {
    }
    return sync->failed.load() == 0;
}

// A T (a program's shared state starts with a RankSync) value-initialised in memory shared with the
// processes to be forked, mapped for the rest of the process; nullptr when it could not be mapped.
template <typename T>
T* mapShared() {
    void* mem = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("mmap");
        return nullptr;
    }
    return new (mem) T();
}

// Forks `world` processes, process r running run(r) and exiting with its status (non-zero also
// raises sync->failed, so that the others stop at their barriers); waits for all of them. 0 when
// every process was started and exited with 0.
template <typename Run>
int runForked(RankSync* sync, int world, Run run) {
    std::vector<pid_t> children;
    for (int rank = 0; rank < world; rank++) {
        pid_t pid = fork();
        if (pid == 0) {
            int rc = run(rank);
            if (rc != 0) {
                sync->failed.store(1);
            }
            _exit(rc);
        }
        if (pid < 0) {
            std::perror("fork");
            sync->failed.store(1);
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
    return failed || sync->failed.load() != 0 || static_cast<int>(children.size()) != world;
}

// The q-quantile of v (the element at index q * size, clamped).
inline double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}
