// SPDX-License-Identifier: Apache-2.0
#pragma once
// An out-port and an in-port of one shm transport in one process, for the
// tests that drive the ports directly (ports_test.cpp, doorbell_test.cpp).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shm_support.hpp"

namespace shmtest {

struct Pair {
    Dir dir;
    shm::Config cfg;
    std::unique_ptr<Transport> transport;
    std::unique_ptr<OutPort> out;
    std::unique_ptr<InPort> in;

    explicit Pair(const std::function<void(shm::Config&)>& edit = {}, PortOptions o = options()) {
        cfg = config(dir.path());
        if (edit) edit(cfg);
        transport = make_shm_transport(cfg);
        out = transport->open_out(o);
        in = transport->open_in(o);
    }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;

    std::string locator() const { return out->locators().front(); }
    void connect() {
        std::string why;
        REQUIRE(in->connect(locator(), why));
    }
    std::vector<PortEvent> events() {
        std::vector<PortEvent> v;
        out->drain_events([&](const PortEvent& e) { v.push_back(e); });
        return v;
    }
    ShmOutInfo out_info() {
        ShmOutInfo i;
        REQUIRE(shm_out_info(*out, i));
        return i;
    }
    ShmInInfo in_info() {
        ShmInInfo i;
        REQUIRE(shm_in_info(*in, i));
        return i;
    }
    bool inside_mapping(const std::uint8_t* p) {
        for (const auto& [base, size] : in_info().mappings)
            if (p >= base && p < base + size) return true;
        return false;
    }
    /// Subscribes to `c` and links the in-port to the out-port.
    void subscribe_linked(wire::Channel c) {
        in->subscribe(interest(c, 1));
        connect();
        events();
    }
    /// Sends frames first..last on `c`, each taken at once and kept (held).
    std::vector<Frame> send_and_hold(wire::Channel c, std::uint32_t first, std::uint32_t last) {
        std::vector<Frame> held;
        for (std::uint32_t i = first; i <= last; ++i) {
            auto f = frame(c, 64, 0, i);
            out->send(f);
            Frame got;
            REQUIRE(in->take(got));
            CHECK(counter_of(got.data()) == i);
            held.push_back(std::move(got));
        }
        return held;
    }
    std::vector<Frame> take_all() {
        std::vector<Frame> v;
        Frame f;
        for (int budget = 10000; budget > 0 && in->take(f); --budget) v.push_back(std::move(f));
        return v;
    }
};

}  // namespace shmtest
