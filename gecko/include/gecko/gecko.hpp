#pragma once
/// @file gecko.hpp
/// Everything a Gecko program usually needs.

#include "gecko/error.hpp"
#include "gecko/graph.hpp"
#include "gecko/log.hpp"
#include "gecko/message.hpp"
#include "gecko/node.hpp"
#include "gecko/options.hpp"
#include "gecko/publisher.hpp"
#include "gecko/service.hpp"
#include "gecko/signals.hpp"
#include "gecko/subscriber.hpp"
#include "gecko/time.hpp"
