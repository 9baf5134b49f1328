// metrics.csv: rendering the history and reading back what an earlier process wrote.
#include "metrics_csv.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace normnet::cli {

std::string metrics_csv(const std::vector<EpochMetrics>& history, bool steps) {
    std::string csv = steps ? "step,train_loss,val_loss,val_bits_per_char,lr,seconds\n"
                            : "epoch,train_loss,train_acc,test_loss,test_acc,epoch_seconds,lr\n";
    for (const EpochMetrics& m : history) {
        char seconds[32] = "";
        if (std::isfinite(m.seconds)) std::snprintf(seconds, sizeof seconds, "%.3f", m.seconds);
        char row[256];
        if (steps) {
            std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.6f,%.6g,%s\n", static_cast<long long>(m.step), m.train_loss,
                          m.test_loss, m.bits_per_char(), m.lr, seconds);
        } else {
            std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.6f,%.6f,%s,%.6g\n", static_cast<long long>(m.epoch), m.train_loss,
                          m.train_acc, m.test_loss, m.test_acc, seconds, m.lr);
        }
        csv += row;
    }
    return csv;
}

std::map<int64_t, EpochMetrics> read_metrics_csv(const std::string& path) {
    std::map<int64_t, EpochMetrics> rows;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        std::vector<std::string> cells;
        std::istringstream fields(line);
        for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
        if (line.back() == ',') cells.emplace_back();
        if (cells.size() != 7) continue;
        try {
            const auto value = [](const std::string& cell) { return cell.empty() ? NAN : std::stod(cell); };
            EpochMetrics m;
            m.epoch = std::stoll(cells[0]);
            m.train_loss = value(cells[1]);
            m.train_acc = value(cells[2]);
            m.test_loss = value(cells[3]);
            m.test_acc = value(cells[4]);
            m.seconds = value(cells[5]);
            m.lr = value(cells[6]);
            rows[m.epoch] = m;
        } catch (const std::exception&) {
            // the header, or a row damaged by hand: left out
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
