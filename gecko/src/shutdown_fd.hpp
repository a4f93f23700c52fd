#pragma once
// The process's shutdown event (signals.cpp): a file descriptor that becomes
// readable, and stays so, once ok() turns false. Waits poll it beside their
// own fds so that a signal or request_shutdown() wakes them at once.

namespace gecko::detail {

/// -1 if the eventfd could not be made (then waits end by their timeouts).
int shutdown_fd() noexcept;

}  // namespace gecko::detail
