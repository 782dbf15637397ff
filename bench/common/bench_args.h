#pragma once
// A tiny "--name value" command-line reader for the benchmark programs, which every script drives
// with known flags; an unknown flag is an error so that a typo cannot silently measure the default.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace ckpt::bench {

class BenchArgs {
 public:
  // `defaults` names every accepted flag (without "--") with its default value.
  BenchArgs(int argc, char** argv, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    for (int i = 1; i < argc; ++i) {
      std::string name = argv[i];
      if (name.rfind("--", 0) != 0 || !values_.count(name.substr(2)) || i + 1 >= argc) {
        std::fprintf(stderr, "%s: unknown flag or missing value: %s\naccepted:", argv[0],
                     name.c_str());
        for (const auto& [flag, value] : values_)
          std::fprintf(stderr, " --%s (%s)", flag.c_str(), value.c_str());
        std::fprintf(stderr, "\n");
        std::exit(2);
      }
      values_[name.substr(2)] = argv[++i];
    }
  }

  const std::string& Str(const std::string& name) const { return values_.at(name); }
  long long Int(const std::string& name) const { return std::stoll(values_.at(name)); }
  double Double(const std::string& name) const { return std::stod(values_.at(name)); }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace ckpt::bench
