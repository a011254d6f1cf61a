#include "markup.h"

#include "../common/utf8.h"

static const char *entity(char c) {
    switch (c) {
        case '&': return "&amp;";
        case '<': return "&lt;";
        case '>': return "&gt;";
        case '"': return "&quot;";
        case '\'': return "&#39;";
        default: return NULL;
    }
}

void markup_write_text(FILE *fp, const char *s) { utf8_write_shown(fp, s, entity); }
