/* models_dir.c: the models of a models directory (models_dir.h). Only reads. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models_dir.h"
#include "status.h"

static int is_file(const char *dir, const char *name, const char *rel)
{
    char path[4096];
    struct stat sb;
    return (size_t)snprintf(path, sizeof path, "%s/%s/%s", dir, name, rel) < sizeof path && stat(path, &sb) == 0 &&
           S_ISREG(sb.st_mode);
}

/* 0 when dir/name is no model, else its kind. config.json first: an installed argos
 * package keeps metadata.json beside it. */
static mt_models_kind kind_of(const char *dir, const char *name)
{
    if (is_file(dir, name, "config.json")) return MT_MODELS_INSTALLED;
    if (is_file(dir, name, "metadata.json") && is_file(dir, name, "model/model.bin")) return MT_MODELS_ARGOS_PACKAGE;
    return 0;
}

/* Copies the strings of file's keys a and b into x and y where both are short strings. */
static int read_pair(const char *path, const char *file, const char *a, const char *b, char *x, char *y, size_t cap)
{
    char p[4200];
    json_t *j = json_load_file(mt_strfmt(p, sizeof p, "%s/%s", path, file), 0, NULL);
    const char *s = json_string_value(json_object_get(j, a)), *t = json_string_value(json_object_get(j, b));
    int ok = s && t && *s && *t && strlen(s) < cap && strlen(t) < cap;
    if (ok) {
        snprintf(x, cap, "%s", s);
        snprintf(y, cap, "%s", t);
    }
    json_decref(j);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const mt_models_entry *)a)->name, ((const mt_models_entry *)b)->name);
}

void mt_models_dir_free(mt_models_entry *list, int n)
{
    for (int i = 0; list && i < n; i++) {
        free(list[i].name);
        free(list[i].path);
    }
    free(list);
}

int mt_models_dir_list(const char *dir, mt_models_entry **out, int *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return mt_error(MT_ERR_INVALID, err, errlen, "%s: %s", dir, strerror(errno));
    mt_models_entry *list = NULL;
    int count = 0, cap = 0, nomem = 0;
    struct dirent *e;
    while (!nomem && (e = readdir(d))) {
        mt_models_kind kind = e->d_name[0] == '.' ? 0 : kind_of(dir, e->d_name);
        if (!kind) continue;
        if (count == cap) {
            mt_models_entry *more = realloc(list, sizeof *more * (size_t)(cap = cap ? 2 * cap : 16));
            if (!more) {
                nomem = 1;
                break;
            }
            list = more;
        }
        mt_models_entry *m = &list[count];
        memset(m, 0, sizeof *m);
        m->kind = kind;
        m->name = strdup(e->d_name);
        m->path = malloc(strlen(dir) + strlen(e->d_name) + 2);
        count++;
        if (!m->name || !m->path) {
            nomem = 1;
            break;
        }
        sprintf(m->path, "%s/%s", dir, e->d_name);
        if (!read_pair(m->path, "tokenizer_config.json", "source_lang", "target_lang", m->source, m->target,
                       sizeof m->source))
            read_pair(m->path, "metadata.json", "from_code", "to_code", m->source, m->target, sizeof m->source);
    }
    closedir(d);
    if (nomem) {
        mt_models_dir_free(list, count);
        return mt_error(MT_ERR_NOMEM, err, errlen, "out of memory");
    }
    if (count) qsort(list, (size_t)count, sizeof *list, by_name);
    *out = list;
    *n = count;
    return 0;
}
