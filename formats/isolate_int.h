/* isolate_int.h: what the three files of the document readers' isolation share (private
 * to formats/): the messages of the job socket (isolate_wire.c; their layout is listed in
 * isolate.c's opening comment) and the zygote's entry (isolate_zygote.c).
 *
 * Every receive checks lengths against the caller's maximum and reads through a cursor
 * that flags a read past the end (bad), so a hostile child's message is an error. */
#ifndef MT_FORMATS_ISOLATE_INT_H
#define MT_FORMATS_ISOLATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "format_int.h"

/* A received message: type and payload (malloc'd), read through a checked cursor. */
typedef struct {
    char type;
    unsigned char *p;
    size_t n, at;
    int bad; /* read past the end */
} fmt_iso_msg;

void fmt_iso_put_u64(fmt_buf *b, uint64_t v);
/* A (length, bytes) field. */
void fmt_iso_put_bytes(fmt_buf *b, const void *d, size_t n);
/* CLOCK_MONOTONIC in milliseconds. */
long long fmt_iso_now_ms(void);
/* Waits until fd is ready for `events`, spending *budget_ms (NULL: no deadline). 0: ready;
 * -1: error; -2: the budget ran out. */
int fmt_iso_wait_fd(int fd, short events, long long *budget_ms);
/* Sends one message (type byte, 64-bit length, b's bytes); 0, -1 or -2 as wait_fd. */
int fmt_iso_send_msg(int fd, char type, const fmt_buf *b, long long *budget_ms);
/* Reads exactly n bytes; 0, -1 (error or end) or -2 (budget). */
int fmt_iso_recv_all(int fd, void *dst, size_t n, long long *budget_ms);
/* Reads one message of at most max payload bytes into m (free m->p); 0, -1 or -2. */
int fmt_iso_recv_msg(int fd, fmt_iso_msg *m, size_t max, long long *budget_ms);
uint64_t fmt_iso_get_u64(fmt_iso_msg *m);
/* A pointer to the next (length, bytes) field, or NULL when it does not fit. */
const char *fmt_iso_get_bytes(fmt_iso_msg *m, size_t *len);
/* The options field by field (the struct's padding is never sent). */
void fmt_iso_put_options(fmt_buf *b, const mt_format_options *o);
mt_format_options fmt_iso_get_options(fmt_iso_msg *m);

/* The zygote's loop (isolate_zygote.c), in the process zygote_start forked: fd 3 is the
 * control socket. Never returns. */
void fmt_iso_zygote_main(void);

#endif
