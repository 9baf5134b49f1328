// Tests of the DataLoader: the shuffle order depends only on (seed, epoch) — not on the thread
// count or on earlier epochs — batches hold exactly the dataset's rows in that order, and every
// bad option is rejected. Small synthetic datasets whose pixels encode the example's index make
// the order readable from the batches themselves.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "normnet/data.hpp"
#include "normnet/error.hpp"
#include "normnet/threads.hpp"
#include "test_helpers.hpp"

using Catch::Contains;
using normnet::Batch;
using normnet::DataLoader;
using normnet::DataLoaderOptions;
using normnet::Dataset;

namespace {

// n images of 2x3 pixels; pixel f of image i is (i + 7 f) mod 256 and its label is i mod 10,
// so each row differs from its neighbours in every pixel.
std::shared_ptr<const Dataset> synthetic(int64_t n) {
    auto d = std::make_shared<Dataset>();
    d->name = "synthetic";
    d->images.count = n;
    d->images.rows = 2;
    d->images.cols = 3;
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t f = 0; f < 6; ++f) d->images.pixels.push_back(static_cast<uint8_t>((i + 7 * f) % 256));
        d->labels.push_back(static_cast<uint8_t>(i % 10));
    }
    return d;
}

// The example indices of one epoch, read back from pixel 0 of every row (datasets below 256).
std::vector<int64_t> epoch_order(DataLoader& loader) {
    std::vector<int64_t> order;
    for (const Batch& batch : loader) {
        const int64_t F = batch.size() > 0 ? batch.inputs.numel() / batch.size() : 0;  // [B, 1, rows, cols]
        for (int64_t b = 0; b < batch.size(); ++b) {
            order.push_back(static_cast<int64_t>(batch.inputs.data()[b * F] * 255.0f + 0.5f));
        }
    }
    return order;
}

std::vector<int64_t> identity(int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), int64_t{0});
    return v;
}

bool is_permutation_of_all(std::vector<int64_t> order, int64_t n) {
    std::sort(order.begin(), order.end());
    return order == identity(n);
}


}  // namespace

TEST_CASE("data loader: the same seed gives the same order, other seeds and epochs another", "[data]") {
    const auto data = synthetic(200);
    const DataLoaderOptions o{.batch_size = 16, .shuffle = true, .seed = 42};
    DataLoader a(data, o), b(data, o);
    const auto a0 = epoch_order(a), a1 = epoch_order(a), a2 = epoch_order(a);
    const auto b0 = epoch_order(b), b1 = epoch_order(b);
    CHECK(a0 == b0);
    CHECK(a1 == b1);
    CHECK(a.epoch() == 3);
    for (const auto& order : {a0, a1, a2}) CHECK(is_permutation_of_all(order, 200));
    CHECK(a0 != identity(200));
    CHECK(a0 != a1);
    CHECK(a1 != a2);
    CHECK(a0 != a2);

    DataLoader other(data, DataLoaderOptions{.batch_size = 16, .shuffle = true, .seed = 43});
    CHECK(epoch_order(other) != a0);
}

TEST_CASE("data loader: the order does not depend on the thread count", "[data]") {
    normnet::test::ThreadsGuard guard;
    const auto data = synthetic(200);
    const DataLoaderOptions o{.batch_size = 32, .shuffle = true, .seed = 7};
    normnet::set_num_threads(1);
    DataLoader one(data, o);
    const auto one0 = epoch_order(one), one1 = epoch_order(one);
    normnet::set_num_threads(2);
    DataLoader two(data, o);
    const auto two0 = epoch_order(two), two1 = epoch_order(two);
    CHECK(one0 == two0);
    CHECK(one1 == two1);
}

TEST_CASE("data loader: shuffle=false gives the dataset's order in every epoch", "[data]") {
    const auto data = synthetic(50);
    DataLoader loader(data, DataLoaderOptions{.batch_size = 8, .shuffle = false, .seed = 99});
    CHECK(epoch_order(loader) == identity(50));
    CHECK(epoch_order(loader) == identity(50));
}

TEST_CASE("data loader: drop_last and the last partial batch", "[data]") {
    const auto data = synthetic(10);
    SECTION("keep the partial batch") {
        DataLoader loader(data, DataLoaderOptions{.batch_size = 4, .shuffle = true, .drop_last = false, .seed = 1});
        CHECK(loader.dataset_size() == 10);
        REQUIRE(loader.num_batches() == 3);
        std::vector<int64_t> sizes;
        for (const Batch& batch : loader) {
            sizes.push_back(batch.size());
            CHECK(batch.inputs.shape() == normnet::Shape{batch.size(), 1, 2, 3});
            CHECK(batch.labels.shape() == normnet::Shape{batch.size()});
        }
        CHECK(sizes == std::vector<int64_t>{4, 4, 2});
        CHECK(is_permutation_of_all(epoch_order(loader), 10));
    }
    SECTION("drop it") {
        DataLoader loader(data, DataLoaderOptions{.batch_size = 4, .shuffle = true, .drop_last = true, .seed = 1});
        REQUIRE(loader.num_batches() == 2);
        std::vector<int64_t> sizes;
        for (const Batch& batch : loader) sizes.push_back(batch.size());
        CHECK(sizes == std::vector<int64_t>{4, 4});
        // The kept examples are the first 8 of the same shuffled order.
        DataLoader keep(data, DataLoaderOptions{.batch_size = 4, .shuffle = true, .drop_last = false, .seed = 1});
        loader.set_epoch(0);
        const auto dropped = epoch_order(loader), kept = epoch_order(keep);
        CHECK(dropped == std::vector<int64_t>(kept.begin(), kept.begin() + 8));
    }
    SECTION("a batch larger than the dataset") {
        DataLoader loader(data, DataLoaderOptions{.batch_size = 64, .shuffle = false});
        CHECK(loader.num_batches() == 1);
        CHECK(epoch_order(loader) == identity(10));
        DataLoader dropped(data, DataLoaderOptions{.batch_size = 64, .shuffle = false, .drop_last = true});
        CHECK(dropped.num_batches() == 0);
        CHECK(epoch_order(dropped).empty());
    }
}

TEST_CASE("data loader: batches hold the dataset's rows as pixels / 255, or standardised", "[data]") {
    // Every byte value, so the whole conversion table is checked.
    auto data = std::make_shared<Dataset>();
    data->images.count = 64;
    data->images.rows = 2;
    data->images.cols = 2;
    for (int i = 0; i < 256; ++i) data->images.pixels.push_back(static_cast<uint8_t>((i * 37) % 256));
    for (int i = 0; i < 64; ++i) data->labels.push_back(static_cast<uint8_t>(i % 10));
    const float mean = 0.1307f, std = 0.3081f;

    for (const bool standardise : {false, true}) {
        INFO("standardise: " << standardise);
        normnet::ImageTransform transform;
        if (standardise) transform = {.mean = mean, .std = std};
        DataLoader loader(data, DataLoaderOptions{.batch_size = 5, .shuffle = true, .seed = 3}, transform);
        std::vector<int64_t> seen;
        for (const Batch& batch : loader) {
            for (int64_t b = 0; b < batch.size(); ++b) {
                // The row is identified by its label and first pixel; then every value must be exact.
                const uint8_t* row = nullptr;
                for (int64_t i = 0; i < data->size(); ++i) {
                    const uint8_t* candidate = data->images.pixels.data() + i * 4;
                    float x0 = static_cast<float>(candidate[0]) / 255.0f;
                    if (standardise) x0 = (x0 - mean) / std;
                    if (x0 == batch.inputs.data()[b * 4]) {
                        row = candidate;
                        seen.push_back(i);
                        CHECK(batch.labels.data_ptr<int64_t>()[b] == data->labels[static_cast<size_t>(i)]);
                        break;
                    }
                }
                REQUIRE(row != nullptr);
                for (int64_t f = 0; f < 4; ++f) {
                    // Exactly as PyTorch computes it: ToTensor's x / 255, then Normalize's (x - mean) / std.
                    float expected = static_cast<float>(row[f]) / 255.0f;
                    if (standardise) expected = (expected - mean) / std;
                    CHECK(batch.inputs.data()[b * 4 + f] == expected);
                }
            }
        }
        CHECK(is_permutation_of_all(seen, 64));
    }
}

TEST_CASE("data loader: loaders over a user's tensors keep inputs, targets and labels together", "[data]") {
    const int64_t n = 23;
    // Row i of the inputs is (i, 100 + i, 200 + i); row i of the targets is (-i, 0.5 i).
    std::vector<float> x, y;
    for (int64_t i = 0; i < n; ++i) {
        x.insert(x.end(), {float(i), float(100 + i), float(200 + i)});
        y.insert(y.end(), {float(-i), 0.5f * float(i)});
    }
    const normnet::Tensor inputs = normnet::from_vector(x, {n, 3});
    const DataLoaderOptions o{.batch_size = 6, .shuffle = true, .seed = 11};

    SECTION("float targets") {
        DataLoader loader(inputs, normnet::from_vector(y, {n, 2}), o);
        CHECK(loader.num_batches() == 4);
        std::vector<int64_t> order;
        for (const Batch& batch : loader) {
            REQUIRE(batch.targets.defined());
            CHECK_FALSE(batch.labels.defined());
            CHECK(batch.targets.shape() == normnet::Shape{batch.size(), 2});
            for (int64_t b = 0; b < batch.size(); ++b) {
                const float i = batch.inputs.at({b, 0});
                order.push_back(static_cast<int64_t>(i));
                CHECK(batch.inputs.at({b, 1}) == 100 + i);
                CHECK(batch.inputs.at({b, 2}) == 200 + i);
                CHECK(batch.targets.at({b, 0}) == -i);
                CHECK(batch.targets.at({b, 1}) == 0.5f * i);
            }
        }
        CHECK(is_permutation_of_all(order, n));
        CHECK(order != identity(n));
    }
    SECTION("int labels") {
        std::vector<int64_t> labels;
        for (int64_t i = 0; i < n; ++i) labels.push_back(1000 + i);
        DataLoader loader(inputs, normnet::from_vector(labels, {n}), o);
        std::vector<int64_t> order;
        for (const Batch& batch : loader) {
            CHECK_FALSE(batch.targets.defined());
            REQUIRE(batch.labels.shape() == normnet::Shape{batch.size()});
            for (int64_t b = 0; b < batch.size(); ++b) {
                const auto i = static_cast<int64_t>(batch.inputs.at({b, 0}));
                order.push_back(i);
                CHECK(batch.labels.data_ptr<int64_t>()[b] == 1000 + i);
            }
        }
        CHECK(is_permutation_of_all(order, n));
    }
    SECTION("the same seed orders tensors and images alike") {
        DataLoader tensors(inputs, normnet::from_vector(y, {n, 2}), o);
        DataLoader images(synthetic(n), o);
        std::vector<int64_t> order;
        for (const Batch& batch : tensors) {
            for (int64_t b = 0; b < batch.size(); ++b) order.push_back(static_cast<int64_t>(batch.inputs.at({b, 0})));
        }
        CHECK(order == epoch_order(images));
    }
}

TEST_CASE("data loader: set_epoch reproduces an epoch's order, as a resumed run needs", "[data]") {
    const auto data = synthetic(120);
    const DataLoaderOptions o{.batch_size = 10, .shuffle = true, .seed = 5};
    DataLoader straight(data, o);
    std::vector<std::vector<int64_t>> orders;
    for (int e = 0; e < 4; ++e) {
        CHECK(straight.epoch() == e);
        orders.push_back(epoch_order(straight));
    }
    DataLoader resumed(data, o);
    resumed.set_epoch(2);
    CHECK(epoch_order(resumed) == orders[2]);
    CHECK(resumed.epoch() == 3);
    CHECK(epoch_order(resumed) == orders[3]);
    resumed.set_epoch(0);
    CHECK(epoch_order(resumed) == orders[0]);

    // fill() gives any batch of the current order without iterating.
    DataLoader direct(data, o);
    direct.set_epoch(1);
    direct.begin();
    Batch batch;
    direct.fill(3, batch);
    for (int64_t b = 0; b < 10; ++b) {
        CHECK(static_cast<int64_t>(batch.inputs.at({b, 0, 0, 0}) * 255.0f + 0.5f) == orders[1][static_cast<size_t>(30 + b)]);
    }
}

TEST_CASE("data loader: take() keeps the first n examples", "[data]") {
    const auto data = synthetic(30);
    const Dataset first = normnet::take(*data, 12);
    CHECK(first.size() == 12);
    CHECK(first.features() == 6);
    CHECK(first.images.rows == 2);
    CHECK(first.images.cols == 3);
    CHECK(first.name == data->name);
    CHECK(first.num_classes == data->num_classes);
    CHECK(first.images.pixels == std::vector<uint8_t>(data->images.pixels.begin(), data->images.pixels.begin() + 72));
    CHECK(first.labels == std::vector<uint8_t>(data->labels.begin(), data->labels.begin() + 12));

    CHECK(normnet::take(*data, 30).images.pixels == data->images.pixels);
    CHECK(normnet::take(*data, 1000).size() == 30);
    CHECK(normnet::take(*data, 0).size() == 0);
    CHECK_THROWS_MATCHES(normnet::take(*data, -1), normnet::Error, Catch::Message("take: n must be non-negative, got -1"));

    DataLoader loader(std::make_shared<Dataset>(first), DataLoaderOptions{.batch_size = 5, .shuffle = false});
    CHECK(epoch_order(loader) == identity(12));
}

TEST_CASE("data loader: bad options throw normnet::Error saying what is wrong", "[data]") {
    const auto data = synthetic(10);
    using normnet::Error;
    CHECK_THROWS_WITH(DataLoader(data, DataLoaderOptions{.batch_size = 0}), Contains("batch_size must be positive, got 0"));
    CHECK_THROWS_WITH(DataLoader(data, DataLoaderOptions{.batch_size = -3}), Contains("got -3"));
    CHECK_THROWS_AS(DataLoader(nullptr, DataLoaderOptions{.batch_size = 1}), Error);
    CHECK_THROWS_WITH(DataLoader(data, DataLoaderOptions{.batch_size = 1}, {.mean = 0.5f, .std = std::nullopt}), Contains("mean and std"));
    CHECK_THROWS_WITH(DataLoader(data, DataLoaderOptions{.batch_size = 1}, {.mean = 0.5f, .std = 0.0f}),
                      Contains("std must be positive"));

    const normnet::Tensor x = normnet::zeros({4, 3});
    CHECK_THROWS_WITH(DataLoader(x, normnet::zeros({5, 2}), DataLoaderOptions{.batch_size = 2}),
                      Contains("[4, 3]") && Contains("[5, 2]"));
    CHECK_THROWS_WITH(DataLoader(x, normnet::from_vector(std::vector<int64_t>{0, 1, 2}, {3}), DataLoaderOptions{.batch_size = 2}),
                      Contains("[4, 3]") && Contains("[3]"));
    CHECK_THROWS_AS(DataLoader(x, normnet::zeros({4, 2}), DataLoaderOptions{.batch_size = -1}), Error);

    DataLoader loader(data, DataLoaderOptions{.batch_size = 4});
    Batch batch;
    CHECK_THROWS_WITH(loader.fill(3, batch), Contains("batch 3 out of range (3 batches)"));
    CHECK_THROWS_AS(loader.fill(-1, batch), Error);
}

TEST_CASE("data loader: a batch the caller still holds is never overwritten by the next one", "[data]") {
    const auto data = synthetic(40);
    DataLoader loader(data, DataLoaderOptions{.batch_size = 8, .shuffle = true, .seed = 3});
    normnet::Tensor kept;
    std::vector<float> kept_values;
    int64_t index = 0;
    for (const Batch& batch : loader) {
        if (index++ == 0) {
            kept = batch.inputs;  // a handle to the first batch, as a caller saving it would hold
            kept_values = kept.to_vector();
        }
    }
    REQUIRE(index == 5);
    CHECK(kept.to_vector() == kept_values);
    // Without such a handle the buffer is reused (what keeps a training loop allocation-free).
    const float* first = nullptr;
    bool reused = true;
    for (const Batch& batch : loader) {
        if (first == nullptr) first = batch.inputs.data();
        reused = reused && batch.inputs.data() == first;
    }
    CHECK(reused);
}

TEST_CASE("data loader: a batch size near INT64_MAX gives one batch, without overflow", "[data]") {
    const auto data = synthetic(10);
    const int64_t huge = std::numeric_limits<int64_t>::max();
    for (const bool drop_last : {false, true}) {
        DataLoader loader(data, DataLoaderOptions{.batch_size = huge, .shuffle = false, .drop_last = drop_last});
        CHECK(loader.num_batches() == (drop_last ? 0 : 1));
        CHECK(epoch_order(loader) == (drop_last ? std::vector<int64_t>{} : identity(10)));
    }
    DataLoader loader(data, DataLoaderOptions{.batch_size = huge - 1});
    CHECK(loader.num_batches() == 1);
}

TEST_CASE("data loader: ranks take contiguous slices of every global batch, which together are the single-process batch",
          "[data][dist]") {
    const int64_t n = 23;  // 23 = 2 batches of 8 and a partial one of 7
    std::vector<float> x;
    for (int64_t i = 0; i < n; ++i) x.push_back(float(i));
    const normnet::Tensor inputs = normnet::from_vector(x, {n, 1});
    const DataLoaderOptions one{.batch_size = 8, .shuffle = true, .seed = 5};
    for (int64_t world : {2, 4}) {
        INFO("world " << world);
        DataLoader single(inputs, inputs, one);
        std::vector<DataLoader> ranks;
        for (int64_t r = 0; r < world; ++r) {
            DataLoaderOptions o = one;
            o.num_replicas = world;
            o.rank = r;
            ranks.emplace_back(inputs, inputs, o);
            CHECK(ranks.back().num_batches() == single.num_batches());
        }
        single.begin();
        for (auto& r : ranks) r.begin();
        for (int64_t b = 0; b < single.num_batches(); ++b) {
            Batch whole, part;
            single.fill(b, whole);
            std::vector<float> joined;
            double shares = 0.0;
            for (auto& r : ranks) {
                r.fill(b, part);
                for (float v : part.inputs.to_vector()) joined.push_back(v);
                shares += r.share(b);
            }
            CHECK(joined == whole.inputs.to_vector());
            CHECK(std::abs(shares - 1.0) < 1e-12);
        }
        // The partial last batch of 7 rows: with 4 ranks of 2, the last rank gets one row.
        Batch last;
        ranks.back().fill(2, last);
        CHECK(last.size() == (world == 2 ? 3 : 1));
    }
    // 5 rows, batches of 4 over 4 ranks: the second batch (one row) leaves ranks 1..3 empty.
    DataLoader empty_rank(normnet::zeros({5, 3}), normnet::zeros({5, 1}),
                          DataLoaderOptions{.batch_size = 4, .num_replicas = 4, .rank = 2});
    empty_rank.begin();
    Batch nothing;
    empty_rank.fill(1, nothing);
    CHECK(nothing.size() == 0);
    CHECK(nothing.inputs.shape() == normnet::Shape{0, 3});
    CHECK(empty_rank.share(1) == 0.0);
    CHECK_THROWS_WITH(DataLoader(inputs, inputs, DataLoaderOptions{.batch_size = 6, .num_replicas = 4}),
                      Contains("batch_size 6 does not divide by num_replicas 4"));
    CHECK_THROWS_WITH(DataLoader(inputs, inputs, DataLoaderOptions{.batch_size = 8, .num_replicas = 2, .rank = 2}),
                      Contains("rank 2"));
}
