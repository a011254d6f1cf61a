// Tests of format/float_text.h: the shortest decimal that reads back, for float and double.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/rng.h"
#include "../format/float_text.h"
#include "test.h"

TEST(float_text_shortest_round_trip) {
    static const struct { float x; const char *want; } floats[] = {
        {0.1f, "0.1"}, {0.001f, "0.001"}, {1e-4f, "0.0001"}, {0.9f, "0.9"}, {0.99f, "0.99"}, {1e-8f, "1e-08"},
        {1.0f, "1"}, {0.0f, "0"}, {1337.0f, "1337"}, {3.14159274f, "3.1415927"}, {-2.5f, "-2.5"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof(floats) / sizeof(floats[0]); i++) {
        float_text(floats[i].x, buf, sizeof(buf));
        CHECK(strcmp(buf, floats[i].want) == 0, "float %.9g: '%s', want '%s'", floats[i].x, buf, floats[i].want);
    }
    double_text(0.1, buf, sizeof(buf));
    CHECK(strcmp(buf, "0.1") == 0, "double 0.1: '%s'", buf);
    double_text(INFINITY, buf, sizeof(buf));
    CHECK(strcmp(buf, "inf") == 0, "double inf: '%s'", buf);
    // random values of many magnitudes: the text reads back exactly
    Rng rng;
    rng_seed(&rng, 5);
    for (int i = 0; i < 10000; i++) {
        float x = (float)((rng_uniform(&rng) - 0.5) * pow(10.0, (double)rng_below(&rng, 20) - 10.0));
        float_text(x, buf, sizeof(buf));
        if (!CHECK(strtof(buf, NULL) == x, "float %.9g written '%s' reads back %.9g", x, buf, strtof(buf, NULL)))
            break;
        double d = (double)x * (1.0 + rng_uniform(&rng));
        double_text(d, buf, sizeof(buf));
        if (!CHECK(strtod(buf, NULL) == d, "double %.17g written '%s'", d, buf)) break;
    }
}
