/* test_spool.c: the translated-file spool: begin / progress / finish / lookup, ids that
 * cannot name anything else, sanitised download names (long ones keep their extension),
 * limits (per owner, with the time the first slot frees), expiry on a fake clock, files
 * without a name, leftovers of an earlier run removed (not in a shared directory), close
 * removes the files. */
#include <check.h>

#include "check_main.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool.h"

static char err[512];
static double fake_now;
static double fake_clock(void *user)
{
    (void)user;
    return fake_now;
}

static char dir[64];

static mt_spool *open_spool(int max_entries, size_t max_file, size_t max_total)
{
    snprintf(dir, sizeof dir, "/tmp/mt_test_spool_XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    mt_spool_options o = mt_spool_options_default();
    o.dir = dir;
    o.max_entries = max_entries;
    o.max_file_bytes = max_file;
    o.max_total_bytes = max_total;
    o.ttl = 60;
    o.clock = fake_clock;
    fake_now = 1000;
    mt_spool *sp = mt_spool_open(&o, err, sizeof err);
    ck_assert_msg(sp != NULL, "%s", err);
    return sp;
}

static int files_in(const char *d)
{
    DIR *dd = opendir(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd)))
        if (de->d_name[0] != '.') n++;
    closedir(dd);
    return n;
}

START_TEST(test_lifecycle)
{
    mt_spool *sp = open_spool(4, 1000, 10000);
    char id[MT_SPOOL_ID_LEN + 1];
    ck_assert_int_eq(mt_spool_begin(sp, "../../etc/My \"report\".docx", "application/x-test", id,
                                     err, sizeof err), 0);
    ck_assert_uint_eq(strlen(id), MT_SPOOL_ID_LEN);
    mt_spool_entry e;
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    ck_assert_int_eq(e.state, MT_SPOOL_RUNNING);
    ck_assert_str_eq(e.name, "My _report_.docx");
    ck_assert_int_eq(mt_spool_progress(sp, id, 3, 10), 0);
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    ck_assert_int_eq(e.done, 3);
    ck_assert_int_eq(e.total, 10);
    ck_assert_int_eq(mt_spool_finish(sp, id, "hello", 5, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    ck_assert_int_eq(e.state, MT_SPOOL_DONE);
    ck_assert_uint_eq(e.size, 5);
    ck_assert_str_eq(e.mime, "application/x-test");
    char *data;
    size_t len;
    ck_assert_int_eq(mt_spool_read(sp, id, &data, &len, err, sizeof err), 0);
    ck_assert_uint_eq(len, 5);
    ck_assert(memcmp(data, "hello", 5) == 0);
    free(data);
    /* The file has no name: a crash leaves nothing of it in the directory. */
    ck_assert_int_eq(files_in(dir), 0);
    /* A finished job cannot be finished again or failed. */
    ck_assert_int_eq(mt_spool_finish(sp, id, "x", 1, err, sizeof err), -1);
    ck_assert_int_eq(mt_spool_fail(sp, id, "late"), -1);

    /* Expiry: still there at ttl, gone after. */
    fake_now += 60;
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    fake_now += 1;
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), -1);
    ck_assert_int_eq(mt_spool_read(sp, id, &data, &len, err, sizeof err), -1);
    ck_assert_int_eq(files_in(dir), 0);
    mt_spool_close(sp);
    rmdir(dir);
}
END_TEST

/* One owner cannot fill the spool: beyond max_per_owner it is refused with the time its
 * earliest job frees, while others still get in; a full spool says when its first slot
 * frees (a finished job's expiry; a running one's no earlier than a ttl away), not 1 s. */
START_TEST(test_per_owner_limit)
{
    snprintf(dir, sizeof dir, "/tmp/mt_test_spool_XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    mt_spool_options o = mt_spool_options_default();
    o.dir = dir;
    o.max_entries = 4;
    o.max_per_owner = 2;
    o.ttl = 60;
    o.clock = fake_clock;
    fake_now = 1000;
    mt_spool *sp = mt_spool_open(&o, err, sizeof err);
    ck_assert_msg(sp != NULL, "%s", err);
    char a[MT_SPOOL_ID_LEN + 1], b[MT_SPOOL_ID_LEN + 1], c[MT_SPOOL_ID_LEN + 1];
    double retry = -1;
    ck_assert_int_eq(mt_spool_begin_for(sp, "addr:10.0.0.1", "a.txt", NULL, a, &retry, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_finish(sp, a, "x", 1, err, sizeof err), 0);
    fake_now += 10;
    ck_assert_int_eq(mt_spool_begin_for(sp, "addr:10.0.0.1", "b.txt", NULL, b, &retry, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_begin_for(sp, "addr:10.0.0.1", "c.txt", NULL, c, &retry, err, sizeof err),
                     MT_SPOOL_OWNER_FULL);
    ck_assert_msg(retry > 49.9 && retry < 50.1, "retry %g", retry); /* a expires at 1060 */
    ck_assert_msg(strstr(err, "per client") != NULL, "%s", err);
    /* someone else still gets in, up to the spool's own limit */
    ck_assert_int_eq(mt_spool_begin_for(sp, "addr:10.0.0.2", "c.txt", NULL, c, &retry, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_begin_for(sp, "key:k", "d.txt", NULL, c, &retry, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_begin_for(sp, "key:k2", "e.txt", NULL, c, &retry, err, sizeof err), MT_SPOOL_FULL);
    ck_assert_msg(retry > 49.9 && retry < 50.1, "retry %g", retry);
    /* once a's expiry passes, its owner may begin again */
    fake_now += 51;
    ck_assert_int_eq(mt_spool_begin_for(sp, "addr:10.0.0.1", "c.txt", NULL, c, &retry, err, sizeof err), 0);
    /* all running: the first could free no earlier than a ttl from now */
    ck_assert_int_eq(mt_spool_begin_for(sp, "key:k3", "f.txt", NULL, c, &retry, err, sizeof err), MT_SPOOL_FULL);
    ck_assert_msg(retry > 59.9 && retry < 60.1, "retry %g", retry);
    mt_spool_close(sp);
    rmdir(dir);
}
END_TEST

/* A download name over 255 bytes is cut in its stem: the extension stays, and no UTF-8
 * character is cut in half. */
START_TEST(test_long_name_keeps_extension)
{
    mt_spool *sp = open_spool(4, 1000, 10000);
    char name[700], id[MT_SPOOL_ID_LEN + 1];
    size_t n = 0;
    for (int i = 0; i < 200; i++) n += (size_t)snprintf(name + n, sizeof name - n, "\xc3\xa9"); /* é */
    snprintf(name + n, sizeof name - n, ".docx");
    ck_assert_int_eq(mt_spool_begin(sp, name, NULL, id, err, sizeof err), 0);
    mt_spool_entry e;
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    size_t len = strlen(e.name);
    ck_assert_uint_le(len, 255);
    ck_assert_uint_ge(len, 250);
    ck_assert_str_eq(e.name + len - 5, ".docx");
    ck_assert_uint_eq((len - 5) % 2, 0); /* whole two-byte characters */
    ck_assert(memcmp(e.name, "\xc3\xa9", 2) == 0);
    mt_spool_close(sp);
    rmdir(dir);
}
END_TEST

START_TEST(test_ids_and_paths)
{
    mt_spool *sp = open_spool(4, 1000, 10000);
    char id[MT_SPOOL_ID_LEN + 1], id2[MT_SPOOL_ID_LEN + 1];
    ck_assert_int_eq(mt_spool_begin(sp, "a.txt", "text/plain", id, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_begin(sp, "", NULL, id2, err, sizeof err), 0);
    ck_assert_str_ne(id, id2);
    mt_spool_entry e;
    ck_assert_int_eq(mt_spool_lookup(sp, id2, &e), 0);
    ck_assert_str_eq(e.name, "translated");
    ck_assert_str_eq(e.mime, "application/octet-stream");
    /* Anything but an exact id is unknown: prefixes, upper case, paths, suffixes. */
    char upper[MT_SPOOL_ID_LEN + 1], longer[MT_SPOOL_ID_LEN + 8], shorter[MT_SPOOL_ID_LEN];
    strcpy(upper, id);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    snprintf(longer, sizeof longer, "%s.part", id);
    memcpy(shorter, id, MT_SPOOL_ID_LEN - 1);
    shorter[MT_SPOOL_ID_LEN - 1] = '\0';
    const char *bad[] = {upper, longer, shorter, "../../../../etc/passwd", "", "%2e%2e",
                         "0123456789abcdef0123456789abcdef/../x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (strcmp(bad[i], upper) == 0 && strcmp(upper, id) == 0) continue; /* all digits */
        ck_assert_msg(mt_spool_lookup(sp, bad[i], &e) == -1, "found %s", bad[i]);
    }
    ck_assert_int_eq(mt_spool_lookup(sp, NULL, &e), -1);
    /* Failure is reported with its message, then expires like a finished job. */
    ck_assert_int_eq(mt_spool_fail(sp, id, "docx: word/document.xml: line 3: invalid XML"), 0);
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    ck_assert_int_eq(e.state, MT_SPOOL_FAILED);
    ck_assert_str_eq(e.error, "docx: word/document.xml: line 3: invalid XML");
    fake_now += 100;
    ck_assert_int_eq(mt_spool_expire(sp), 1); /* the running one stays */
    ck_assert_int_eq(mt_spool_lookup(sp, id2, &e), 0);
    mt_spool_close(sp);
    rmdir(dir);
}
END_TEST

START_TEST(test_limits)
{
    mt_spool *sp = open_spool(2, 10, 15);
    char a[MT_SPOOL_ID_LEN + 1], b[MT_SPOOL_ID_LEN + 1], c[MT_SPOOL_ID_LEN + 1];
    ck_assert_int_eq(mt_spool_begin(sp, "a", NULL, a, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_begin(sp, "b", NULL, b, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_begin(sp, "c", NULL, c, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "2 files") != NULL, "%s", err);
    ck_assert_int_eq(mt_spool_finish(sp, a, "12345678901", 11, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "11 bytes, more than the limit of 10") != NULL, "%s", err);
    ck_assert_int_eq(mt_spool_finish(sp, a, "1234567890", 10, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_finish(sp, b, "123456", 6, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "no room") != NULL, "%s", err);
    ck_assert_int_eq(mt_spool_finish(sp, b, "12345", 5, err, sizeof err), 0);
    /* Once a job expires its room and slot are free again. */
    fake_now += 61;
    ck_assert_int_eq(mt_spool_begin(sp, "c", NULL, c, err, sizeof err), 0);
    ck_assert_int_eq(mt_spool_finish(sp, c, "123456789", 9, err, sizeof err), 0);
    mt_spool_close(sp);
    ck_assert_int_eq(files_in(dir), 0); /* close removes every file */
    rmdir(dir);
}
END_TEST

START_TEST(test_open_sweeps_leftovers)
{
    snprintf(dir, sizeof dir, "/tmp/mt_test_spool_XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/0123456789abcdef0123456789abcdef", dir);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof path, "%s/0123456789abcdef0123456789abcdef.part", dir);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof path, "%s/keep-me.txt", dir);
    fclose(fopen(path, "w"));
    mt_spool_options o = mt_spool_options_default();
    o.dir = dir;
    mt_spool *sp = mt_spool_open(&o, err, sizeof err);
    ck_assert_msg(sp != NULL, "%s", err);
    ck_assert_int_eq(files_in(dir), 1); /* only the file that is not the spool's */
    mt_spool_close(sp);
    /* without sweep (a directory shared with others) nothing is touched */
    snprintf(path, sizeof path, "%s/0123456789abcdef0123456789abcdef", dir);
    fclose(fopen(path, "w"));
    o.sweep = 0;
    sp = mt_spool_open(&o, err, sizeof err);
    ck_assert_msg(sp != NULL, "%s", err);
    ck_assert_int_eq(files_in(dir), 2);
    mt_spool_close(sp);
    unlink(path);
    snprintf(path, sizeof path, "%s/keep-me.txt", dir);
    o.sweep = 1;
    unlink(path);
    rmdir(dir);
    o.dir = "/proc/nope/spool";
    ck_assert(mt_spool_open(&o, err, sizeof err) == NULL);
    ck_assert_msg(strstr(err, "/proc/nope/spool") != NULL, "%s", err);
    o.dir = NULL;
    ck_assert(mt_spool_open(&o, err, sizeof err) == NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spool");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_lifecycle);
    tcase_add_test(tc, test_ids_and_paths);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_open_sweeps_leftovers);
    tcase_add_test(tc, test_per_owner_limit);
    tcase_add_test(tc, test_long_name_keeps_extension);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
