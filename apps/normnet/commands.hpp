// The subcommands of the `normnet` program; each file adds one to the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "normnet/error.hpp"
#include "normnet/threads.hpp"

namespace normnet::cli {

/// Exit status for usage errors (bad options), as CLI11 and most tools use.
inline constexpr int kUsageError = 2;

/// Accepted --threads values. (CLI::PositiveNumber's message would print its range as 0 to 1.8e308.)
inline const CLI::Range kThreadsRange(1, normnet::kMaxThreads);
/// Accepted sizes (steps, batch sizes) where a single positive integer is asked for.
inline const CLI::Range kSizeRange(1, 1 << 30);
/// An integer option that cannot be negative (CLI11 would turn --seed -1 into 2^64 - 1, and
/// CLI::NonNegativeNumber's message prints its range as 0 to 1.8e308).
inline const CLI::Validator kNonNegative(
    [](std::string& text) { return text.rfind('-', 0) == 0 ? "must be an integer >= 0, got " + text : std::string(); },
    "INT >= 0");

/// A bad command-line value (exit status 2), as opposed to a failure while running (1).
class UsageError : public Error {
public:
    using Error::Error;
};

/// Runs f, turning normnet::Error from option validation into UsageError.
template <class F>
void as_usage_error(F&& f) {
    try {
        f();
    } catch (const UsageError&) {
        throw;
    } catch (const Error& e) {
        throw UsageError(e.what());
    }
}

struct RunConfig;
struct ModelSpec;
struct ModelKind;
/// The option `flag` of RunConfig's field table (run_config.hpp) into its field of c, with the
/// table's help unless `help` is given, its choices and its default shown; `lm` words and checks
/// it as `normnet lm train` does.
CLI::Option* add_config_option(CLI::App& cmd, RunConfig& c, const std::string& flag, const std::string& help = "",
                               bool lm = false);
/// Throws UsageError for an option given on cmd that the task of `model` does not have
/// ("--steps: applies to --model lm, not mlp", "--dataset: does not apply to --model lm").
void refuse_other_tasks_options(const CLI::App& cmd, const ModelKind& model);
/// Copies into c the fields whose options were given on cmd's command line (from `given`, the
/// config CLI11 parsed into): how a resumed run, or a model's own recipe, takes the options given.
void take_given_options(RunConfig& c, const RunConfig& given, const CLI::App& cmd);

/// --model and every model's size options (--hidden, --channels, ...), as text until the model is known.
struct ModelArgs {
    std::string type = "mlp";
    std::map<std::string, std::string> values;  // flag -> text given
};
/// --model and the size options of every model; with `only`, that model's options alone and no
/// --model (`normnet lm train`).
void add_model_options(CLI::App& cmd, ModelArgs& m, const ModelKind* only = nullptr);
std::vector<std::string> names_of_models();
/// The value of `flag` when it was given on cmd's command line, else `fallback` (for options that
/// another part of the command may have declared, with its own storage or none).
template <class T>
T given_option(const CLI::App& cmd, const std::string& flag, T fallback) {
    const CLI::Option* o = cmd.get_option_no_throw(flag);
    return o != nullptr && o->count() > 0 ? o->as<T>() : fallback;
}
/// The help group of the options only --model lm reads.
inline constexpr const char* kLmOptionGroup = "Options for --model lm";
/// Adds a storage-less option (read with given_option) in kLmOptionGroup unless cmd has `flag` already.
void add_lm_option(CLI::App& cmd, const std::string& flag, const std::string& help);
/// Throws UsageError when an option of kLmOptionGroup was given for --model `model` (not lm).
void refuse_lm_options(const CLI::App& cmd, const std::string& model);
/// `base`, or the defaults of the model --model names when it is another, with the size
/// options given on the command line; throws normnet::Error naming an option the model lacks.
ModelSpec model_from_options(const ModelArgs& m, const CLI::App& cmd, const ModelSpec& base);

/// --dataset, --data, --limit and --threads into c.
void add_data_options(CLI::App& cmd, RunConfig& c);
/// The options of the user's own data: a table's --target, --task, --test, --loss and --delimiter,
/// an image folder's --image-size, and --val-fraction for both.
void add_own_data_options(CLI::App& cmd, RunConfig& c);
/// --optimizer, --momentum, --weight-decay, --schedule, --warmup and --clip into c (not --lr,
/// whose meaning differs between train and compare).
void add_optimizer_options(CLI::App& cmd, RunConfig& c);

void add_demo_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_bench_command(CLI::App& app);
/// `normnet lm train` (`normnet train --model lm` under the words it has always had) and
/// `normnet lm sample`.
void add_lm_command(CLI::App& app);
/// `normnet lm train` under `lm` (train.cpp).
void add_lm_train_command(CLI::App& lm);

}  // namespace normnet::cli
