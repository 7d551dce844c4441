/* cpus.c: CPUs available to this process: affinity mask capped by the cgroup CPU quota.
 * See cpus.h. */
#include "cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads at most size-1 bytes of root+path into buf; 0 on success, -1 otherwise. */
static int read_file(const char *root, const char *path, char *buf, size_t size)
{
    char full[PATH_MAX];
    if (snprintf(full, sizeof full, "%s%s", root, path) >= (int)sizeof full) return -1;
    FILE *f = fopen(full, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 0;
}

/* CPUs a quota of quota microseconds per period allows, rounded up (ceil(1.5) = 2: a
 * worker that gets half a CPU is still worth having); INT_MAX for no limit. */
static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0) return INT_MAX;
    long long n = (quota + period - 1) / period;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* cgroup v2: the smallest cpu.max limit of the cgroup dir (relative to the cgroup2 mount)
 * and of each ancestor; INT_MAX when none is set. cpu.max is "max PERIOD" or
 * "QUOTA PERIOD". */
static int v2_limit(const char *root, const char *dir)
{
    char path[PATH_MAX], buf[128];
    int best = INT_MAX;
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return best;
    for (;;) {
        char file[PATH_MAX + 32];
        size_t len = strlen(path);
        snprintf(file, sizeof file, "/sys/fs/cgroup%s%scpu.max", path,
                 len && path[len - 1] == '/' ? "" : "/");
        long long quota, period;
        if (read_file(root, file, buf, sizeof buf) == 0 &&
            sscanf(buf, "%lld %lld", &quota, &period) == 2) {
            int n = quota_cpus(quota, period);
            if (n < best) best = n;
        }
        char *slash = strrchr(path, '/');
        if (!slash || (slash == path && path[1] == '\0')) break;
        if (slash == path) path[1] = '\0'; /* "/a" -> "/" */
        else *slash = '\0';
    }
    return best;
}

/* cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us under the cpu controller's mount, at
 * the mount root (what a container sees) and at the process's cgroup path below it (what
 * a process on the host sees); INT_MAX when neither is set. */
static int v1_limit(const char *root, const char *dir)
{
    static const char *const mounts[] = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"};
    int best = INT_MAX;
    for (size_t m = 0; m < sizeof mounts / sizeof mounts[0]; m++) {
        const char *subs[] = {"", dir};
        for (int s = 0; s < 2; s++) {
            if (!subs[s] || (s == 1 && strcmp(dir, "/") == 0)) continue;
            char qf[PATH_MAX], pf[PATH_MAX], buf[64];
            snprintf(qf, sizeof qf, "%s%s/cpu.cfs_quota_us", mounts[m], subs[s]);
            snprintf(pf, sizeof pf, "%s%s/cpu.cfs_period_us", mounts[m], subs[s]);
            long long quota, period;
            if (read_file(root, qf, buf, sizeof buf) != 0 || sscanf(buf, "%lld", &quota) != 1)
                continue;
            if (read_file(root, pf, buf, sizeof buf) != 0 || sscanf(buf, "%lld", &period) != 1)
                continue;
            int n = quota_cpus(quota, period);
            if (n < best) best = n;
        }
    }
    return best;
}

/* The quota cap from /proc/self/cgroup: "0::PATH" is cgroup v2, "N:...cpu...:PATH" v1. */
static int cgroup_limit(const char *root)
{
    char buf[4096];
    int best = INT_MAX;
    if (read_file(root, "/proc/self/cgroup", buf, sizeof buf) != 0) return best;
    for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        const char *controllers = c1 + 1, *dir = c2 + 1;
        int n = INT_MAX;
        if (strncmp(line, "0:", 2) == 0 && controllers[0] == '\0') {
            n = v2_limit(root, dir);
        } else {
            /* "cpu" as a whole word of the comma-separated list ("cpu,cpuacct"), not "cpuset" */
            for (const char *p = controllers; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                if (strncmp(p, "cpu", 3) == 0 && (p[3] == ',' || p[3] == '\0')) {
                    n = v1_limit(root, dir);
                    break;
                }
        }
        if (n < best) best = n;
    }
    return best;
}

int mt_available_cpus_at(const char *root, int affinity)
{
    if (!root || strcmp(root, "/") == 0) root = "";
    int cpus = affinity;
    if (cpus <= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
        if (cpus <= 0) {
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            cpus = n > 0 && n < INT_MAX ? (int)n : 1;
        }
    }
    int limit = cgroup_limit(root);
    if (limit < cpus) cpus = limit;
    return cpus > 0 ? cpus : 1;
}

int mt_available_cpus(void)
{
    return mt_available_cpus_at("", 0);
}
