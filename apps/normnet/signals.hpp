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
    /// Polled after each training step: true once a signal asked to stop. A test hook makes a
    /// signal land at a known step instead of after a guessed delay: with
    /// NORMNET_TEST_SIGNAL_AT_STEP=N in the environment, the N-th poll of the process first prints
    /// "normnet: test: waiting for a signal at step N" on stdout and waits until a signal arrives
    /// (N:2 then prints "... waiting for signal 2" and waits for a second one, which ends the
    /// process there as a second signal does).
    static bool stop_after_step();
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
