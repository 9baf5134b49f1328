// Character-level text corpora for language models: UTF-8 text (a file, or every file of a
// folder) read into int64 token ids over its vocabulary of Unicode code points, split into a
// training and a held-out stream, and batches of random windows for next-character prediction.
// Fortune files (Debian's `fortunes`, records separated by lines holding a single %) are split
// between the streams by record, so no held-out record is seen in training.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "normnet/export.hpp"
#include "normnet/tensor.hpp"

namespace normnet {

/// Options of load_text_corpus.
struct TextCorpusOptions {
    /// Share of the records (or of the text, when it has no % separators) held out for validation.
    double val_fraction = 0.05;
};

/// A corpus as token ids: `train` and `val` are int64 streams [n] of ids into `vocab`.
struct NORMNET_API TextCorpus {
    std::vector<char32_t> vocab;  ///< id -> Unicode code point, in increasing order
    Tensor train, val;            ///< int64 [n] each
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
    TextBatches(Tensor tokens, int64_t batch_size, int64_t context, uint64_t seed);
    /// The next batch's inputs and targets (valid until the next call).
    std::pair<const Tensor&, const Tensor&> next();
    /// Batches of consecutive, non-overlapping windows covering the stream once (for evaluation):
    /// the number of windows of `context` tokens with a following target.
    int64_t windows() const;
    /// Window w of the evaluation pass (inputs and targets [1, T]).
    std::pair<Tensor, Tensor> window(int64_t w) const;
    /// The generator's state, for an exact resume.
    Generator& generator() { return gen_; }

private:
    Tensor tokens_, inputs_, targets_;
    int64_t batch_size_, context_;
    Generator gen_;
};

}  // namespace normnet
