// The subcommands of the `normnet` program; each file adds one to the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace normnet::cli {

/// Exit status for usage errors (bad options), as CLI11 and most tools use.
inline constexpr int kUsageError = 2;

void add_demo_command(CLI::App& app);

}  // namespace normnet::cli
