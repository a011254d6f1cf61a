#include "float_text.h"

#include <stdio.h>
#include <stdlib.h>

// 9 significant digits always read back as the same float, 17 as the same double; fewer
// often do, and the first precision that does is the shortest text.
void float_text(float x, char *buf, size_t size) {
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, size, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x) return;
    }
}

void double_text(double x, char *buf, size_t size) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) return;
    }
}
