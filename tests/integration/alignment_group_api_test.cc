// The alignment-group calls of the AdminService against a real daemon: put with the daemon's
// defaults and partial changes, get, list, delete, bad input, members holding a delete, and the
// groups surviving a restart.
#include <gtest/gtest.h>

#include "ckpt/v1/admin.grpc.pb.h"
#include "daemon_fixture.h"

namespace ckpt::testing {
namespace {

class AlignmentGroupApiTest : public DaemonTest {
 protected:
  void StartAdmin() {
    StartDaemon();
    admin_ = v1::AdminService::NewStub(channel_);
  }

  grpc::Status Put(const v1::AlignmentGroupSpec& spec, v1::AlignmentGroup* out = nullptr) {
    grpc::ClientContext ctx;
    v1::AlignmentGroup reply;
    auto s = admin_->PutAlignmentGroup(&ctx, spec, &reply);
    if (out) *out = reply;
    return s;
  }

  grpc::Status Get(const std::string& name, v1::AlignmentGroup* out) {
    grpc::ClientContext ctx;
    v1::AlignmentGroupRef ref;
    ref.set_name(name);
    return admin_->GetAlignmentGroup(&ctx, ref, out);
  }

  std::vector<std::string> Names() {
    grpc::ClientContext ctx;
    v1::ListAlignmentGroupsResponse reply;
    EXPECT_TRUE(admin_->ListAlignmentGroups(&ctx, {}, &reply).ok());
    std::vector<std::string> names;
    for (const auto& g : reply.groups()) names.push_back(g.spec().name());
    return names;
  }

  grpc::Status Delete(const std::string& name) {
    grpc::ClientContext ctx;
    v1::AlignmentGroupRef ref;
    ref.set_name(name);
    v1::DeleteAlignmentGroupResponse reply;
    return admin_->DeleteAlignmentGroup(&ctx, ref, &reply);
  }

  static v1::AlignmentGroupSpec Spec(const std::string& name) {
    v1::AlignmentGroupSpec spec;
    spec.set_name(name);
    return spec;
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(AlignmentGroupApiTest, APutTakesTheDefaultsThenChangesOnlyWhatItNames) {
  config_.defaults.interval_ms = 7000;
  StartAdmin();
  v1::AlignmentGroup group;
  ASSERT_TRUE(Put(Spec("ledger"), &group).ok());
  EXPECT_EQ(group.spec().interval_ms(), 7000) << "the daemon's defaults";
  EXPECT_EQ(group.spec().timeout_ms(), config_.defaults.timeout_ms);
  EXPECT_EQ(group.spec().position_interval(), 0);
  EXPECT_EQ(group.last_round_id(), 0);
  EXPECT_TRUE(group.members().empty());

  v1::AlignmentGroupSpec change = Spec("ledger");
  change.set_position_interval(500);
  ASSERT_TRUE(Put(change, &group).ok());
  EXPECT_EQ(group.spec().position_interval(), 500);
  EXPECT_EQ(group.spec().interval_ms(), 7000) << "left out: kept";

  ASSERT_TRUE(Put(Spec("blocks")).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"blocks", "ledger"}));
  v1::AlignmentGroup got;
  ASSERT_TRUE(Get("ledger", &got).ok());
  EXPECT_EQ(got.SerializeAsString(), group.SerializeAsString());
}

TEST_F(AlignmentGroupApiTest, BadInputIsRefusedWithTheFieldNamed) {
  StartAdmin();
  struct Case {
    std::string name;
    std::function<void(v1::AlignmentGroupSpec*)> change;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"", nullptr, "name"},
      {"a/b", nullptr, "name"},
      {std::string(300, 'g'), nullptr, "name"},
      {"g", [](auto* s) { s->set_interval_ms(5); }, "interval_ms"},
      {"g", [](auto* s) { s->set_timeout_ms(0); }, "timeout_ms"},
      {"g", [](auto* s) { s->set_min_pause_ms(-1); }, "min_pause_ms"},
      {"g", [](auto* s) { s->set_position_interval(-3); }, "position_interval"},
  };
  for (const Case& c : cases) {
    v1::AlignmentGroupSpec spec = Spec(c.name);
    if (c.change) c.change(&spec);
    const grpc::Status s = Put(spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_NE(s.error_message().find(c.field), std::string::npos) << s.error_message();
  }
  EXPECT_TRUE(Names().empty()) << "nothing stored";
  v1::AlignmentGroup got;
  EXPECT_EQ(Get("nope", &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Delete("nope").error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(AlignmentGroupApiTest, AMemberHoldsADeleteAndGroupsOutliveARestart) {
  StartAdmin();
  v1::AlignmentGroupSpec spec = Spec("ledger");
  spec.set_interval_ms(2500);
  ASSERT_TRUE(Put(spec).ok());
  ASSERT_TRUE(Put(Spec("blocks")).ok());

  PipelineSpec member = TestSpec("p", {"0"});
  member.alignment_group = "ledger";
  CreateThroughApi(member);
  v1::AlignmentGroup group;
  ASSERT_TRUE(Get("ledger", &group).ok());
  ASSERT_EQ(group.members_size(), 1);
  EXPECT_EQ(group.members(0).pipeline_id(), "p");
  const grpc::Status held = Delete("ledger");
  EXPECT_EQ(held.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(held.error_message().find("job/p"), std::string::npos) << held.error_message();
  ASSERT_TRUE(Delete("blocks").ok());

  StopDaemon();
  StartAdmin();
  EXPECT_EQ(Names(), (std::vector<std::string>{"ledger"})) << "from the store";
  ASSERT_TRUE(Get("ledger", &group).ok());
  EXPECT_EQ(group.spec().interval_ms(), 2500);
  ASSERT_EQ(group.members_size(), 1) << "the member joined again at load";
  EXPECT_EQ(Delete("ledger").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(DeleteThroughApi("p").ok());
  ASSERT_TRUE(Delete("ledger").ok()) << "no member left";
  EXPECT_TRUE(Names().empty());
}

TEST_F(AlignmentGroupApiTest, NoMoreGroupsThanPipelinesMayExist) {
  config_.limits.max_pipelines = 2;
  StartAdmin();
  ASSERT_TRUE(Put(Spec("a")).ok());
  ASSERT_TRUE(Put(Spec("b")).ok());
  const grpc::Status refused = Put(Spec("c"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("limits.max_pipelines"), std::string::npos);
  EXPECT_EQ(daemon_->metrics()
                .limit_refusals_total[static_cast<size_t>(CountedLimit::kMaxPipelines)]
                .load(),
            1u)
      << "counted in ckptd_limit_refusals_total{limit=\"max_pipelines\"}";
  v1::AlignmentGroupSpec change = Spec("a");
  change.set_interval_ms(4000);
  EXPECT_TRUE(Put(change).ok()) << "a change of one that exists is no new group";
  EXPECT_EQ(Names(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(AlignmentGroupApiTest, APipelineNamingNoGroupThatExistsIsNotCreated) {
  StartAdmin();
  PipelineSpec spec = TestSpec("p", {"0"});
  spec.alignment_group = "nope";
  std::promise<Status> created;
  daemon_->pipelines().Create(spec, [&](Result<std::shared_ptr<PipelineRunner>> r) {
    created.set_value(r.ok() ? Status::Ok() : r.status());
  });
  const Status s = created.get_future().get();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("ckptctl group put nope"), std::string::npos) << s.message();
  EXPECT_EQ(daemon_->pipelines().registry().Find({"job", "p"}), nullptr);
}

TEST_F(AlignmentGroupApiTest, AGroupOfTheConfigFileIsChangedByTheFileAlone) {
  AlignmentGroupSpec declared;
  declared.name = "ledger";
  declared.interval_ms = 3000;
  declared.position_interval = 50;
  config_.alignment_groups = {declared};
  StartAdmin();
  v1::AlignmentGroup group;
  ASSERT_TRUE(Get("ledger", &group).ok());
  EXPECT_TRUE(group.from_config());
  EXPECT_EQ(group.spec().interval_ms(), 3000);
  EXPECT_EQ(group.spec().position_interval(), 50);
  EXPECT_EQ(Put(Spec("ledger")).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Delete("ledger").error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // A reload changes it; one that no longer declares it hands it to the API.
  DaemonConfig next = config_;
  next.alignment_groups[0].interval_ms = 4000;
  daemon_->Reload(next);
  ASSERT_TRUE(Get("ledger", &group).ok());
  EXPECT_EQ(group.spec().interval_ms(), 4000);
  next.alignment_groups.clear();
  daemon_->Reload(next);
  ASSERT_TRUE(Get("ledger", &group).ok());
  EXPECT_FALSE(group.from_config());
  EXPECT_TRUE(Delete("ledger").ok());
}

}  // namespace
}  // namespace ckpt::testing
