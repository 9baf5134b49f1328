// Character-level corpora: strict UTF-8 decoding, fortune records, the held-out split by record,
// and batches of random windows (text.hpp).
#include "normnet/text.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <type_traits>

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

// A decoded file's records as spans [begin, end) of its code points: the pieces between lines
// that hold a single %, each ending with its own newline; the whole text when it has no such
// line. (A record is contiguous in the text: its lines up to the next separator line.)
std::vector<std::pair<size_t, size_t>> record_spans(const std::vector<char32_t>& text) {
    std::vector<std::pair<size_t, size_t>> spans;
    size_t begin = 0, end = 0, line = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] != U'\n') continue;
        if (i - line == 1 && text[line] == U'%') {
            if (end > begin) spans.emplace_back(begin, end);
            begin = end = std::min(i + 1, text.size());
        } else {
            end = i < text.size() ? i + 1 : i;
        }
        line = i + 1;
    }
    if (end > begin) spans.emplace_back(begin, end);
    return spans;
}

// Whether record k (of any file, counted from 0) is held out: every k-th record, spread evenly.
bool held_out(size_t k, double f) {
    return static_cast<int64_t>(static_cast<double>(k + 1) * f) > static_cast<int64_t>(static_cast<double>(k) * f);
}

int width_for(int64_t vocab_size) { return vocab_size <= 256 ? 1 : vocab_size <= 65536 ? 2 : 4; }

// Calls f with the stream's ids as a pointer of their width's type.
template <typename Ids, typename F>
decltype(auto) with_ids(Ids* ids, int width, F&& f) {
    using B = std::conditional_t<std::is_const_v<Ids>, const void, void>;
    B* p = ids;
    if (width == 1) return f(static_cast<std::conditional_t<std::is_const_v<Ids>, const uint8_t, uint8_t>*>(p));
    if (width == 2) return f(static_cast<std::conditional_t<std::is_const_v<Ids>, const uint16_t, uint16_t>*>(p));
    return f(static_cast<std::conditional_t<std::is_const_v<Ids>, const uint32_t, uint32_t>*>(p));
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
    // Two passes over the files, so that only one file's text is in memory besides the final
    // streams: the first finds the records' lengths and the vocabulary, the second writes the ids.
    const std::vector<fs::path> files = corpus_files(path);
    std::vector<int64_t> lengths;  // of every record, in order
    // The vocabulary: each code point as first seen (then sorted), so that building it costs the
    // text's length, not a walk over all 0x110000 code points (most of a tiny corpus's load).
    std::vector<bool> seen(0x110000);
    std::vector<char32_t> vocab;
    const auto see = [&](char32_t c) {
        if (!seen[c]) seen[c] = true, vocab.push_back(c);
    };
    bool fortune_format = false;
    for (const fs::path& file : files) {
        const std::vector<char32_t> text = decode_utf8(read_text_file(file), file.string());
        const auto spans = record_spans(text);
        fortune_format = fortune_format || spans.size() > 1;
        for (const auto& [b, e] : spans) {
            lengths.push_back(static_cast<int64_t>(e - b));
            for (size_t i = b; i < e; ++i) see(text[i]);
        }
    }
    NORMNET_CHECK(!lengths.empty(), path, ": no text (only record separators)");
    const size_t records = lengths.size();
    const double f = options.val_fraction;
    if (records > 1 && fortune_format) see(U'%'), see(U'\n');  // records keep their separator line
    TextCorpus corpus;
    corpus.name = path;
    corpus.records = static_cast<int64_t>(records);
    std::sort(vocab.begin(), vocab.end());
    corpus.vocab = std::move(vocab);
    const int64_t sep = records > 1 && fortune_format ? 2 : 0;
    int64_t train_size = 0, val_size = 0, cut = 0;
    if (records > 1) {
        for (size_t k = 0; k < records; ++k) (held_out(k, f) ? val_size : train_size) += lengths[k] + sep;
    } else {
        // One text: its last val_fraction is held out.
        cut = static_cast<int64_t>(static_cast<double>(lengths[0]) * (1.0 - f));
        train_size = cut;
        val_size = lengths[0] - cut;
    }
    corpus.train = TokenStream(train_size, corpus.vocab_size());
    corpus.val = TokenStream(val_size, corpus.vocab_size());
    const auto id = [&](char32_t c) { return std::lower_bound(corpus.vocab.begin(), corpus.vocab.end(), c) - corpus.vocab.begin(); };
    const int64_t percent = id(U'%'), newline = id(U'\n');
    int64_t train_at = 0, val_at = 0;
    size_t k = 0;
    for (const fs::path& file : files) {
        const std::vector<char32_t> text = decode_utf8(read_text_file(file), file.string());
        for (const auto& [b, e] : record_spans(text)) {
            NORMNET_CHECK(k < records && lengths[k] == static_cast<int64_t>(e - b), "cannot read ", file.string(),
                          " (it changed while being read)");
            if (records == 1) {
                for (size_t i = b; i < e; ++i) {
                    const auto at = static_cast<int64_t>(i - b);
                    if (at < cut) corpus.train.set(at, id(text[i]));
                    else corpus.val.set(at - cut, id(text[i]));
                }
            } else {
                const bool held = held_out(k, f);
                TokenStream& stream = held ? corpus.val : corpus.train;
                int64_t& at = held ? val_at : train_at;
                for (size_t i = b; i < e; ++i) stream.set(at++, id(text[i]));
                if (sep) stream.set(at++, percent), stream.set(at++, newline);
            }
            ++k;
        }
    }
    NORMNET_CHECK(k == records, "cannot read ", path, " (it changed while being read)");
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

TokenStream::TokenStream(int64_t n, int64_t vocab_size) : size_(n), vocab_size_(vocab_size), width_(width_for(vocab_size)) {
    NORMNET_CHECK(n >= 0 && vocab_size >= 0, "TokenStream: negative size ", n, " or vocabulary ", vocab_size);
    const auto count = static_cast<size_t>(n);
    if (width_ == 1) ids_ = std::shared_ptr<uint8_t[]>(new uint8_t[count]());
    else if (width_ == 2) ids_ = std::shared_ptr<uint16_t[]>(new uint16_t[count]());
    else ids_ = std::shared_ptr<uint32_t[]>(new uint32_t[count]());
}

TokenStream::TokenStream(std::span<const int64_t> ids, int64_t vocab_size)
    : TokenStream(static_cast<int64_t>(ids.size()), vocab_size) {
    for (size_t i = 0; i < ids.size(); ++i) set(static_cast<int64_t>(i), ids[i]);
}

int64_t TokenStream::operator[](int64_t i) const {
    return with_ids(static_cast<const void*>(ids_.get()), width_, [&](const auto* p) { return static_cast<int64_t>(p[i]); });
}

void TokenStream::set(int64_t i, int64_t id) {
    NORMNET_CHECK(id >= 0 && id < vocab_size_, "TokenStream: id ", id, " is outside the vocabulary of ", vocab_size_);
    with_ids(ids_.get(), width_, [&](auto* p) { p[i] = static_cast<std::remove_reference_t<decltype(*p)>>(id); });
}

void TokenStream::copy_to(int64_t offset, int64_t count, int64_t* out) const {
    NORMNET_CHECK(offset >= 0 && count >= 0 && offset <= size_ - count, "TokenStream: ids [", offset, ", ", offset + count,
                  ") are not inside the stream of ", size_);
    with_ids(static_cast<const void*>(ids_.get()), width_, [&](const auto* p) { std::copy_n(p + offset, count, out); });
}

Tensor TokenStream::slice(int64_t offset, int64_t count) const {
    Tensor t = empty({count}, kInt64);
    copy_to(offset, count, t.data_ptr<int64_t>());
    return t;
}

std::vector<int64_t> TokenStream::to_vector() const {
    std::vector<int64_t> v(static_cast<size_t>(size_));
    copy_to(0, size_, v.data());
    return v;
}

TextBatches::TextBatches(TokenStream tokens, int64_t batch_size, int64_t context, uint64_t seed)
    : tokens_(std::move(tokens)), batch_size_(batch_size), context_(context), gen_(seed) {
    NORMNET_CHECK(batch_size > 0 && context > 0, "TextBatches: batch size and context must be positive, got ",
                  batch_size, " and ", context);
    NORMNET_CHECK(tokens_.size() > context, "the text (", tokens_.size(), " characters) is not longer than the context (",
                  context, "): use a longer corpus or a shorter --context");
    inputs_ = empty({batch_size, context}, kInt64);
    targets_ = empty({batch_size, context}, kInt64);
}

std::pair<const Tensor&, const Tensor&> TextBatches::next() {
    int64_t* x = inputs_.data_ptr<int64_t>();
    int64_t* y = targets_.data_ptr<int64_t>();
    const auto starts = static_cast<uint64_t>(tokens_.size() - context_);  // offsets 0 .. n - T - 1
    for (int64_t b = 0; b < batch_size_; ++b) {
        const auto o = static_cast<int64_t>(gen_.below(starts));
        tokens_.copy_to(o, context_, x + b * context_);
        tokens_.copy_to(o + 1, context_, y + b * context_);
    }
    inputs_.bump_version();
    targets_.bump_version();
    return {inputs_, targets_};
}

int64_t TextBatches::windows() const { return (tokens_.size() - 1) / context_; }

std::pair<Tensor, Tensor> TextBatches::window(int64_t w) const {
    NORMNET_CHECK(w >= 0 && w < windows(), "TextBatches::window: ", w, " is not in [0, ", windows(), ")");
    return {tokens_.slice(w * context_, context_).view({1, context_}),
            tokens_.slice(w * context_ + 1, context_).view({1, context_})};
}

}  // namespace normnet
