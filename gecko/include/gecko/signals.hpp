#pragma once
/// @file signals.hpp
/// Opt-in shutdown handling. Nothing is installed unless you call
/// install_signal_handlers(): a library must not steal SIGINT from its host.

namespace gecko {

/// Installs SIGINT and SIGTERM handlers that make ok() return false. A second
/// signal restores the default action, so a stuck program can still be killed
/// with a second Ctrl-C.
void install_signal_handlers();

/// False once a handled signal arrived or request_shutdown() was called.
bool ok() noexcept;

/// Makes ok() return false, as a signal would (useful in tests and tools).
void request_shutdown() noexcept;

/// Makes ok() true again (tests that run several scenarios in one process).
void reset_shutdown() noexcept;

}  // namespace gecko
