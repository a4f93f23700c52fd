// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file messages.hpp
/// What a page sends the academy endpoints, read (docs/ACADEMY.md): the
/// manager's JSON orders and the code endpoint's five-letter messages.
/// Outside input: each reader gives a value or a reason, never throws, and
/// tests/fuzz/fuzz_academy.cpp fuzzes them.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace gecko::bridge::academy {

/// A manager message: {"command": NAME, "data": {...}, "id": ...}.
struct ManagerOrder {
    std::string command;   ///< empty when the message is not an order (see `error`)
    std::string id;        ///< the order's "id" as JSON text, echoed in its answer; "" without one
    nlohmann::json data;   ///< its "data"; an empty object without one
    std::string error;     ///< why it is not an order; "" when it is one
};
ManagerOrder read_manager_order(std::string_view text);

/// A code endpoint message: its name (the first five characters, "#code",
/// "#play", ...) and what follows.
struct CodeMessage {
    std::string_view name;
    std::string_view body;
};
CodeMessage split_code_message(std::string_view text);

/// `#freq`'s body: {"brain": HZ, "gui": HZ}, each optional, a number or a
/// number as text (RoboticsAcademy's page sends text), in (0, 1000].
struct Frequencies {
    std::optional<double> brain, gui;
    std::string error;  ///< why the body is refused; "" when it is taken
};
Frequencies read_frequencies(std::string_view body);

}  // namespace gecko::bridge::academy
