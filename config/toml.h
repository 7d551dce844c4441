/* toml.h: a reader for the strict TOML subset of mt-server's config files: comments,
 * [tables] and [[arrays of tables]], bare or quoted keys, and values that are strings
 * (basic with escapes, literal), decimal integers (single underscores between digits),
 * floats, booleans and one-line arrays of strings. Anything else (dotted keys, inline
 * tables, dates, multi-line strings) is an error naming the line and column. It knows no
 * settings: config_file.c decides what a table or a key means.
 *
 * Thread-safety: a reader is used by one thread; no shared state.
 */
#ifndef MT_CONFIG_TOML_H
#define MT_CONFIG_TOML_H

#include <stddef.h>

typedef enum { MT_TOML_STR, MT_TOML_INT, MT_TOML_FLOAT, MT_TOML_BOOL, MT_TOML_ARRAY } mt_toml_type;

typedef struct {
    mt_toml_type type;
    int line, col;     /* where the value starts */
    char *s;           /* MT_TOML_STR (malloc'd; may contain NUL: slen bytes) */
    size_t slen;
    long long i;       /* MT_TOML_INT */
    double f;          /* MT_TOML_FLOAT */
    int b;             /* MT_TOML_BOOL */
    char **items;      /* MT_TOML_ARRAY (strings only) */
    size_t *item_lens;
    int n_items;
} mt_toml_value;

/* Reader state over a text (borrowed); err[errlen] receives "NAME:LINE:COL: message". */
typedef struct {
    const char *p, *end;
    const char *name;
    int line, col;
    char *err;
    size_t errlen;
} mt_toml_reader;

typedef enum { MT_TOML_END = 0, MT_TOML_TABLE = 1, MT_TOML_KEYVAL = 2 } mt_toml_event;

typedef struct {
    int line, col;       /* of the header's '[' or of the key */
    char name[64];       /* table name or key */
    int array;           /* MT_TOML_TABLE: [[name]] */
    mt_toml_value value; /* MT_TOML_KEYVAL: the caller clears it */
} mt_toml_item;

/* Starts reading text[0, len) (a leading UTF-8 byte order mark is skipped). name: for messages. */
void mt_toml_init(mt_toml_reader *r, const char *text, size_t len, const char *name, char *err,
                  size_t errlen);
/* The next table header or key/value line: MT_TOML_TABLE, MT_TOML_KEYVAL, MT_TOML_END,
 * or -1 with the message in the reader's err. */
int mt_toml_next(mt_toml_reader *r, mt_toml_item *item);
void mt_toml_value_clear(mt_toml_value *v);
/* "a string", "an integer", ... for messages. */
const char *mt_toml_type_name(mt_toml_type t);
/* Writes "NAME:LINE:COL: message" to the reader's err; returns MT_ERR_INVALID (status.h). */
int mt_toml_fail(mt_toml_reader *r, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
