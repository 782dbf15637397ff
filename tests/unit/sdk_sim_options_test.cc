#include <gtest/gtest.h>

#include <vector>

#include "sim/sim_options.h"

namespace ckpt::sim {
namespace {

using std::chrono::milliseconds;

ParsedCommandLine Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "ckpt-worker-sim");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

TEST(SdkSimOptions, Defaults) {
  ParsedCommandLine parsed = Parse({"--job", "j"});
  ASSERT_TRUE(parsed.run) << parsed.message;
  const SimOptions& o = parsed.options;
  EXPECT_EQ(o.server, "127.0.0.1:7070");
  EXPECT_EQ(o.job, "j");
  EXPECT_EQ(o.pipelines, 1);
  EXPECT_EQ(o.tasks_per_pipeline, 1);
  EXPECT_EQ(o.streams_per_pipeline, 1);
  EXPECT_EQ(o.ack_delay_ms, 0);
  EXPECT_EQ(o.decline_rate, 0);
  EXPECT_EQ(o.duration, milliseconds(0));
  EXPECT_EQ(o.threads, 2);
  EXPECT_FALSE(o.json);
  EXPECT_EQ(o.worker_id.rfind("sim-", 0), 0u);
  EXPECT_FALSE(o.seed.has_value());
}

TEST(SdkSimOptions, ServerListOfAnHaGroup) {
  ParsedCommandLine parsed = Parse({"--server", "a:1,b:2", "--job", "j"});
  ASSERT_TRUE(parsed.run) << parsed.message;
  EXPECT_EQ(parsed.options.server, "a:1,b:2");
  EXPECT_EQ(parsed.options.servers, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(Parse({"--job", "j"}).options.servers, std::vector<std::string>{"127.0.0.1:7070"});

  parsed = Parse({"--server", "a:1,,b:2", "--job", "j"});
  EXPECT_FALSE(parsed.run);
  EXPECT_EQ(parsed.exit_code, 2);
  EXPECT_EQ(parsed.message, "ckpt-worker-sim: --server: entry 2 of \"a:1,,b:2\" is empty\n");
}

TEST(SdkSimOptions, EveryFlag) {
  ParsedCommandLine parsed = Parse({"--server",
                                    "h:1",
                                    "--job",
                                    "j",
                                    "--pipelines",
                                    "5",
                                    "--tasks-per-pipeline",
                                    "3",
                                    "--ack-delay-ms",
                                    "20",
                                    "--decline-rate",
                                    "0.25",
                                    "--duration",
                                    "1.5m",
                                    "--json",
                                    "--threads",
                                    "4",
                                    "--channels",
                                    "2",
                                    "--worker-id",
                                    "w",
                                    "--event-log",
                                    "/tmp/x",
                                    "--progress",
                                    "--connect-timeout",
                                    "0",
                                    "--seed",
                                    "9"});
  ASSERT_TRUE(parsed.run) << parsed.message;
  const SimOptions& o = parsed.options;
  EXPECT_EQ(o.server, "h:1");
  EXPECT_EQ(o.pipelines, 5);
  EXPECT_EQ(o.tasks_per_pipeline, 3);
  EXPECT_EQ(o.ack_delay_ms, 20);
  EXPECT_DOUBLE_EQ(o.decline_rate, 0.25);
  EXPECT_EQ(o.duration, milliseconds(90'000));
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.progress);
  EXPECT_EQ(o.threads, 4);
  EXPECT_EQ(o.channels, 2);
  EXPECT_EQ(o.worker_id, "w");
  EXPECT_EQ(o.event_log, "/tmp/x");
  EXPECT_EQ(o.connect_timeout, milliseconds(0));
  EXPECT_EQ(o.seed, 9u);
}

TEST(SdkSimOptions, StreamsPerPipelineUpToTheTasks) {
  ParsedCommandLine parsed =
      Parse({"--job", "j", "--tasks-per-pipeline", "7", "--streams-per-pipeline", "7"});
  ASSERT_TRUE(parsed.run) << parsed.message;
  EXPECT_EQ(parsed.options.streams_per_pipeline, 7);
}

TEST(SdkSimOptions, BadFlagsExitTwoWithOneLine) {
  const std::vector<std::vector<const char*>> cases = {
      {},
      {"--job", "j", "--bogus"},
      {"--job", "j", "--pipelines", "0"},
      {"--job", "j", "--tasks-per-pipeline", "-1"},
      {"--job", "j", "--streams-per-pipeline", "0"},
      {"--job", "j", "--tasks-per-pipeline", "2", "--streams-per-pipeline", "3"},
      {"--job", "j", "--tasks-per-pipeline", "4", "--streams-per-pipeline", "2", "--group-size",
       "2"},
      {"--job", "j", "--tasks-per-pipeline", "4", "--streams-per-pipeline", "2", "--decline-rate",
       "0.1"},
      {"--job", "j", "--tasks-per-pipeline", "4", "--streams-per-pipeline", "2", "--positions",
       "100"},
      {"--job", "j", "--decline-rate", "1.5"},
      {"--job", "j", "--ack-delay-ms", "-3"},
      {"--job", "j", "--duration", "10"},
      {"--job", "j", "--interval", "1s"},
      {"--job", "j", "--threads", "zero"},
      {"--job", ""},
  };
  for (const auto& args : cases) {
    ParsedCommandLine parsed = Parse(args);
    EXPECT_FALSE(parsed.run);
    EXPECT_EQ(parsed.exit_code, 2);
    ASSERT_FALSE(parsed.message.empty());
    EXPECT_EQ(parsed.message.find('\n'), parsed.message.size() - 1) << parsed.message;
    EXPECT_EQ(parsed.message.rfind("ckpt-worker-sim: ", 0), 0u) << parsed.message;
  }
}

TEST(SdkSimOptions, CreateTakesIntervalAndTimeout) {
  ParsedCommandLine parsed =
      Parse({"--job", "j", "--create", "--interval", "1s", "--timeout", "10s"});
  ASSERT_TRUE(parsed.run) << parsed.message;
  EXPECT_TRUE(parsed.options.create);
  EXPECT_EQ(parsed.options.interval, milliseconds(1000));
  EXPECT_EQ(parsed.options.timeout, milliseconds(10'000));
}

TEST(SdkSimOptions, SecurityFlagsAreTakenNotRead) {
  ParsedCommandLine parsed =
      Parse({"--job", "j", "--ca-file", "/nonexistent/ca.pem", "--cert-file", "w.pem", "--key-file",
             "w.key", "--token-file", "token", "--tls-server-name", "ckptd.internal"});
  ASSERT_TRUE(parsed.run) << parsed.message;  // main reads and checks the files
  EXPECT_EQ(parsed.options.security.ca_file, "/nonexistent/ca.pem");
  EXPECT_EQ(parsed.options.security.cert_file, "w.pem");
  EXPECT_EQ(parsed.options.security.key_file, "w.key");
  EXPECT_EQ(parsed.options.security.token_file, "token");
  EXPECT_EQ(parsed.options.security.tls_server_name, "ckptd.internal");
  EXPECT_FALSE(Parse({"--job", "j"}).options.security.tls());
}

TEST(SdkSimOptions, HelpExitsZero) {
  ParsedCommandLine parsed = Parse({"--help"});
  EXPECT_FALSE(parsed.run);
  EXPECT_EQ(parsed.exit_code, 0);
  EXPECT_NE(parsed.message.find("--tasks-per-pipeline"), std::string::npos);
  EXPECT_NE(parsed.message.find("--token-file"), std::string::npos);
}

}  // namespace
}  // namespace ckpt::sim
