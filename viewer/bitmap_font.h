// A small built-in bitmap font for the labels of the .png: 5 x 7 pixel glyphs of
// printable ASCII and of the whitespace symbols U+2423, U+23CE and U+21E5; a hollow box
// for any other character.
#ifndef CHARGPT_BITMAP_FONT_H
#define CHARGPT_BITMAP_FONT_H

#include <stdint.h>

#define FONT_WIDTH 5
#define FONT_HEIGHT 7

// 1 where the glyph of cp has ink at column x (0..FONT_WIDTH-1), row y (0..FONT_HEIGHT-1).
int font_ink(uint32_t cp, int x, int y);

#endif
