// libtorch peer of `normnet bench --model lm` (issue 13): the PyTorch C++ frontend training the
// character-level GPT-style decoder -- token embedding plus a learned positional embedding, 4
// pre-LN encoder layers (d_model 128, 4 heads, feed-forward 512, GELU, no dropout) under a causal
// mask, a final LayerNorm and a linear head without bias -- with cross-entropy and AdamW, as
// torch_lm.py. The corpus is read as normnet's load_text_corpus reads it; batches are random
// windows of --context + 1 characters. Times --steps optimizer steps after --warmup-steps, reports
// tokens/s and then the validation loss over the held-out stream's non-overlapping windows.
//
//   libtorch_lm --batch-size 32 --steps 50 --threads 1 --json
#include <cmath>

#include "peer_common.hpp"
#include "peer_transformer.hpp"

namespace {

struct Options {
    peers::CommonOptions common = peers::common_defaults(peers::kFortunes, 32);
    int64_t context = 128;
    std::string placement = "pre";
    int64_t steps = 50, warmup_steps = 5;
    double lr = 1e-3, weight_decay = 0.01;  // torch.optim.AdamW's default decay
    double val_fraction = 0.05;
    int64_t eval_windows = 0;  // 0: the whole held-out stream
};

const std::string kUsage =
    "usage: libtorch_lm [--context T] [--norm-placement pre|post] [--steps S] [--warmup-steps W]\n"
    "                   [--lr LR] [--weight-decay D] [--val-fraction F] [--eval-windows N]\n";

Options parse(int argc, char** argv) {
    Options o;
    peers::ArgParser a(argc, argv, kUsage);
    a.parse(o.common, [&](const std::string& name) {
        if (name == "--context") o.context = a.integer();
        else if (name == "--norm-placement") o.placement = a.value();
        else if (name == "--steps") o.steps = a.integer();
        else if (name == "--warmup-steps") o.warmup_steps = a.integer();
        else if (name == "--lr") o.lr = a.number();
        else if (name == "--weight-decay") o.weight_decay = a.number();
        else if (name == "--val-fraction") o.val_fraction = a.number();
        else if (name == "--eval-windows") o.eval_windows = a.integer();
        else return false;
        return true;
    });
    if (o.placement != "pre" && o.placement != "post")
        throw std::invalid_argument("--norm-placement must be pre or post, not " + o.placement);
    if (o.context < 1 || o.steps < 1 || o.warmup_steps < 0 || o.eval_windows < 0 || o.val_fraction < 0 ||
        o.val_fraction >= 1)
        throw std::invalid_argument(
            "--context and --steps must be >= 1, --warmup-steps and --eval-windows >= 0, --val-fraction in [0, 1)");
    return o;
}

// normnet::models::CharTransformer in libtorch: tok_emb, pos_emb, encoder, head.
struct CharTransformerImpl : torch::nn::Module {
    static constexpr int64_t kModel = 128;

    CharTransformerImpl(int64_t vocab, const Options& o)
        : tok_emb(register_module("tok_emb", torch::nn::Embedding(vocab, kModel))),
          pos_emb(register_parameter("pos_emb", torch::empty({o.context, kModel}).normal_(0.0, 0.02))),
          encoder(register_module("encoder", peers::Encoder(kModel, 4, 4 * kModel, 4, o.placement == "pre"))),
          head(register_module("head", torch::nn::Linear(torch::nn::LinearOptions(kModel, vocab).bias(false)))),
          causal(torch::full({o.context, o.context}, -INFINITY).triu(1)) {
        torch::NoGradGuard no_grad;
        tok_emb->weight.normal_(0.0, 0.02);  // GPT-2's rule, as normnet
    }

    torch::Tensor forward(const torch::Tensor& tokens) {
        const int64_t t = tokens.size(1);
        const auto x = tok_emb(tokens) + pos_emb.narrow(0, 0, t);
        return head(encoder(x, causal.narrow(0, 0, t).narrow(1, 0, t)));
    }

    torch::nn::Embedding tok_emb;
    torch::Tensor pos_emb;
    peers::Encoder encoder;
    torch::nn::Linear head;
    torch::Tensor causal;  // [T, T]: -inf above the diagonal (not a buffer: no state_dict entry)
};
TORCH_MODULE(CharTransformer);

// Batches of random windows [o, o + T] of a stream, as normnet's TextBatches: offsets in
// [0, n - T) from normnet's generator seeded with --seed (--order normnet) or torch::randint.
class Windows {
public:
    Windows(torch::Tensor tokens, const Options& o)
        : tokens_(std::move(tokens)), batch_(o.common.batch_size), context_(o.context),
          normnet_(o.common.order == "normnet"), gen_(o.common.seed), span_(torch::arange(o.context + 1)) {
        if (tokens_.numel() <= context_)
            throw std::runtime_error("the text (" + std::to_string(tokens_.numel()) +
                                     " characters) is not longer than the context (" + std::to_string(context_) + ")");
    }
    std::pair<torch::Tensor, torch::Tensor> next() {
        const int64_t starts = tokens_.numel() - context_;
        torch::Tensor o;
        if (normnet_) {
            o = torch::empty({batch_}, torch::kInt64);
            for (int64_t b = 0; b < batch_; ++b) o[b] = int64_t(gen_.below(uint64_t(starts)));
        } else {
            o = torch::randint(0, starts, {batch_}, torch::kInt64);
        }
        const auto w = tokens_.index({o.unsqueeze(1) + span_});
        return {w.narrow(1, 0, context_), w.narrow(1, 1, context_)};
    }

private:
    torch::Tensor tokens_;
    int64_t batch_, context_;
    bool normnet_;
    peers::NormnetGenerator gen_;
    torch::Tensor span_;
};

double step(CharTransformer& model, torch::optim::Optimizer& opt, Windows& batches) {
    auto [x, y] = batches.next();
    const auto logits = model->forward(x);
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(2)}), y.reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step();
    return loss.item<double>();
}

// Mean cross-entropy (nats) over the held-out stream's consecutive windows w: inputs
// [wT, wT + T), targets shifted by one (TextBatches::window), in chunks of 64 windows.
double evaluate(CharTransformer& model, const torch::Tensor& val, const Options& o) {
    const int64_t t = o.context;
    int64_t windows = (val.numel() - 1) / t;
    if (o.eval_windows) windows = std::min(windows, o.eval_windows);
    model->eval();
    torch::NoGradGuard no_grad;
    namespace F = torch::nn::functional;
    double total = 0;
    for (int64_t w0 = 0; w0 < windows; w0 += 64) {
        const int64_t w1 = std::min(windows, w0 + 64);
        const auto x = val.slice(0, w0 * t, w1 * t).view({-1, t});
        const auto y = val.slice(0, w0 * t + 1, w1 * t + 1).view({-1, t});
        const auto logits = model->forward(x);
        total += F::cross_entropy(logits.reshape({-1, logits.size(2)}), y.reshape({-1}),
                                  F::CrossEntropyFuncOptions().reduction(torch::kSum))
                     .item<double>();
    }
    return total / double(std::max<int64_t>(1, windows * t));
}

void run(const Options& o) {
    const auto& c = o.common;
    peers::setup_threads(c);
    torch::manual_seed(c.seed);
    const auto corpus = peers::load_corpus(c.data, o.val_fraction);
    const auto vocab = int64_t(corpus.vocab.size());
    CharTransformer model(vocab, o);
    peers::load_init(*model, c.init);
    torch::optim::AdamW adamw(peers::defined_parameters(*model),
                              torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
    Windows batches(corpus.train, o);
    model->train();
    for (int64_t s = 0; s < o.warmup_steps; ++s) step(model, adamw, batches);

    std::vector<double> seconds;
    double loss = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < o.steps; ++s) {
        const auto t1 = std::chrono::steady_clock::now();
        loss = step(model, adamw, batches);
        seconds.push_back(peers::seconds_since(t1));
        if ((s + 1) % 10 == 0 || s + 1 == o.steps) {
            char line[96];
            std::snprintf(line, sizeof line, "step %lld: loss %.4f, %.3f s", static_cast<long long>(s + 1), loss,
                          seconds.back());
            peers::progress(c, line);
        }
    }
    const double total = peers::seconds_since(t0);
    const double rss = peers::peak_rss_mb();  // the training loop's peak, before evaluation
    const double val_loss = evaluate(model, corpus.val, o);
    const double tokens = double(o.steps * c.batch_size * o.context);

    auto r = peers::result_header(c, "lm", "layer");
    r["context"] = o.context;
    r["vocab"] = vocab;
    r["train_tokens"] = corpus.train.numel();
    r["val_tokens"] = corpus.val.numel();
    r["steps"] = o.steps;
    r["seconds"] = total;
    r["median_step_seconds"] = peers::median(seconds);
    r["tokens_per_second"] = tokens / total;
    r["peak_rss_mb"] = rss;
    r["train_loss"] = loss;
    r["val_loss"] = val_loss;
    char line[320];
    std::snprintf(line, sizeof line,
                  "lm, batch %lld, threads %d (BLAS %d): %lld steps in %.3f s, %.0f tokens/s, peak RSS %.0f MB\n"
                  "val loss %.4f nats (%.3f bits/char)",
                  static_cast<long long>(c.batch_size), c.threads, c.blas_threads, static_cast<long long>(o.steps),
                  total, tokens / total, rss, val_loss, val_loss / std::log(2.0));
    peers::emit(c, r, line);
}

}  // namespace

int main(int argc, char** argv) {
    return peers::run_main("libtorch_lm", kUsage, [&] { run(parse(argc, argv)); });
}
