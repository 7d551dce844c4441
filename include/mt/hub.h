/* hub.h (component hub/): installs MarianMT (OPUS-MT) models from a Hugging Face hub (or
 * a mirror, or a local stand-in) into a models directory, and lists and removes them.
 *
 * Protocol: GET {endpoint}/api/models?author=...&search=... (search),
 * GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true (the files, their sizes and
 * LFS sha256 digests, the commit), GET {endpoint}/{repo}/resolve/{commit}/{file} (the
 * bytes; redirects followed, Range used to resume a cut transfer). Every file's size and
 * every LFS file's sha256 is checked; config.json is checked to be MarianMT before any
 * weights are fetched; pytorch_model.bin is converted to model.safetensors without
 * PyTorch (torchzip.h); the model appears in the models directory by one rename of a
 * finished temporary directory, so a failed or interrupted install leaves nothing.
 *
 * The library reads no environment: the caller passes the endpoint, token and directories.
 * Thread-safety: calls share nothing but what the caller passes; mh_options is read-only.
 * Returns: MT_OK (0) or a negative mt_status with a message in err. */
#ifndef MT_HUB_H
#define MT_HUB_H

#include <signal.h>
#include <stdio.h>

typedef struct {
    const char *endpoint;       /* hub base URL, default "https://huggingface.co" */
    const char *token;          /* bearer token or NULL; never written to any message or log */
    int offline;                /* 1: no network at all (install reports what is installed) */
    const char *models_dir;     /* installed models live in models_dir/NAME (required) */
    long connect_timeout_s;     /* connecting (DNS included), default 20 */
    long stall_timeout_s;       /* a transfer slower than 1 byte/s this long is cut, default 60 */
    int retries;                /* resumed attempts after a cut transfer or 5xx, default 4 */
    FILE *progress;             /* progress bars go here (a terminal), or NULL for none */
    FILE *log;                  /* one line per step, or NULL */
    volatile sig_atomic_t *cancel; /* when it becomes non-zero the install stops and cleans up */
    const char *argos_index;    /* argos-translate's package index (index.json URL) for
                                 * "argos:FROM-TO", default argospm-index's on GitHub */
} mh_options;

void mh_options_default(mh_options *o);

/* Prints OPUS-MT repositories matching query (NULL: all), one per line: id, language
 * pair, downloads. At most limit of them. */
int mh_search(const mh_options *o, const char *query, int limit, FILE *out, char *err, size_t errlen);

/* Installs repo at revision (NULL: "main") into dest (NULL: models_dir/NAME, NAME the
 * repository's last component); int8: store the matrices as int8 with per-row scales.
 * The directory installed is written into installed[installed_len]. */
int mh_install(const mh_options *o, const char *repo, const char *revision, const char *dest, int int8,
               char *installed, size_t installed_len, char *err, size_t errlen);

/* 1 when source names an argos-translate package: "argos:FROM-TO" (an entry of the
 * package index: its first link, its sha256 checked when the entry has one), an http(s)
 * URL, a FILE.argosmodel, or a directory with metadata.json (an unpacked package). */
int mh_is_argos_source(const char *source);

/* Installs an argos-translate package (LibreTranslate's models: a CTranslate2 model with
 * a SentencePiece model, its language pair in metadata.json's from_code / to_code) into
 * dest (NULL: models_dir/argos-FROM-TO) as a directory the engine loads: the CTranslate2
 * files, source.spm / target.spm, vocab.json and tokenizer_config.json. source: as
 * mh_is_argos_source takes it (a URL is downloaded, resumed when cut). Atomic as
 * mh_install. The directory installed is written into installed[installed_len]. */
int mh_install_argos(const mh_options *o, const char *source, const char *dest, char *installed,
                     size_t installed_len, char *err, size_t errlen);

/* Prints the installed models: name, language pair, size, stored type, repository. */
int mh_list(const mh_options *o, FILE *out, char *err, size_t errlen);

/* Removes models_dir/name (a model directory; atomically: renamed away, then deleted). */
int mh_remove(const mh_options *o, const char *name, char *err, size_t errlen);

/* Writes dir/model.safetensors from dir/pytorch_model.bin (which is then removed) and,
 * with int8, stores the matrices as int8 (an existing model.safetensors is rewritten).
 * config.json must be MarianMT and the tensors must be those of its layers. */
int mh_convert_dir(const char *dir, int int8, FILE *log, char *err, size_t errlen);

#endif
