// SPDX-License-Identifier: Apache-2.0
// gecko record, play and bag: forwarded to the bag component (bag/cli/),
// which gets `gecko echo`'s text form for `gecko bag echo`.
#include <gecko/bag/cli.hpp>
#include <gecko/wire/value.hpp>

#include "commands.hpp"
#include "text.hpp"

namespace gecko::tools {

int run_record(const Args& args) { return bag::cli::record(args); }
int run_play(const Args& args) { return bag::cli::play(args); }
int run_bag(const Args& args) {
    bag::cli::Tool tool;
    tool.to_text = [](const wire::Value& v) { return to_text(v); };
    return bag::cli::bag(args, tool);
}

}  // namespace gecko::tools
