// Character-level text corpora for language models: UTF-8 text (a file, or every file of a
// folder) read into token ids over its vocabulary of Unicode code points, split into a
// training and a held-out stream, and batches of random windows for next-character prediction.
// Fortune files (Debian's `fortunes`, records separated by lines holding a single %) are split
// between the streams by record, so no held-out record is seen in training.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normnet/arg.hpp"
#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// Options of load_text_corpus.
struct TextCorpusOptions {
    using Self = TextCorpusOptions;
    /// Share of the records (or of the text, when it has no % separators) held out for validation.
    NORMNET_ARG(double, val_fraction) = 0.05;
};

/// A stream of token ids stored in the narrowest unsigned width that holds its vocabulary: 1 byte
/// per id when the vocabulary has at most 256 symbols, 2 when at most 65536, else 4 (a corpus of
/// a few million characters is then a few MB, not 8 bytes per character). Copies share the ids,
/// as Tensor handles do; batches widen windows of it into int64 tensors (TextBatches).
class NORMNET_API TokenStream {
public:
    TokenStream() = default;
    /// `n` ids, all 0, for a vocabulary of `vocab_size` symbols (which sets the width).
    TokenStream(int64_t n, int64_t vocab_size);
    /// A copy of `ids`; throws normnet::Error for an id outside [0, vocab_size).
    TokenStream(std::span<const int64_t> ids, int64_t vocab_size);

    int64_t size() const { return size_; }
    int64_t vocab_size() const { return vocab_size_; }
    /// Bytes per id: 1, 2 or 4.
    int width() const { return width_; }
    /// Id i (unchecked, as std::vector's operator[]).
    int64_t operator[](int64_t i) const;
    /// Sets id i (unchecked index; throws normnet::Error for an id outside the vocabulary).
    void set(int64_t i, int64_t id);
    /// Widens ids [offset, offset + count) into `out`; throws normnet::Error when the range is not
    /// inside the stream.
    void copy_to(int64_t offset, int64_t count, int64_t* out) const;
    /// Ids [offset, offset + count) as an int64 tensor [count] (a new buffer).
    Tensor slice(int64_t offset, int64_t count) const;
    std::vector<int64_t> to_vector() const;

private:
    std::shared_ptr<void> ids_;  // size_ ids of uint8_t, uint16_t or uint32_t (width_ bytes)
    int64_t size_ = 0, vocab_size_ = 0;
    int width_ = 1;
};

/// A corpus as token ids: `train` and `val` are streams of ids into `vocab`.
struct NORMNET_API TextCorpus {
    std::vector<char32_t> vocab;  ///< id -> Unicode code point, in increasing order
    TokenStream train, val;       ///< ids in the narrowest width for the vocabulary
    std::string name;             ///< where it came from, for logs and messages
    int64_t records = 0;          ///< records read (1 per file without % separators)

    int64_t vocab_size() const { return static_cast<int64_t>(vocab.size()); }
    /// UTF-8 text as ids; throws normnet::Error for a character not in the vocabulary.
    std::vector<int64_t> encode(std::string_view text) const;
    /// Ids back to UTF-8 text; throws for an id outside the vocabulary.
    std::string decode(const std::vector<int64_t>& ids) const;
};

/// Reads `path`: a UTF-8 text file, or a folder whose regular files (not symbolic links, and not
/// the fortune index files `*.dat`) are read in name order. Every file must be non-empty, valid
/// UTF-8 (no overlong forms, surrogates or truncated sequences). Throws normnet::Error naming the
/// file and the byte offset of the first problem.
NORMNET_API TextCorpus load_text_corpus(const std::string& path, const TextCorpusOptions& options = {});

/// Decodes UTF-8 into code points; throws normnet::Error naming `where` and the byte offset of
/// the first invalid sequence. (The loader's decoder, exposed for tests and fuzzing.)
NORMNET_API std::vector<char32_t> decode_utf8(std::string_view bytes, const std::string& where);

/// Batches of `batch_size` windows of `context` + 1 consecutive tokens from a stream, starting at
/// offsets drawn from a seeded generator: inputs [B, T] are tokens [o, o + T), targets [B, T]
/// tokens [o + 1, o + T + 1). next() refills the same two tensors (no allocation once warmed up).
class NORMNET_API TextBatches {
public:
    /// Throws normnet::Error when the stream is not longer than `context` (naming both lengths).
    TextBatches(TokenStream tokens, int64_t batch_size, int64_t context, uint64_t seed);
    /// The next batch's inputs and targets (valid until the next call).
    std::pair<const Tensor&, const Tensor&> next();
    /// Batches of consecutive, non-overlapping windows covering the stream once (for evaluation):
    /// the number of windows of `context` tokens with a following target.
    int64_t windows() const;
    /// Window w of the evaluation pass (inputs and targets [1, T], new int64 tensors).
    std::pair<Tensor, Tensor> window(int64_t w) const;
    /// The generator's state, for an exact resume.
    Generator& generator() { return gen_; }

private:
    TokenStream tokens_;
    Tensor inputs_, targets_;
    int64_t batch_size_, context_;
    Generator gen_;
};

}  // namespace normnet
