// libFuzzer target: the text-corpus reader (strict UTF-8, fortune records, the held-out split)
// and the windows drawn from it. Any input must give a corpus or a normnet::Error; the corpus's
// ids must decode back through its vocabulary.
#include <vector>

#include "fuzz_input.hpp"
#include "normnet/error.hpp"
#include "normnet/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    normnet::TextCorpus corpus;
    try {
        corpus = normnet::load_text_corpus(normnet::fuzz::as_file(data, size), {.val_fraction = 0.25});
    } catch (const normnet::Error&) {
        return 0;
    }
    for (const normnet::TokenStream* stream : {&corpus.train, &corpus.val}) {
        corpus.decode(stream->to_vector());  // throws (a finding) if an id is outside the vocabulary
    }
    if (corpus.train.size() > 4) {
        normnet::TextBatches batches(corpus.train, 2, 4, 0);
        batches.next();
        if (batches.windows() > 0) batches.window(batches.windows() - 1);
    }
    return 0;
}
