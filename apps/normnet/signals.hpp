// SIGINT and SIGTERM for long-running commands: the first one asks the command to stop at the
// next safe point (after the current training step), where it saves what it has and exits with
// 128 + the signal number; a second one ends the process at once (the files on disk are then the
// last complete ones, since every write is atomic).
#pragma once

#include <string>
#include <utility>

namespace normnet::cli {

/// Installs the handlers for its lifetime and restores the previous ones afterwards.
class StopOnSignal {
public:
    StopOnSignal();
    ~StopOnSignal();
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

    /// The signal that asked to stop (SIGINT or SIGTERM), or 0.
    static int requested();
    /// "SIGINT" or "SIGTERM".
    static const char* name(int signal);
};

/// Thrown by a command that stopped on a signal after saving; main() prints `what()` on stderr
/// as one line (not as an error) and exits with 128 + signal.
class Interrupted {
public:
    Interrupted(int signal, std::string message) : signal(signal), message(std::move(message)) {}
    int signal;
    std::string message;
};

}  // namespace normnet::cli
