#include "rpc/admin_call_limit.h"

#include "rpc/admin_methods.h"
#include "rpc/caller_credentials.h"

namespace ckpt {

// One call's share: taken when gRPC makes the call, given back when it destroys it.
class AdminCallCounting final : public grpc::experimental::Interceptor {
 public:
  AdminCallCounting(AdminCallLimit& limit, std::string peer)
      : limit_(limit), peer_(std::move(peer)) {
    limit_.calls_.TryTake(peer_);  // no limit on the count itself: the handler judges it
  }
  ~AdminCallCounting() override {
    limit_.calls_.Remove(peer_);
    limit_.ended_.fetch_add(1, std::memory_order_relaxed);
  }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    methods->Proceed();
  }

 private:
  AdminCallLimit& limit_;
  const std::string peer_;
};

namespace {

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(AdminCallLimit& limit) : limit_(limit) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    if (AdminMethodName(info->method()).empty()) return nullptr;  // worker streams: not here
    return new AdminCallCounting(limit_, PeerAddress(info->server_context()->peer()));
  }

 private:
  AdminCallLimit& limit_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
AdminCallLimit::MakeFactory() {
  return std::make_unique<Factory>(*this);
}

}  // namespace ckpt
