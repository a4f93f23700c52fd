// SPDX-License-Identifier: Apache-2.0
#include "academy/command_line.hpp"

#include "academy/process.hpp"

#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace gecko::bridge::academy {

void declare_options(OptionParser& args, AcademyCommandLine& line) {
    auto& o = line.options;
    args.flag("--academy", line.enabled,
              "also serve the RoboticsAcademy endpoints /academy/manager, /academy/code, /academy/gui (docs/ACADEMY.md)");
    args.custom("--academy-sim-command", "COMMAND",
                "what the manager's open starts, split into words as a shell does (quotes keep spaces; nothing is "
                "expanded), e.g. 'gecko-sim --robots arm' (it gets the bridge's key); implies --academy. Without it "
                "open waits for a running simulation",
                [&line, &o](const std::string& v) {
                    line.enabled = true;
                    return split_command(v, o.simulation_command);
                });
    args.custom("--academy-ports", "MANAGER,CODE,GUI",
                "also serve the academy endpoints on ports of their own, every path, as RoboticsAcademy's frontend "
                "expects them (RoboticsAcademy: 8765,1905,2303; 8765 is the bridge's own default: move --listen). "
                "Implies --academy",
                [&line](const std::string& v) {
                    line.ports.clear();
                    std::istringstream list(v);
                    for (std::string item; std::getline(list, item, ',');) {
                        long long p = 0;
                        if (const auto why = OptionParser::parse_integer(item, 0, 65535, p); !why.empty()) return why;
                        line.ports.push_back(static_cast<unsigned short>(p));
                    }
                    line.enabled = true;
                    return line.ports.size() == 3 ? std::string() : std::string("wants three ports: MANAGER,CODE,GUI");
                });
    args.text("--academy-sim", o.simulation, "NAME",
              "the simulation the academy controls: services NAME/control/*, topics NAME/* (default sim)");
    args.text("--academy-image", o.image_topic, "TOPIC",
              "the gecko.msgs.Image topic the GUI endpoint shows (default academy/image, where a brain's "
              "GUI.show_image publishes)");
    args.text("--academy-python", o.python, "PYTHON",
              "the python3 that runs brains and checks code; it must import gecko (default python3)");
}

AcademyService::AcademyService(const AcademyCommandLine& line, const NodeOptions& node, boost::asio::io_context& io,
                               std::shared_ptr<Bridge> bridge, Server& web, const ServerOptions& server) {
    auto options = line.options;
    options.node = node;
    academy_ = std::make_shared<Academy>(options, io);
    academy_->start();
    web.serve_academy(academy_);
    const Endpoint endpoints[] = {Endpoint::manager, Endpoint::code, Endpoint::gui};
    for (std::size_t i = 0; i < line.ports.size() && i < 3; ++i) {
        auto own = server;
        own.port = line.ports[i];
        servers_.push_back(std::make_unique<Server>(io, bridge, own));
        servers_.back()->serve_academy_only(academy_, endpoints[i]);
        servers_.back()->start();
    }
}

void AcademyService::print(std::ostream& out, const std::string& host, unsigned short port, bool tls) const {
    const std::string scheme = tls ? "wss" : "ws";
    out << "gecko-bridge: RoboticsAcademy endpoints at " << scheme << "://" << host << ":" << port
        << "/academy/{manager,code,gui} for simulation '" << academy_->options().simulation << "'" << std::endl;
    const char* names[] = {"manager", "code", "gui"};
    for (std::size_t i = 0; i < servers_.size(); ++i)
        out << "gecko-bridge: RoboticsAcademy " << names[i] << " port at " << scheme << "://" << host << ":"
            << servers_[i]->port() << "/" << std::endl;
}

void AcademyService::stop() {
    for (auto& s : servers_) s->stop();
    academy_->stop();
}

}  // namespace gecko::bridge::academy
