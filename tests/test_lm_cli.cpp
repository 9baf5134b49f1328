// The character language model of the command line (`normnet lm train`, `normnet lm sample`):
// the trainer's exact resume, validation in nats and bits, sampling, and (through the program
// itself) corpus errors, the run folder and metrics.csv. Tiny corpora and a tiny CharTransformer
// keep the trainer's tests fast. The corpus reader itself is fuzzed in tests/fuzz (another
// target), so these tests need no fuzzing of their own.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <regex>
#include <string>
#include <thread>

#include "lm_sample.hpp"
#include "metrics_csv.hpp"
#include "normnet/normnet.hpp"
#include "run_folder.hpp"
#include "trainer.hpp"
#include "cli_helpers.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using namespace normnet::cli;
using Catch::Contains;

namespace {

using normnet::test::fortunes;

std::string write(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
}

RunConfig tiny_config(const std::string& text) {
    RunConfig c = recipe_config("lm");
    c.text = text;
    c.val_fraction = 0.1;
    c.model.sizes["context"] = {16};
    c.model.sizes["d_model"] = {8};
    c.model.sizes["layers"] = {1};
    c.model.sizes["heads"] = {1};
    c.model.dropout = 0.1;  // so that the default generator's state matters to the resume
    c.steps = 12;
    c.batch_size = 4;
    c.warmup = 3;
    c.eval_every = 5;
    c.lr = 1e-2;
    c.threads = 1;
    return c;
}

// A trainer of `config` on its corpus.
std::unique_ptr<Trainer> trainer_of(const RunConfig& config) {
    return std::make_unique<Trainer>(config, make_task(config, load_task_data(config), {}));
}

}  // namespace

TEST_CASE("lm: N steps, a checkpoint and M more equal N + M straight, bit for bit", "[lm][resume]") {
    test::ThreadsGuard threads;
    set_num_threads(1);
    test::ScratchDir dir("normnet_lm_");
    const RunConfig config = tiny_config(write(dir.path / "f", fortunes(60)));
    // The cosine horizon is the whole run in both: the first run stops after 7 steps (between
    // two validations, as a signal would), the second resumes from its checkpoint.
    auto straight = trainer_of(config);
    while (!straight->finished()) REQUIRE(straight->run_epoch());
    REQUIRE(straight->history().size() == 3);  // steps 5, 10, 12
    CHECK(straight->history().back().step == 12);

    const std::string a = (dir.path / "a").string();
    std::filesystem::create_directories(a);
    {
        auto first = trainer_of(config);
        REQUIRE(first->run_epoch());
        int steps = 0;
        CHECK_FALSE(first->run_epoch({}, [&] { return ++steps == 2; }));  // stopped at step 7
        REQUIRE(first->step() == 7);
        first->save_checkpoint(a);
    }
    manual_seed(999);  // the resume must restore the generator, not rely on it
    auto resumed = trainer_of(config);
    resumed->resume(read_checkpoint((std::filesystem::path(a) / kModelFile).string()));
    CHECK(resumed->step() == 7);
    while (!resumed->finished()) REQUIRE(resumed->run_epoch());
    const NamedTensors x = straight->model().state_dict(), y = resumed->model().state_dict();
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
        INFO(x[i].first);
        CHECK(test::bit_equal(x[i].second, y[i].second));
    }
    REQUIRE(resumed->history().size() == 3);
    for (size_t i = 0; i < 3; ++i) {
        CHECK(resumed->history()[i].step == straight->history()[i].step);
        CHECK(resumed->history()[i].train_loss == straight->history()[i].train_loss);
        CHECK(resumed->history()[i].test_loss == straight->history()[i].test_loss);
        CHECK(resumed->history()[i].lr == straight->history()[i].lr);
    }
}

TEST_CASE("lm: validation is the mean loss per held-out character, metrics.csv has nats and bits", "[lm]") {
    test::ThreadsGuard threads;
    set_num_threads(1);
    test::ScratchDir dir("normnet_lm_");
    const RunConfig config = tiny_config(write(dir.path / "f", fortunes(60)));
    auto t = trainer_of(config);
    // An untrained model with zero head weights predicts uniformly: ln V nats per character.
    for (auto& [name, p] : t->model().named_parameters()) {
        if (name.rfind("head", 0) == 0) {
            NoGradGuard g;
            p.zero_();
        }
    }
    CHECK(t->evaluate().loss == Approx(std::log(static_cast<double>(t->config().model.inputs))).epsilon(1e-6));
    CHECK(val_loss_text(std::numbers::ln2) == "val loss 0.6931 nats (1.000 bits/char)");
    const std::string csv = metrics_csv({EpochMetrics{.step = 5, .train_loss = 2, .test_loss = 2 * std::numbers::ln2, .lr = 1e-3, .seconds = 1.5}}, true);
    CHECK(csv == "step,train_loss,val_loss,val_bits_per_char,lr,seconds\n5,2.000000,1.386294,2.000000,0.001,1.500\n");
}

TEST_CASE("lm: corpora shorter than the context are refused naming both lengths", "[lm]") {
    test::ScratchDir dir("normnet_lm_");
    RunConfig c = tiny_config(write(dir.path / "short.txt", std::string(200, 'a')));
    c.val_fraction = 0.05;  // 10 held-out characters
    CHECK_THROWS_WITH(trainer_of(c), Contains("held-out text (10 characters)") && Contains("context (16)"));
    c.model.sizes["context"] = {500};
    CHECK_THROWS_WITH(trainer_of(c), Contains("context (500)"));
}

TEST_CASE("lm: sampling is seeded, temperature 0 and top-k 1 take the most likely character", "[lm]") {
    test::ThreadsGuard threads;
    set_num_threads(1);
    test::ScratchDir dir("normnet_lm_");
    const RunConfig config = tiny_config(write(dir.path / "f", fortunes(60)));
    const TextCorpus corpus = load_text_corpus(config.text, {.val_fraction = 0.1});
    auto t = trainer_of(config);
    while (!t->finished()) REQUIRE(t->run_epoch());
    const std::vector<int64_t> prompt = corpus.encode("The");
    const auto a = sample_text(t->model(), 16, prompt, {.tokens = 40, .temperature = 1.0, .seed = 3});
    const auto b = sample_text(t->model(), 16, prompt, {.tokens = 40, .temperature = 1.0, .seed = 3});
    const auto c = sample_text(t->model(), 16, prompt, {.tokens = 40, .temperature = 1.0, .seed = 4});
    CHECK(a.size() == 40);
    CHECK(a == b);
    CHECK(a != c);
    const auto greedy = sample_text(t->model(), 16, prompt, {.tokens = 20, .temperature = 0.0});
    CHECK(sample_text(t->model(), 16, prompt, {.tokens = 20, .temperature = 1.0, .top_k = 1, .seed = 9}) == greedy);
    // The greedy continuation starts with the argmax of the prompt's last position.
    NoGradGuard g;
    t->model().eval();
    const auto L = static_cast<int64_t>(prompt.size());
    const Tensor logits = t->model().forward(from_vector(prompt, {1, L}));
    CHECK(greedy.front() == argmax(logits.select(1, L - 1).reshape({-1})).item<int64_t>());
}

// ---- the program ------------------------------------------------------------------------------

namespace {

namespace fs = std::filesystem;
using normnet::test::RunResult;
using normnet::test::TempDir;
using normnet::test::run_normnet;
using normnet::test::with;

// A quick run of the real model on a small corpus.
std::vector<std::string> tiny_lm_run(const std::string& text, const std::string& out) {
    return {"lm", "train", "--text", text, "--steps", "20", "--eval-every", "10", "--context", "16", "--d-model", "16",
            "--layers", "1", "--heads", "2", "--batch-size", "4", "--warmup", "4", "--threads", "1", "--out", out};
}

// A failed call: its status, one stderr line holding every mention, nothing on stdout, no file
// created or changed under the working folder.
void require_lm_error(const TempDir& dir, const std::vector<std::string>& args, int status,
                      const std::vector<std::string>& mentions) {
    const auto before = normnet::test::snapshot(dir.work());
    const RunResult r = run_normnet(args, dir.work());
    INFO("stderr: " << r.err << "\nstdout: " << r.out);
    CHECK(r.status == status);
    CHECK_THAT(r.err, Catch::StartsWith("normnet: error: "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    for (const auto& m : mentions) CHECK_THAT(r.err, Contains(m));
    CHECK(r.out.empty());
    CHECK(normnet::test::snapshot(dir.work()) == before);
}

}  // namespace

TEST_CASE("lm cli: corpus and option errors are one line, nothing is written", "[lm][cli]") {
    TempDir dir;
    const std::string good = write(dir.path / "good.txt", fortunes(40));
    const std::string out = dir / "run";
    // Corpus errors: exit 1, naming the file (and for bad UTF-8 the byte offset).
    const std::string bad = write(dir.path / "latin1.txt", "caf\xe9 au lait\n");
    require_lm_error(dir, tiny_lm_run(bad, out), 1, {bad, "invalid UTF-8 at byte 3"});
    fs::create_directories(dir.path / "folder");
    write(dir.path / "folder" / "a.txt", fortunes(40));
    const std::string empty = write(dir.path / "folder" / "b.txt", "");
    require_lm_error(dir, tiny_lm_run((dir.path / "folder").string(), out), 1, {empty, "empty file"});
    const std::string short_text = write(dir.path / "short.txt", "A short text.\n");
    require_lm_error(dir, tiny_lm_run(short_text, out), 1, {short_text, "not longer than the context (16)"});
    require_lm_error(dir, tiny_lm_run((dir.path / "missing").string(), out), 1, {"no such file or folder"});
    // Usage errors: exit 2, naming the option.
    require_lm_error(dir, with(tiny_lm_run(good, out), {"--epochs", "1"}), 2, {"--steps and --epochs"});
    require_lm_error(dir, with(tiny_lm_run(good, out), {"--heads", "3"}), 2, {"--d-model 16", "--heads 3"});
    require_lm_error(dir, with(tiny_lm_run(good, out), {"--norm", "group"}), 2, {"--norm"});
    require_lm_error(dir, with(tiny_lm_run(good, out), {"--warmup", "20"}), 2, {"--warmup 20", "20 steps"});
    require_lm_error(dir, with(tiny_lm_run(good, out), {"--dropout", "1"}), 2, {"--dropout"});
    require_lm_error(dir, {"lm", "train", "--stpes", "3"}, 2, {"--stpes", "did you mean --steps"});
    require_lm_error(dir, {"lm", "sample"}, 2, {"--checkpoint"});
    require_lm_error(dir, {"lm", "sample", "--checkpoint", dir / "none.safetensors"}, 1, {"none.safetensors"});
}

TEST_CASE("lm cli: train prints and records val loss in nats and bits, sample continues a prompt", "[lm][cli]") {
    TempDir dir;
    const std::string text = write(dir.path / "f.txt", fortunes(80));
    const std::string run = dir / "run";
    const RunResult r = run_normnet(tiny_lm_run(text, run), dir.work());
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    const std::regex line(R"(step 20/20  train loss \d+\.\d{4}  val loss \d+\.\d{4} nats \(\d+\.\d{3} bits/char\))");
    CHECK(std::regex_search(r.out, line));
    CHECK_THAT(r.out, Contains("final val loss"));
    for (const char* f : {"model.safetensors", "training_state.safetensors", "metrics.csv", "config.json"}) {
        CHECK(fs::exists(fs::path(run) / f));
    }
    const auto rows = normnet::test::lines_of(normnet::test::read_file(fs::path(run) / "metrics.csv"));
    REQUIRE(rows.size() == 3);
    CHECK(rows[0] == "step,train_loss,val_loss,val_bits_per_char,lr,seconds");
    const auto cells = normnet::test::csv_cells(rows[2]);
    REQUIRE(cells.size() == 6);
    CHECK(cells[0] == "20");
    CHECK(std::stod(cells[3]) == Approx(std::stod(cells[2]) / std::numbers::ln2).epsilon(1e-5));
    CHECK_THAT(r.out, Contains("final " + val_loss_text(std::stod(cells[2]))));  // the printed value is the recorded one

    const std::vector<std::string> sample{"lm", "sample", "--checkpoint", run, "--prompt", "The quick", "--tokens", "30",
                                          "--seed", "5"};
    const RunResult s1 = run_normnet(sample, dir.work()), s2 = run_normnet(sample, dir.work());
    INFO(s1.err);
    REQUIRE(s1.status == 0);
    CHECK_THAT(s1.out, Catch::StartsWith("The quick"));
    CHECK(s1.out == s2.out);
    CHECK(s1.out.back() == '\n');
    const RunResult greedy = run_normnet(with(sample, {"--temperature", "0", "--top-k", "1"}), dir.work());
    CHECK(greedy.status == 0);
    require_lm_error(dir, with(sample, {"--prompt", "Zebra"}), 2, {"--prompt", "'Z' (U+005A)", "not in the vocabulary"});
    require_lm_error(dir, with(sample, {"--temperature", "-1"}), 2, {"--temperature"});
    // --resume of a file that does not exist.
    require_lm_error(dir, {"lm", "train", "--text", text, "--resume", run + "/nothing"}, 1, {"nothing"});
}

TEST_CASE("lm cli: --recompute, --recompute-ffn (the default) and neither train the same model bit for bit", "[lm][cli]") {
    TempDir dir;
    const std::string text = write(dir.path / "f.txt", fortunes(80));
    const auto losses = [](const std::string& out) {  // the last step's line up to its lr
        const size_t at = out.find("step 20/20");
        return at == std::string::npos ? std::string() : out.substr(at, out.find("  lr", at) - at);
    };
    // With dropout, the feed-forward network runs under checkpoint() and the recomputed dropout
    // masks must match; without, through the fused feed_forward, here with BatchNorm, whose
    // running statistics must be updated once per step all the same.
    const std::vector<std::vector<std::string>> recipes{{"--dropout", "0.1"}, {"--norm", "batch"}};
    for (size_t k = 0; k < recipes.size(); ++k) {
        const std::string plain = dir / ("plain" + std::to_string(k));
        const RunResult r = run_normnet(with(with(tiny_lm_run(text, plain), recipes[k]), {"--no-recompute-ffn"}), dir.work());
        INFO(r.err);
        REQUIRE(r.status == 0);
        CHECK_FALSE(losses(r.out).empty());
        const auto reference = load_safetensors(plain + "/model.safetensors");
        std::vector<std::vector<std::string>> variants{{}, {"--recompute-ffn"}};
        if (k == 0) variants.push_back({"--recompute"});  // (not with --norm batch)
        for (size_t v = 0; v < variants.size(); ++v) {
            const std::string run = dir / ("run" + std::to_string(k) + "_" + std::to_string(v));
            const RunResult rr = run_normnet(with(with(tiny_lm_run(text, run), recipes[k]), variants[v]), dir.work());
            INFO(recipes[k][0] << " " << recipes[k][1] << ", variant " << v << ": " << rr.err);
            REQUIRE(rr.status == 0);
            CHECK(losses(rr.out) == losses(r.out));
            const auto x = load_safetensors(run + "/model.safetensors");
            REQUIRE(x.tensors.size() == reference.tensors.size());
            for (size_t i = 0; i < x.tensors.size(); ++i) {
                INFO(x.tensors[i].first);
                CHECK(test::bit_equal(x.tensors[i].second, reference.tensors[i].second));
            }
        }
    }
}

TEST_CASE("lm cli: N steps + --resume for M equals N + M straight, bit for bit", "[lm][cli][resume]") {
    TempDir dir;
    const std::string text = write(dir.path / "f.txt", fortunes(80));
    // A constant schedule (the cosine horizon depends on --steps) with a warm-up across the
    // boundary, and dropout, so that the optimizer, the schedule and both generators must resume.
    const std::vector<std::string> recipe{"--schedule", "constant", "--warmup", "14", "--dropout", "0.1", "--eval-every", "5"};
    const std::string a = dir / "a", b = dir / "b";
    const RunResult straight = run_normnet(with(with(tiny_lm_run(text, a), recipe), {"--steps", "20"}), dir.work());
    INFO(straight.err);
    REQUIRE(straight.status == 0);
    const RunResult first = run_normnet(with(with(tiny_lm_run(text, b), recipe), {"--steps", "10"}), dir.work());
    INFO(first.err);
    REQUIRE(first.status == 0);
    const RunResult resumed = run_normnet({"lm", "train", "--resume", b, "--steps", "20", "--threads", "1"}, dir.work());
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK_THAT(resumed.out, Contains("resuming from " + b + "/model.safetensors at step 10"));
    for (const char* f : {"model.safetensors", "training_state.safetensors"}) {
        const auto x = load_safetensors((fs::path(a) / f).string()), y = load_safetensors((fs::path(b) / f).string());
        REQUIRE(x.tensors.size() == y.tensors.size());
        for (size_t i = 0; i < x.tensors.size(); ++i) {
            INFO(f << ": " << x.tensors[i].first);
            CHECK(x.tensors[i].first == y.tensors[i].first);
            CHECK(test::bit_equal(x.tensors[i].second, y.tensors[i].second));
        }
    }
    CHECK(load_safetensors(a + "/training_state.safetensors").metadata ==
          load_safetensors(b + "/training_state.safetensors").metadata);
    const auto ma = normnet::test::lines_of(normnet::test::read_file(fs::path(a) / "metrics.csv"));
    const auto mb = normnet::test::lines_of(normnet::test::read_file(fs::path(b) / "metrics.csv"));
    REQUIRE(ma.size() == 5);
    REQUIRE(mb.size() == 5);
    for (size_t i = 1; i < 5; ++i) {
        auto x = normnet::test::csv_cells(ma[i]), y = normnet::test::csv_cells(mb[i]);
        x.pop_back();  // the seconds
        y.pop_back();
        CHECK(x == y);
    }
    // Another architecture than the checkpoint's is refused, and nothing changes.
    require_lm_error(dir, {"lm", "train", "--resume", b, "--steps", "30", "--d-model", "32"}, 1, {"architecture"});
    require_lm_error(dir, {"lm", "train", "--resume", b, "--steps", "20"}, 1, {"already trained 20 of 20 steps"});
}

TEST_CASE("lm cli: SIGINT between validations saves the step reached, the run resumes from it", "[lm][cli][signal]") {
    TempDir dir;
    const std::string text = write(dir.path / "f.txt", fortunes(80));
    const std::string run = dir / "run";
    // More steps than the tiny model can run before the signal (3000 took under 300 ms once the
    // attention stopped copying); the resumed run then goes a few steps past where it stopped.
    const auto args = with(tiny_lm_run(text, run), {"--steps", "100000000", "--eval-every", "100000000"});
    {
        normnet::test::Process p(args, dir.work(), dir.path / "stderr.txt");
        REQUIRE(p.wait_for("run folder:", 20000));
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        p.signal(SIGINT);
        CHECK(p.wait() == 128 + SIGINT);
    }
    const std::string err = normnet::test::read_file(dir.path / "stderr.txt");
    CHECK(normnet::test::lines_of(err).size() == 1);
    CHECK_THAT(err, Contains("stopped by SIGINT at step") && Contains("normnet lm train --resume " + run));
    for (const char* f : {"model.safetensors", "training_state.safetensors", "metrics.csv", "config.json"}) {
        CHECK(fs::exists(fs::path(run) / f));
    }
    std::smatch at;
    REQUIRE(std::regex_search(err, at, std::regex(R"(at step (\d+))")));
    const std::string until = std::to_string(std::stoll(at[1]) + 5);
    const RunResult resumed = run_normnet({"lm", "train", "--resume", run, "--steps", until}, dir.work());
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK_THAT(resumed.out, Contains("step " + until + "/" + until));
}
