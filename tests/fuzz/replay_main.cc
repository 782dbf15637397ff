// Replays a fuzz target's inputs without libFuzzer, so that an ordinary build (gcc, or under
// ASan/UBSan or TSan) runs every seed of the corpus through the target's own checks: linked with
// one <name>_fuzzer.cc, it calls that file's LLVMFuzzerTestOneInput once per input, as libFuzzer
// does when given files. A broken check traps inside the target, as it does under libFuzzer.
//
// Usage: <name>_replay DIR_OR_FILE...   Every regular file of a directory is one input, taken in
// name order (the same order in every run). Prints each input before running it (so a crash names
// it) and how many ran. Exits 1 when an argument does not exist or a directory holds no input: a
// corpus that moved or was emptied must not pass by running nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional, as under libFuzzer: only a target that needs setup defines it.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

// The inputs an argument names, sorted; empty when there are none.
std::vector<fs::path> InputsOf(const fs::path& arg) {
  std::vector<fs::path> inputs;
  if (fs::is_regular_file(arg)) {
    inputs.push_back(arg);
  } else if (fs::is_directory(arg)) {
    for (const auto& entry : fs::directory_iterator(arg)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

bool RunOne(const fs::path& input) {
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", input.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  // A buffer of exactly the input's size, as libFuzzer passes: ASan then catches a read past it.
  std::unique_ptr<uint8_t[]> data(new uint8_t[bytes.size()]);
  std::copy(bytes.begin(), bytes.end(), data.get());
  std::printf("running %s (%zu bytes)\n", input.c_str(), bytes.size());
  std::fflush(stdout);  // before the target runs: a trap loses unflushed output
  LLVMFuzzerTestOneInput(data.get(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t total = 0;
  for (int i = 1; i < argc; ++i) {
    const std::vector<fs::path> inputs = InputsOf(argv[i]);
    if (inputs.empty()) {
      std::fprintf(stderr, "%s: no such file, or a directory with no input in it\n", argv[i]);
      return 1;
    }
    for (const auto& input : inputs) {
      if (!RunOne(input)) return 1;
    }
    std::printf("replayed %zu input(s) from %s\n", inputs.size(), argv[i]);
    total += inputs.size();
  }
  std::printf("replayed %zu input(s) in all\n", total);
  return 0;
}
