# SPDX-License-Identifier: Apache-2.0
"""The node's command-line flags, as C++ gecko::node_options (--key/-k,
--name, --core, --multicast, --interface, --no-multicast, --no-discovery,
--peer), for argparse:

    parser = argparse.ArgumentParser(description="...")
    gecko.args.add_node_arguments(parser)
    args = parser.parse_args()
    node = gecko.args.node_from_args(args, "my_program")
"""

import sys

from .errors import Error
from .node import Node, Options


def add_node_arguments(parser):
    g = parser.add_argument_group("node")
    g.add_argument("-k", "--key", help="the key (robot, simulation) to join (GECKO_KEY)")
    g.add_argument("--name", help="this node's name (GECKO_NODE; default: the program's)")
    g.add_argument("--core", metavar="HOST[:PORT]", help="the geckocore's address, when multicast gets no answer "
                                                          "(GECKO_CORE)")
    g.add_argument("--multicast", metavar="GROUP:PORT", help="the discovery multicast group (GECKO_MULTICAST)")
    g.add_argument("--interface", metavar="ADDR", help="the interface for multicast and tcp (GECKO_INTERFACE)")
    g.add_argument("--no-multicast", action="store_true", help="find the core at --core only (GECKO_NO_MULTICAST=1)")
    g.add_argument("--no-discovery", action="store_true", help="no core: only nodes given with --peer")
    g.add_argument("--peer", action="append", default=[], metavar="LOCATOR",
                   help="connect to another node's locator (repeatable)")
    return parser


def options_from_args(args, default_name=""):
    """Options from GECKO_* then the flags; exits 2 (usage) on a bad value or no key."""
    over = {"key": args.key, "name": args.name, "core": args.core, "multicast": args.multicast,
            "interface": args.interface}
    if args.no_multicast:
        over["multicast_enabled"] = False
    if args.no_discovery:
        over["discovery"] = False
    if args.peer:
        over["peers"] = args.peer
    try:
        o = Options.from_env(**over)
    except Error as e:
        sys.stderr.write("%s: %s\n" % (sys.argv[0], e))
        sys.exit(2)
    if not o.key:
        sys.stderr.write("%s: no key: pass --key KEY or set GECKO_KEY\n" % sys.argv[0])
        sys.exit(2)
    if not o.name:
        o.name = default_name
    return o


def node_from_args(args, default_name=""):
    return Node(options=options_from_args(args, default_name))
