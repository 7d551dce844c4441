/* hub.c: the hub's commands (search, install, list, remove) over http.c's client, and
 * the install directory's handling (temporary directories, the manifest, stale installs
 * swept). No shared state: two installs of one model at once (threads or processes) each
 * fill their own temporary directory, and the first to finish stands. */
#include "hub.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hub_internal.h"
#include "models_dir.h"
#include "status.h"

void mh_options_default(mh_options *o)
{
    memset(o, 0, sizeof *o);
    o->endpoint = "https://huggingface.co";
    o->connect_timeout_s = 20;
    o->stall_timeout_s = 60;
    o->retries = 4;
}

int mh_check_marian_config(const json_t *cfg, char *err, size_t errlen)
{
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    const char *arch = json_string_value(json_array_get(json_object_get(cfg, "architectures"), 0));
    if (type && !strcmp(type, "marian") && (!arch || !strcmp(arch, "MarianMTModel")))
        return 0;
    return mt_error(MT_ERR_INVALID, err, errlen,
                    "config.json: model_type '%s' (architectures %s) is not MarianMT; only MarianMT "
                    "(OPUS-MT) models can be installed", type ? type : "(none)", arch ? arch : "(none)");
}

/* ---- search ---------------------------------------------------------------------------- */

/* The language pair of an OPUS-MT repository name: its last two '-' parts. */
static void pair_of(const char *id, char *out, size_t len)
{
    const char *base = strrchr(id, '/');
    base = base ? base + 1 : id;
    const char *last = strrchr(base, '-');
    const char *prev = last;
    while (prev && prev > base && prev[-1] != '-')
        prev--;
    if (!last || prev <= base || strncmp(base, "opus-mt-", 8)) {
        snprintf(out, len, "?");
        return;
    }
    snprintf(out, len, "%.*s -> %s", (int)(last - prev), prev, last + 1);
}

int mh_search(const mh_options *o, const char *query, int limit, FILE *out, char *err, size_t errlen)
{
    if (o->offline)
        return mt_error(MT_ERR_INVALID, err, errlen, "HF_HUB_OFFLINE is set: search needs the network "
                        "(mt-models list shows what is installed)");
    char q[300], url[1200];
    char term[200];
    snprintf(term, sizeof term, "%s%s", query && strncmp(query, "opus-mt", 7) ? "opus-mt-" : "",
             query ? query : "opus-mt");
    mh_url_escape(q, sizeof q, term, 0);
    snprintf(url, sizeof url, "%s/api/models?author=Helsinki-NLP&search=%s&limit=%d&sort=downloads&direction=-1",
             o->endpoint, q, limit > 0 ? limit : 50);
    json_t *j = mh_http_get_json(o, url, "search", err, errlen);
    if (!j)
        return MT_ERR_INVALID;
    if (!json_is_array(j)) {
        json_decref(j);
        return mt_error(MT_ERR_INVALID, err, errlen, "search: the hub's answer is not a list of models");
    }
    size_t i;
    json_t *m;
    int shown = 0;
    json_array_foreach(j, i, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        if (!id)
            id = json_string_value(json_object_get(m, "modelId"));
        if (!id)
            continue;
        char pair[120];
        pair_of(id, pair, sizeof pair);
        fprintf(out, "%-48s %-20s %10lld downloads\n", id, pair,
                (long long)json_integer_value(json_object_get(m, "downloads")));
        shown++;
    }
    json_decref(j);
    if (!shown)
        fprintf(out, "no OPUS-MT model matches '%s'\n", query ? query : "");
    return 0;
}

/* ---- install --------------------------------------------------------------------------- */

/* What a MarianMT directory needs (required) and may have. */
static const char *REQUIRED[] = {"config.json", "source.spm", "target.spm", "vocab.json", "tokenizer_config.json"};
static const char *OPTIONAL[] = {"generation_config.json", "special_tokens_map.json", "target_vocab.json", "README.md"};

static int remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return unlink(path);
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        struct stat sb;
        if (!lstat(sub, &sb) && S_ISDIR(sb.st_mode))
            remove_tree(sub);
        else
            unlink(sub);
    }
    closedir(d);
    return rmdir(path);
}

static int mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* Removes temporary directories that an install killed outright left behind. */
static void sweep_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if ((strncmp(e->d_name, ".install-", 9) && strncmp(e->d_name, ".remove-", 8)) || !dot)
            continue;
        long pid = strtol(dot + 1, NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH)
            remove_tree(mt_strfmt(path, sizeof path, "%s/%s", dir, e->d_name));
    }
    closedir(d);
}

int mh_remove_tree(const char *path) { return remove_tree(path); }
int mh_mkdirs(const char *path) { return mkdirs(path); }
void mh_sweep_stale(const char *dir) { sweep_stale(dir); }
typedef struct {
    const char *name;
    long long size;
    const char *sha256;  /* LFS files only */
} sibling;

static const json_t *find_sibling(const json_t *siblings, const char *name, sibling *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(siblings, i, x) {
        const char *n = json_string_value(json_object_get(x, "rfilename"));
        if (!n || strcmp(n, name))
            continue;
        json_t *lfs = json_object_get(x, "lfs");
        s->name = n;
        s->size = json_is_integer(json_object_get(x, "size")) ? json_integer_value(json_object_get(x, "size")) : -1;
        s->sha256 = json_string_value(json_object_get(lfs, "sha256"));
        if (json_is_integer(json_object_get(lfs, "size")))
            s->size = json_integer_value(json_object_get(lfs, "size"));
        return x;
    }
    return NULL;
}

static int valid_repo(const char *repo)
{
    int slashes = 0;
    if (!*repo || repo[0] == '/' || strstr(repo, ".."))
        return 0;
    for (const char *c = repo; *c; c++) {
        if (*c == '/')
            slashes++;
        else if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                   strchr("-_.", *c)))
            return 0;
    }
    return slashes <= 1 && repo[strlen(repo) - 1] != '/';
}

static int valid_file_name(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") && s[0] != '.';
}

static int fetch_one(const mh_options *o, const json_t *siblings, const char *repo_url, const char *tmp,
                     const char *name, int required, char *err, size_t errlen)
{
    sibling s;
    if (!find_sibling(siblings, name, &s)) {
        if (required)
            return mt_error(MT_ERR_INVALID, err, errlen, "the repository has no %s, which a MarianMT directory needs",
                            name);
        return 0;
    }
    if (s.sha256 && (strlen(s.sha256) != 64 || strspn(s.sha256, "0123456789abcdefABCDEF") != 64))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s: the hub's sha256 is not 64 hex digits", name);
    char url[2048], path[4200], esc[600];
    mh_url_escape(esc, sizeof esc, name, 0);
    snprintf(url, sizeof url, "%s/%s", repo_url, esc);
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    if (o->log)
        fprintf(o->log, "downloading %s (%lld bytes)\n", name, s.size);
    return mh_http_download(o, url, path, name, s.size, s.sha256, err, errlen);
}

static int write_manifest(const char *tmp, const char *repo, const char *commit, const char *rev, int int8)
{
    char path[4200];
    json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:I}", "repo", repo, "revision", rev, "commit", commit ? commit : "",
                          "stored", int8 ? "int8" : "as published", "installed_unix", (json_int_t)time(NULL));
    int rc = m ? json_dump_file(m, mt_strfmt(path, sizeof path, "%s/.mt-install.json", tmp), JSON_INDENT(2)) : -1;
    json_decref(m);
    return rc;
}

int mh_install(const mh_options *o, const char *repo, const char *revision, const char *dest, int int8,
               char *installed, size_t installed_len, char *err, size_t errlen)
{
    if (!valid_repo(repo))
        return mt_error(MT_ERR_INVALID, err, errlen, "'%s' is not a repository id (OWNER/NAME)", repo);
    const char *rev = revision ? revision : "main";
    const char *base = strrchr(repo, '/') ? strrchr(repo, '/') + 1 : repo;
    char target[4096], parent[4096];
    if (dest)
        snprintf(target, sizeof target, "%s", dest);
    else if (!o->models_dir)
        return mt_error(MT_ERR_INVALID, err, errlen, "no models directory");
    else
        snprintf(target, sizeof target, "%s/%s", o->models_dir, base);
    if (installed)
        snprintf(installed, installed_len, "%s", target);
    struct stat sb;
    char cfg_path[4200];
    if (stat(target, &sb) == 0 && access(mt_strfmt(cfg_path, sizeof cfg_path, "%s/config.json", target), F_OK))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s exists and is not a model directory (no config.json)",
                        target);
    if (stat(target, &sb) == 0) {
        if (o->log)
            fprintf(o->log, "%s is already installed at %s (mt-models remove %s to reinstall)\n", repo, target, base);
        return 0;
    }
    if (o->offline)
        return mt_error(MT_ERR_INVALID, err, errlen, "HF_HUB_OFFLINE is set and %s is not installed at %s; "
                        "install it where there is network", repo, target);
    snprintf(parent, sizeof parent, "%s", target);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = 0;
    else
        snprintf(parent, sizeof parent, "%s", slash ? "/" : ".");
    if (mkdirs(parent))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", parent, strerror(errno));
    sweep_stale(parent);

    char url[2048], esc_repo[600], esc_rev[300];
    mh_url_escape(esc_repo, sizeof esc_repo, repo, 1);
    mh_url_escape(esc_rev, sizeof esc_rev, rev, 0);
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s?blobs=true", o->endpoint, esc_repo, esc_rev);
    char what[700];
    snprintf(what, sizeof what, "%s@%s", repo, rev);
    json_t *info = mh_http_get_json(o, url, what, err, errlen);
    if (!info)
        return MT_ERR_INVALID;
    int rc = 0;
    char tmp[4200] = "";
    json_t *siblings = json_object_get(info, "siblings");
    const char *commit = json_string_value(json_object_get(info, "sha"));
    if (!json_is_array(siblings)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s: the hub's answer lists no files", what);
        goto done;
    }
    /* The hub's own summary of config.json: refuse before downloading anything. */
    json_t *hubcfg = json_object_get(info, "config");
    if (json_is_object(hubcfg) && json_object_get(hubcfg, "model_type") &&
        (rc = mh_check_marian_config(hubcfg, err, errlen)))
        goto done;
    sibling s;
    const char *weights = find_sibling(siblings, "model.safetensors", &s) ? "model.safetensors"
                        : find_sibling(siblings, "pytorch_model.bin", &s) ? "pytorch_model.bin" : NULL;
    if (!weights) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "%s has neither model.safetensors nor pytorch_model.bin "
                      "(TensorFlow, Flax and Rust weights are not read)", what);
        goto done;
    }
    snprintf(tmp, sizeof tmp, "%s/.install-%s.%ld", parent, base, (long)getpid());
    remove_tree(tmp);
    if (mkdir(tmp, 0755)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        tmp[0] = 0;
        goto done;
    }
    char repo_url[2048], esc_commit[300];
    mh_url_escape(esc_commit, sizeof esc_commit, commit && *commit ? commit : rev, 0);
    snprintf(repo_url, sizeof repo_url, "%s/%s/resolve/%s", o->endpoint, esc_repo, esc_commit);
    if ((rc = fetch_one(o, siblings, repo_url, tmp, "config.json", 1, err, errlen)))
        goto done;
    char path[4400];
    json_error_t je;
    json_t *cfg = json_load_file(mt_strfmt(path, sizeof path, "%s/config.json", tmp), 0, &je);
    if (!cfg) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "config.json: %s", je.text);
        goto done;
    }
    rc = mh_check_marian_config(cfg, err, errlen);
    json_decref(cfg);
    if (rc)
        goto done;
    for (size_t k = 1; k < sizeof REQUIRED / sizeof *REQUIRED; k++)
        if ((rc = fetch_one(o, siblings, repo_url, tmp, REQUIRED[k], 1, err, errlen)))
            goto done;
    for (size_t k = 0; k < sizeof OPTIONAL / sizeof *OPTIONAL; k++)
        if ((rc = fetch_one(o, siblings, repo_url, tmp, OPTIONAL[k], 0, err, errlen)))
            goto done;
    if ((rc = fetch_one(o, siblings, repo_url, tmp, weights, 1, err, errlen)))
        goto done;
    if ((rc = mh_convert_dir(tmp, int8, o->log, err, errlen)))
        goto done;
    if (write_manifest(tmp, repo, commit, rev, int8)) {
        rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot write %s/.mt-install.json: %s", tmp, strerror(errno));
        goto done;
    }
    if (o->cancel && *o->cancel) {
        rc = mt_error(MT_ERR_CANCELLED, err, errlen, "interrupted");
        goto done;
    }
    if (rename(tmp, target)) {
        if (errno == EEXIST || errno == ENOTEMPTY) {
            /* Another install of the same model finished first: its copy stands. */
            if (o->log)
                fprintf(o->log, "%s was installed at %s meanwhile by another process\n", repo, target);
        } else {
            rc = mt_error(MT_ERR_INVALID, err, errlen, "cannot move the model into %s: %s", target,
                          strerror(errno));
        }
        goto done;
    }
    tmp[0] = 0;
    if (o->log)
        fprintf(o->log, "installed %s at %s\n", repo, target);
done:
    if (tmp[0])
        remove_tree(tmp);
    json_decref(info);
    return rc;
}

/* ---- list, remove -------------------------------------------------------------------- */

/* The bytes of dir's files, its subdirectories' too (an argos package keeps model/), links
 * to directories not followed. */
static long long dir_bytes(const char *dir, int depth)
{
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    if (!d)
        return 0;
    long long total = 0;
    struct dirent *e;
    char p[4200];
    struct stat sb;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || lstat(mt_strfmt(p, sizeof p, "%s/%s", dir, e->d_name), &sb))
            continue;
        if (S_ISDIR(sb.st_mode))
            total += dir_bytes(p, depth + 1);
        else if (!stat(p, &sb) && S_ISREG(sb.st_mode))
            total += sb.st_size;
    }
    closedir(d);
    return total;
}

/* The stored type of a model.safetensors: int8 when any matrix is I8, else the dtype of
 * the first tensor (the header is read, never the data). */
static void stored_type(const char *dir, char *out, size_t len)
{
    char p[4200];
    snprintf(out, len, "?");
    if (access(mt_strfmt(p, sizeof p, "%s/model.safetensors", dir), F_OK) &&
        !access(mt_strfmt(p, sizeof p, "%s/model.bin", dir), F_OK)) {
        snprintf(out, len, "ct2"); /* a CTranslate2 model (argos-translate) */
        return;
    }
    FILE *f = fopen(mt_strfmt(p, sizeof p, "%s/model.safetensors", dir), "rb");
    unsigned char l8[8];
    if (!f)
        return;
    if (fread(l8, 1, 8, f) == 8) {
        uint64_t n = 0;
        for (int b = 7; b >= 0; b--)
            n = n << 8 | l8[b];
        char *js = n < (100u << 20) ? malloc(n + 1) : NULL;
        json_t *h = js && fread(js, 1, n, f) == n ? json_loadb(js, n, 0, NULL) : NULL;
        free(js);
        const char *k;
        json_t *v;
        int i8 = 0;
        const char *first = NULL;
        json_object_foreach(h, k, v) {
            const char *dt = json_string_value(json_object_get(v, "dtype"));
            if (!dt)
                continue;
            i8 |= !strcmp(dt, "I8");
            if (!first && strstr(k, "weight"))
                first = dt;
        }
        if (h)
            snprintf(out, len, "%s", i8 ? "int8" : first && !strcmp(first, "F32") ? "float32"
                                        : first && !strcmp(first, "F16") ? "float16"
                                        : first && !strcmp(first, "BF16") ? "bfloat16" : "?");
        json_decref(h);
    }
    fclose(f);
}

int mh_list(const mh_options *o, FILE *out, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(o->models_dir, &sb) && errno == ENOENT) {
        fprintf(out, "no models installed in %s\n", o->models_dir);
        return 0;
    }
    mt_models_entry *list;
    int n;
    char e[512], type[32];
    if (mt_models_dir_list(o->models_dir, &list, &n, e, sizeof e))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot read %s", e);
    for (int i = 0; i < n; i++) {
        const mt_models_entry *m = &list[i];
        char p[4400], pair[80];
        snprintf(pair, sizeof pair, "%s -> %s", *m->source ? m->source : "?", *m->target ? m->target : "?");
        json_t *man = json_load_file(mt_strfmt(p, sizeof p, "%s/.mt-install.json", m->path), 0, NULL);
        const char *repo = json_string_value(json_object_get(man, "repo"));
        int in_place = m->kind == MT_MODELS_ARGOS_PACKAGE; /* the engine reads it where it lies */
        if (in_place)
            snprintf(type, sizeof type, "ct2");
        else
            stored_type(m->path, type, sizeof type);
        if (!i)
            fprintf(out, "%-32s %-16s %10s  %-9s %s\n", "NAME", "PAIR", "SIZE", "STORED", "FROM");
        fprintf(out, "%-32s %-16s %8.1f MB  %-9s %s\n", m->name, pair, (double)dir_bytes(m->path, 0) / 1e6, type,
                in_place ? "argos package, used in place" : repo ? repo : "-");
        json_decref(man);
    }
    if (!n)
        fprintf(out, "no models installed in %s\n", o->models_dir);
    mt_models_dir_free(list, n);
    return 0;
}

int mh_remove(const mh_options *o, const char *name, char *err, size_t errlen)
{
    if (!valid_file_name(name))
        return mt_error(MT_ERR_INVALID, err, errlen, "'%s' is not a model name (see mt-models list)", name);
    char dir[4200], p[4400], away[4400];
    mt_strfmt(dir, sizeof dir, "%s/%s", o->models_dir, name);
    struct stat sb;
    if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return mt_error(MT_ERR_INVALID, err, errlen, "no model '%s' in %s", name, o->models_dir);
    if (access(mt_strfmt(p, sizeof p, "%s/config.json", dir), F_OK) &&
        !access(mt_strfmt(p, sizeof p, "%s/metadata.json", dir), F_OK))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s is an argos-translate package used in place, not installed "
                        "by mt-models; not removed (argospm remove, or delete the directory yourself)", dir);
    if (access(mt_strfmt(p, sizeof p, "%s/config.json", dir), F_OK))
        return mt_error(MT_ERR_INVALID, err, errlen, "%s is not a model directory (no config.json); not removed", dir);
    mt_strfmt(away, sizeof away, "%s/.remove-%s.%ld", o->models_dir, name, (long)getpid());
    if (rename(dir, away))
        return mt_error(MT_ERR_INVALID, err, errlen, "cannot remove %s: %s", dir, strerror(errno));
    if (remove_tree(away))
        return mt_error(MT_ERR_INVALID, err, errlen, "removed %s, but could not delete all of %s: %s", name, away,
                        strerror(errno));
    return 0;
}
