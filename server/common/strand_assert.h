#pragma once
// CKPT_ASSERT_ON_STRAND(strand): the check behind "touched only on strand_". A method that relies
// on running on its strand states it so; debug builds abort at the first call from anywhere else,
// release builds (NDEBUG) compile it away. Works with any Asio strand (running_in_this_thread).

#include <cassert>

#define CKPT_ASSERT_ON_STRAND(strand) \
  assert((strand).running_in_this_thread() && "must run on its strand")
