// A user's program against an installed normnet: a custom Module with a parameter, a buffer and
// children; a custom Function checked by gradcheck; a DataLoader over in-memory tensors; an
// optimizer, a schedule and a checkpoint round trip. Prints "consumer: ok" and exits 0 on success.
#include <normnet/normnet.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

using namespace normnet;

// y = x * x, with its backward written out.
struct Square : Function<Square> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x) {
        ctx->save_for_backward({x});
        return x * x;
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
        return {grad_outputs[0] * ctx->get_saved_variables()[0] * 2.0f};
    }
};

// x + fc(square(norm(x))), with a step counter as a buffer.
class Block : public Module {
public:
    explicit Block(int64_t n)
        : norm(register_module("norm", LayerNorm({n}))),
          fc(register_module("fc", Linear(n, n))),
          scale(register_parameter("scale", ones({n}))),
          steps(register_buffer("steps", zeros({1}))) {}
    Tensor forward(const Tensor& x) override {
        if (is_training()) steps.data()[0] += 1;
        return x + scale * (*fc)(Square::apply((*norm)(x)));
    }
    std::shared_ptr<LayerNorm> norm;
    std::shared_ptr<Linear> fc;
    Tensor scale, steps;
};

int fail_with(const std::string& what) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what.c_str());
    return 1;
}

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : ".";
    manual_seed(0);
    Tensor a = randn({3, 4}).requires_grad_();
    if (!gradcheck([](const tensor_list& in) { return Square::apply(in[0]); }, {a}).ok) return fail_with("gradcheck Square");
    Block probe(4);
    if (!gradcheck(probe, randn({2, 4}).requires_grad_()).ok) return fail_with("gradcheck Block");

    // Fit y = x0 - 2 x1 + 0.5 x2 from tensors in memory.
    Tensor x = randn({64, 3}), y = empty({64, 1});
    for (int64_t i = 0; i < 64; ++i) y.data()[i] = x.at({i, 0}) - 2 * x.at({i, 1}) + 0.5f * x.at({i, 2});
    Sequential model{Linear(3, 8), Block(8), Linear(8, 1)};
    DataLoader loader(x, y, {.batch_size = 16, .shuffle = true});
    Adam optimizer(model.parameters(), {.lr = 1e-2});
    LRScheduler schedule(optimizer, {.schedule = Schedule::cosine, .total_steps = 100 * loader.num_batches()});
    double first = -1, last = 0;
    for (int epoch = 0; epoch < 100; ++epoch) {
        for (const Batch& batch : loader) {
            Tensor loss = mse_loss(model(batch.inputs), batch.targets);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            schedule.step();
            if (first < 0) first = loss.item();
            last = loss.item();
        }
    }
    std::printf("%s\nmse %.4f -> %.4f\n", model.to_string().c_str(), first, last);
    if (!(last < first / 10)) return fail_with("training did not reduce the loss tenfold");

    // Checkpoint round trip into a fresh model, buffers included.
    const std::string path = (std::filesystem::path(dir) / "consumer.safetensors").string();
    save(model, path);
    manual_seed(1);
    Sequential copy{Linear(3, 8), Block(8), Linear(8, 1)};
    load(copy, path);
    model.eval();
    copy.eval();
    NoGradGuard no_grad;
    if (!allclose(model(x), copy(x))) return fail_with("the reloaded model computes something else");
    if (copy.at<Block>(1)->steps.item() != 400.0f) return fail_with("the buffer was not restored");
    std::printf("consumer: ok\n");
    return 0;
}
