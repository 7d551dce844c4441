/* test_cpus.c: mt_available_cpus: the affinity count capped by the cgroup v2 cpu.max and
 * cgroup v1 CFS quotas, read from fake /proc and /sys trees in a temporary directory. */
#include <check.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "cpus.h"

static char root[PATH_MAX];

/* Writes text to root+path, creating the directories on the way. */
static void put(const char *path, const char *text)
{
    char full[PATH_MAX];
    ck_assert_int_lt(snprintf(full, sizeof full, "%s%s", root, path), (int)sizeof full);
    for (char *p = full + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        ck_assert(mkdir(full, 0700) == 0 || access(full, F_OK) == 0);
        *p = '/';
    }
    FILE *f = fopen(full, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void setup(void)
{
    snprintf(root, sizeof root, "%s/mt-cpus-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

START_TEST(no_cgroup_files_means_affinity)
{
    ck_assert_int_eq(mt_available_cpus_at(root, 6), 6);
    put("/proc/self/cgroup", "0::/\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 6), 6);
}
END_TEST

START_TEST(v2_max_is_unlimited)
{
    put("/proc/self/cgroup", "0::/\n");
    put("/sys/fs/cgroup/cpu.max", "max 100000\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 8), 8);
}
END_TEST

START_TEST(v2_quota_rounds_up)
{
    put("/proc/self/cgroup", "0::/\n");
    put("/sys/fs/cgroup/cpu.max", "150000 100000\n"); /* docker run --cpus 1.5 */
    ck_assert_int_eq(mt_available_cpus_at(root, 8), 2);
    put("/sys/fs/cgroup/cpu.max", "50000 100000\n");  /* half a CPU: still one worker */
    ck_assert_int_eq(mt_available_cpus_at(root, 8), 1);
    put("/sys/fs/cgroup/cpu.max", "400000 100000\n"); /* quota above the affinity */
    ck_assert_int_eq(mt_available_cpus_at(root, 2), 2);
}
END_TEST

START_TEST(v2_ancestor_quota_counts)
{
    put("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
    put("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
    put("/sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n");
    put("/sys/fs/cgroup/kubepods/cpu.max", "1200000 100000\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 16), 3);
}
END_TEST

START_TEST(v1_cfs_quota)
{
    put("/proc/self/cgroup", "5:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/x\n");
    put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
    put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 8), 3);
    put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"); /* no limit */
    ck_assert_int_eq(mt_available_cpus_at(root, 8), 8);
    /* on the host the limit sits at the process's path below the mount */
    put("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "100000\n");
    put("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 8), 1);
}
END_TEST

START_TEST(v1_cpuset_is_not_cpu)
{
    put("/proc/self/cgroup", "5:cpuset:/docker/abc\n");
    put("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "100000\n");
    put("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 4), 4);
}
END_TEST

START_TEST(garbage_imposes_no_limit)
{
    put("/proc/self/cgroup", "nonsense\n0::/\n");
    put("/sys/fs/cgroup/cpu.max", "lots\n");
    ck_assert_int_eq(mt_available_cpus_at(root, 4), 4);
}
END_TEST

START_TEST(real_system_within_affinity)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int n = mt_available_cpus();
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, CPU_COUNT(&set));
    /* a narrower affinity mask is seen (what docker --cpuset-cpus sets) */
    if (CPU_COUNT(&set) > 1) {
        cpu_set_t one;
        CPU_ZERO(&one);
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set)) {
                CPU_SET(i, &one);
                break;
            }
        ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
        ck_assert_int_eq(mt_available_cpus(), 1);
        ck_assert_int_eq(sched_setaffinity(0, sizeof set, &set), 0);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpus");
    TCase *tc = tcase_create("quota");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, no_cgroup_files_means_affinity);
    tcase_add_test(tc, v2_max_is_unlimited);
    tcase_add_test(tc, v2_quota_rounds_up);
    tcase_add_test(tc, v2_ancestor_quota_counts);
    tcase_add_test(tc, v1_cfs_quota);
    tcase_add_test(tc, v1_cpuset_is_not_cpu);
    tcase_add_test(tc, garbage_imposes_no_limit);
    tcase_add_test(tc, real_system_within_affinity);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
