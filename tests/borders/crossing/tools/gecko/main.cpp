// A border crossing through a relative path.
#include "../../gecko/src/node/session.hpp"
