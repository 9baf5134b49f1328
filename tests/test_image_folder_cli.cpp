// Tests of the command line on image folders (torchvision's ImageFolder layout), run as a user runs
// `normnet`: Fashion-MNIST written as PNG files trains to the very model its IDX files give (same
// images, same order, same seed); RGB images of another size train the CNN and the ViT, with class
// names from the folders in eval and predict; bad folders give one line and create nothing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "image_files.hpp"
#include "normnet/idx.hpp"
#include "test_helpers.hpp"

using namespace normnet::test;
using Catch::Contains;

namespace {

const char* kFashion = "/usr/share/datasets/fashion-mnist";

// IDX files of `images` in the given order (the MNIST layout, raw).
void write_idx(const fs::path& dir, const std::string& prefix, const normnet::Dataset& d, const std::vector<int64_t>& order) {
    fs::create_directories(dir);
    std::string images, labels;
    put_u32(images, 0x803);
    put_u32(images, static_cast<uint32_t>(order.size()));
    put_u32(images, 28);
    put_u32(images, 28);
    put_u32(labels, 0x801);
    put_u32(labels, static_cast<uint32_t>(order.size()));
    for (const int64_t i : order) {
        images.append(reinterpret_cast<const char*>(d.images.pixels.data() + i * 784), 784);
        labels.push_back(static_cast<char>(d.labels[static_cast<size_t>(i)]));
    }
    std::ofstream(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary) << images;
    std::ofstream(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary) << labels;
}

// DIR/<split>/<label>/<index>.png for each image, and the order an image folder reads them in
// (by class folder, then file name).
std::vector<int64_t> write_pngs(const fs::path& dir, const normnet::Dataset& d) {
    std::vector<int64_t> order;
    for (int label = 0; label < 10; ++label) {
        for (int64_t i = 0; i < d.size(); ++i) {
            if (d.labels[static_cast<size_t>(i)] != label) continue;
            char name[32];
            std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
            const std::vector<uint8_t> pixels(d.images.pixels.begin() + i * 784, d.images.pixels.begin() + (i + 1) * 784);
            write_png(dir / std::to_string(label) / name, 28, 28, 1, pixels);
            order.push_back(i);
        }
    }
    return order;
}

}  // namespace

TEST_CASE("image folder cli: Fashion-MNIST as PNG folders trains to the model its IDX files give, bit for bit",
          "[cli][images]") {
    if (!fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte.gz")) {
        NORMNET_SKIP("Fashion-MNIST not found in " << kFashion << " (apt-get install dataset-fashion-mnist)");
    }
    TempDir dir;
    const normnet::Dataset train = normnet::load_mnist_split(kFashion, "train", 600);
    const normnet::Dataset test = normnet::load_mnist_split(kFashion, "test", 200);
    const fs::path folder = dir.path / "folder", idx = dir.path / "idx";
    write_idx(idx, "train", train, write_pngs(folder / "train", train));
    write_idx(idx, "t10k", test, write_pngs(folder / "test", test));
    for (const std::vector<std::string>& model : {std::vector<std::string>{"--model", "mlp", "--hidden", "64"},
                                                  {"--model", "cnn", "--channels", "8,16", "--fc", "32"}}) {
        INFO(model[1]);
        const auto common = with(model, {"--epochs", "2", "--batch-size", "32", "--threads", "1", "--quiet", "--seed", "3"});
        const RunResult a = run_normnet(with({"train", "--data", idx.string(), "--out", dir / ("idx-" + model[1])}, common),
                                        dir.work());
        const RunResult b = run_normnet(with({"train", "--data", folder.string(), "--out", dir / ("png-" + model[1])}, common),
                                        dir.work());
        INFO(a.err << b.err);
        REQUIRE(a.status == 0);
        REQUIRE(b.status == 0);
        CHECK(a.out.substr(0, a.out.find(",")) == b.out.substr(0, b.out.find(",")));  // "final test accuracy X%"
        require_same_tensors(dir / ("idx-" + model[1]) + "/model.safetensors", dir / ("png-" + model[1]) + "/model.safetensors");
    }
}

TEST_CASE("image folder cli: RGB images resized by --image-size train the CNN and the ViT, and eval and predict name the classes",
          "[cli][images]") {
    TempDir dir;
    const fs::path root = dir.path / "shapes";
    // Two classes told apart by colour, 20 x 24 images of two sizes (resized to 16x16), no test/
    // folder: --val-fraction holds out a stratified share.
    for (int i = 0; i < 60; ++i) {
        const bool red = i % 2 == 0;
        const int64_t h = i % 3 ? 20 : 24, w = 24;
        std::vector<uint8_t> pixels(static_cast<size_t>(h * w * 3));
        for (size_t p = 0; p < pixels.size(); p += 3) {
            pixels[p] = red ? 200 : static_cast<uint8_t>(20 + i);
            pixels[p + 2] = red ? static_cast<uint8_t>(20 + i) : 200;
        }
        write_png(root / "train" / (red ? "red" : "blue") / (std::to_string(i) + ".png"), h, w, 3, pixels);
    }
    const std::string run = dir / "cnn";
    const RunResult r = run_normnet({"train", "--model", "cnn", "--data", root.string(), "--image-size", "16x16", "--channels",
                                     "8", "--fc", "16", "--epochs", "4", "--batch-size", "8", "--threads", "1", "--out", run},
                                    dir.work());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("cnn 3x16x16") && Contains("48 train / 12 held-out images, 2 classes, 3x16x16"));
    const auto m = nlohmann::json::parse(run_normnet({"eval", "--checkpoint", run, "--json"}, dir.work()).out);
    CHECK(m.at("count") == 12);
    CHECK(m.at("classes") == nlohmann::json({"blue", "red"}));
    CHECK(m.at("accuracy").get<double>() >= 0.9);
    const RunResult p = run_normnet({"predict", "--checkpoint", run, "--input", (root / "train" / "red").string()}, dir.work());
    INFO(p.err);
    REQUIRE(p.status == 0);
    const auto lines = lines_of(p.out);
    REQUIRE(lines.size() == 31);
    CHECK(lines[0] == "file,prediction,p_blue,p_red");
    CHECK(csv_cells(lines[1])[1] == "red");
    // The ViT's patch must divide the side: 16 / 4.
    const RunResult vit = run_normnet({"train", "--model", "vit", "--data", root.string(), "--image-size", "16x16", "--patch",
                                       "4", "--epochs", "1", "--batch-size", "8", "--threads", "1", "--quiet", "--out", dir / "vit"},
                                      dir.work());
    INFO(vit.err);
    CHECK(vit.status == 0);
    require_failure(dir, {"train", "--model", "vit", "--data", root.string(), "--image-size", "16x16", "--out", dir / "v7"}, 2,
                    {"--patch 7", "16"});
    require_failure(dir, {"train", "--model", "lstm", "--data", root.string(), "--image-size", "16x16", "--out", dir / "l"}, 1,
                    {"one-channel"});
}

TEST_CASE("image folder cli: bad folders and options give one line and create nothing", "[cli][images]") {
    TempDir dir;
    const fs::path root = dir.path / "imgs";
    write_png(root / "train" / "a" / "x.png", 8, 8, 1, std::vector<uint8_t>(64, 10));
    write_png(root / "train" / "b" / "y.png", 8, 8, 1, std::vector<uint8_t>(64, 200));
    const std::string out = dir / "run";
    require_failure(dir, {"train", "--data", root.string(), "--image-size", "8", "--out", out}, 2, {"--image-size", "HxW"});
    require_failure(dir, {"train", "--data", root.string(), "--image-size", "0x8", "--out", out}, 2, {"--image-size"});
    write_png(root / "train" / "b" / "z.png", 6, 6, 1, std::vector<uint8_t>(36, 200));  // another size
    require_failure(dir, {"train", "--data", root.string(), "--out", out}, 1, {"z.png", "--image-size"});
    std::ofstream(root / "train" / "b" / "z.png") << "not a png";
    require_failure(dir, {"train", "--data", root.string(), "--image-size", "8x8", "--out", out}, 1, {"z.png"});
    write_synthetic_mnist(dir.path / "idx", 20, 10);
    require_failure(dir, {"train", "--data", (dir.path / "idx").string(), "--image-size", "8x8", "--out", out}, 2,
                    {"--image-size", "image folder"});
}
