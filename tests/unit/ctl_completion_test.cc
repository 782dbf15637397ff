#include "ctl/completion.h"

#include <gtest/gtest.h>

#include <string>

namespace ckpt::ctl {
namespace {

// A small CLI shaped like ckptctl's: global flags with a choice and a path, a command group with
// a subcommand, a hidden flag and a hidden command, a positional with fixed values.
struct Fixture {
  CLI::App app{"Operates things.", "tool"};
  std::string output = "table", ca, job, shell, secret;
  bool stop = false;

  Fixture() {
    app.add_option("-o,--output", output, "Output format: table or json. More words")
        ->check(CLI::IsMember({"table", "json"}));
    app.add_option("--ca-file", ca, "CA certificate")->type_name("PATH");
    CLI::App* pipeline = app.add_subcommand("pipeline", "Pipelines");
    CLI::App* create = pipeline->add_subcommand("create", "Create one");
    create->add_option("--job", job, "Job id")->required();
    create->add_flag("--stop", stop, "Stop it");
    create->add_option("--secret", secret, "not shown")->group("");
    app.add_subcommand("internal", "not shown")->group("");
    app.add_subcommand("completion", "Scripts")
        ->add_option("SHELL", shell)
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  }
};

const CompletionFlag* FindFlag(const CompletionCommand& command, const std::string& name) {
  for (const CompletionFlag& flag : command.flags) {
    for (const std::string& n : flag.names) {
      if (n == name) return &flag;
    }
  }
  return nullptr;
}

TEST(CompletionTest, DescribesCommandsFlagsChoicesAndPathsAndLeavesOutWhatTheHelpHides) {
  Fixture f;
  const CompletionCommand root = DescribeForCompletion(f.app);
  EXPECT_EQ(root.name, "tool");
  ASSERT_EQ(root.subcommands.size(), 2u);  // "internal" is hidden
  EXPECT_EQ(root.subcommands[0].name, "pipeline");
  EXPECT_EQ(root.subcommands[1].name, "completion");
  EXPECT_EQ(root.subcommands[1].argument_choices,
            (std::vector<std::string>{"bash", "zsh", "fish"}));

  const CompletionFlag* output = FindFlag(root, "--output");
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(output->names, (std::vector<std::string>{"-o", "--output"}));
  EXPECT_TRUE(output->takes_value);
  EXPECT_EQ(output->choices, (std::vector<std::string>{"table", "json"}));
  EXPECT_EQ(output->description, "Output format: table or json");
  const CompletionFlag* ca = FindFlag(root, "--ca-file");
  ASSERT_NE(ca, nullptr);
  EXPECT_TRUE(ca->value_is_path);

  const CompletionCommand& create = root.subcommands[0].subcommands.at(0);
  EXPECT_EQ(create.name, "create");
  ASSERT_NE(FindFlag(create, "--job"), nullptr);
  EXPECT_TRUE(FindFlag(create, "--job")->takes_value);
  ASSERT_NE(FindFlag(create, "--stop"), nullptr);
  EXPECT_FALSE(FindFlag(create, "--stop")->takes_value);
  EXPECT_EQ(FindFlag(create, "--secret"), nullptr);
}

TEST(CompletionTest, EachShellsScriptNamesEveryCommandAndFlag) {
  Fixture f;
  const CompletionCommand root = DescribeForCompletion(f.app);
  for (const std::string& shell : CompletionShells()) {
    const std::string script = CompletionScript(root, shell);
    ASSERT_FALSE(script.empty()) << shell;
    for (const char* word : {"pipeline", "create", "completion", "job", "output", "table json"}) {
      EXPECT_NE(script.find(word), std::string::npos) << shell << " lacks " << word;
    }
    EXPECT_EQ(script.find("internal"), std::string::npos) << shell;
    EXPECT_EQ(script.find("secret"), std::string::npos) << shell;
  }
  // bash and zsh look a command's flags up by its path, the root's flags merged in once.
  const std::string bash = CompletionScript(root, "bash");
  EXPECT_NE(bash.find("['tool pipeline create']='-h --help --job --stop -o --output --ca-file'"),
            std::string::npos)
      << bash;
  EXPECT_NE(bash.find("complete -F _tool tool"), std::string::npos);
  EXPECT_EQ(CompletionScript(root, "tcsh"), "");
}

TEST(CompletionTest, DescriptionsAreQuotedForEachShell) {
  CLI::App app{"x", "tool"};
  app.add_subcommand("go", "It's a 'test'\nsecond line");
  const CompletionCommand root = DescribeForCompletion(app);
  EXPECT_EQ(root.subcommands.at(0).description, "It's a 'test'");
  EXPECT_NE(CompletionScript(root, "zsh").find("'tool go' 'It'\\''s a '\\''test'\\'''"),
            std::string::npos);
  EXPECT_NE(CompletionScript(root, "fish").find("-d 'It\\'s a \\'test\\''"), std::string::npos);
}

}  // namespace
}  // namespace ckpt::ctl
