// Options that several subcommands share, declared once so that their names, checks and help
// stay the same in train, compare and bench: the run's options come from RunConfig's field
// table, the model's from the model registry.
#include <set>
#include <sstream>

#include "commands.hpp"
#include "models.hpp"
#include "run_config.hpp"

namespace normnet::cli {

CLI::Option* add_config_option(CLI::App& cmd, RunConfig& c, const std::string& flag, const std::string& help, bool lm) {
    const ConfigField& f = config_field(flag);
    const std::string text = !help.empty() ? help : lm && !f.lm_help.empty() ? f.lm_help : f.help;
    CLI::Option* o = nullptr;
    if (const auto member = std::get_if<bool RunConfig::*>(&f.member)) {
        // On/off: --recompute-ffn is on by default, so it has a --no- form.
        o = cmd.add_flag(c.*(*member) ? f.flag + ",!--no-" + f.flag.substr(2) : f.flag, c.*(*member), text);
        return o;
    }
    o = std::visit([&](auto member) { return cmd.add_option(f.flag, c.*member, text); }, f.member);
    std::vector<std::string> choices = f.choices;
    if (lm && flag == "--schedule") choices = {"cosine", "constant"};
    if (!choices.empty()) o->check(CLI::IsMember(choices));
    if (flag == "--threads") o->check(kThreadsRange);
    if (flag == "--seed") o->check(kNonNegative);
    // The LM's counts are checked as they are given: at least 1 (the warm-up: 0).
    if (lm && flag == "--warmup") o->check(kNonNegative);
    if (lm && std::holds_alternative<int64_t RunConfig::*>(f.member) && flag != "--warmup") o->check(kSizeRange);
    // The folder's default depends on the dataset; its help says so. The LM's epochs are 0 (off).
    if (flag != "--data" && flag != "--threads" && !(lm && flag == "--epochs")) o->capture_default_str();
    return o;
}

void refuse_other_tasks_options(const CLI::App& cmd, const ModelKind& model) {
    // A classifier's options include a table's: RunConfig::validate says when the data is no table.
    const unsigned task = model.task | ((model.task & kClassification) ? kOwnData : 0u);
    for (const ConfigField& f : config_fields()) {
        if (f.flag.empty() || (f.tasks & task) || cmd.get_option_no_throw(f.flag) == nullptr || cmd.count(f.flag) == 0) {
            continue;
        }
        std::string takers;
        for (const ModelKind* k : model_kinds()) {
            if (f.tasks & k->task) takers += (takers.empty() ? "" : ", ") + k->name;
        }
        throw UsageError(f.tasks == kLanguageModel ? str(f.flag, ": applies to --model ", takers, ", not ", model.name)
                                                   : str(f.flag, ": does not apply to --model ", model.name));
    }
}

void add_data_options(CLI::App& cmd, RunConfig& c) {
    for (const char* flag : {"--dataset", "--data", "--limit", "--threads"}) add_config_option(cmd, c, flag);
}

void add_own_data_options(CLI::App& cmd, RunConfig& c) {
    // RunConfig::validate refuses each where it does not apply (IDX data, a table, an image folder).
    for (const char* flag : {"--target", "--task", "--test", "--loss", "--delimiter", "--val-fraction", "--image-size"})
        if (cmd.get_option_no_throw(flag) == nullptr) add_config_option(cmd, c, flag);
}

void add_optimizer_options(CLI::App& cmd, RunConfig& c) {
    for (const char* flag : {"--optimizer", "--momentum", "--weight-decay", "--schedule", "--warmup", "--clip"}) {
        add_config_option(cmd, c, flag);
    }
}

void take_given_options(RunConfig& c, const RunConfig& given, const CLI::App& cmd) {
    for (const ConfigField& f : config_fields()) {
        // Options this subcommand does not have (bench has no --batch-size) were not given.
        if (f.flag.empty() || cmd.get_option_no_throw(f.flag) == nullptr || cmd.count(f.flag) == 0) continue;
        std::visit([&](auto member) { c.*member = given.*member; }, f.member);
    }
}

namespace {

// What a model's recipe changes over RunConfig's defaults: "norm batch, dataset fashion-mnist, epochs 12".
std::string recipe_text(const std::string& type) {
    const RunConfig defaults, recipe = recipe_config(type);
    std::string s = "norm " + recipe.model.norm.name();
    for (const ConfigField& f : config_fields()) {
        if (f.key == "model" || !(f.tasks & recipe.model.kind().task)) continue;
        std::visit(
            [&](auto member) {
                if (recipe.*member == defaults.*member) return;
                std::ostringstream value;
                value << recipe.*member;
                s += ", " + f.key + " " + value.str();
            },
            f.member);
    }
    return s;
}

}  // namespace

void add_model_options(CLI::App& cmd, ModelArgs& m, const ModelKind* only) {
    if (only == nullptr) {
        std::string models;
        for (const ModelKind* k : model_kinds()) models += "; " + k->name + ": " + k->summary + " (" + recipe_text(k->name) + ")";
        cmd.add_option("--model", m.type, "Architecture: " + model_choices() + models)
            ->check(CLI::IsMember(names_of_models()))
            ->capture_default_str();
    } else {
        m.type = only->name;
    }
    std::set<std::string> added;
    for (const ModelKind* k : model_kinds()) {
        if (only != nullptr && k != only) continue;
        for (const ModelOption& o : k->options) {
            if (o.flag.empty() || !added.insert(o.flag).second) continue;
            std::string defaults = o.dropout ? "0" : "";
            for (int64_t v : o.defaults) defaults += (defaults.empty() ? "" : ",") + std::to_string(v);
            if (!o.choices.empty()) defaults = o.choices.at(static_cast<size_t>(o.defaults.at(0) - 1)).name;
            // An option of the language model's alone says so where every model's are listed.
            const std::string whose = only == nullptr && k->task == kLanguageModel ? " (--model lm)" : "";
            cmd.add_option(o.flag, m.values[o.flag], o.help + whose + " [" + defaults + "]");
        }
    }
}

std::vector<std::string> names_of_models() {
    std::vector<std::string> names;
    for (const ModelKind* k : model_kinds()) names.push_back(k->name);
    return names;
}

void add_lm_option(CLI::App& cmd, const std::string& flag, const std::string& help) {
    if (cmd.get_option_no_throw(flag) == nullptr) cmd.add_option(flag)->description(help)->group(kLmOptionGroup);
}

void refuse_lm_options(const CLI::App& cmd, const std::string& model) {
    for (const CLI::Option* o : cmd.get_options()) {
        if (o->count() > 0 && o->get_group() == kLmOptionGroup) {
            throw UsageError(str(o->get_name(), ": applies to --model lm, not ", model));
        }
    }
}

ModelSpec model_from_options(const ModelArgs& m, const CLI::App& cmd, const ModelSpec& base) {
    // `normnet lm train` has no --model (CLI11's count() would throw for an option it lacks).
    const CLI::Option* model_option = cmd.get_option_no_throw("--model");
    const bool retyped = model_option != nullptr && model_option->count() > 0 && m.type != base.type;
    ModelSpec spec = retyped ? ModelSpec::defaults(m.type) : base;
    const ModelKind& kind = spec.kind();
    for (const auto& [flag, text] : m.values) {
        if (cmd.count(flag) == 0) continue;
        const ModelOption* option = nullptr;
        for (const ModelOption& o : kind.options) {
            if (o.flag == flag) option = &o;
        }
        std::string takers;
        for (const ModelKind* k : model_kinds()) {
            for (const ModelOption& o : k->options) {
                if (o.flag == flag) takers += (takers.empty() ? "" : ", ") + k->name;
            }
        }
        NORMNET_CHECK(option != nullptr, flag, ": applies to --model ", takers, ", not ", kind.name);
        if (option->dropout) {
            size_t used = 0;
            try {
                spec.dropout = std::stod(text, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            NORMNET_CHECK(!text.empty() && used == text.size(), flag, ": '", text, "' is not a number");
            continue;
        }
        if (!option->choices.empty()) {
            spec.sizes[option->key] = {choice_index(*option, text, flag)};
            continue;
        }
        std::vector<int64_t> sizes = parse_size_list(text, flag);
        NORMNET_CHECK(!option->scalar || sizes.size() == 1, flag, ": expected one number, got '", text, "'");
        spec.sizes[option->key] = std::move(sizes);
    }
    return spec;
}

}  // namespace normnet::cli
