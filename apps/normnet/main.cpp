// The `normnet` program: CLI11 subcommands wired to the files beside this one. Library errors
// become one line `normnet: error: ...` on stderr with exit status 1; usage errors exit 2.
#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "normnet/error.hpp"

int main(int argc, char** argv) {
    CLI::App app{"normnet: train and compare small neural networks on a CPU"};
    app.set_version_flag("--version", std::string("normnet ") + NORMNET_VERSION);
    app.require_subcommand(1);
    normnet::cli::add_train_command(app);
    normnet::cli::add_eval_command(app);
    normnet::cli::add_compare_command(app);
    normnet::cli::add_bench_command(app);
    normnet::cli::add_demo_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // CLI11 reports `normnet fit` as "A subcommand is required"; name the word it did not know.
        const auto unknown = app.remaining();
        if (app.get_subcommands().empty() && !unknown.empty()) {
            std::fprintf(stderr, "normnet: error: unknown %s '%s' (see normnet --help)\n",
                         unknown.front().rfind('-', 0) == 0 ? "option" : "command", unknown.front().c_str());
            return normnet::cli::kUsageError;
        }
        std::fprintf(stderr, "normnet: error: %s (see normnet --help)\n", e.what());
        return normnet::cli::kUsageError;
    } catch (const normnet::cli::UsageError& e) {
        std::fprintf(stderr, "normnet: error: %s\n", e.what());
        return normnet::cli::kUsageError;
    } catch (const normnet::Error& e) {
        std::fprintf(stderr, "normnet: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "normnet: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
