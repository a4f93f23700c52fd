#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bridge_client.py: follows one topic of a key through gecko-bridge, as any
# Foxglove WebSocket client does, with nothing of Gecko's Python package:
# only Debian's python3-websockets. Prints each message as a line of JSON.
# Run:  geckocore --key dalek &   pub_imu --key dalek &   gecko-bridge --key dalek &
#       python3 examples/python/bridge_client.py --topic imu [--count 5] [--url ws://127.0.0.1:8765]
import argparse
import asyncio
import json
import struct
import sys

import websockets  # Debian 12: python3-websockets

MESSAGE_DATA = 0x01  # binary server frame: opcode, u32 subscription, u64 receive time (ns), payload


async def follow(url, topic, count):
    async with websockets.connect(url, subprotocols=["foxglove.websocket.v1"], max_size=None) as ws:
        subscribed = None
        received = 0
        async for frame in ws:
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg["op"] == "advertise" and subscribed is None:
                    # Every topic is two channels, "json" and "msgpack": take the JSON one.
                    for channel in msg["channels"]:
                        if channel["topic"] == topic and channel["encoding"] == "json":
                            subscribed = 1
                            await ws.send(json.dumps({"op": "subscribe",
                                                      "subscriptions": [{"id": subscribed, "channelId": channel["id"]}]}))
                            print(f"# {topic}: {channel['schemaName']}", file=sys.stderr)
                elif msg["op"] == "status":
                    print(f"# bridge says: {msg['message']}", file=sys.stderr)
            elif frame[0] == MESSAGE_DATA:
                subscription, _receive_ns = struct.unpack_from("<IQ", frame, 1)
                if subscription == subscribed:
                    print(frame[13:].decode(), flush=True)
                    received += 1
                    if received == count:
                        return


def main():
    parser = argparse.ArgumentParser(description="prints a topic's messages, as JSON, from gecko-bridge")
    parser.add_argument("--url", default="ws://127.0.0.1:8765", help="the bridge (default ws://127.0.0.1:8765)")
    parser.add_argument("--topic", required=True, help="the topic to follow")
    parser.add_argument("--count", type=int, default=0, help="stop after this many messages (default: never)")
    args = parser.parse_args()
    try:
        asyncio.run(follow(args.url, args.topic, args.count))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
