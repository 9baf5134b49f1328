// libtorch peer of apps/microbench/ops_bench: the same cases (copy, add with broadcasting, gelu,
// softmax over the last dim, sum over a dim) on the same shapes, each timed as the median of
// repetitions filling --min-time seconds, written into preallocated outputs (the *_out forms)
// so that no call pays for fresh pages. Prints one line per case: op, floats, seconds.
//
//   libtorch_ops --sizes 1048576,4194304 --ops add,gelu --threads 2 --min-time 0.25
#include <torch/torch.h>

#include "../microbench/bench_timing.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

double time_op(const std::string& op, int64_t n, double min_time) {
  torch::manual_seed(1);
  const int64_t rows = n / 1024;
  const torch::Tensor x = torch::randn({rows, 1024});
  const torch::Tensor bias = torch::randn({1024});
  torch::Tensor out = torch::empty({rows, 1024});
  torch::Tensor row_out = torch::empty({rows}), col_out = torch::empty({1024});
  if (op == "copy") return bench::time_case([&] { out.copy_(x); }, min_time);
  if (op == "add") return bench::time_case([&] { at::add_out(out, x, bias); }, min_time);
  if (op == "gelu") return bench::time_case([&] { at::gelu_out(out, x); }, min_time);
  if (op == "gelu_tanh") return bench::time_case([&] { at::gelu_out(out, x, "tanh"); }, min_time);
  if (op == "softmax") return bench::time_case([&] { at::_softmax_out(out, x, -1, false); }, min_time);
  if (op == "sum_dim1") return bench::time_case([&] { at::sum_out(row_out, x, {1}); }, min_time);
  if (op == "sum_dim0") return bench::time_case([&] { at::sum_out(col_out, x, {0}); }, min_time);
  throw std::invalid_argument("unknown op " + op);
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<int64_t> sizes{int64_t{1} << 20};
  std::vector<std::string> ops{"copy", "add", "gelu", "softmax", "sum_dim1", "sum_dim0"};
  int threads = 1;
  double min_time = 0.25;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--sizes") {
      sizes.clear();
      for (const auto& s : bench::split(v)) sizes.push_back(std::stoll(s));
    } else if (a == "--ops") {
      ops = bench::split(v);
    } else if (a == "--threads") {
      threads = std::stoi(v);
    } else if (a == "--min-time") {
      min_time = std::stod(v);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  for (int64_t n : sizes) {
    for (const auto& op : ops) {
      std::printf("%s %lld %.9g\n", op.c_str(), static_cast<long long>(n), time_op(op, n, min_time));
      std::fflush(stdout);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "libtorch_ops: error: %s\n", e.what());
  return 1;
}
