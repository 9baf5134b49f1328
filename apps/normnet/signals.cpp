// The handlers only record the signal (async-signal-safe); the command polls requested().
#include "signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace normnet::cli {
namespace {

std::atomic<int> g_requested{0};
std::atomic<int> g_received{0};  // signals handled, for the test hook
std::atomic<int> g_wake_fd{-1};   // the test hook's pipe: the handler wakes it from whichever thread runs it
struct sigaction g_saved_int {}, g_saved_term {};

extern "C" void on_stop_signal(int signal) {
    ++g_received;
    if (const int fd = g_wake_fd.load(); fd >= 0) (void)!::write(fd, "s", 1);
    if (g_requested.exchange(signal) != 0) {
        // The second signal: die of it at once, as if no handler were installed.
        ::signal(signal, SIG_DFL);
        ::raise(signal);
    }
}

}  // namespace

StopOnSignal::StopOnSignal() {
    g_requested = 0;
    g_received = 0;
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

bool StopOnSignal::stop_after_step() {
    static const char* const hook = std::getenv("NORMNET_TEST_SIGNAL_AT_STEP");
    static long polls = 0;
    if (hook != nullptr && ++polls == std::atol(hook)) {
        const char* colon = std::strchr(hook, ':');
        const int wanted = colon ? std::atoi(colon + 1) : 1;
        // Any thread of the pool may run the handler, so the wait is on a pipe the handler
        // writes to (not sigsuspend, which only wakes for a signal delivered to this thread).
        // The pipe is armed before the line is printed, so a signal sent on reading it is not
        // missed, and stays open (a handler may still be about to write to it).
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
        g_wake_fd = fds[1];
        std::printf("normnet: test: waiting for a signal at step %ld\n", polls);
        std::fflush(stdout);
        // Signals do not queue: the next one is to be sent once this line says the last was handled.
        for (int handled = 0; handled < wanted;) {
            char byte;
            (void)!::read(fds[0], &byte, 1);
            if (g_received.load() == handled) continue;
            handled = g_received.load();
            if (handled < wanted) std::printf("normnet: test: handled signal %d, waiting for signal %d\n", handled, handled + 1);
            std::fflush(stdout);
        }
    }
    return requested() != 0;
}

const char* StopOnSignal::name(int signal) { return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace normnet::cli
