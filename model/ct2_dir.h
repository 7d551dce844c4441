/* ct2_dir.h: reading a CTranslate2 model directory's config.json and vocabularies
 * (internal to model/; ct2.c's loader uses it). Errors: -1 with a message in err.
 * Thread-safety: no shared state; a vocabulary is the caller's, read-only once loaded. */
#ifndef MT_CT2_DIR_H
#define MT_CT2_DIR_H

#include <stddef.h>

typedef struct {
    char **tok;
    int n;
    char path[64]; /* the file's name, for messages */
} mt_ct2_vocab;

typedef struct {
    char eos[64], start[64];
    int add_source_eos, add_source_bos, has_start;
} mt_ct2_config;

void mt_ct2_vocab_free(mt_ct2_vocab *v);
/* The id of token s, or -1. */
int mt_ct2_vocab_find(const mt_ct2_vocab *v, const char *s);
/* The source and target vocabularies of dir: shared_vocabulary (*shared = 1, src only), or
 * source_ and target_vocabulary. */
int mt_ct2_vocabs_load(const char *dir, mt_ct2_vocab *src, mt_ct2_vocab *tgt, int *shared, char *err,
                       size_t errlen);
/* dir/config.json (optional: CTranslate2 before 3.0 wrote none) into c. */
int mt_ct2_config_load(const char *dir, mt_ct2_config *c, char *err, size_t errlen);

#endif
