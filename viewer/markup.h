// Text written into the pages (timeline.html, the attention page) and the loss plot's SVG:
// names (a corpus's file names, a run's directory) and metadata, escaped so that the files
// stay valid XML and HTML whatever the text holds.
#ifndef CHARGPT_MARKUP_H
#define CHARGPT_MARKUP_H

#include <stdio.h>

// Writes s as XML/HTML character data or attribute value: & < > " ' as entities, and each
// control character but newline and tab (which XML allows in no form, not even as a
// character reference) and each byte that is not part of well-formed UTF-8 as the text \xNN
// (common/utf8.h's utf8_write_shown).
void markup_write_text(FILE *fp, const char *s);

#endif
