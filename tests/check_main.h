/* check_main.h: the one way a Check program in tests/ runs its suite and picks its exit
 * status. A runner that executed zero checks has failed: CK_RUN_SUITE / CK_RUN_CASE
 * naming nothing (a typo, a renamed case) must not pass silently.
 *
 * Thread-safety: call once, from main(). */
#ifndef MT_CHECK_MAIN_H
#define MT_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs every selected check of sr, frees sr; EXIT_SUCCESS only when at least one check
 * ran and none failed. */
static inline int mt_check_run(SRunner *sr)
{
    srunner_run_all(sr, CK_NORMAL);
    int ran = srunner_ntests_run(sr);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (ran == 0) {
        const char *s = getenv("CK_RUN_SUITE"), *c = getenv("CK_RUN_CASE");
        fprintf(stderr, "no check ran (CK_RUN_SUITE=%s CK_RUN_CASE=%s): failing\n",
                s ? s : "(unset)", c ? c : "(unset)");
        return EXIT_FAILURE;
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
