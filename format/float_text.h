// Numbers as text: written as the shortest decimal that reads back to the same value, for
// metadata a person reads (0.1f is written "0.1", not "0.100000001"); and whole numbers read
// as a person may write them on a command line ("2000", "2e3", "1.5e3").
#ifndef CHARGPT_FLOAT_TEXT_H
#define CHARGPT_FLOAT_TEXT_H

#include <stddef.h>

// Writes x with the fewest significant digits (1 to 9) that strtof reads back as x.
void float_text(float x, char *buf, size_t size);
// Writes x with the fewest significant digits (1 to 17) that strtod reads back as x.
void double_text(double x, char *buf, size_t size);

// Reads the whole number s spells: decimal digits, or any number strtod reads (an exponent,
// a fraction) whose value is a whole number within long's range. Returns 0 with *value; -1
// when s is not a number; -2 when it is one but not a whole number ("1.5"); -3 when it is a
// whole number beyond long's range ("1e30").
int whole_number_parse(const char *s, long *value);

#endif
