// The progress line on a terminal: fields such as "step 120/2000" or "ETA 1m05s" joined by
// " | ", fitted to the terminal's width by dropping the least important fields first, so the
// line is rewritten in place instead of wrapping.
#ifndef CHARGPT_PROGRESS_LINE_H
#define CHARGPT_PROGRESS_LINE_H

#include <stddef.h>

// Columns of the terminal on fd (platform_terminal_width) when fd is one that knows its size; else
// $COLUMNS when it is a number from 1 to 10000; else 80.
int terminal_width(int fd);

// Joins the n fields (n <= 16, ASCII) with " | " into out, leaving out fields until the line
// has at most width - 1 characters (the last column stays free so the terminal never wraps).
// importance[i] ranks field i: the field with the largest number goes first; the field with
// importance 0 is always kept, cut short if even it alone is too wide.
void progress_line_fit(const char *const *fields, const int *importance, int n, int width, char *out,
                       size_t size);

#endif
