// metrics.csv: rendering the history and reading back what an earlier process wrote.
#include "metrics_csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <span>
#include <sstream>

namespace normnet::cli {

namespace {

// The columns of a run counted in epochs: a classification's, or a regression's (no accuracy).
constexpr const char* kClassColumns[] = {"epoch", "train_loss", "train_acc", "test_loss", "test_acc", "epoch_seconds", "lr"};
constexpr const char* kRegressionColumns[] = {"epoch",    "train_loss", "test_loss",     "test_rmse",
                                              "test_mae", "test_r2",    "epoch_seconds", "lr"};

double* column_of(EpochMetrics& m, const std::string& name) {
    if (name == "train_loss") return &m.train_loss;
    if (name == "train_acc") return &m.train_acc;
    if (name == "test_loss") return &m.test_loss;
    if (name == "test_acc") return &m.test_acc;
    if (name == "test_rmse") return &m.test_rmse;
    if (name == "test_mae") return &m.test_mae;
    if (name == "test_r2") return &m.test_r2;
    if (name == "epoch_seconds") return &m.seconds;
    if (name == "lr") return &m.lr;
    return nullptr;
}

std::vector<std::string> split_commas(const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
}

}  // namespace

std::string metrics_csv(const std::vector<EpochMetrics>& history, bool steps) {
    if (steps) {
        std::string csv = "step,train_loss,val_loss,val_bits_per_char,lr,seconds\n";
        for (const EpochMetrics& m : history) {
            char seconds[32] = "", row[256];
            if (std::isfinite(m.seconds)) std::snprintf(seconds, sizeof seconds, "%.3f", m.seconds);
            std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.6f,%.6g,%s\n", static_cast<long long>(m.step), m.train_loss,
                          m.test_loss, m.bits_per_char(), m.lr, seconds);
            csv += row;
        }
        return csv;
    }
    const bool regression = std::any_of(history.begin(), history.end(), [](const EpochMetrics& m) { return !std::isnan(m.test_rmse); });
    std::vector<std::string> columns;
    for (const char* c : regression ? std::span<const char* const>(kRegressionColumns) : std::span<const char* const>(kClassColumns))
        columns.emplace_back(c);
    std::string csv;
    for (const std::string& c : columns) csv += (csv.empty() ? "" : ",") + c;
    csv += "\n";
    for (EpochMetrics m : history) {
        csv += std::to_string(m.epoch);
        for (size_t i = 1; i < columns.size(); ++i) {
            const double v = *column_of(m, columns[i]);
            char cell[32] = "";
            if (columns[i] == "epoch_seconds") {
                if (std::isfinite(v)) std::snprintf(cell, sizeof cell, "%.3f", v);
            } else {
                std::snprintf(cell, sizeof cell, columns[i] == "lr" ? "%.6g" : "%.6f", v);
            }
            csv += std::string(",") + cell;
        }
        csv += "\n";
    }
    return csv;
}

std::map<int64_t, EpochMetrics> read_metrics_csv(const std::string& path) {
    std::map<int64_t, EpochMetrics> rows;
    std::ifstream in(path);
    std::vector<std::string> header;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        std::vector<std::string> cells = split_commas(line);
        if (header.empty()) {  // the first line names the columns
            header = std::move(cells);
            if (header.front() != "epoch") return rows;
            continue;
        }
        if (cells.size() != header.size()) continue;
        try {
            const auto value = [](const std::string& cell) { return cell.empty() ? NAN : std::stod(cell); };
            EpochMetrics m;
            m.train_acc = m.test_acc = NAN;
            m.epoch = std::stoll(cells[0]);
            for (size_t i = 1; i < cells.size(); ++i) {
                if (double* v = column_of(m, header[i])) *v = value(cells[i]);
            }
            rows[m.epoch] = m;
        } catch (const std::exception&) {
            // a row damaged by hand: left out
        }
    }
    return rows;
}

void complete_history(std::vector<EpochMetrics>& history, bool has_history, int64_t epochs, const std::string& path,
                      bool steps) {
    if (steps) {
        // step,...,seconds: the first and the last cell of each row.
        std::ifstream in(path);
        std::map<int64_t, double> seconds;
        for (std::string line; std::getline(in, line);) {
            const size_t comma = line.find(','), last = line.rfind(',');
            if (comma == std::string::npos || last + 1 >= line.size()) continue;
            try {
                seconds[std::stoll(line.substr(0, comma))] = std::stod(line.substr(last + 1));
            } catch (const std::exception&) {
                // the header, or a row damaged by hand: left out
            }
        }
        for (EpochMetrics& m : history) {
            if (const auto it = seconds.find(m.step); it != seconds.end()) m.seconds = it->second;
        }
        return;
    }
    const std::map<int64_t, EpochMetrics> rows = read_metrics_csv(path);
    if (!has_history) {
        history.clear();
        for (int64_t e = 1; e <= epochs; ++e) {
            const auto row = rows.find(e);
            EpochMetrics m{.epoch = e, .train_loss = NAN, .train_acc = NAN, .test_loss = NAN, .test_acc = NAN, .lr = NAN,
                           .seconds = NAN};
            history.push_back(row == rows.end() ? m : row->second);
        }
    }
    for (EpochMetrics& m : history) {
        const auto row = rows.find(m.epoch);
        if (row != rows.end()) m.seconds = row->second.seconds;
    }
}

}  // namespace normnet::cli
