// A border crossing, for the checker to find.
#include "node/session.hpp"
