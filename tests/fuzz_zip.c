/* fuzz_zip.c: fuzz target for the zip layer of .docx/.odt (formats/zip.c) alone. The
 * input is a zip archive: opened with small limits, every entry read, every third one
 * replaced by new bytes, the archive written and opened again, where the replaced
 * entries must read back as written and the others as they were. The input buffer is
 * borrowed: the target frees it (libFuzzer does), so a layer that frees or writes it
 * is caught (ASan).
 *
 * With clang: a libFuzzer target seeded with tests/fuzz/zip. Without: replays the files
 * named on the command line (fuzz_replay.h), which the unit suite does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_CHECKED = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_format_options opt = mt_format_options_default();
    opt.max_part_bytes = 1u << 20; /* keep the fuzzer's memory small */
    opt.max_total_uncompressed = 4u << 20;
    opt.max_entries = 256;
    char err[512] = "";
    int code = 0;
    fmt_zip *z = fmt_zip_open(data, size, &opt, "zip", &code, err, sizeof err);
    if (!z) {
        if (code >= 0 || !err[0]) abort(); /* every failure says why */
        return 0;
    }
    long n = fmt_zip_count(z);
    /* Entry contents as read (NULL: unreadable) and as replaced. */
    unsigned char *before[MAX_CHECKED] = {0};
    size_t before_len[MAX_CHECKED] = {0};
    int replaced[MAX_CHECKED] = {0};
    for (long i = 0; i < n; i++) {
        unsigned char *d;
        size_t len;
        if (fmt_zip_read(z, i, &d, &len, err, sizeof err) != 0) {
            if (!err[0] || d) abort();
            continue;
        }
        if (i % 3 == 0 && i < MAX_CHECKED) {
            char *nd = malloc(64);
            if (!nd) abort();
            int k = snprintf(nd, 64, "<new entry=\"%ld\" was=\"%zu\"/>", i, len);
            if (fmt_zip_replace(z, i, (unsigned char *)nd, (size_t)k, err, sizeof err) != 0) {
                free(d);
                goto done;
            }
            replaced[i] = 1;
            free(d);
        } else if (i < MAX_CHECKED) {
            before[i] = d;
            before_len[i] = len;
        } else {
            free(d);
        }
    }
    unsigned char *out;
    size_t out_len;
    if (fmt_zip_write(z, &out, &out_len, err, sizeof err) != 0) goto done;
    fmt_zip_free(z);
    z = NULL;
    /* Our own output must open and hold what was put in (the limits grown by what the
     * replacements may add). */
    opt.max_part_bytes += MAX_CHECKED * 64;
    opt.max_total_uncompressed += MAX_CHECKED * 64;
    fmt_zip *again = fmt_zip_open(out, out_len, &opt, "zip", &code, err, sizeof err);
    if (!again || fmt_zip_count(again) != n) abort();
    for (long i = 0; i < n && i < MAX_CHECKED; i++) {
        if (!replaced[i] && !before[i]) continue;
        unsigned char *d;
        size_t len;
        if (fmt_zip_read(again, i, &d, &len, err, sizeof err) != 0) abort();
        if (replaced[i]) {
            char want[64];
            int k = snprintf(want, sizeof want, "<new entry=\"%ld\" was=", i);
            if (len < (size_t)k || memcmp(d, want, (size_t)k) != 0) abort();
        } else if (len != before_len[i] || memcmp(d, before[i], len) != 0) {
            abort();
        }
        free(d);
    }
    fmt_zip_free(again);
    free(out);
done:
    fmt_zip_free(z);
    for (long i = 0; i < MAX_CHECKED; i++) free(before[i]);
    return 0;
}

#include "fuzz_replay.h"
