// The `normnet` program: CLI11 subcommands wired to the files beside this one. Library errors
// become one line `normnet: error: ...` on stderr with exit status 1; usage errors exit 2; a
// command stopped by SIGINT or SIGTERM prints one line saying how to continue and exits 128 + signal.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.hpp"
#include "normnet/threads.hpp"
#include "normnet/error.hpp"
#include "replicas.hpp"
#include "signals.hpp"

namespace {

// Edit distance of two option names, for "did you mean".
size_t distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}

// " (did you mean --epochs?)" when an option of `cmd` is close to `word`, else "".
std::string suggestion(const CLI::App& cmd, const std::string& word) {
    const std::string name = word.substr(0, word.find('='));
    std::string best;
    size_t best_distance = 3;  // more edits than this is another word
    for (const CLI::Option* option : cmd.get_options()) {
        for (const std::string& long_name : option->get_lnames()) {
            const std::string candidate = "--" + long_name;
            const size_t d = distance(name, candidate);
            if (d < best_distance || (d == best_distance && best.empty() && candidate.rfind(name, 0) == 0)) {
                best = candidate;
                best_distance = d;
            }
        }
    }
    return best.empty() ? "" : "; did you mean " + best + "?";
}

// The one line for a command line CLI11 could not parse, pointing at the subcommand's own help.
std::string usage_message(const CLI::App& app, const CLI::ParseError& e) {
    // The innermost subcommand given ("normnet lm train").
    const CLI::App* cmd = &app;
    std::string where = "normnet";
    while (!cmd->get_subcommands().empty()) {
        cmd = cmd->get_subcommands().front();
        where += " " + cmd->get_name();
    }
    const bool top = cmd == &app;
    const auto unknown = cmd->remaining();
    if (!unknown.empty()) {
        const std::string& word = unknown.front();
        if (word.rfind('-', 0) == 0) {
            return "unknown option '" + word + "'" + (top ? "" : " for " + where) + suggestion(*cmd, word) +
                   " (see " + where + " --help)";
        }
        if (top) return "unknown command '" + word + "' (see normnet --help)";
        return "unexpected argument '" + word + "' (see " + where + " --help)";
    }
    return std::string(e.what()) + " (see " + where + " --help)";
}

}  // namespace

int main(int argc, char** argv) {
    // Under mpirun every rank runs this program; errors name the rank and end the whole job.
    using normnet::cli::failed;
    const auto prefix = [] { return normnet::cli::error_prefix(); };
    normnet::cli::Replicas::from_environment();
    CLI::App app{"normnet: train and compare small neural networks on a CPU"};
    app.set_version_flag("--version", std::string("normnet ") + NORMNET_VERSION + " (OpenBLAS " + normnet::blas_kernels() + " kernels)");
    app.require_subcommand(1);
    normnet::cli::add_train_command(app);
    normnet::cli::add_eval_command(app);
    normnet::cli::add_predict_command(app);
    normnet::cli::add_export_command(app);
    normnet::cli::add_compare_command(app);
    normnet::cli::add_bench_command(app);
    normnet::cli::add_demo_command(app);
    normnet::cli::add_lm_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "%s%s\n", prefix().c_str(), usage_message(app, e).c_str());
        return failed(normnet::cli::kUsageError);
    } catch (const normnet::cli::UsageError& e) {
        std::fprintf(stderr, "%s%s\n", prefix().c_str(), e.what());
        return failed(normnet::cli::kUsageError);
    } catch (const normnet::cli::Interrupted& stopped) {
        std::fprintf(stderr, "%s\n", stopped.message.c_str());
        return failed(128 + stopped.signal);
    } catch (const std::bad_alloc&) {
        // Sizes are checked against files and limits before anything big is allocated; this is
        // what is left: the machine itself is short of memory.
        std::fprintf(stderr, "%sout of memory\n", prefix().c_str());
        return failed(1);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s%s\n", prefix().c_str(), e.what());
        return failed(1);
    }
    return 0;
}
