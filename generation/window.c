#include "window.h"

long window_start(long len, int block_size) { return len > block_size ? len - block_size : 0; }

long window_advance(long start, long len, int block_size, int stride) {
    return len - start > block_size ? start + stride : start;
}
