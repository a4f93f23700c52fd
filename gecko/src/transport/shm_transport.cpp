// SPDX-License-Identifier: Apache-2.0
// The shm transport: its two ports, by scheme "shm". The units behind it,
// and the concurrency rules they share, are listed in shm_transport.hpp.
#include "transport/shm_transport.hpp"

#include "transport/shm_ports.hpp"

namespace gecko::detail {
namespace {

class ShmTransport final : public Transport {
public:
    explicit ShmTransport(shm::Config config) : config_(std::move(config)) {}
    std::vector<std::string> schemes() const override { return {"shm"}; }
    std::unique_ptr<OutPort> open_out(const PortOptions& o) override { return make_shm_out_port(config_, o); }
    std::unique_ptr<InPort> open_in(const PortOptions& o) override { return make_shm_in_port(config_, o); }

private:
    shm::Config config_;
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport(shm::Config config) { return std::make_unique<ShmTransport>(std::move(config)); }

}  // namespace gecko::detail
