/* free.c: mt_model_free, in a file of its own because both loaders (model.c for MarianMT
 * directories, ct2.c for CTranslate2 ones) free what they built with it: neither calls
 * the other back. */
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"
#include "packed.h"

void mt_model_free(mt_model *m)
{
    if (!m)
        return;
    if (m->arena)
        munmap(m->arena, m->arena_bytes);
    for (int i = 0; i < m->n_packs; i++)
        mt_packed_free(m->packs[i]);
    free(m->packs);
    free(m->bad_ids);
    free(m->enc);
    free(m->dec);
    free(m);
}
