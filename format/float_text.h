// Numbers as text: written as the shortest decimal that reads back to the same value, for
// metadata a person reads (0.1f is written "0.1", not "0.100000001").
#ifndef CHARGPT_FLOAT_TEXT_H
#define CHARGPT_FLOAT_TEXT_H

#include <stddef.h>

// Writes x with the fewest significant digits (1 to 9) that strtof reads back as x.
void float_text(float x, char *buf, size_t size);
// Writes x with the fewest significant digits (1 to 17) that strtod reads back as x.
void double_text(double x, char *buf, size_t size);

#endif
