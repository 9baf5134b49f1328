// Options that several subcommands share, declared once so that their names, checks and help
// stay the same in train, compare and bench: the run's options come from RunConfig's field
// table, the model's from the model registry.
#include <set>
#include <sstream>

#include "commands.hpp"
#include "models.hpp"
#include "run_config.hpp"

namespace normnet::cli {

CLI::Option* add_config_option(CLI::App& cmd, RunConfig& c, const std::string& flag, const std::string& help) {
    const ConfigField& f = config_field(flag);
    CLI::Option* o = std::visit([&](auto member) { return cmd.add_option(f.flag, c.*member, help.empty() ? f.help : help); },
                                f.member);
    if (!f.choices.empty()) o->check(CLI::IsMember(f.choices));
    if (flag == "--threads") o->check(kThreadsRange);
    if (flag == "--seed") o->check(kNonNegative);
    // The folder's default depends on the dataset; its help says so.
    if (flag != "--data" && flag != "--threads") o->capture_default_str();
    return o;
}

void add_data_options(CLI::App& cmd, RunConfig& c) {
    for (const char* flag : {"--dataset", "--data", "--limit", "--threads"}) add_config_option(cmd, c, flag);
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
    std::string s = "norm " + recipe.model.norm;
    for (const ConfigField& f : config_fields()) {
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

void add_model_options(CLI::App& cmd, ModelArgs& m) {
    std::string models;
    for (const ModelKind* k : model_kinds()) models += "; " + k->name + ": " + k->summary + " (" + recipe_text(k->name) + ")";
    cmd.add_option("--model", m.type, "Architecture: " + model_choices() + models)
        ->check(CLI::IsMember(names_of_models()))
        ->capture_default_str();
    std::set<std::string> added;
    for (const ModelKind* k : model_kinds()) {
        for (const ModelOption& o : k->options) {
            if (o.flag.empty() || !added.insert(o.flag).second) continue;
            std::string defaults;
            for (int64_t v : o.defaults) defaults += (defaults.empty() ? "" : ",") + std::to_string(v);
            if (!o.choices.empty()) defaults = o.choices.at(static_cast<size_t>(o.defaults.at(0) - 1)).name;
            cmd.add_option(o.flag, m.values[o.flag], o.help + " [" + defaults + "]");
        }
    }
}

std::vector<std::string> names_of_models() {
    std::vector<std::string> names;
    for (const ModelKind* k : model_kinds()) names.push_back(k->name);
    return names;
}

void accept_lm_model(CLI::App& cmd, const std::string& help) {
    CLI::Option* model = cmd.get_option("--model");
    std::vector<std::string> names = names_of_models();
    names.push_back("lm");
    model->get_validator()->active(false);  // the registry's names, from add_model_options
    model->check(CLI::IsMember(names));
    model->description(model->get_description() + "; lm: " + help);
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
    const bool retyped = cmd.count("--model") > 0 && m.type != base.type;
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

RunConfig recipe_config(const std::string& type) {
    RunConfig c;
    c.model = ModelSpec::defaults(type);
    model_kind(type).recipe(c);
    return c;
}

}  // namespace normnet::cli
