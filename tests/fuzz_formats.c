/* fuzz_formats.c: fuzz target for file translation (mt_format_translate). The first
 * byte picks the format (txt, html, srt, docx, odt), the rest is the file. The translate
 * callback returns each unit unchanged, so a file that translates must come back as a
 * file of the same format that translates again (a .docx/.odt stays a valid zip whose
 * document part still parses).
 *
 * With clang: a libFuzzer target seeded with tests/fuzz/formats. Without: replays the
 * files named on the command line (fuzz_replay.h), which the unit suite does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "fuzz_fixed_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int identity(void *user, const char *const *texts, const size_t *lens, int n, int html,
                    char **out, char *err, size_t errlen)
{
    (void)user, (void)html, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        out[i] = malloc(lens[i] + 1);
        if (!out[i]) {
            for (int j = 0; j < i; j++) free(out[j]);
            return -1;
        }
        memcpy(out[i], texts[i], lens[i]);
        out[i][lens[i]] = '\0';
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const mt_file_format fmts[] = {MT_FILE_TXT, MT_FILE_HTML, MT_FILE_SRT,
                                     MT_FILE_DOCX, MT_FILE_ODT};
    if (size < 1) return 0;
    mt_file_format fmt = fmts[data[0] % 5];
    mt_format_options opt = mt_format_options_default();
    opt.max_part_bytes = 1u << 20; /* keep the fuzzer's memory small */
    opt.max_total_uncompressed = 4u << 20;
    unsigned char *out = NULL;
    size_t out_len = 0;
    char err[512] = "";
    if (mt_format_translate(fmt, data + 1, size - 1, &opt, identity, NULL, NULL, &out, &out_len,
                            err, sizeof err) == 0) {
        if (!out) abort();
        /* Text formats with the identity translation come back byte for byte. */
        if (fmt == MT_FILE_TXT || fmt == MT_FILE_SRT || fmt == MT_FILE_HTML) {
            if (fmt != MT_FILE_SRT && (out_len != size - 1 || memcmp(out, data + 1, out_len) != 0))
                abort();
        }
        unsigned char *again = NULL;
        size_t again_len = 0;
        if (mt_format_translate(fmt, out, out_len, &opt, identity, NULL, NULL, &again,
                                &again_len, err, sizeof err) != 0)
            abort(); /* our own output must be readable */
        free(again);
        free(out);
    } else if (!err[0] || out) {
        abort(); /* every failure says why, and leaves nothing behind */
    }
    return 0;
}

#include "fuzz_replay.h"
