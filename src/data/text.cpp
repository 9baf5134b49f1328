// Character-level corpora: strict UTF-8 decoding, fortune records, the held-out split by record,
// and batches of random windows (text.hpp).
#include "normnet/text.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace normnet {
namespace {

namespace fs = std::filesystem;

// A text file larger than this is refused before it is read (1 GiB: far beyond any corpus a
// character model trains on here, and well inside memory).
constexpr uintmax_t kMaxFileBytes = uintmax_t{1} << 30;

std::string read_text_file(const fs::path& path) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    NORMNET_CHECK(!ec, "cannot read ", path.string(), ": ", ec.message());
    NORMNET_CHECK(size > 0, path.string(), ": empty file (a text corpus needs text)");
    NORMNET_CHECK(size <= kMaxFileBytes, path.string(), ": ", size, " bytes is more than the ", kMaxFileBytes,
                  " a text file may have");
    std::ifstream in(path, std::ios::binary);
    NORMNET_CHECK(in.good(), "cannot open ", path.string());
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    NORMNET_CHECK(in.gcount() == static_cast<std::streamsize>(size), "cannot read ", path.string(),
                  " (it changed while being read)");
    return bytes;
}

// The files a corpus path names: the file itself, or a folder's regular files in name order
// (symbolic links and fortune's binary index files *.dat left out).
std::vector<fs::path> corpus_files(const std::string& path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    NORMNET_CHECK(!ec && fs::exists(st), "--text: no such file or folder: ", path);
    if (!fs::is_directory(st)) return {fs::path(path)};
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
        if (entry.is_symlink() || !entry.is_regular_file() || entry.path().extension() == ".dat") continue;
        files.push_back(entry.path());
    }
    NORMNET_CHECK(!ec, "cannot list ", path, ": ", ec.message());
    std::sort(files.begin(), files.end());
    NORMNET_CHECK(!files.empty(), path, ": the folder holds no text files");
    return files;
}

// A file's records: the pieces between lines that hold a single %, each ending with its own
// newline; the whole text when it has no such line.
std::vector<std::u32string> split_records(const std::vector<char32_t>& text) {
    std::vector<std::u32string> records;
    std::u32string current, line;
    for (size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] != U'\n') {
            line.push_back(text[i]);
            continue;
        }
        if (line == U"%") {
            if (!current.empty()) records.push_back(std::move(current));
            current.clear();
        } else {
            current += line;
            if (i < text.size()) current.push_back(U'\n');
        }
        line.clear();
    }
    if (!current.empty()) records.push_back(std::move(current));
    return records;
}

Tensor to_ids(const std::u32string& text, const std::vector<char32_t>& vocab) {
    Tensor ids = empty({static_cast<int64_t>(text.size())}, kInt64);
    int64_t* p = ids.data_ptr<int64_t>();
    for (size_t i = 0; i < text.size(); ++i) {
        p[i] = std::lower_bound(vocab.begin(), vocab.end(), text[i]) - vocab.begin();
    }
    return ids;
}

}  // namespace

std::vector<char32_t> decode_utf8(std::string_view bytes, const std::string& where) {
    std::vector<char32_t> out;
    out.reserve(bytes.size());
    size_t i = 0;
    const auto bad = [&](const char* what) { fail(where, ": invalid UTF-8 at byte ", i, " (", what, ")"); };
    while (i < bytes.size()) {
        const auto b0 = static_cast<unsigned char>(bytes[i]);
        if (b0 < 0x80) {
            out.push_back(b0);
            ++i;
            continue;
        }
        int extra = 0;
        char32_t cp = 0, min = 0;
        if ((b0 & 0xe0) == 0xc0) extra = 1, cp = b0 & 0x1f, min = 0x80;
        else if ((b0 & 0xf0) == 0xe0) extra = 2, cp = b0 & 0x0f, min = 0x800;
        else if ((b0 & 0xf8) == 0xf0) extra = 3, cp = b0 & 0x07, min = 0x10000;
        else bad("not a leading byte");
        if (i + static_cast<size_t>(extra) >= bytes.size()) bad("truncated sequence");
        for (int k = 1; k <= extra; ++k) {
            const auto b = static_cast<unsigned char>(bytes[i + static_cast<size_t>(k)]);
            if ((b & 0xc0) != 0x80) bad("missing continuation byte");
            cp = (cp << 6) | (b & 0x3f);
        }
        if (cp < min) bad("overlong encoding");
        if (cp > 0x10ffff) bad("beyond U+10FFFF");
        if (cp >= 0xd800 && cp <= 0xdfff) bad("a UTF-16 surrogate");
        out.push_back(cp);
        i += static_cast<size_t>(extra) + 1;
    }
    return out;
}

TextCorpus load_text_corpus(const std::string& path, const TextCorpusOptions& options) {
    NORMNET_CHECK(options.val_fraction >= 0.0 && options.val_fraction < 1.0,
                  "load_text_corpus: val_fraction must be in [0, 1), got ", options.val_fraction);
    std::vector<std::u32string> records;
    bool fortune_format = false;
    for (const fs::path& file : corpus_files(path)) {
        const std::vector<char32_t> text = decode_utf8(read_text_file(file), file.string());
        std::vector<std::u32string> r = split_records(text);
        fortune_format = fortune_format || r.size() > 1;
        for (auto& record : r) records.push_back(std::move(record));
    }
    NORMNET_CHECK(!records.empty(), path, ": no text (only record separators)");
    std::u32string train, val;
    if (records.size() > 1) {
        // Every k-th record (spread evenly) is held out; records keep their % separator line.
        const double f = options.val_fraction;
        for (size_t k = 0; k < records.size(); ++k) {
            const bool held_out = static_cast<int64_t>(static_cast<double>(k + 1) * f) > static_cast<int64_t>(static_cast<double>(k) * f);
            std::u32string& stream = held_out ? val : train;
            stream += records[k];
            if (fortune_format) stream += U"%\n";
        }
    } else {
        // One text: its last val_fraction is held out.
        const std::u32string& text = records.front();
        const auto cut = static_cast<size_t>(static_cast<double>(text.size()) * (1.0 - options.val_fraction));
        train = text.substr(0, cut);
        val = text.substr(cut);
    }
    TextCorpus corpus;
    corpus.name = path;
    corpus.records = static_cast<int64_t>(records.size());
    corpus.vocab.assign(train.begin(), train.end());
    corpus.vocab.insert(corpus.vocab.end(), val.begin(), val.end());
    std::sort(corpus.vocab.begin(), corpus.vocab.end());
    corpus.vocab.erase(std::unique(corpus.vocab.begin(), corpus.vocab.end()), corpus.vocab.end());
    corpus.train = to_ids(train, corpus.vocab);
    corpus.val = to_ids(val, corpus.vocab);
    return corpus;
}

std::vector<int64_t> TextCorpus::encode(std::string_view text) const {
    std::vector<int64_t> ids;
    for (char32_t c : decode_utf8(text, "encode")) {
        const auto it = std::lower_bound(vocab.begin(), vocab.end(), c);
        NORMNET_CHECK(it != vocab.end() && *it == c, "encode: the character U+", std::hex, static_cast<uint32_t>(c),
                      " is not in the corpus's vocabulary");
        ids.push_back(it - vocab.begin());
    }
    return ids;
}

std::string TextCorpus::decode(const std::vector<int64_t>& ids) const {
    std::string out;
    for (int64_t id : ids) {
        NORMNET_CHECK(id >= 0 && id < vocab_size(), "decode: id ", id, " is outside the vocabulary of ", vocab_size());
        const auto c = static_cast<uint32_t>(vocab[static_cast<size_t>(id)]);
        if (c < 0x80) {
            out.push_back(static_cast<char>(c));
        } else if (c < 0x800) {
            out.push_back(static_cast<char>(0xc0 | (c >> 6)));
            out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
        } else if (c < 0x10000) {
            out.push_back(static_cast<char>(0xe0 | (c >> 12)));
            out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
        } else {
            out.push_back(static_cast<char>(0xf0 | (c >> 18)));
            out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
        }
    }
    return out;
}

TextBatches::TextBatches(Tensor tokens, int64_t batch_size, int64_t context, uint64_t seed)
    : tokens_(tokens.contiguous()), batch_size_(batch_size), context_(context), gen_(seed) {
    NORMNET_CHECK(tokens_.dtype() == kInt64 && tokens_.dim() == 1, "TextBatches: expected an int64 stream [n], got ",
                  tokens_.dtype(), " ", tokens_.shape());
    NORMNET_CHECK(batch_size > 0 && context > 0, "TextBatches: batch size and context must be positive, got ",
                  batch_size, " and ", context);
    NORMNET_CHECK(tokens_.numel() > context, "the text (", tokens_.numel(), " characters) is not longer than the context (",
                  context, "): use a longer corpus or a shorter --context");
    inputs_ = empty({batch_size, context}, kInt64);
    targets_ = empty({batch_size, context}, kInt64);
}

std::pair<const Tensor&, const Tensor&> TextBatches::next() {
    const int64_t* t = tokens_.data_ptr<int64_t>();
    int64_t* x = inputs_.data_ptr<int64_t>();
    int64_t* y = targets_.data_ptr<int64_t>();
    const auto starts = static_cast<uint64_t>(tokens_.numel() - context_);  // offsets 0 .. n - T - 1
    for (int64_t b = 0; b < batch_size_; ++b) {
        const auto o = static_cast<int64_t>(gen_.below(starts));
        std::copy_n(t + o, context_, x + b * context_);
        std::copy_n(t + o + 1, context_, y + b * context_);
    }
    inputs_.bump_version();
    targets_.bump_version();
    return {inputs_, targets_};
}

int64_t TextBatches::windows() const { return (tokens_.numel() - 1) / context_; }

std::pair<Tensor, Tensor> TextBatches::window(int64_t w) const {
    NORMNET_CHECK(w >= 0 && w < windows(), "TextBatches::window: ", w, " is not in [0, ", windows(), ")");
    return {tokens_.narrow(0, w * context_, context_).view({1, context_}),
            tokens_.narrow(0, w * context_ + 1, context_).view({1, context_})};
}

}  // namespace normnet
