/* test_spool.c: the translated-file spool: begin / progress / finish / lookup, ids that
 * cannot name anything else, sanitised download names, limits, expiry on a fake clock,
 * leftovers of an earlier run removed, close removes the files. */
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
    FILE *f = fopen(e.path, "rb");
    char buf[16] = "";
    ck_assert(f != NULL);
    ck_assert_uint_eq(fread(buf, 1, sizeof buf, f), 5);
    fclose(f);
    ck_assert_str_eq(buf, "hello");
    struct stat st;
    ck_assert_int_eq(stat(e.path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    /* A finished job cannot be finished again or failed. */
    ck_assert_int_eq(mt_spool_finish(sp, id, "x", 1, err, sizeof err), -1);
    ck_assert_int_eq(mt_spool_fail(sp, id, "late"), -1);

    /* Expiry: still there at ttl, gone after. */
    fake_now += 60;
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), 0);
    fake_now += 1;
    ck_assert_int_eq(mt_spool_lookup(sp, id, &e), -1);
    ck_assert_int_eq(files_in(dir), 0);
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
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
