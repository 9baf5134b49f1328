// The character language model of the command line (`normnet lm train`, `normnet lm sample`):
// the trainer's exact resume, validation in nats and bits, sampling, and (through the program
// itself) corpus errors, the run folder and metrics.csv. Tiny corpora and a small stand-in model
// (an embedding and a linear head: a bigram model) keep the trainer's tests fast; the program
// trains the real CharTransformer at a tiny size. The corpus reader itself is fuzzed in
// tests/fuzz (another target), so these tests need no fuzzing of their own.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>

#include "lm_trainer.hpp"
#include "normnet/normnet.hpp"
#include "run_folder.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using namespace normnet::cli;
using Catch::Contains;

namespace {

// A bigram model with the CharTransformer's interface: int64 [B, T] -> logits [B, T, V].
class Bigram : public Module {
public:
    explicit Bigram(const LmSpec& s) : p_(s.dropout) {
        emb_ = register_parameter("emb", randn({s.vocab_size, s.d_model}));
        head_ = register_module("head", std::make_shared<Linear>(s.d_model, s.vocab_size));
    }
    Tensor forward(const Tensor& tokens) override {
        return head_->forward(dropout(embedding(tokens, emb_), p_, is_training()));
    }

private:
    double p_;
    Tensor emb_;
    std::shared_ptr<Linear> head_;
};

std::shared_ptr<Module> bigram(const LmSpec& s) { return std::make_shared<Bigram>(s); }

// A small fortune file: records separated by % lines.
std::string fortunes(int records) {
    std::string text;
    for (int k = 0; k < records; ++k) {
        text += "The quick brown fox " + std::to_string(k) + " jumps over the lazy dog.\n";
        text += k % 3 ? "-- Anonymous\n" : "Pack my box with five dozen liquor jugs.\n";
        text += "%\n";
    }
    return text;
}

std::string write(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
}

LmConfig tiny_config(const std::string& text) {
    LmConfig c;
    c.text = text;
    c.model.context = 16;
    c.model.d_model = 8;
    c.model.n_layers = 1;
    c.model.n_heads = 1;
    c.model.dropout = 0.1;  // so that the default generator's state matters to the resume
    c.steps = 12;
    c.batch_size = 4;
    c.warmup = 3;
    c.eval_every = 5;
    c.lr = 1e-2;
    c.threads = 1;
    return c;
}

}  // namespace

TEST_CASE("lm: N steps, a checkpoint and M more equal N + M straight, bit for bit", "[lm][resume]") {
    test::ThreadsGuard threads;
    set_num_threads(1);
    test::ScratchDir dir("normnet_lm_");
    const TextCorpus corpus = load_text_corpus(write(dir.path / "f", fortunes(60)), {.val_fraction = 0.1});
    const LmConfig config = tiny_config((dir.path / "f").string());
    // The cosine horizon is the whole run in both: the first run stops after 7 steps (between
    // two validations, as a signal would), the second resumes from its checkpoint.
    LmTrainer straight(config, corpus, bigram);
    while (straight.step() < straight.total_steps()) REQUIRE(straight.run_interval());
    REQUIRE(straight.history().size() == 3);  // steps 5, 10, 12
    CHECK(straight.history().back().step == 12);

    const std::string a = (dir.path / "a").string();
    std::filesystem::create_directories(a);
    {
        LmTrainer first(config, corpus, bigram);
        REQUIRE(first.run_interval());
        int steps = 0;
        CHECK_FALSE(first.run_interval({}, [&] { return ++steps == 2; }));  // stopped at step 7
        REQUIRE(first.step() == 7);
        first.save_checkpoint(a);
    }
    manual_seed(999);  // the resume must restore the generator, not rely on it
    LmTrainer resumed(config, corpus, bigram);
    resumed.resume(read_checkpoint((std::filesystem::path(a) / kModelFile).string()));
    CHECK(resumed.step() == 7);
    while (resumed.step() < resumed.total_steps()) REQUIRE(resumed.run_interval());
    const NamedTensors x = straight.model().state_dict(), y = resumed.model().state_dict();
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
        INFO(x[i].first);
        CHECK(test::bit_equal(x[i].second, y[i].second));
    }
    REQUIRE(resumed.history().size() == 3);
    for (size_t i = 0; i < 3; ++i) {
        CHECK(resumed.history()[i].step == straight.history()[i].step);
        CHECK(resumed.history()[i].train_loss == straight.history()[i].train_loss);
        CHECK(resumed.history()[i].val_loss == straight.history()[i].val_loss);
        CHECK(resumed.history()[i].lr == straight.history()[i].lr);
    }
}

TEST_CASE("lm: validation is the mean loss per held-out character; metrics.csv has nats and bits", "[lm]") {
    test::ThreadsGuard threads;
    set_num_threads(1);
    test::ScratchDir dir("normnet_lm_");
    const TextCorpus corpus = load_text_corpus(write(dir.path / "f", fortunes(60)), {.val_fraction = 0.1});
    LmTrainer t(tiny_config((dir.path / "f").string()), corpus, bigram);
    // An untrained model with zero head weights predicts uniformly: ln V nats per character.
    for (auto& [name, p] : t.model().named_parameters()) {
        if (name.rfind("head", 0) == 0) {
            NoGradGuard g;
            p.zero_();
        }
    }
    CHECK(t.evaluate() == Approx(std::log(static_cast<double>(corpus.vocab_size()))).epsilon(1e-6));
    CHECK(val_loss_text(std::numbers::ln2) == "val loss 0.6931 nats (1.000 bits/char)");
    const std::string csv = lm_metrics_csv({LmMetrics{.step = 5, .train_loss = 2, .val_loss = 2 * std::numbers::ln2, .lr = 1e-3, .seconds = 1.5}});
    CHECK(csv == "step,train_loss,val_loss,val_bits_per_char,lr,seconds\n5,2.000000,1.386294,2.000000,0.001,1.500\n");
}

TEST_CASE("lm: corpora shorter than the context are refused naming both lengths", "[lm]") {
    test::ScratchDir dir("normnet_lm_");
    const std::string path = write(dir.path / "short.txt", std::string(200, 'a'));
    const TextCorpus corpus = load_text_corpus(path, {.val_fraction = 0.05});  // 10 held-out characters
    LmConfig c = tiny_config(path);
    CHECK_THROWS_WITH(LmTrainer(c, corpus, bigram), Contains("held-out text (10 characters)") && Contains("context (16)"));
    c.model.context = 500;
    CHECK_THROWS_WITH(LmTrainer(c, corpus, bigram), Contains("context (500)"));
}

TEST_CASE("lm: sampling is seeded; temperature 0 and top-k 1 take the most likely character", "[lm]") {
    test::ThreadsGuard threads;
    set_num_threads(1);
    test::ScratchDir dir("normnet_lm_");
    const TextCorpus corpus = load_text_corpus(write(dir.path / "f", fortunes(60)), {.val_fraction = 0.1});
    LmTrainer t(tiny_config((dir.path / "f").string()), corpus, bigram);
    while (t.step() < t.total_steps()) REQUIRE(t.run_interval());
    const std::vector<int64_t> prompt = corpus.encode("The");
    const auto a = sample_text(t.model(), 16, prompt, {.tokens = 40, .temperature = 1.0, .seed = 3});
    const auto b = sample_text(t.model(), 16, prompt, {.tokens = 40, .temperature = 1.0, .seed = 3});
    const auto c = sample_text(t.model(), 16, prompt, {.tokens = 40, .temperature = 1.0, .seed = 4});
    CHECK(a.size() == 40);
    CHECK(a == b);
    CHECK(a != c);
    const auto greedy = sample_text(t.model(), 16, prompt, {.tokens = 20, .temperature = 0.0});
    CHECK(sample_text(t.model(), 16, prompt, {.tokens = 20, .temperature = 1.0, .top_k = 1, .seed = 9}) == greedy);
    // The greedy continuation of a bigram model follows its argmax from the last character.
    NoGradGuard g;
    t.model().eval();
    const Tensor logits = t.model().forward(from_vector(std::vector<int64_t>{prompt.back()}, {1, 1}));
    CHECK(greedy.front() == argmax(logits.reshape({-1})).item<int64_t>());
}
