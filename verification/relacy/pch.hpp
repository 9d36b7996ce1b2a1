// Relacy's precompiled-header entry point ("relacy/pch.hpp"), which a
// Relacy program's stdafx.h includes before relacy_std.hpp: here it only
// brings in the standard C and C++ headers such programs use without
// including them themselves (printf, memset, std::vector, ...). It declares
// nothing of its own. Safe before relacy_std.hpp (which must come after
// every standard header, see there); not for use after it.
#ifndef PERCPU_VERIFICATION_RELACY_PCH_HPP_
#define PERCPU_VERIFICATION_RELACY_PCH_HPP_

#include <limits.h>
#include <memory.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <queue>
#include <set>
#include <sstream>
#include <stack>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#endif  // PERCPU_VERIFICATION_RELACY_PCH_HPP_
