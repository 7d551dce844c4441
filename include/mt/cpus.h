/* cpus.h: how many CPUs this process may really use, for "one worker per CPU"
 * (workers.count = 0 / MT_WORKERS=0). In a container sysconf(_SC_NPROCESSORS_ONLN)
 * counts the host's CPUs; the process is limited by its CPU affinity (docker --cpuset-cpus,
 * Kubernetes static CPU manager) and by the CFS bandwidth quota of its cgroup
 * (docker --cpus, Kubernetes resources.limits.cpu).
 *
 * Thread-safety: both calls only read files and the calling thread's affinity; safe from
 * any thread. No errors: what cannot be read imposes no limit.
 */
#ifndef MT_CPUS_H
#define MT_CPUS_H

/* CPUs in this thread's affinity mask, capped by the cgroup v2 cpu.max (or cgroup v1
 * cpu.cfs_quota_us / cpu.cfs_period_us) quota of this process's cgroup and its
 * ancestors, a fractional quota rounded up; at least 1. */
int mt_available_cpus(void);

/* The same with every path prefixed by root ("" or "/" for the real system: root
 * "/tmp/x" reads /tmp/x/proc/self/cgroup and /tmp/x/sys/fs/cgroup/...) and the given
 * affinity count (affinity <= 0: this thread's sched_getaffinity). For tests. */
int mt_available_cpus_at(const char *root, int affinity);

#endif
