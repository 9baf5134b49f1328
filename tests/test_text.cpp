// Character-level text corpora: strict UTF-8, fortune records and the split by record, the
// vocabulary, random windows, and one clear error for every bad input.
#include <numeric>

#include "test_helpers.hpp"

using namespace normnet;
using Catch::Contains;

namespace {

std::string write(const test::ScratchDir& dir, const std::string& name, const std::string& bytes) {
    const std::string path = dir / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

}  // namespace

TEST_CASE("text: UTF-8 is decoded strictly, naming the byte of the first bad sequence", "[text]") {
    CHECK(decode_utf8("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "t") == std::vector<char32_t>{U'a', U'\u00e9', U'\u20ac', U'\U0001F600'});
    CHECK_THROWS_WITH(decode_utf8("ab\xff", "f.txt"), Contains("f.txt") && Contains("invalid UTF-8 at byte 2"));
    CHECK_THROWS_WITH(decode_utf8("\xc3", "f"), Contains("truncated"));
    CHECK_THROWS_WITH(decode_utf8("\xc3x", "f"), Contains("continuation"));
    CHECK_THROWS_WITH(decode_utf8("\xc0\xaf", "f"), Contains("overlong"));
    CHECK_THROWS_WITH(decode_utf8("\xed\xa0\x80", "f"), Contains("surrogate"));
    CHECK_THROWS_WITH(decode_utf8("\xf4\x90\x80\x80", "f"), Contains("U+10FFFF"));
}

TEST_CASE("text: fortune files split by record, folders skip links and index files", "[text]") {
    test::ScratchDir dir("normnet_text_");
    std::string fortunes;
    for (int k = 0; k < 40; ++k) fortunes += "fortune number " + std::to_string(k) + "\nsecond line\n%\n";
    write(dir, "a", fortunes);
    write(dir, "a.dat", std::string("\x00\x00\x00\x02\xff\xfe", 6));  // fortune's binary index: skipped
    std::filesystem::create_symlink(dir / "a", dir / "a.u8");         // and its .u8 link
    const TextCorpus c = load_text_corpus(dir.path.string(), {.val_fraction = 0.05});
    CHECK(c.records == 40);
    // Records 19 and 39 are held out (one in twenty), each with its separator line.
    const auto decoded = [&](const TokenStream& ids) { return c.decode(ids.to_vector()); };
    CHECK(decoded(c.val) == "fortune number 19\nsecond line\n%\nfortune number 39\nsecond line\n%\n");
    CHECK(decoded(c.train).find("fortune number 18\nsecond line\n%\nfortune number 20\n") != std::string::npos);
    CHECK(c.vocab == std::vector<char32_t>([&] {
              std::string all = fortunes;
              std::vector<char32_t> v(all.begin(), all.end());
              std::sort(v.begin(), v.end());
              v.erase(std::unique(v.begin(), v.end()), v.end());
              return v;
          }()));
    const std::vector<int64_t> train = c.train.to_vector();
    CHECK(c.train.width() == 1);
    CHECK(c.encode("fortune") == std::vector<int64_t>(train.begin(), train.begin() + 7));
    CHECK_THROWS_WITH(c.encode("Z"), Contains("not in the corpus's vocabulary"));
    CHECK_THROWS_WITH(c.decode({c.vocab_size()}), Contains("outside the vocabulary"));
}

TEST_CASE("text: a plain text holds out its end, bad inputs are one clear error", "[text]") {
    test::ScratchDir dir("normnet_text_");
    const std::string plain = write(dir, "plain.txt", std::string(100, 'x') + std::string(100, 'y'));
    const TextCorpus c = load_text_corpus(plain, {.val_fraction = 0.1});
    CHECK(c.records == 1);
    CHECK(c.train.size() == 180);
    CHECK(c.val.size() == 20);
    CHECK_THROWS_WITH(load_text_corpus(write(dir, "empty.txt", "")), Contains("empty.txt") && Contains("empty file"));
    CHECK_THROWS_WITH(load_text_corpus(write(dir, "bin.txt", "ok\xfe")), Contains("bin.txt") && Contains("invalid UTF-8 at byte 2"));
    CHECK_THROWS_WITH(load_text_corpus((dir / "missing")), Contains("no such file or folder"));
    test::ScratchDir none("normnet_text_");
    CHECK_THROWS_WITH(load_text_corpus(none.path.string()), Contains("holds no text files"));
    // A stream no longer than the context cannot give a window.
    CHECK_THROWS_WITH(TextBatches(c.val, 4, 20, 0), Contains("20 characters") && Contains("context (20)"));
}

TEST_CASE("text: random windows are seeded, targets are inputs shifted by one, evaluation windows tile the stream", "[text]") {
    std::vector<int64_t> ids(50);
    std::iota(ids.begin(), ids.end(), 0);
    const TokenStream stream(ids, 50);
    TextBatches a(stream, 3, 8, 7), b(stream, 3, 8, 7);
    for (int step = 0; step < 5; ++step) {
        const auto [x, y] = a.next();
        const auto [x2, y2] = b.next();
        CHECK(x.to_vector<int64_t>() == x2.to_vector<int64_t>());
        REQUIRE(x.shape() == Shape{3, 8});
        const auto xv = x.to_vector<int64_t>(), yv = y.to_vector<int64_t>();
        for (size_t i = 0; i < xv.size(); ++i) CHECK(yv[i] == xv[i] + 1);
        for (size_t r = 0; r < 3; ++r) CHECK(xv[r * 8] <= 50 - 9);
    }
    CHECK(a.windows() == 6);  // (50 - 1) / 8
    const auto [wx, wy] = a.window(5);
    CHECK(wx.to_vector<int64_t>() == std::vector<int64_t>{40, 41, 42, 43, 44, 45, 46, 47});
    CHECK(wy.to_vector<int64_t>() == std::vector<int64_t>{41, 42, 43, 44, 45, 46, 47, 48});
}

TEST_CASE("text: Debian's fortunes load as the default corpus", "[text][data]") {
    const std::string dir = "/usr/share/games/fortunes";
    if (!std::filesystem::exists(dir)) {
        NORMNET_SKIP("Debian's fortunes are not installed (apt-get install fortunes)");
    }
    const TextCorpus c = load_text_corpus(dir);
    CHECK(c.records > 10000);
    CHECK(c.train.size() > 2000000);
    CHECK(c.val.size() > 50000);
    CHECK(c.vocab_size() > 90);
    CHECK(c.vocab_size() < 300);
}

TEST_CASE("text: ids are stored in the narrowest width for the vocabulary and round-trip", "[text]") {
    // 1 byte up to 256 symbols, 2 up to 65536, else 4; each width keeps its largest id.
    for (const auto& [vocab, width] : std::vector<std::pair<int64_t, int>>{{1, 1}, {256, 1}, {257, 2}, {65536, 2}, {65537, 4}}) {
        const std::vector<int64_t> ids{0, vocab - 1, vocab / 2, 0, vocab - 1};
        const TokenStream s(ids, vocab);
        CHECK(s.width() == width);
        CHECK(s.to_vector() == ids);
        CHECK(s[1] == vocab - 1);
        CHECK(s.slice(1, 3).to_vector<int64_t>() == std::vector<int64_t>(ids.begin() + 1, ids.begin() + 4));
    }
    CHECK_THROWS_WITH(TokenStream(std::vector<int64_t>{0, 256}, 256), Contains("id 256") && Contains("vocabulary of 256"));
    std::vector<int64_t> out(3);
    CHECK_THROWS_WITH(TokenStream(std::vector<int64_t>{1, 2}, 3).copy_to(1, 2, out.data()), Contains("not inside the stream of 2"));

    // A corpus of 300 distinct characters (U+0100 ..) uses 2 bytes per id, decodes back to its text
    // and gives the same windows as its ids.
    test::ScratchDir dir("normnet_text_");
    std::string text;
    for (char32_t c = 0x100; c < 0x100 + 300; ++c) {
        text.push_back(static_cast<char>(0xc0 | (c >> 6)));
        text.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
    const TextCorpus c = load_text_corpus(write(dir, "wide.txt", text + text), {.val_fraction = 0.5});
    CHECK(c.vocab_size() == 300);
    CHECK(c.train.width() == 2);
    CHECK(c.val.width() == 2);
    CHECK(c.decode(c.train.to_vector()) == text);
    CHECK(c.decode(c.val.to_vector()) == text);
    TextBatches batches(c.train, 2, 5, 3);
    const auto [x, y] = batches.next();
    const auto xv = x.to_vector<int64_t>(), yv = y.to_vector<int64_t>();
    for (size_t i = 0; i < xv.size(); ++i) CHECK(yv[i] == xv[i] + 1);  // the ids of U+0100.. count up
}
