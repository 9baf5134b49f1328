// The benchmark peers' re-implementations of normnet's data pipeline (apps/peers/peer_common.py,
// which --order normnet and the LM's corpus use) give what normnet gives: the generator's draws,
// the DataLoader's shuffled order per (seed, epoch), TextBatches' window offsets and
// load_text_corpus's split and vocabulary. The Python side needs only the standard library, so
// any python3 runs it; the C++ copy in peer_common.hpp is checked against the Python one by
// tests/peers_agreement.py.
#include <cstdio>
#include <memory>
#include <numeric>
#include <nlohmann/json.hpp>

#include "test_helpers.hpp"

using namespace normnet;

namespace {

// Runs python3 on `script` with apps/peers on sys.path and returns its stdout as JSON (null when
// python3 cannot run).
nlohmann::json python_json(const std::string& script, const test::ScratchDir& dir) {
    const std::string file = dir / "replica.py";
    std::ofstream(file) << "import json, sys\nsys.path.insert(0, '" << NORMNET_SOURCE_DIR << "/apps/peers')\n"
                        << "import peer_common as pc\n" << script;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("python3 " + file + " 2>&1").c_str(), "r"), pclose);
    if (!pipe) return nullptr;
    std::string out;
    char buf[4096];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, got);
    try {
        return nlohmann::json::parse(out);
    } catch (const nlohmann::json::exception&) {
        FAIL("python3 " << file << " printed no JSON:\n" << out);
    }
    return nullptr;
}

std::vector<int64_t> ids(const Tensor& t) {
    const int64_t* p = t.data_ptr<int64_t>();
    return {p, p + t.numel()};
}

}  // namespace

TEST_CASE("peers: peer_common.py draws normnet's generator, DataLoader order, text windows and corpus split",
          "[peers]") {
    test::ScratchDir dir("normnet_peers_replica_");
    std::filesystem::create_directories(dir.path / "corpus");
    std::ofstream(dir / "corpus/a", std::ios::binary) << "one\n%\ntwo \xc3\xa9\n%\nthree\n%\nfour\n%\nfive\n";
    std::ofstream(dir / "corpus/a.dat", std::ios::binary) << std::string("\x00\x01", 2);
    std::ofstream(dir / "corpus/b", std::ios::binary) << "plain text without separators\n";
    const nlohmann::json py = python_json(
        "g = pc.NormnetGenerator(7)\n"
        "v, tr, va = pc.load_corpus(sys.argv[0].rsplit('/', 1)[0] + '/corpus', 0.25, 'replica')\n"
        "print(json.dumps({'u64': pc.NormnetGenerator(0).next_u64(), 'below': [g.below(1000) for _ in range(32)],\n"
        "  'orders': [pc.normnet_epoch_order(97, s, e) for s, e in [(0, 0), (0, 1), (3, 2)]],\n"
        "  'vocab': [ord(c) for c in v], 'train': tr, 'val': va}))\n",
        dir);
    if (py.is_null()) NORMNET_SKIP("python3 cannot run");

    CHECK(py["u64"].get<uint64_t>() == Generator(0).next_u64());

    // TextBatches over the stream 0, 1, 2, ...: a window's first input is its offset.
    std::vector<int64_t> offsets(1010);
    std::iota(offsets.begin(), offsets.end(), 0);
    TextBatches windows(TokenStream(offsets, 1010), 32, 10, 7);
    const Tensor first = windows.next().first.select(1, 0).contiguous();
    CHECK(ids(first) == py["below"].get<std::vector<int64_t>>());

    // DataLoader (shuffle on) over rows 0..96: the labels come out in the epoch's order.
    const std::vector<std::pair<uint64_t, int64_t>> seeds_epochs{{0, 0}, {0, 1}, {3, 2}};
    for (size_t k = 0; k < seeds_epochs.size(); ++k) {
        const auto [seed, epoch] = seeds_epochs[k];
        DataLoader loader(zeros({97, 1}), arange(97, kInt64),
                          DataLoaderOptions{.batch_size = 97, .shuffle = true, .seed = seed});
        loader.set_epoch(epoch);
        std::vector<int64_t> order;
        for (const Batch& b : loader) order = ids(b.labels);
        CHECK(order == py["orders"][k].get<std::vector<int64_t>>());
    }

    const TextCorpus corpus = load_text_corpus((dir.path / "corpus").string(), TextCorpusOptions{.val_fraction = 0.25});
    std::vector<int64_t> vocab(corpus.vocab.begin(), corpus.vocab.end());
    CHECK(vocab == py["vocab"].get<std::vector<int64_t>>());
    CHECK(corpus.train.to_vector() == py["train"].get<std::vector<int64_t>>());
    CHECK(corpus.val.to_vector() == py["val"].get<std::vector<int64_t>>());
}
