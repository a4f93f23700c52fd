// Small fixtures shared by the unit tests.
#pragma once

#include <gecko/gecko.hpp>

#include <atomic>
#include <string>

namespace test {

/// A node with discovery off: unit tests give endpoints by hand.
inline gecko::Node make_node(const std::string& name) {
    gecko::NodeOptions options;
    options.key = "unit";
    options.name = name;
    options.discovery = false;
    return gecko::Node(options);
}

/// A fresh inproc endpoint name, unique within the process.
inline std::string unique_inproc(const std::string& what) {
    static std::atomic<int> counter{0};
    return "inproc://" + what + "-" + std::to_string(counter++);
}

}  // namespace test
