// The handlers only record the signal (async-signal-safe); the command polls requested().
#include "signals.hpp"

#include <signal.h>

#include <atomic>

namespace normnet::cli {
namespace {

std::atomic<int> g_requested{0};
struct sigaction g_saved_int {}, g_saved_term {};

extern "C" void on_stop_signal(int signal) {
    if (g_requested.exchange(signal) != 0) {
        // The second signal: die of it at once, as if no handler were installed.
        ::signal(signal, SIG_DFL);
        ::raise(signal);
    }
}

}  // namespace

StopOnSignal::StopOnSignal() {
    g_requested = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // interrupted reads and writes resume instead of failing
    sigaction(SIGINT, &action, &g_saved_int);
    sigaction(SIGTERM, &action, &g_saved_term);
}

StopOnSignal::~StopOnSignal() {
    sigaction(SIGINT, &g_saved_int, nullptr);
    sigaction(SIGTERM, &g_saved_term, nullptr);
}

int StopOnSignal::requested() { return g_requested.load(); }

const char* StopOnSignal::name(int signal) { return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace normnet::cli
