#pragma once
// A stand-in for one ckptd of an HA group, for the clients' tests: a real gRPC server on
// 127.0.0.1:0 serving AdminService and WorkerService either as a standby (every call but
// GetDaemonStatus: UNAVAILABLE with the `ckpt-leader` trailer, as server/rpc/gatekeeper.cc does)
// or as a leader (a pipeline list of its own, welcome and scripted triggers on Connect).
//
// Threading: safe for concurrent use; the services run on gRPC's sync threads.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/v1/admin.grpc.pb.h"
#include "ckpt/v1/worker.grpc.pb.h"

namespace ckpt::testing {

class FakeHaDaemon {
 public:
  enum class Role { kLeader, kStandby };

  // A trigger a leader sends after its welcome: checkpoint id and the epoch stamped on it.
  struct ScriptedTrigger {
    int64_t checkpoint_id;
    int64_t leader_epoch;
  };

  FakeHaDaemon(std::string name, Role role, int64_t epoch)
      : name_(std::move(name)), role_(role), epoch_(epoch), admin_(this), worker_(this) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&admin_);
    builder.RegisterService(&worker_);
    server_ = builder.BuildAndStart();
  }
  ~FakeHaDaemon() { Shutdown(); }
  FakeHaDaemon(const FakeHaDaemon&) = delete;
  FakeHaDaemon& operator=(const FakeHaDaemon&) = delete;

  // Ends every call at once (streams see the daemon go away) and stops listening.
  void Shutdown() {
    if (!server_) return;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // What a standby names as the leader ("" : none known).
  void set_leader_hint(std::string hint) {
    std::lock_guard<std::mutex> lock(mu_);
    leader_hint_ = std::move(hint);
  }
  void set_triggers(std::vector<ScriptedTrigger> triggers) {
    std::lock_guard<std::mutex> lock(mu_);
    triggers_ = std::move(triggers);
  }

  int admin_calls() const { return admin_calls_.load(); }  // not counting GetDaemonStatus
  int status_calls() const { return status_calls_.load(); }
  int connects() const { return connects_.load(); }  // Connect streams, refused ones too
  // The takeover flag of each hello a leader welcomed, in order.
  std::vector<bool> welcomed_hellos() const {
    std::lock_guard<std::mutex> lock(mu_);
    return takeovers_;
  }

 private:
  std::string leader_hint() const {
    std::lock_guard<std::mutex> lock(mu_);
    return leader_hint_;
  }
  // A standby's refusal, as the daemon's Gatekeeper::CheckServing words it.
  grpc::Status Refuse(grpc::ServerContext* context) const {
    context->AddTrailingMetadata("ckpt-leader", leader_hint());
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this ckptd is a standby");
  }

  class Admin final : public v1::AdminService::Service {
   public:
    explicit Admin(FakeHaDaemon* daemon) : daemon_(daemon) {}
    grpc::Status GetDaemonStatus(grpc::ServerContext*, const v1::GetDaemonStatusRequest*,
                                 v1::DaemonStatus* status) override {
      ++daemon_->status_calls_;
      status->set_version("fake");
      const bool standby = daemon_->role_ == Role::kStandby;
      status->set_role(standby ? v1::DAEMON_ROLE_STANDBY : v1::DAEMON_ROLE_LEADER);
      status->set_leader_address(standby ? daemon_->leader_hint() : daemon_->address());
      status->set_leader_epoch(daemon_->epoch_);
      status->set_pipelines(1);
      return grpc::Status::OK;
    }
    grpc::Status ListPipelines(grpc::ServerContext* context, const v1::ListPipelinesRequest*,
                               v1::ListPipelinesResponse* response) override {
      ++daemon_->admin_calls_;
      if (daemon_->role_ == Role::kStandby) return daemon_->Refuse(context);
      v1::PipelineSpec* spec = response->add_pipelines()->mutable_spec();
      spec->set_job_id("job");
      spec->set_pipeline_id("p-of-" + daemon_->name_);
      return grpc::Status::OK;
    }
    grpc::Status CreatePipeline(grpc::ServerContext* context, const v1::PipelineSpec* spec,
                                v1::Pipeline* pipeline) override {
      ++daemon_->admin_calls_;
      if (daemon_->role_ == Role::kStandby) return daemon_->Refuse(context);
      *pipeline->mutable_spec() = *spec;
      return grpc::Status::OK;
    }

    grpc::Status TriggerSavepoint(grpc::ServerContext* context,
                                  const v1::TriggerSavepointRequest* request,
                                  grpc::ServerWriter<v1::SavepointProgress>* writer) override {
      ++daemon_->admin_calls_;
      if (daemon_->role_ == Role::kStandby) return daemon_->Refuse(context);
      // At once the final word: one pipeline's savepoint, completed.
      v1::SavepointProgress progress;
      progress.set_job_id(request->job_id());
      progress.set_status(v1::SAVEPOINT_STATUS_COMPLETED);
      progress.set_final(true);
      v1::PipelineSavepoint* savepoint = progress.add_savepoints();
      savepoint->set_pipeline_id("p-of-" + daemon_->name_);
      savepoint->set_savepoint_id(5);
      savepoint->set_status(v1::SAVEPOINT_STATUS_COMPLETED);
      savepoint->set_location("mem://savepoint-5");
      writer->Write(progress);
      return grpc::Status::OK;
    }

   private:
    FakeHaDaemon* const daemon_;
  };

  class Worker final : public v1::WorkerService::Service {
   public:
    explicit Worker(FakeHaDaemon* daemon) : daemon_(daemon) {}
    grpc::Status Connect(
        grpc::ServerContext* context,
        grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override {
      ++daemon_->connects_;
      if (daemon_->role_ == Role::kStandby) return daemon_->Refuse(context);
      v1::WorkerMessage hello;
      if (!stream->Read(&hello) || !hello.has_hello()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "hello first");
      }
      std::vector<ScriptedTrigger> triggers;
      {
        std::lock_guard<std::mutex> lock(daemon_->mu_);
        daemon_->takeovers_.push_back(hello.hello().takeover());
        triggers = daemon_->triggers_;
      }
      v1::CoordinatorMessage welcome;
      welcome.mutable_welcome()->set_session_id(daemon_->name_);
      welcome.mutable_welcome()->set_leader_epoch(daemon_->epoch_);
      welcome.mutable_welcome()->set_heartbeat_interval_ms(60'000);
      stream->Write(welcome);
      for (const ScriptedTrigger& t : triggers) {
        v1::CoordinatorMessage trigger;
        trigger.mutable_trigger()->set_checkpoint_id(t.checkpoint_id);
        trigger.mutable_trigger()->set_leader_epoch(t.leader_epoch);
        stream->Write(trigger);
      }
      v1::WorkerMessage message;
      while (stream->Read(&message)) {
        if (message.has_goodbye()) return grpc::Status::OK;
      }
      return grpc::Status::OK;
    }

   private:
    FakeHaDaemon* const daemon_;
  };

  // Constant after construction.
  const std::string name_;
  const Role role_;
  const int64_t epoch_;
  int port_ = 0;

  Admin admin_;
  Worker worker_;
  std::unique_ptr<grpc::Server> server_;  // touched by the constructor and Shutdown only

  std::atomic<int> admin_calls_{0};
  std::atomic<int> status_calls_{0};
  std::atomic<int> connects_{0};

  mutable std::mutex mu_;
  std::string leader_hint_;                // guarded by mu_
  std::vector<ScriptedTrigger> triggers_;  // guarded by mu_
  std::vector<bool> takeovers_;            // guarded by mu_
};

}  // namespace ckpt::testing
