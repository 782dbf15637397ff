// Registers tasks "0" and "1" of one pipeline, acks every trigger, and exits 0 once a checkpoint
// completed (printing its id), or 1 if none did within 30 s.
//   consumer HOST:PORT JOB PIPELINE
#include <ckpt/worker.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s HOST:PORT JOB PIPELINE\n", argv[0]);
    return 2;
  }
  // What the handlers touch is declared before the runtime, so that it outlives every handler
  // (the runtime's destructor is the last point one may run).
  ckpt::sdk::PipelineWorker* self = nullptr;
  std::mutex mu;
  std::condition_variable done;
  int64_t completed = 0;  // guarded by mu
  ckpt::sdk::WorkerRuntime runtime(argv[1]);

  ckpt::sdk::PipelineHandlers handlers;
  handlers.on_trigger = [&self](const ckpt::sdk::Trigger& t) {
    for (const char* task : {"0", "1"}) {
      self->Ack(t.checkpoint_id, task,
                {.uri = "mem://" + std::string(task) + "/" + std::to_string(t.checkpoint_id)});
    }
  };
  handlers.on_complete = [&](int64_t id, ckpt::sdk::CheckpointKind) {
    std::lock_guard<std::mutex> lock(mu);
    completed = id;
    done.notify_all();
  };
  auto worker = runtime.AddPipeline(
      {.worker_id = "outside", .job_id = argv[2], .pipeline_id = argv[3], .task_ids = {"0", "1"}},
      std::move(handlers));
  self = worker.get();
  worker->Start();

  int64_t first_completed = 0;
  {
    std::unique_lock<std::mutex> lock(mu);
    done.wait_for(lock, std::chrono::seconds(30), [&] { return completed != 0; });
    first_completed = completed;
  }
  worker->Goodbye();
  worker->WaitUntilStopped(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  if (first_completed == 0) {
    std::fprintf(stderr, "no checkpoint completed within 30 s\n");
    return 1;
  }
  std::printf("completed checkpoint %lld\n", static_cast<long long>(first_completed));
  return 0;
}
