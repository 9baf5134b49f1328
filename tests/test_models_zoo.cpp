// The normalisation choice and its factory (norm_choice.hpp), and the MLP and CNN of
// normnet::models: the layers each normalisation builds at each site, the state_dict names of the
// torch.nn.Sequential of the same layers, and the CNN's fused norm -> max-pool -> ReLU against the
// same modules run one by one.
#include <catch2/catch.hpp>

#include "normnet/normnet.hpp"
#include "test_helpers.hpp"

using namespace normnet;
using Catch::Contains;

namespace {

std::vector<std::string> names(const NamedTensors& tensors) {
    std::vector<std::string> v;
    for (const auto& [name, t] : tensors) v.push_back(name);
    return v;
}

}  // namespace

TEST_CASE("norms: the table names each normalisation, where it sits and which use batch statistics", "[models][norms]") {
    for (Norm n : Norm::all()) {
        INFO(n.name());
        CHECK(Norm(n.name()) == n);
        CHECK(n.batch_statistics() == (n == NormKind::batch));
        for (NormSite site : {NormSite::features, NormSite::channels, NormSite::tokens}) {
            if (!n.sits_at(site)) {
                CHECK_THROWS_WITH(make_norm(n, site, {.channels = 8}, "here"), Contains("here: unknown norm '" + n.name() + "'"));
                continue;
            }
            const NormLayer layer = make_norm(n, site, {.channels = 8, .extent = {8, 4, 4}, .groups = 2});
            CHECK((layer.module == nullptr) == (n == NormKind::none && site != NormSite::tokens));
            CHECK(static_cast<bool>(layer.max_pool2d_relu) == (site == NormSite::channels && n != NormKind::none));
        }
    }
    CHECK(Norm("batch").label() == "BatchNorm");
    CHECK(norm_choices(NormSite::features) == "layer, batch, rms or none");
    CHECK(norm_choices(NormSite::channels, ",") == "layer,batch,group,instance,none");
    CHECK(norm_choices(NormSite::cell) == "layer or none");
    CHECK_THROWS_WITH(Norm("weight"), Contains("unknown normalisation 'weight'") && Contains("layer, batch, group"));
    // Wu and He's LayerNorm of a CNN is GroupNorm with one group.
    const auto layer = make_norm("layer", NormSite::channels, {.channels = 8}).module;
    REQUIRE(std::dynamic_pointer_cast<GroupNorm>(layer) != nullptr);
    CHECK(std::dynamic_pointer_cast<GroupNorm>(layer)->options().num_groups == 1);
}

TEST_CASE("models: MLP is the Sequential of its layers, the same Linear weights whatever the norm", "[models][mlp]") {
    manual_seed(5);
    models::MLP layer_norm(models::MLPOptions{.in_features = 6, .hidden = {4, 3}, .num_classes = 2, .norm = "layer"});
    manual_seed(5);
    models::MLP none(models::MLPOptions{.in_features = 6, .hidden = {4, 3}, .num_classes = 2, .norm = "none"});
    CHECK(names(layer_norm.state_dict()) ==
          std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias", "5.weight", "5.bias",
                                   "6.weight", "6.bias"});
    CHECK(names(none.state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"});
    CHECK(test::bit_equal(layer_norm.state_dict()[0].second, none.state_dict()[0].second));
    CHECK(test::bit_equal(layer_norm.state_dict()[8].second, none.state_dict()[4].second));
    CHECK(layer_norm.forward(rand({5, 6})).shape() == Shape{5, 2});
    const auto copy = layer_norm.clone();
    CHECK(copy->type_name() == "MLP");
    CHECK(test::bit_equal(copy->state_dict()[4].second, layer_norm.state_dict()[4].second));
}

TEST_CASE("models: the CNN's fused norm -> max-pool -> ReLU blocks compute what its layers do one by one", "[models][cnn]") {
    for (const char* norm : {"batch", "group", "layer", "instance", "none"}) {
        INFO("norm " << norm);
        manual_seed(3);
        models::CNN fused(models::CNNOptions{.norm = norm});
        // The same modules (copies of them) run in order, as torch.nn.Sequential would.
        Sequential plain;
        for (const auto& layer : fused.children()) plain.push_back(layer->clone());
        CHECK(names(plain.state_dict()) == names(fused.state_dict()));
        Generator gen(4);
        const Tensor x = rand({6, 784}, gen);
        for (int step = 0; step < 2; ++step) {
            const Tensor yf = fused.forward(x), yp = plain.forward(x);
            test::require_close(yf, yp, 1e-5, "logits");
            yf.sum().backward();
            yp.sum().backward();
            const auto pf = fused.named_parameters(), pp = plain.named_parameters();
            REQUIRE(pf.size() == pp.size());
            for (size_t i = 0; i < pf.size(); ++i) test::require_close(pf[i].second.grad(), pp[i].second.grad(), 1e-4, pf[i].first);
        }
        const auto bf = fused.named_buffers(), bp = plain.named_buffers();
        for (size_t i = 0; i < bf.size(); ++i) CHECK(test::bit_equal(bf[i].second, bp[i].second));
        // Images already [N, C, H, W] give the same logits as their rows.
        fused.eval();
        test::require_close(fused.forward(x.reshape({6, 1, 28, 28})), fused.forward(x), 0.0, "images");
    }
    models::CNN cnn;
    CHECK(names(cnn.state_dict()).front() == "1.weight");  // 0 is the Unflatten of the loader's rows
    CHECK(cnn.clone()->type_name() == "CNN");
}
