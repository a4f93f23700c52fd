# SPDX-License-Identifier: Apache-2.0
"""What a gecko.Node is made of, as C++ gecko/src/node/ (node-session.md):

    session.py   Session: the parts below put together; what entities and the reactor call
    reactor.py   the node's one internal thread (discovery, out-port events, ticks, stats)
    links.py     one link per other node the entities deal with, chosen from discovery's peers
    inbound.py   the in-port: routes, the leader/follower wait, the drain into sinks
    outbound.py  the out-port: sending, who subscribes, latched replays, held directed frames
    sink.py      SubscriberStats, Sink: what one receiving entity queues and counts
    keywide_sink.py  KeyWideSink: a key-wide subscriber's frames, held until the directory names them
    directory.py the key's channel directory (ChannelInfo, DirectoryEvent, TopicFilter), merged
    notices.py   a log line once per reason
    info.py, names.py, codec.py   MessageInfo; ids and name checks; a payload's type and encoding

Each module imports only downward: these from gecko._transport (the
transport seam) and the package's leaf modules (wire, message, schema,
names, discovery, runtime, errors); gecko.pubsub, gecko.service and
gecko.keywide from here; gecko.node from all of them.
"""
