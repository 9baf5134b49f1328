// Checkpoints in the format of normnet 0.1 as of 2bbb845 (tests/checkpoints/): each resumes with
// today's program into exactly the run it was cut from — the weights, the optimizer state and
// every metric of the straight run, bit for bit. They were written on synthetic data
// (write_synthetic_mnist(DIR, 300, 100, true)) and on fortunes(80), by:
//   normnet train --data DIR --dataset mnist --threads 1 --batch-size 32 MODEL --epochs 1 --out NAME
// with MODEL (and --schedule constant, so that the horizon does not depend on --epochs):
//   mlp   --model mlp --hidden 2
//   cnn   --model cnn --channels 2,2 --fc 4 --norm batch
//   vit   --model vit --patch 14 --d-model 8 --layers 1 --heads 2 --dim-feedforward 8
//   lstm  --model lstm --hidden-size 4
// mlp_batch: --model mlp --hidden 2 --epochs 2 (cosine) stopped by SIGINT inside epoch 2
// (NORMNET_TEST_SIGNAL_AT_STEP=13); lm: normnet lm train --text TEXT --steps 10 --eval-every 5
// --context 16 --d-model 16 --layers 1 --heads 2 --batch-size 4 --warmup 4 --schedule constant
// --dropout 0.1 --threads 1. The expected figures are those of the straight runs (--epochs 2,
// --steps 20) of the same program, with OpenBLAS's Cooperlake kernels (what OpenBLAS 0.3.21 picks
// on AVX-512 CPUs with BF16). An environment may name other kernels: with OPENBLAS_CORETYPE=Haswell
// (and OPENBLAS_L2_SIZE=512) the products of the CNN, ViT, LSTM and LM round otherwise; there their
// expected figures are the resumed runs' own bits (no straight run can share a first epoch computed
// with the Cooperlake kernels), so that any change to what a resume computes still shows.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>

#include "cli_helpers.hpp"
#include "normnet/normnet.hpp"

namespace {

using namespace normnet::test;

// FNV-1a over the bytes of every tensor of a safetensors file, in name order (as stored).
[[maybe_unused]] std::string tensors_hash(const std::string& path) {
    normnet::NamedTensors tensors = normnet::load_safetensors(path).tensors;
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    uint64_t h = 14695981039346656037ull;
    const auto add = [&](const void* data, size_t bytes) {
        for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
    };
    for (const auto& [name, t] : tensors) {
        // The bytes the file stores: 4 per float, 8 per int64, 1 per bool (Adam's amsgrad flag).
        if (t.dtype() == normnet::kFloat32) {
            const std::vector<float> v = t.to_vector();
            add(v.data(), v.size() * sizeof(float));
        } else if (t.dtype() == normnet::kBool) {
            for (const bool b : t.to_vector<bool>()) {
                const unsigned char byte = b ? 1 : 0;
                add(&byte, 1);
            }
        } else {
            const std::vector<int64_t> v = t.to_vector<int64_t>();
            add(v.data(), v.size() * sizeof(int64_t));
        }
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

struct Expected {
    const char* model_hash;
    const char* state_hash;
    const char* history;
};

struct Fixture {
    const char* name;
    std::vector<std::string> resume;  // after --resume COPY: the rest of the command line
    const char* model_hash;
    const char* state_hash;
    const char* history;
    Expected haswell{};  // with OpenBLAS's Haswell kernels, where they differ
};

}  // namespace

TEST_CASE("compat: today's checkpoints of every model resume into their straight runs, bit for bit", "[cli][resume][compat]") {
    TempDir dir;
    const fs::path data = dir.path / "data";
    write_synthetic_mnist(data, 300, 100, true);
    const std::string text = (dir.path / "f.txt").string();
    std::ofstream(text, std::ios::binary) << fortunes(80);
    const std::vector<std::string> image{"--data", data.string(), "--epochs", "2", "--threads", "1", "--quiet"};
    const std::vector<Fixture> fixtures{
        {"mlp", image, "1859a0206d747b1d", "aff7424a41a3bbf0",
         "[[1,2.396386032104492,0.11666666666666667,2.3861911296844482,0.1,0.002,0],"
         "[2,2.383823013305664,0.1,2.3801207542419434,0.1,0.002,0]]"},
        {"mlp_batch", image, "1e158a3ffb9918db", "d449ae5c283f7e76",
         "[[1,2.396573928197225,0.11666666666666667,2.387230634689331,0.1,0.002,0],"
         "[2,2.3864525763193765,0.1,2.385922908782959,0.1,0.001,0]]"},
        {"cnn", image, "81ed45c3dd2ddf23", "b3059a2a0a9cc98f",
         "[[1,2.318905029296875,0.14,2.3427376747131348,0.1,0.002,0],"
         "[2,2.151448418299357,0.3333333333333333,2.3063647747039795,0.1,0.002,0]]",
         {"362cd65e73fdb14d", "a17027b00149bcc9",
          "[[1,2.318905029296875,0.14,2.3427376747131348,0.1,0.002,0],"
          "[2,2.1514484691619873,0.3333333333333333,2.307039976119995,0.1,0.002,0]]"}},
        {"vit", image, "d2cfe5d58a027237", "1209b5f83af177a2",
         "[[1,2.4289701239267987,0.1,2.3142337799072266,0.1,0.001,0],"
         "[2,2.2418362363179525,0.13333333333333333,2.154106616973877,0.3,0.001,0]]",
         {"81dcc2014e3a7ef7", "edd82488f38f2d38",
          "[[1,2.4289701239267987,0.1,2.3142337799072266,0.1,0.001,0],"
          "[2,2.2418362267812095,0.13333333333333333,2.154106616973877,0.3,0.001,0]]"}},
        {"lstm", image, "858b42c9daca8254", "3ff647ecafea4017",
         "[[1,2.335959596633911,0.1,2.3348188400268555,0.1,0.002,0],"
         "[2,2.3362784989674887,0.09666666666666666,2.326866626739502,0.09,0.002,0]]",
         {"7706ac56cdc684f3", "d79de8eab018ed7c",
          "[[1,2.335959596633911,0.1,2.3348188400268555,0.1,0.002,0],"
          "[2,2.3349168332417807,0.09666666666666666,2.334501028060913,0.1,0.002,0]]"}},
        {"lm", {"--text", text, "--steps", "20", "--threads", "1", "--quiet"}, "868e4cb6ad107eea", "2cfe8731024478bc",
         "[[5,4.005273246765137,3.8576944575590244,0.001],[10,3.8509202003479004,3.6994530032662785,0.001],"
         "[15,3.712164878845215,3.598557135638069,0.001],[20,3.6442122936248778,3.5273864689995262,0.001]]",
         {"61a5e20e58c1977e", "073cbf7e06b7dae9",
          "[[5,4.005273246765137,3.8576944575590244,0.001],[10,3.8509202003479004,3.6994530032662785,0.001],"
          "[15,3.712164831161499,3.5985571917365577,0.001],[20,3.6442122936248778,3.527386525098015,0.001]]"}},
    };
    // The program runs in this process's environment, so with the same kernels.
    const std::string core = normnet::blas_kernels();
    // Other kernels round the products otherwise: those bits were never recorded.
    if (core != "Cooperlake" && core != "Haswell") NORMNET_SKIP("OpenBLAS chose its " << core << " kernels; the fixtures' bits are those of its Cooperlake and Haswell kernels");
    for (const Fixture& f : fixtures) {
        INFO("checkpoint " << f.name << ", OpenBLAS core " << core);
        const fs::path run = dir.path / f.name;
        fs::copy(fs::path(NORMNET_TEST_DIR) / "checkpoints" / f.name, run);
        const std::vector<std::string> command = std::string(f.name) == "lm" ? std::vector<std::string>{"lm", "train"}
                                                                           : std::vector<std::string>{"train"};
        const std::vector<std::string> args = with(with(command, {"--resume", run.string()}), f.resume);
        const RunResult r = run_normnet(args, dir.work());
        INFO(r.err);
        REQUIRE(r.status == 0);
#if defined(__clang__)
        // The fixtures' bits are GCC's (the README's build): clang vectorises the float sums in
        // another order. Here the checkpoints must still resume and finish their runs.
        const std::string history =
            normnet::load_safetensors((run / "training_state.safetensors").string()).metadata.at("normnet.history");
        CHECK(std::count(history.begin(), history.end(), '[') == std::count(f.history, f.history + std::strlen(f.history), '['));
#else
        const Expected e = core == "Haswell" && f.haswell.model_hash != nullptr ? f.haswell
                                                                                : Expected{f.model_hash, f.state_hash, f.history};
        CHECK(tensors_hash((run / "model.safetensors").string()) == e.model_hash);
        CHECK(tensors_hash((run / "training_state.safetensors").string()) == e.state_hash);
        CHECK(normnet::load_safetensors((run / "training_state.safetensors").string()).metadata.at("normnet.history") ==
              e.history);
#endif
    }
#if defined(__clang__)
    WARN("compat: built by clang, so the resumed runs' bits were not compared with the GCC fixtures (only that they resume and finish)");
#endif
}
