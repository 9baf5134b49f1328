// `normnet bench --model lm`: seconds per --steps optimizer steps of the character LM (the model
// and trainer of `normnet lm train`), tokens/s, and the GEMM floor of the same steps (the
// projections, the batched attention products, the feed-forward layers and the head over the
// vocabulary, forward and backward) measured in the same process. bench.cpp hands `--model lm`
// over to run_bench_lm().
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

#include "models.hpp"

namespace normnet::cli {

/// Adds to bench's command the options only the LM reads (--steps, --warmup-steps, --text,
/// --context, --d-model, --layers, --heads, --norm-placement), each unless it has it already, and
/// lets --model take `lm`.
void add_bench_lm_options(CLI::App& cmd);

/// Runs `normnet bench --model lm` from the options given on `cmd` (--data names the corpus, as
/// run_peers.py passes it; --epochs the timed repeats of --steps steps each).
void run_bench_lm(const CLI::App& cmd);

}  // namespace normnet::cli
