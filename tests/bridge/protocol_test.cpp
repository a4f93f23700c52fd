// SPDX-License-Identifier: Apache-2.0
// The client-message parsers (bridge/src/protocol.hpp): what they take, and
// the sentence each refusal carries.
#include <catch2/catch.hpp>

#include "protocol.hpp"

#include <string>
#include <vector>

using namespace gecko::bridge;

TEST_CASE("the subprotocol is the first Foxglove name the client offers", "[bridge][protocol]") {
    CHECK(choose_subprotocol("foxglove.websocket.v1") == "foxglove.websocket.v1");
    CHECK(choose_subprotocol("foxglove.sdk.v1") == "foxglove.sdk.v1");
    CHECK(choose_subprotocol("x, foxglove.sdk.v1 , foxglove.websocket.v1") == "foxglove.sdk.v1");
    CHECK(choose_subprotocol("chat, superchat") == "");
    CHECK(choose_subprotocol("") == "");
}

TEST_CASE("subscribe takes ids and channels, and Gecko's queue options", "[bridge][protocol]") {
    const auto p = parse_text(R"({"op":"subscribe","subscriptions":[{"id":1,"channelId":7},{"id":2,"channelId":8,"latest":true},{"id":3,"channelId":9,"depth":4}]})");
    REQUIRE(p);
    REQUIRE(p.request->subscriptions.size() == 3);
    CHECK(p.request->subscriptions[0].channel == 7);
    CHECK(p.request->subscriptions[1].latest);
    CHECK(p.request->subscriptions[2].depth == 4u);
}

TEST_CASE("a malformed request is refused with a sentence naming what is wrong", "[bridge][protocol]") {
    CHECK(parse_text("{not json").error.rfind("malformed JSON", 0) == 0);
    CHECK(parse_text("[1,2]").error == "a text message must be a JSON object with an \"op\"");
    CHECK(parse_text(R"({"op": 3})").error == "a text message must have an \"op\" string");
    CHECK(parse_text(R"({"op":"frobnicate"})").error.rfind("unknown op 'frobnicate'", 0) == 0);
    CHECK(parse_text(R"({"op":"subscribe"})").error == "'subscribe': field 'subscriptions' is missing");
    CHECK(parse_text(R"({"op":"subscribe","subscriptions":[{"id":-1,"channelId":1}]})").error ==
          "'subscribe': subscriptions[0]: field 'id' must be an integer from 0 to 4294967295");
    CHECK(parse_text(R"({"op":"subscribe","subscriptions":[{"id":4294967296,"channelId":1}]})").error ==
          "'subscribe': subscriptions[0]: field 'id' must be an integer from 0 to 4294967295");
    CHECK(parse_text(R"({"op":"subscribe","subscriptions":[{"id":1,"channelId":1,"depth":0}]})").error ==
          "'subscribe': subscriptions[0]: field 'depth' must be at least 1");
    CHECK(parse_text(R"({"op":"unsubscribe","subscriptionIds":[1,"2"]})").error ==
          "'unsubscribe': subscriptionIds[1] must be an integer from 0 to 4294967295");
    CHECK(parse_text(R"({"op":"advertise","channels":[{"id":1,"topic":5,"encoding":"json"}]})").error ==
          "'advertise': channels[0]: field 'topic' must be a string");
    CHECK(parse_text(std::string(100000, '[')).error == "JSON nested deeper than 32 levels");
    // Brackets inside strings are not nesting.
    CHECK(parse_text(R"({"op":"advertise","channels":[{"id":1,"topic":")" + std::string(100, '[') + R"(","encoding":"json"}]})"));
}

TEST_CASE("a request with more items than the limit is refused whole", "[bridge][protocol]") {
    std::string ids;
    for (int i = 0; i < 5000; ++i) ids += (i ? "," : "") + std::to_string(i);
    const auto p = parse_text(R"({"op":"unsubscribe","subscriptionIds":[)" + ids + "]}");
    CHECK_FALSE(p);
    CHECK(p.error == "'unsubscribe': field 'subscriptionIds' has 5000 items; at most 4096 are taken in one request");
}

TEST_CASE("binary client messages: data and service calls, little-endian, checked against their length", "[bridge][protocol]") {
    const std::vector<std::uint8_t> data{0x01, 0x07, 0x00, 0x00, 0x00, 'h', 'i'};
    auto d = parse_binary(data.data(), data.size());
    REQUIRE(d);
    CHECK(d.request->op == BinaryRequest::Op::message_data);
    CHECK(d.request->channel == 7);
    CHECK(std::string(reinterpret_cast<const char*>(d.request->payload), d.request->size) == "hi");

    const std::vector<std::uint8_t> call{0x02, 3, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 'j', 's', 'o', 'n', '{', '}'};
    auto c = parse_binary(call.data(), call.size());
    REQUIRE(c);
    CHECK(c.request->service == 3);
    CHECK(c.request->call == 9);
    CHECK(c.request->encoding == "json");
    CHECK(c.request->size == 2);

    std::vector<std::uint8_t> lying = call;
    lying[9] = 200;  // an encoding longer than the message
    CHECK(parse_binary(lying.data(), lying.size()).error.find("runs past the message") != std::string::npos);
    CHECK(parse_binary(call.data(), 6).error.find("shorter than its header") != std::string::npos);
    CHECK(parse_binary(data.data(), 3).error == "a client message (opcode 0x01) shorter than its 4-byte channel id");
    CHECK(parse_binary(nullptr, 0).error == "an empty binary message (it must start with an opcode)");
    const std::uint8_t unknown[] = {0xfe};
    CHECK(parse_binary(unknown, 1).error.rfind("unknown binary opcode 0xfe", 0) == 0);
}

TEST_CASE("server messages: a MessageData header and a service response, little-endian", "[bridge][protocol]") {
    std::uint8_t h[message_data_header_size];
    message_data_header(h, 0x01020304u, 0x1122334455667788ull);
    CHECK(h[0] == 0x01);
    CHECK(h[1] == 0x04);
    CHECK(h[4] == 0x01);
    CHECK(h[5] == 0x88);
    CHECK(h[12] == 0x11);
    const std::uint8_t payload[] = {'{', '}'};
    const auto r = service_call_response(5, 6, "json", payload, 2);
    CHECK(r.size() == 1 + 12 + 4 + 2);
    CHECK(r[0] == 0x03);
    CHECK(r.substr(13, 4) == "json");
    CHECK(status(StatusLevel::error, "why", "id1") == R"({"id":"id1","level":2,"message":"why","op":"status"})");
}
