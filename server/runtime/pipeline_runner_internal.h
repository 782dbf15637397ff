#pragma once
// What the files of PipelineRunner share and nothing else includes: how an event gets onto the
// runner's strand (Post, PostStoreCompletion, PostOperator, declared in pipeline_runner.h: which
// of them are dropped once the pipeline is deleted), and SendToSessions, the send of one message
// to the sessions it names (the action executor's and Delete's).
//
// Threading: the Post templates may be called from any thread; what they post runs on the
// runner's strand. SendToSessions runs on the strand.

#include <boost/asio/post.hpp>
#include <memory>
#include <utility>

#include "runtime/pipeline_runner.h"

namespace ckpt {

namespace pipeline_runner_internal {

using Sinks = SessionTable<std::shared_ptr<SessionSink>>;

// Sends `message` to each session of message.to that is still registered, in order: a copy to
// each but the last, which gets the message itself (a pipeline mostly has one session, so mostly
// nothing is copied). Runs on the strand; `sessions` is the runner's table, which only strand
// handlers change, and a sink's Send only queues or posts, so no entry goes away during the loop.
template <typename Message>
void SendToSessions(const Sinks& sessions, Message& message) {
  SessionSink* held = nullptr;  // the latest recipient found, not yet sent to
  for (SessionId id : message.to) {
    auto it = sessions.find(id);
    if (it == sessions.end()) continue;
    if (held) held->Send(message);
    held = it->second.get();
  }
  if (held) held->Send(std::move(message));
}

}  // namespace pipeline_runner_internal

template <typename F>
void PipelineRunner::Post(F&& f) {
  boost::asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable {
    if (self->deleted_) return;  // the one guard: a deleted pipeline hears nothing more
    f(*self);
  });
}

template <typename F>
void PipelineRunner::PostStoreCompletion(F&& f) {
  // Never dropped, not even after Delete: what is durable is complete, and a round that went to
  // the store before the delete is still waited for (the pending gauge, a savepoint's caller).
  boost::asio::post(strand_,
                    [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(*self); });
}

template <typename F>
void PipelineRunner::PostOperator(F&& f) {
  // Operator calls always run: each answers its caller, with NOT_FOUND once the pipeline is gone.
  boost::asio::post(strand_,
                    [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(*self); });
}

}  // namespace ckpt
