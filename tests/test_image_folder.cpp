// Tests of image folders: PNG and JPEG files written here (grey and RGB) read back by class, the
// channels and size chosen or asked for, a test split read with its training split's classes, and
// every malformed folder or file rejected with a message naming it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "normnet/error.hpp"
#include "normnet/image_folder.hpp"
#include "image_files.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::Contains;
using namespace normnet;
using namespace normnet::data;
using normnet::test::ScratchDir;
using normnet::test::write_jpeg;
using normnet::test::write_png;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> ramp(size_t n, uint8_t start) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(start + 7 * i);
    return v;
}

}  // namespace

TEST_CASE("read_image_folder reads classes sorted by name, files sorted within each, as planar pixels", "[images]") {
    ScratchDir dir("normnet_test_images_");
    const fs::path root = dir.path / "train";
    write_png(root / "zebra" / "b.png", 2, 3, 1, ramp(6, 10));
    write_png(root / "zebra" / "a.png", 2, 3, 1, ramp(6, 50));
    write_png(root / "ant" / "only.PNG", 2, 3, 1, ramp(6, 90));
    std::ofstream(root / "ant" / "notes.txt") << "not an image";
    const ImageFolder folder = read_image_folder(root.string());
    CHECK(folder.classes == std::vector<std::string>{"ant", "zebra"});
    REQUIRE(folder.dataset.size() == 3);
    CHECK(folder.dataset.labels == std::vector<uint8_t>{0, 1, 1});
    CHECK(fs::path(folder.files[1]).filename() == "a.png");
    CHECK(folder.dataset.images.channels == 1);
    CHECK(folder.dataset.features() == 6);
    const auto& px = folder.dataset.images.pixels;
    CHECK(std::vector<uint8_t>(px.begin() + 6, px.begin() + 12) == ramp(6, 50));

    // RGB: interleaved in the file, planar in the dataset; a grey image among them becomes RGB.
    const fs::path colour = dir.path / "colour";
    write_png(colour / "c" / "rgb.png", 1, 2, 3, {1, 2, 3, 4, 5, 6});
    write_png(colour / "c" / "zgrey.png", 1, 2, 1, {9, 8});
    const ImageFolder rgb = read_image_folder(colour.string());
    CHECK(rgb.dataset.images.channels == 3);
    CHECK(rgb.dataset.images.pixels == std::vector<uint8_t>{1, 4, 2, 5, 3, 6, 9, 8, 9, 8, 9, 8});
    CHECK(read_image_folder(colour.string(), ImageFolderOptions().channels(1)).dataset.images.channels == 1);
}

TEST_CASE("read_image_folder reads JPEG, resizes on request, and reads a test split with the training classes",
          "[images]") {
    ScratchDir dir("normnet_test_images_");
    const std::vector<uint8_t> flat(16 * 16, 120);
    write_jpeg(dir.path / "train" / "b" / "x.jpg", 16, 16, flat);
    write_png(dir.path / "train" / "a" / "y.png", 8, 8, 1, std::vector<uint8_t>(64, 200));
    CHECK_THROWS_WITH(read_image_folder((dir.path / "train").string()),
                      Contains("16 x 16 pixels, but") && Contains("--image-size HxW"));
    const ImageFolder train = read_image_folder((dir.path / "train").string(), ImageFolderOptions().height(4).width(4));
    CHECK(train.dataset.images.rows == 4);
    for (int i = 0; i < 16; ++i) CHECK(std::abs(int(train.dataset.images.pixels[16 + size_t(i)]) - 120) <= 2);
    CHECK(train.dataset.images.pixels[0] == 200);

    write_png(dir.path / "test" / "b" / "z.png", 4, 4, 1, std::vector<uint8_t>(16, 1));
    const ImageFolder test =
        read_image_folder((dir.path / "test").string(), ImageFolderOptions().classes(train.classes));
    CHECK(test.dataset.labels == std::vector<uint8_t>{1});  // class "b" keeps its training label
    CHECK(test.dataset.num_classes == 2);
    write_png(dir.path / "test" / "c" / "z.png", 4, 4, 1, std::vector<uint8_t>(16, 1));
    CHECK_THROWS_WITH(read_image_folder((dir.path / "test").string(), ImageFolderOptions().classes(train.classes)),
                      Contains("class folder \"c\" is not one of the model's classes"));
}

TEST_CASE("read_image_folder rejects empty folders and damaged files, naming them", "[images]") {
    ScratchDir dir("normnet_test_images_");
    CHECK_THROWS_WITH(read_image_folder((dir.path / "none").string()), Contains("no image folder"));
    CHECK_THROWS_WITH(read_image_folder(dir.path.string()), Contains("no class folders"));
    fs::create_directories(dir.path / "a");
    CHECK_THROWS_WITH(read_image_folder(dir.path.string()), Contains("no .png or .jpg images"));
    std::ofstream(dir.path / "a" / "fake.png") << "hello, not a png";
    CHECK_THROWS_WITH(read_image_folder(dir.path.string()), Contains("fake.png: not a PNG or JPEG file"));
    fs::remove(dir.path / "a" / "fake.png");
    write_jpeg(dir.path / "a" / "cut.jpg", 32, 32, ramp(32 * 32, 0));
    fs::resize_file(dir.path / "a" / "cut.jpg", fs::file_size(dir.path / "a" / "cut.jpg") / 2);
    CHECK_THROWS_WITH(read_image_folder(dir.path.string()), Contains("cut.jpg: corrupt JPEG"));
    CHECK_THROWS_WITH(read_images({(dir.path / "missing.png").string()}, 1, 4, 4), Contains("cannot open"));
}
