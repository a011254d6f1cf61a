// The context window: to predict character len of a text, the model reads characters
// [start, len), at most block_size of them (its learned positions stop there).
//
// While the text fits, the window is the whole text. Past block_size, stride S (1 <= S <=
// block_size) says how the window moves on: once it would hold block_size + 1 characters it
// drops its first S. With S = 1 (the default) the window is always the last block_size
// characters, as nanoGPT and any reference model read a text; with a larger S it holds
// between block_size + 1 - S and block_size characters, and generation prefills it only once
// every S characters (learned absolute positions cannot be shifted, so a window that moves
// needs a new prefill). A RoPE model's cache rolls on at S = 1 instead (inference.h).
#ifndef CHARGPT_WINDOW_H
#define CHARGPT_WINDOW_H

// The window's start for a text (a prompt) of len characters: its last block_size.
long window_start(long len, int block_size);

// The start after one character was appended, the text now len characters long.
long window_advance(long start, long len, int block_size, int stride);

#endif
