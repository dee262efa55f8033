// parallel_for.h — run independent jobs on a few threads, for the checker's reference work.
//
// The float64 reference recomputes every checked request position by position; the requests of
// one step are independent of each other, so their references can be extended at the same time.
// Which thread runs a job never changes what it computes (each job touches only its own data), so
// the results are bit-identical to a serial loop; the checks that read them stay serial.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace kv {

// The most threads one process's CPU-bound jobs may use; 0: no limit. `kvcheck run -j N` sets it
// to its share of the cores before it forks the N scenario workers, which inherit it, so that N
// runs at once never ask for more threads than the machine has.
inline std::atomic<unsigned>& worker_count_limit() {
  static std::atomic<unsigned> limit{0};
  return limit;
}

// Workers for CPU-bound jobs on this machine: one per hardware thread (at least 1), at most
// worker_count_limit().
inline unsigned default_worker_count() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const unsigned limit = worker_count_limit().load();
  return limit > 0 ? std::min(cores, limit) : cores;
}

// Calls job(i) once for every i in [0, n), on at most `max_workers` threads (the calling thread
// is one of them). Jobs are handed out one at a time, so long and short ones balance. With fewer
// than 2 jobs or 1 worker it is a plain loop on the calling thread. If jobs throw, every thread
// still finishes, and the exception of the lowest-numbered failing job is rethrown here — the
// one a serial loop would have thrown first.
template <class Job>
void parallel_for(std::size_t n, unsigned max_workers, const Job& job) {
  const std::size_t workers = std::min<std::size_t>(n, std::max(1u, max_workers));
  if (workers < 2) {
    for (std::size_t i = 0; i < n; ++i) job(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::size_t error_index = n;
  std::exception_ptr error;
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        job(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (std::size_t t = 1; t < workers; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads to be had: fewer workers, same work
      break;
    }
  }
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace kv
