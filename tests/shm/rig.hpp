// SPDX-License-Identifier: Apache-2.0
// A publisher's and a subscriber's port on one segment in a private
// directory, for the tests that then attack it (corrupt_test, hostile_test).
#pragma once

#include <catch2/catch.hpp>

#include "shm_support.hpp"

namespace shmtest {

struct Rig {
    Dir dir;
    std::unique_ptr<Transport> transport = make_shm_transport(config(dir.path()));
    std::unique_ptr<OutPort> out = transport->open_out(options());
    std::unique_ptr<InPort> in = transport->open_in(options());
    wire::Channel a = channel("a");

    std::string locator() const { return out->locators().front(); }
    std::string path() const { return dir.path() + "/" + locator().substr(6); }
    void connect() {
        in->subscribe(interest(a, 1));
        std::string why;
        REQUIRE(in->connect(locator(), why));
        out->drain_events([](const PortEvent&) {});
    }
    ShmInInfo in_info() {
        ShmInInfo i;
        REQUIRE(shm_in_info(*in, i));
        return i;
    }
    ShmOutInfo out_info() {
        ShmOutInfo i;
        REQUIRE(shm_out_info(*out, i));
        return i;
    }
    bool notice_has(const std::string& text) {
        for (const auto& n : in_info().notices)
            if (n.find(text) != std::string::npos) return true;
        return false;
    }
};

}  // namespace shmtest
