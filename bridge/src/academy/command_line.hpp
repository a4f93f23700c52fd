// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file command_line.hpp
/// gecko-bridge's academy options (--academy, --academy-*) and what they
/// start beside the bridge: the Academy, its paths on the bridge's server,
/// and a server per --academy-ports port.

#include "academy/academy.hpp"
#include "server.hpp"

#include <gecko/options.hpp>

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace gecko::bridge::academy {

struct AcademyCommandLine {
    bool enabled = false;
    AcademyOptions options;
    std::vector<unsigned short> ports;  ///< --academy-ports: manager, code, gui; empty: none
};

/// Declares the academy's options on `args`, filling `line` when parsed.
void declare_options(OptionParser& args, AcademyCommandLine& line);

/// The academy of `line` on `node`'s key, served on `web`'s port under
/// /academy/ and on line.ports (with `server`'s address, token and TLS).
class AcademyService {
public:
    /// @throws std::runtime_error (a port it cannot listen on), gecko::Error (the node).
    AcademyService(const AcademyCommandLine& line, const NodeOptions& node, boost::asio::io_context& io,
                   std::shared_ptr<Bridge> bridge, Server& web, const ServerOptions& server);
    /// Says where each endpoint is, one line each.
    void print(std::ostream& out, const std::string& host, unsigned short port, bool tls) const;
    void stop();
    std::string counters_json() const { return academy_->counters_json(); }

private:
    std::shared_ptr<Academy> academy_;
    std::vector<std::unique_ptr<Server>> servers_;  // --academy-ports: manager, code, gui
};

}  // namespace gecko::bridge::academy
