// Registers tasks "0" and "1" of one pipeline, acks every trigger, and exits 0 once a checkpoint
// completed (printing its id), or 1 if none did within 30 s.
//   consumer HOST:PORT JOB PIPELINE
#include <ckpt/worker.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s HOST:PORT JOB PIPELINE\n", argv[0]);
    return 2;
  }
  ckpt::sdk::WorkerRuntime runtime(argv[1]);
  ckpt::sdk::PipelineWorker* self = nullptr;
  std::atomic<int64_t> completed{0};

  ckpt::sdk::PipelineHandlers handlers;
  handlers.on_trigger = [&self](const ckpt::sdk::Trigger& t) {
    for (const char* task : {"0", "1"}) {
      self->Ack(t.checkpoint_id, task,
                {.uri = "mem://" + std::string(task) + "/" + std::to_string(t.checkpoint_id)});
    }
  };
  handlers.on_complete = [&completed](int64_t id, ckpt::sdk::CheckpointKind) {
    completed.store(id);
  };
  auto worker = runtime.AddPipeline(
      {.worker_id = "outside", .job_id = argv[2], .pipeline_id = argv[3], .task_ids = {"0", "1"}},
      std::move(handlers));
  self = worker.get();
  worker->Start();

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (completed.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  worker->Goodbye();
  worker->WaitUntilStopped(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  if (completed.load() == 0) {
    std::fprintf(stderr, "no checkpoint completed within 30 s\n");
    return 1;
  }
  std::printf("completed checkpoint %lld\n", static_cast<long long>(completed.load()));
  return 0;
}
