// SmHog: the "other process, display or stream" of issue #19 for the CUDA tests. It holds whole SMs — one
// 1024-thread block per SM with all of the SM's opt-in shared memory, so no block of another kernel fits
// beside it — until stopped, so that a kernel under test runs on the few SMs left over. The host sees each
// block start (and on which SM) through host-mapped flags and tells them to stop the same way; the blocks
// give up on their own after max_seconds, so a test that hangs cannot keep the GPU forever.
// Not thread-safe; one hog at a time per object.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <set>

namespace loradesk::kernels::test {

class SmHog {
  public:
    SmHog();   // allocates the flags; throws std::runtime_error on CUDA errors
    ~SmHog();  // stops the hog (it does not wait for it)
    SmHog(const SmHog&) = delete;
    SmHog& operator=(const SmHog&) = delete;

    // Blocks of the hog that fit on one SM (1 when it holds SMs whole, as intended).
    int blocks_per_sm() const;
    // Launches n_sms blocks on `stream` and returns once every one of them runs: false if they did not all
    // start within start_timeout_s (the GPU is busy with something else). Each block stops by itself after
    // max_seconds.
    bool start(int n_sms, cudaStream_t stream, double start_timeout_s = 10.0, double max_seconds = 60.0);
    void stop();
    // Whether every block still spins (none gave up on its own, none was stopped).
    bool holding() const;
    // The SMs the hog's blocks run on (valid after start()).
    std::set<int> sms() const;
    // Runs n_blocks blocks of 128 threads without shared memory (the gemv kernel's shape) on `stream`,
    // waits for them, and returns the SMs they ran on: none of them should be one of sms().
    std::set<int> probe(int n_blocks, cudaStream_t stream) const;

  private:
    static constexpr int kMaxBlocks = 1024;
    volatile int32_t* m_flags = nullptr;  // host-mapped: [0] stop, [1 + b] SM of block b + 1 once it runs
    int32_t* m_flags_dev = nullptr;
    int32_t* m_probe = nullptr;  // host-mapped, one SM id + 1 per probe block
    int32_t* m_probe_dev = nullptr;
    int m_blocks = 0;
    int m_smem = 0;
    cudaStream_t m_stream = nullptr;
};

// Polls `stream` until its work is done or timeout_s passed; never blocks inside the driver, so a kernel that
// hangs becomes a test failure rather than a CI job that waits forever. Returns cudaErrorNotReady on timeout.
cudaError_t wait_with_deadline(cudaStream_t stream, double timeout_s);

}  // namespace loradesk::kernels::test
