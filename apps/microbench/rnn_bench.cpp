// rnn_bench: milliseconds per forward + backward of the fused lstm_layer and gru_layer, and of
// LayerNormLSTM (the fused layer_norm_lstm_layer), on RowLSTM's MNIST shapes by default (N 128, T 28, I 28, H 128),
// with the GEMM time of the same products beside them, so the cell kernels' share shows.
//
//   rnn_bench [--batch N] [--steps T] [--input I] [--hidden H] [--threads K] [--min-time S]
//
// A program for a quiet machine, not a timed test; ctest runs it once on tiny sizes.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_timing.hpp"
#include "normnet/normnet.hpp"
#include <cmath>

int main(int argc, char** argv) {
    using namespace normnet;
    int64_t N = 128, T = 28, I = 28, H = 128;
    int threads = 0;
    double min_time = 0.5;
    for (int a = 1; a + 1 < argc; a += 2) {
        const std::string k = argv[a];
        const double v = std::atof(argv[a + 1]);
        if (k == "--batch") N = static_cast<int64_t>(v);
        else if (k == "--steps") T = static_cast<int64_t>(v);
        else if (k == "--input") I = static_cast<int64_t>(v);
        else if (k == "--hidden") H = static_cast<int64_t>(v);
        else if (k == "--threads") threads = static_cast<int>(v);
        else if (k == "--min-time") min_time = v;
        else {
            std::fprintf(stderr, "usage: rnn_bench [--batch N] [--steps T] [--input I] [--hidden H] [--threads K] [--min-time S]\n");
            return 2;
        }
    }
    if (threads > 0) set_num_threads(threads);
    manual_seed(1);
    const Tensor x = randn({N, T, I}).requires_grad_();
    const Tensor dout = randn({N, T, H});
    const auto row = [&](const char* name, int gates, auto&& step) {
        const double s = ::bench::time_case(step, min_time);
        // The layer's products: input projection (fwd + 2 bwd) and T recurrent ones (fwd + 2 bwd).
        const double flops = 2.0 * 3.0 * gates * H * (static_cast<double>(N) * T * I + static_cast<double>(N) * T * H);
        std::printf("| %-13s | %4lld x %3lld x %3lld -> %4lld | %8.3f ms | %6.1f GFLOP/s |\n", name,
                    static_cast<long long>(N), static_cast<long long>(T), static_cast<long long>(I),
                    static_cast<long long>(H), s * 1e3, flops / s * 1e-9);
    };
    std::printf("| layer         | N x T x I -> H           | fwd+bwd     | GEMM rate      |\n");
    const float b = 1.0f / std::sqrt(static_cast<float>(H));
    for (const int gates : {4, 3}) {
        const Tensor wi = empty({gates * H, I}).uniform_(-b, b).requires_grad_();
        const Tensor wh = empty({gates * H, H}).uniform_(-b, b).requires_grad_();
        const Tensor bi = zeros({gates * H}).requires_grad_(), bh = zeros({gates * H}).requires_grad_();
        row(gates == 4 ? "lstm_layer" : "gru_layer", gates, [&] {
            const Tensor out = gates == 4 ? lstm_layer(x, {}, {}, wi, wh, bi, bh) : gru_layer(x, {}, wi, wh, bi, bh);
            out.backward(dout);
        });
    }
    LayerNormLSTM ln(LayerNormLSTMOptions{.input_size = I, .hidden_size = H, .batch_first = true});
    row("LayerNormLSTM", 4, [&] { std::get<0>(ln.forward(x)).backward(dout); });
    return 0;
}
