/* mt_file.h: mt-translate FILE: translates a .txt/.html/.srt/.docx/.odt file (formats/)
 * into out_path (NULL: next to it, the target code before the extension: a.docx ->
 * a.de.docx), with a progress bar on stderr when it is a terminal. Returns the exit
 * status (0, or 1 after a message naming the file). rq: the command line's options, its
 * texts unset. Single-threaded caller. */
#ifndef MT_CLI_FILE_H
#define MT_CLI_FILE_H

#include "service.h"

int mt_cli_translate_file(mt_service *svc, const mt_service_request *rq, const char *in,
                          const char *out_path, const char *target);

#endif
