/* argos.c: installs an argos-translate package (LibreTranslate's models) as a model
 * directory the engine loads: the package's CTranslate2 model (model/), its SentencePiece
 * model as source.spm and target.spm, and what the tokenizer reads beside them
 * (vocab.json from the CTranslate2 vocabulary, tokenizer_config.json with the package's
 * from_code / to_code). The package comes as a .argosmodel zip (a file or a URL) or as an
 * unpacked package directory (~/.local/share/argos-translate/packages/NAME), which the
 * engine also loads in place: the files are found, the vocabularies and tokens read by
 * ct2_layout.c (include/mt/ct2_layout.h), the same reading as the engine's, so an installed
 * package and the same package loaded in place translate alike.
 *
 * From a zip only the entries a package defines are read: ROOT/metadata.json,
 * ROOT/sentencepiece.model and the plain files of ROOT/model/ (ROOT the one folder that
 * holds metadata.json); anything else (stanza/, README, ...) is left in the zip. Names are
 * checked, so an entry cannot write outside the temporary directory. The install is
 * atomic as mh_install's is: a temporary directory renamed into place. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zip.h>

#include "ct2_layout.h"
#include "hub.h"
#include "hub_internal.h"
#include "sha256.h"
#include "status.h"

#define ARGOS_INDEX "https://raw.githubusercontent.com/argosopentech/argospm-index/main/index.json"

enum { ARGOS_MAX_FILE = 1 << 30 }; /* 1 GiB: no package file comes near it */

static int plain_name(const char *s)
{
    return *s && !strchr(s, '/') && !strchr(s, '\\') && strcmp(s, ".") && strcmp(s, "..") && s[0] != '.';
}

static int copy_stream(FILE *in, const char *to, const char *label, char *err, size_t errlen)
{
    FILE *out = fopen(to, "wb");
    if (!out)
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", to, strerror(errno));
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            break;
    int bad_in = ferror(in), bad_out = ferror(out);
    if (fclose(out) || bad_out)
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s", to, strerror(errno));
    if (bad_in)
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot read %s", label);
    return 0;
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot read %s: %s", from, strerror(errno));
    int rc = copy_stream(in, to, from, err, errlen);
    fclose(in);
    return rc;
}

/* Writes zip entry idx to path (at most ARGOS_MAX_FILE bytes). */
static int extract(zip_t *z, zip_int64_t idx, const char *name, const char *path, char *err, size_t errlen)
{
    zip_stat_t zs;
    if (zip_stat_index(z, (zip_uint64_t)idx, 0, &zs) || !(zs.valid & ZIP_STAT_SIZE))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: cannot read its size in the zip", name);
    if (zs.size > ARGOS_MAX_FILE)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %llu bytes, more than a package file may have", name,
                        (unsigned long long)zs.size);
    zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)idx, 0);
    if (!f)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", name, zip_strerror(z));
    FILE *out = fopen(path, "wb");
    if (!out) {
        zip_fclose(f);
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", path, strerror(errno));
    }
    char buf[1 << 16];
    zip_int64_t got;
    zip_uint64_t total = 0;
    int rc = 0;
    while ((got = zip_fread(f, buf, sizeof buf)) > 0) {
        total += (zip_uint64_t)got;
        if (total > zs.size || fwrite(buf, 1, (size_t)got, out) != (size_t)got) {
            rc = mt_error(MT_ERR_INVALID, err, errlen, total > zs.size ? "%s: more bytes than the zip lists"
                          : "cannot write %s", total > zs.size ? name : path);
            break;
        }
    }
    if (!rc && (got < 0 || total != zs.size))
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: damaged in the zip (%s)", name,
                      got < 0 ? zip_file_strerror(f) : "short");
    zip_fclose(f);
    if (fclose(out) && !rc)
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s", path, strerror(errno));
    return rc;
}

/* The package's files out of a .argosmodel into tmp. */
static int unpack_zip(const char *file, const char *tmp, char *err, size_t errlen)
{
    int zerr;
    zip_t *z = zip_open(file, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        int rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: not a readable .argosmodel (zip): %s", file,
                          zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return rc;
    }
    zip_int64_t n = zip_get_num_entries(z, 0);
    char root[512] = "";
    int found = 0;
    for (zip_int64_t k = 0; k < n; k++) { /* ROOT: where metadata.json is, at most one level down */
        const char *name = zip_get_name(z, (zip_uint64_t)k, 0);
        if (!name)
            continue;
        const char *slash = strchr(name, '/');
        if (!strcmp(name, "metadata.json") || (slash && !strcmp(slash + 1, "metadata.json"))) {
            if (found++) {
                zip_discard(z);
                return mt_error(MT_ERR_INVALID, err, errlen, "%s: more than one metadata.json", file);
            }
            snprintf(root, sizeof root, "%.*s", slash ? (int)(slash - name + 1) : 0, name);
        }
    }
    if (!found) {
        zip_discard(z);
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: no metadata.json (not an argos-translate package)", file);
    }
    size_t rl = strlen(root);
    int rc = 0;
    char path[4400];
    for (zip_int64_t k = 0; k < n && !rc; k++) {
        const char *name = zip_get_name(z, (zip_uint64_t)k, 0);
        if (!name || strncmp(name, root, rl))
            continue;
        const char *rest = name + rl, *file_name = NULL;
        if (!strcmp(rest, "metadata.json") || !strcmp(rest, "sentencepiece.model"))
            file_name = rest;
        else if (!strncmp(rest, "model/", 6) && plain_name(rest + 6))
            file_name = rest + 6;
        if (!file_name)
            continue;
        if (!strcmp(file_name, "metadata.json") && rest != file_name)
            continue; /* model/metadata.json is not the package's */
        rc = extract(z, k, name, mt_strfmt(path, sizeof path, "%s/%s", tmp, file_name), err, errlen);
    }
    zip_discard(z);
    return rc;
}

/* The same files out of an unpacked package directory (or from a bare CTranslate2
 * directory's parent layout: DIR/model/ and DIR/metadata.json). */
static int copy_package_dir(const char *dir, const char *tmp, char *err, size_t errlen)
{
    char from[4400], to[4400];
    static const char *const top[] = {"metadata.json", "sentencepiece.model"};
    for (int i = 0; i < 2; i++) {
        mt_strfmt(from, sizeof from, "%s/%s", dir, top[i]);
        if (access(from, F_OK))
            continue;
        if (copy_file(from, mt_strfmt(to, sizeof to, "%s/%s", tmp, top[i]), err, errlen))
            return -1;
    }
    DIR *d = opendir(mt_strfmt(from, sizeof from, "%s/model", dir));
    if (!d)
        return mt_error(MT_ERR_INVALID, err, errlen, "%s has no model/ directory (not an argos-translate package)",
                        dir);
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        struct stat sb;
        mt_strfmt(from, sizeof from, "%s/model/%s", dir, e->d_name);
        if (!plain_name(e->d_name) || stat(from, &sb) || !S_ISREG(sb.st_mode))
            continue;
        rc = copy_file(from, mt_strfmt(to, sizeof to, "%s/%s", tmp, e->d_name), err, errlen);
    }
    closedir(d);
    return rc;
}

/* A CTranslate2 vocabulary as the tokenizer's piece -> id object, written to tmp/out_name:
 * the first id of a piece listed twice, as CTranslate2 maps it (and as the tokenizer maps a
 * package loaded in place). */
static int write_vocab(const char *tmp, const mt_ct2_vocab *v, const char *out_name, char *err, size_t errlen)
{
    char path[4400];
    json_t *obj = json_object();
    for (int i = 0; obj && i < v->n; i++)
        if (!json_object_get(obj, v->tok[i]) && json_object_set_new(obj, v->tok[i], json_integer(i))) {
            json_decref(obj);
            obj = NULL;
        }
    int rc = 0;
    if (!obj || json_dump_file(obj, mt_strfmt(path, sizeof path, "%s/%s", tmp, out_name), JSON_COMPACT))
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s/%s: %s", tmp, out_name, strerror(errno));
    json_decref(obj);
    return rc;
}

/* Copies the SentencePiece model the layout chose to tmp/name, unless it is that file. */
static int place_spm(const char *tmp, const char *spm, const char *name, char *err, size_t errlen)
{
    char path[4400];
    mt_strfmt(path, sizeof path, "%s/%s", tmp, name);
    return strcmp(spm, path) ? copy_file(spm, path, err, errlen) : 0;
}

/* Turns the package's files in tmp into the model directory layout: the files found as
 * the engine finds them in a package loaded in place (ct2_layout.h), written as a Marian
 * directory's tokenizer files. *meta gets metadata.json (the caller frees it), from / to
 * the pair. */
static int adapt(const char *tmp, json_t **meta, char *from, char *to, char *err, size_t errlen)
{
    char path[4400];
    json_error_t je;
    *meta = json_load_file(mt_strfmt(path, sizeof path, "%s/metadata.json", tmp), 0, &je);
    if (!*meta)
        return mt_error(MT_ERR_INVALID, err, errlen, "metadata.json: %s", access(path, F_OK) ? "missing (not an "
                        "argos-translate package)" : je.text);
    mt_ct2_layout l;
    if (mt_ct2_layout_find(tmp, &l, err, errlen))
        return -1;
    memcpy(from, l.from, sizeof l.from);
    memcpy(to, l.to, sizeof l.to);
    if (access(mt_strfmt(path, sizeof path, "%s/config.json", tmp), F_OK)) {
        /* CTranslate2 before 3.0 wrote none: its defaults then, said out loud (and the
         * file marks the directory as a model for mt-models list and remove) */
        json_t *d = json_pack("{s:b,s:b,s:s,s:s,s:s,s:s}", "add_source_bos", 0, "add_source_eos", 0, "bos_token",
                              "<s>", "decoder_start_token", "<s>", "eos_token", "</s>", "unk_token", "<unk>");
        int bad = !d || json_dump_file(d, path, JSON_INDENT(2));
        json_decref(d);
        if (bad)
            return mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s", path, strerror(errno));
    }
    /* one SentencePiece model for both sides, unless the model directory brings its own */
    if (place_spm(tmp, l.source_spm, "source.spm", err, errlen) ||
        place_spm(tmp, l.target_spm, "target.spm", err, errlen))
        return -1;
    unlink(mt_strfmt(path, sizeof path, "%s/sentencepiece.model", tmp));
    mt_ct2_vocab src, tgt;
    mt_ct2_tokens tokens;
    int shared;
    if (mt_ct2_tokens_load(tmp, &tokens, err, errlen) || mt_ct2_vocabs_load(tmp, &src, &tgt, &shared, err, errlen))
        return -1;
    int rc = write_vocab(tmp, &src, "vocab.json", err, errlen) ||
             (!shared && write_vocab(tmp, &tgt, "target_vocab.json", err, errlen)) ? -1 : 0;
    mt_ct2_vocab_free(&src);
    mt_ct2_vocab_free(&tgt);
    if (rc)
        return -1;
    json_t *tc = json_pack("{s:s,s:s,s:b,s:s,s:s,s:s,s:s}", "source_lang", from, "target_lang", to,
                           "separate_vocabs", !shared, "eos_token", tokens.eos, "unk_token", tokens.unk,
                           "pad_token", "<pad>", "tokenizer_class", "MarianTokenizer");
    rc = tc && !json_dump_file(tc, mt_strfmt(path, sizeof path, "%s/tokenizer_config.json", tmp), JSON_INDENT(2))
             ? 0 : mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s", path, strerror(errno));
    json_decref(tc);
    return rc;
}

/* "FROM-TO" (or FROM_TO) looked up in the package index: the first http(s) link of the
 * entry translating from -> to into link, its sha256 (if the entry gives one) into sha. */
static int resolve_index(const mh_options *o, const char *code, char *link, size_t link_len, char *sha, char *err,
                         size_t errlen)
{
    char from[32], to[32];
    size_t cut = strcspn(code, "-_");
    if (!code[cut] || cut == 0 || cut >= sizeof from || strlen(code + cut + 1) >= sizeof to || !code[cut + 1])
        return mt_error(MT_ERR_INVALID, err, errlen, "'argos:%s': give the pair as argos:FROM-TO (argos:en-de)", code);
    snprintf(from, sizeof from, "%.*s", (int)cut, code);
    snprintf(to, sizeof to, "%s", code + cut + 1);
    const char *url = o->argos_index && *o->argos_index ? o->argos_index : ARGOS_INDEX;
    if (o->log)
        fprintf(o->log, "reading the argos-translate package index %s\n", url);
    json_t *index = mh_get_json_url(o, url, "the argos-translate package index", err, errlen);
    if (!index)
        return -1;
    int rc = -1;
    char pairs[400] = "";
    size_t i, used = 0;
    json_t *e;
    json_array_foreach(index, i, e) {
        const char *f = json_string_value(json_object_get(e, "from_code"));
        const char *t = json_string_value(json_object_get(e, "to_code"));
        if (!f || !t)
            continue;
        if (used < sizeof pairs - 40)
            used += (size_t)snprintf(pairs + used, sizeof pairs - used, "%s%s-%s", used ? ", " : "", f, t);
        if (rc == 0 || strcasecmp(f, from) || strcasecmp(t, to))
            continue;
        size_t k;
        json_t *l;
        json_array_foreach(json_object_get(e, "links"), k, l) {
            const char *s = json_string_value(l);
            if (s && (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) && strlen(s) < link_len) {
                snprintf(link, link_len, "%s", s);
                rc = 0;
                break;
            }
        }
        const char *digest = json_string_value(json_object_get(e, "sha256"));
        if (!digest)
            digest = json_string_value(json_object_get(e, "checksum"));
        if (rc == 0 && digest) {
            if (strlen(digest) != 64 || strspn(digest, "0123456789abcdefABCDEF") != 64) {
                rc = mt_error(MT_ERR_INVALID, err, errlen, "the package index's checksum of %s-%s is not a sha256 "
                              "(64 hex digits)", from, to);
                break;
            }
            snprintf(sha, 65, "%s", digest);
        }
    }
    if (!json_is_array(index))
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: the package index is not a JSON list", url);
    else if (rc && !err[0])
        mt_error(MT_ERR_INVALID, err, errlen, "the argos-translate package index has no package %s -> %s%s%s", from,
                 to, used ? "; it has " : "", pairs);
    json_decref(index);
    return rc;
}

/* A message of ct2_layout.c names the files as they lie in the temporary directory
 * ("TMP/metadata.json: ...", "TMP: the package has no ..."): the user knows the package. */
static void name_source(char *err, size_t errlen, const char *tmp, const char *source)
{
    size_t n = strlen(tmp);
    if (!err || strncmp(err, tmp, n) || (err[n] != '/' && err[n] != ':'))
        return;
    char rest[1024];
    snprintf(rest, sizeof rest, "%s", err + n + (err[n] == '/'));
    snprintf(err, errlen, "%s%s%s", source, err[n] == '/' ? ": " : "", rest);
}

int mh_is_argos_source(const char *s)
{
    size_t n = strlen(s);
    struct stat sb;
    char p[4400];
    if (!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) || !strncmp(s, "argos:", 6))
        return 1;
    if (n > 11 && !strcmp(s + n - 11, ".argosmodel"))
        return 1;
    return !stat(s, &sb) && S_ISDIR(sb.st_mode) && !access(mt_strfmt(p, sizeof p, "%s/metadata.json", s), F_OK);
}

int mh_install_argos(const mh_options *o, const char *source, const char *dest, char *installed,
                     size_t installed_len, char *err, size_t errlen)
{
    if (!o->models_dir && !dest)
        return mt_error(MT_ERR_INVALID, err, errlen, "no models directory");
    const char *models = o->models_dir ? o->models_dir : ".";
    int is_index = !strncmp(source, "argos:", 6), is_url = is_index || strstr(source, "://") != NULL;
    if (is_url && o->offline)
        return mt_error(MT_ERR_INVALID, err, errlen, "HF_HUB_OFFLINE is set: not downloading %s", source);
    struct stat sb;
    if (!is_url && stat(source, &sb))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", source, strerror(errno));
    char parent[4096], tmp[4400], zip_tmp[4400] = "", target[4400];
    if (dest) {
        snprintf(parent, sizeof parent, "%s", dest);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
            *slash = 0;
        else
            snprintf(parent, sizeof parent, "%s", slash ? "/" : ".");
    } else {
        snprintf(parent, sizeof parent, "%s", models);
    }
    if (mh_mkdirs(parent))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", parent, strerror(errno));
    mh_sweep_stale(parent);
    mt_strfmt(tmp, sizeof tmp, "%s/.install-argos.%ld", parent, (long)getpid());
    mh_remove_tree(tmp);
    if (mkdir(tmp, 0755))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    json_t *meta = NULL;
    char from[16] = "", to[16] = "";
    int rc = 0;
    const char *zip_file = source;
    if (is_url) {
        char link[2048], sha[65] = "", hex[65];
        const char *url = source;
        err[0] = 0;
        if (is_index && (rc = resolve_index(o, source + 6, link, sizeof link, sha, err, errlen)))
            goto done;
        if (is_index)
            url = link;
        mt_strfmt(zip_tmp, sizeof zip_tmp, "%s/.install-argos-zip.%ld", parent, (long)getpid());
        unlink(zip_tmp);
        const char *base = strrchr(url, '/') + 1;
        if (o->log)
            fprintf(o->log, "downloading %s\n", url);
        if ((rc = mh_download_url(o, url, zip_tmp, *base ? base : url, err, errlen)))
            goto done;
        if (sha[0] && (mh_sha256_file(zip_tmp, hex) || strcasecmp(hex, sha))) {
            rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: sha256 %s, the package index lists %s: the download is "
                          "corrupt or was altered", base, hex, sha);
            goto done;
        }
        zip_file = zip_tmp;
    }
    if (!is_url && S_ISDIR(sb.st_mode))
        rc = copy_package_dir(source, tmp, err, errlen);
    else
        rc = unpack_zip(zip_file, tmp, err, errlen);
    if (rc || (rc = adapt(tmp, &meta, from, to, err, errlen))) {
        name_source(err, errlen, tmp, source);
        goto done;
    }
    if (dest)
        snprintf(target, sizeof target, "%s", dest);
    else
        mt_strfmt(target, sizeof target, "%s/argos-%s-%s", models, from, to);
    if (installed)
        snprintf(installed, installed_len, "%s", target);
    const char *version = json_string_value(json_object_get(meta, "package_version"));
    json_t *man = json_pack("{s:s,s:s,s:s,s:I}", "repo", is_url ? source : "argos-translate package file",
                            "argos_package", version ? version : "?", "stored", "as published",
                            "installed_unix", (json_int_t)time(NULL));
    char path[4400];
    if (!man || json_dump_file(man, mt_strfmt(path, sizeof path, "%s/.mt-install.json", tmp), JSON_INDENT(2))) {
        json_decref(man);
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    json_decref(man);
    if (o->cancel && *o->cancel) {
        rc = mt_error(MT_ERR_CANCELLED, err, errlen, "interrupted");
        goto done;
    }
    if (!stat(target, &sb)) {
        if (o->log)
            fprintf(o->log, "%s -> %s is already installed at %s (mt-models remove %s to reinstall)\n", from, to,
                    target, strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
        goto done;
    }
    if (rename(tmp, target)) {
        rc = errno == EEXIST || errno == ENOTEMPTY ? 0
           : mt_error(MT_ERR_INVALID, err, errlen, "cannot move the model into %s: %s", target, strerror(errno));
        goto done;
    }
    tmp[0] = 0;
    if (o->log)
        fprintf(o->log, "installed the argos-translate package %s -> %s at %s\n", from, to, target);
done:
    if (tmp[0])
        mh_remove_tree(tmp);
    if (zip_tmp[0])
        unlink(zip_tmp);
    json_decref(meta);
    return rc;
}
