// csv_bench: how fast a large CSV file becomes a model's input, and at what peak memory.
//
//   csv_bench --write DIR OUT.csv [--limit N]   writes DIR's IDX training split (MNIST layout) as a
//                                              CSV: 784 pixel columns and a "label" column
//   csv_bench FILE.csv                         reads it (read_csv), fits the schema and encodes it,
//                                              and prints each phase's seconds and the peak RSS
//                                              against the size of the float32 input matrix
//
// The two are separate processes so that the writer's memory is not the reader's peak. A
// program for a quiet machine, not a timed test; ctest only runs it on a few rows.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "normnet/normnet.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double peak_rss_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

int write_csv(const std::string& dir, const std::string& out, int64_t limit) {
    const normnet::Dataset d = normnet::load_mnist_split(dir, "train", limit);
    std::ofstream f(out, std::ios::binary);
    std::string line;
    for (int64_t p = 0; p < d.features(); ++p) line += "pixel" + std::to_string(p) + ",";
    f << line << "label\n";
    for (int64_t i = 0; i < d.size(); ++i) {
        line.clear();
        const uint8_t* row = d.images.pixels.data() + i * d.features();
        for (int64_t p = 0; p < d.features(); ++p) line += std::to_string(row[p]) + ",";
        f << line << static_cast<int>(d.labels[static_cast<size_t>(i)]) << "\n";
    }
    f.close();
    if (!f) {
        std::fprintf(stderr, "csv_bench: cannot write %s\n", out.c_str());
        return 1;
    }
    std::printf("wrote %s: %lld rows x %lld columns\n", out.c_str(), static_cast<long long>(d.size()),
                static_cast<long long>(d.features() + 1));
    return 0;
}

int read(const std::string& path) {
    namespace data = normnet::data;
    auto start = std::chrono::steady_clock::now();
    const data::Table table = data::read_csv(path);
    const double read_s = seconds_since(start);
    const double after_read = peak_rss_mb();
    start = std::chrono::steady_clock::now();
    const data::TableSchema schema = data::fit_table_schema(table, "label");
    const double fit_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const data::EncodedTable encoded = data::encode_table(schema, table);
    const double encode_s = seconds_since(start);
    const double matrix_mb = static_cast<double>(encoded.inputs.numel()) * 4.0 / (1024.0 * 1024.0);
    std::printf("| file | rows x columns | read_csv s | fit s | encode s | float32 inputs MB | peak RSS after read MB | peak RSS MB |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
    std::printf("| %s | %lld x %zu | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f |\n", path.c_str(),
                static_cast<long long>(table.rows), table.columns.size(), read_s, fit_s, encode_s, matrix_mb, after_read,
                peak_rss_mb());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc >= 4 && std::strcmp(argv[1], "--write") == 0) {
            const int64_t limit = argc >= 6 && std::strcmp(argv[4], "--limit") == 0 ? std::stoll(argv[5]) : 0;
            return write_csv(argv[2], argv[3], limit);
        }
        if (argc == 2 && argv[1][0] != '-') return read(argv[1]);
        std::fprintf(stderr, "usage: csv_bench --write MNIST_DIR OUT.csv [--limit N] | csv_bench FILE.csv\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csv_bench: %s\n", e.what());
        return 1;
    }
}
