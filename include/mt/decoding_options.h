/* decoding_options.h: the one list of decoding options. Each row is written once here and
 * expanded twice: into the translation service's option table (translator/options.c: the
 * JSON field of both request forms, the mt-translate flag, type and range, whether it
 * separates batches and cached sentences) and, for the rows marked CFG, into mt-server's
 * [decoding] settings (config/config.c: file key, flag, MT_ variable, --help, range
 * check), whose values become the service's defaults. Adding an option is one row here
 * and the code that uses its value (an mt_search_options field of the same name).
 *
 * A row: X(ID, name, flag, alias, arg, type, min, max, min_open, where, batch_key,
 *          cache_key, cfg, help)
 *   ID        MT_OPT_<ID>; the environment variable of a CFG row is MT_<ID>
 *   name      the JSON field, the [decoding] key and the mt_search_options field
 *   flag      the mt-translate / mt-server flag, alias an older spelling (or NULL)
 *   arg       the flag's argument in --help ("N"), NULL for a boolean
 *   type      INT, FLOAT, U64 or BOOL (MT_OPT_<type>)
 *   min, max  the range, max inclusive; min excluded when min_open is 1
 *   where     MT_OPT_NATIVE | MT_OPT_LIBRE | MT_OPT_CLI: where a request may set it
 *   batch_key 1: sentences that differ in it never share a batch
 *   cache_key 1: part of the sentence cache's key (others make a job uncached)
 *   cfg       CFG: an mt-server [decoding] default too; NOCFG: per request only
 *   help      one line for --help
 *
 * Header only: constant data for both sides, no code. */
#ifndef MT_DECODING_OPTIONS_H
#define MT_DECODING_OPTIONS_H

typedef enum { MT_OPT_INT, MT_OPT_FLOAT, MT_OPT_U64, MT_OPT_BOOL } mt_option_type;

/* Where a request may give an option (the `where` column). */
enum {
    MT_OPT_NATIVE = 1, /* a native POST /translate body ("text") */
    MT_OPT_LIBRE = 2,  /* a LibreTranslate body ("q") */
    MT_OPT_CLI = 4,    /* an mt-translate flag */
};
#define MT_OPT_ALL_FORMS (MT_OPT_NATIVE | MT_OPT_LIBRE | MT_OPT_CLI)
#define MT_OPT_NATIVE_CLI (MT_OPT_NATIVE | MT_OPT_CLI)

/* Below 1e-6 (sampling_temperature) the scaled logits of a real model overflow to infinity
 * and the search ends at once with an empty translation. */
#define MT_DECODING_OPTIONS(X)                                                                                      \
    X(BEAM_SIZE, beam_size, "--beam-size", "--beam", "N", INT, 1, 256, 0, MT_OPT_NATIVE_CLI, 1, 1, CFG,             \
      "beam size (default: the model's num_beams, else 4; 1 = greedy)")                                             \
    X(N_BEST, n_best, "--n-best", NULL, "N", INT, 1, 256, 0, MT_OPT_NATIVE_CLI, 1, 1, NOCFG,                        \
      "hypotheses per text, best first (at most the beam size)")                                                    \
    X(LENGTH_PENALTY, length_penalty, "--length-penalty", NULL, "A", FLOAT, 0, 10, 0, MT_OPT_NATIVE_CLI, 1, 1, CFG, \
      "score = sum(log p) / length^A (default: the model's, else 1.0)")                                             \
    X(MAX_LENGTH, max_length, "--max-length", NULL, "N", INT, 1, 1000000, 0, MT_OPT_NATIVE_CLI, 1, 1, CFG,          \
      "at most N decoding steps, eos included (default: the model's, else 256)")                                    \
    X(MAX_LENGTH_FACTOR, max_length_factor, "--max-length-factor", NULL, "F", FLOAT, 0, 1000, 0, MT_OPT_CLI, 1, 1,  \
      NOCFG, "also at most F * source length + 10 steps (default 0: off)")                                          \
    X(SAMPLING_TOPK, sampling_topk, "--sampling-topk", NULL, "K", INT, 0, 1000000, 0, MT_OPT_ALL_FORMS, 1, 0, CFG,  \
      "sample from the K most likely (0: all; default 1: no sampling; sampling without a beam size uses beam 1)")    \
    X(SAMPLING_TOPP, sampling_topp, "--sampling-topp", NULL, "P", FLOAT, 0, 1, 1, MT_OPT_ALL_FORMS, 1, 0, CFG,      \
      "sample from the smallest set of mass >= P (default 1: all)")                                                 \
    X(SAMPLING_TEMPERATURE, sampling_temperature, "--sampling-temperature", NULL, "T", FLOAT, 1e-6, 1000, 0,        \
      MT_OPT_ALL_FORMS, 1, 0, CFG, "divide logits by T before sampling (default 1)")                                \
    X(SEED, seed, "--seed", NULL, "N", U64, 0, 9007199254740991.0, 0, MT_OPT_ALL_FORMS, 1, 0, CFG,                  \
      "sampling seed (default 0): same seed and input, same output")                                                \
    X(NO_REPEAT_NGRAM_SIZE, no_repeat_ngram_size, "--no-repeat-ngram-size", NULL, "N", INT, 0, 1000, 0,             \
      MT_OPT_ALL_FORMS, 1, 1, CFG, "no n-gram of size N occurs twice (default 0: off)")                             \
    X(REPETITION_PENALTY, repetition_penalty, "--repetition-penalty", NULL, "R", FLOAT, 1, 1000, 0,                 \
      MT_OPT_ALL_FORMS, 1, 1, CFG, "penalise generated tokens (default 1: off)")                                    \
    X(MIN_LENGTH, min_length, "--min-length", NULL, "N", INT, 0, 1000000, 0, MT_OPT_ALL_FORMS, 1, 1, CFG,           \
      "no end of sentence before N tokens (default 0)")                                                             \
    X(RETURN_SCORES, return_scores, "--return-scores", NULL, NULL, BOOL, 0, 1, 0, MT_OPT_ALL_FORMS, 1, 0, NOCFG,    \
      "per-token log-probabilities (with --output json)")                                                           \
    X(RETURN_ALIGNMENTS, return_alignments, "--return-alignments", NULL, NULL, BOOL, 0, 1, 0, MT_OPT_ALL_FORMS, 1,  \
      0, NOCFG, "word and token alignments (with --output json)")                                                   \
    X(ALIGNMENT_LAYER, alignment_layer, "--alignment-layer", NULL, "N", INT, -1000, 999, 0, MT_OPT_ALL_FORMS, 1, 0, \
      NOCFG, "decoder layer that aligns, < 0 from the end (default -1)")                                            \
    X(REPLACE_UNKNOWNS, replace_unknowns, "--replace-unknowns", NULL, NULL, BOOL, 0, 1, 0, MT_OPT_ALL_FORMS, 1, 0,  \
      CFG, "an <unk> in the output becomes its aligned source token")

typedef enum {
#define MT_OPT_ID_(ID, ...) MT_OPT_##ID,
    MT_DECODING_OPTIONS(MT_OPT_ID_)
#undef MT_OPT_ID_
    MT_OPT_COUNT
} mt_option_id;

#endif
