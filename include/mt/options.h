/* options.h: the one table of decoding options, expanded from the list in
 * decoding_options.h (which mt-server's [decoding] settings are expanded from too). Each
 * row names an option of mt_search_options once: its JSON field, its mt-translate flag,
 * its type and range, the request forms that may set it, and whether two requests that
 * differ in it may share a batch or a cached sentence. The JSON readers
 * (server/request.c), the command line (cli/mt_translate.c), range checks and their
 * messages, and the batcher's "same options" comparison and cache key all walk this table:
 * adding an option is one row in decoding_options.h and the code that uses its value.
 *
 * A caller's choice is an mt_decoding: values plus a bit per option given. The service
 * merges it over the server's defaults and the model's own (mt_service_submit); what maps
 * it onto the engine's mt_search_options is translator-internal (options_search.h).
 *
 * Thread-safety: the table is constant; every function is pure.
 */
#ifndef MT_TRANSLATOR_OPTIONS_H
#define MT_TRANSLATOR_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "decoding_options.h"

typedef struct {
    const char *name;   /* JSON field and [decoding] key */
    const char *flag;   /* mt-translate flag */
    const char *alias;  /* an older spelling of the flag, or NULL */
    const char *arg;    /* the flag's argument in --help ("N"), NULL for a bool */
    mt_option_type type;
    double min, max;    /* allowed range, max inclusive */
    int min_open;       /* 1: min itself is excluded ("> 0") */
    size_t offset;      /* of the value in mt_search_options (options_search.h) */
    unsigned where;     /* MT_OPT_NATIVE | MT_OPT_LIBRE | MT_OPT_CLI */
    int batch_key;      /* 1: sentences that differ in it never share a batch */
    int cache_key;      /* 1: part of the sentence cache's key (others make a job uncached) */
    const char *help;   /* one line for --help */
} mt_option_desc;

/* The row of option id, and the row count. */
const mt_option_desc *mt_option(int id);
/* The option whose name (JSON field) is name, or -1. */
int mt_option_by_name(const char *name);
/* The option whose flag or alias is flag ("--beam-size"), or -1. */
int mt_option_by_flag(const char *flag);

/* A caller's options: values by MT_OPT_* id (only those with their bit in `set` count;
 * a double holds every value of the table's ranges exactly, seeds up to 2^53 - 1 too). */
typedef struct {
    double v[MT_OPT_COUNT];
    unsigned set; /* 1u << mt_option_id per option given */
} mt_decoding;
/* Checks x against option id's type and range; 0, or -1 with "LABEL must be an integer
 * between 1 and 256 (got 0)" in err, LABEL being the caller's name for the option
 * ("field 'beam_size'", "--beam-size"). max_override > 0 lowers the upper bound. */
int mt_option_check(int id, double x, double max_override, const char *label, char *err, size_t errlen);
/* Checks x (mt_option_check) and stores it in d with its bit set; 0 or -1 with a message. */
int mt_option_set(mt_decoding *d, int id, double x, double max_override, const char *label, char *err,
                  size_t errlen);
/* Parses text as option id's type ("true"/"false"/"1"/"0" for a bool) and sets it; 0 or
 * -1 with a message naming label. */
int mt_option_parse(mt_decoding *d, int id, const char *text, double max_override, const char *label,
                    char *err, size_t errlen);
/* Copies the options set in src over dst (their values and bits). */
void mt_decoding_merge(mt_decoding *dst, const mt_decoding *src);

#endif
