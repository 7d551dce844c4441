/* unpickle.c: the weights-only unpickler of torch.save's pickles (unpickle.h).
 *
 * A stack machine over a small closed set of values (None, bools, ints, strings, tuples,
 * lists, dicts, the allowed globals, storages and tensors). A REDUCE "calls" only an
 * allowed global, and only by building the value that call would return: no code from
 * the file runs, and a global outside the list is refused when it is read, with its name,
 * before any REDUCE could use it. Every length, index and count is checked against the
 * input and against caps, so a hostile file is an error, never a wild read or an
 * unbounded allocation. */
#include "unpickle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

enum { V_NONE, V_BOOL, V_INT, V_STR, V_TUPLE, V_LIST, V_DICT, V_GLOBAL, V_STORAGE, V_TENSOR };
enum { G_ORDEREDDICT, G_REBUILD_V2, G_REBUILD_PARAM, G_STORAGE };
enum { MAX_VALUES = 1 << 22, MAX_MEMO = 1 << 22, MAX_STACK = 1 << 20 };

typedef struct val {
    int kind;
    int64_t i;              /* BOOL, INT; GLOBAL: G_*; STORAGE, TENSOR: index; for G_STORAGE, dtype in sub */
    int sub;                /* GLOBAL G_STORAGE: the dtype */
    char *s;                /* STR (NUL-terminated copy) */
    struct val **items;     /* TUPLE, LIST; DICT: key, value, key, value... */
    size_t n, cap;
} val;

typedef struct {
    const unsigned char *p, *end, *start;
    val **all;
    size_t nall, capall;
    val **stack;
    size_t sp, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    val **memo;
    size_t capmemo, nmemo;  /* nmemo: entries set, the index MEMOIZE uses */
    mh_storage *st;
    size_t nst, capst;
    mh_torch_tensor *t;     /* every tensor rebuilt (names filled at the end) */
    size_t nt, capt;
    char *err;
    size_t errlen;
} unpickler;

static const struct { const char *name; int dtype; } STORAGES[] = {
    {"FloatStorage", MH_F32}, {"HalfStorage", MH_F16}, {"BFloat16Storage", MH_BF16},
    {"DoubleStorage", MH_F64}, {"LongStorage", MH_I64}, {"IntStorage", MH_I32},
    {"ShortStorage", MH_I16}, {"CharStorage", MH_I8}, {"ByteStorage", MH_U8}, {"BoolStorage", MH_BOOL},
};

size_t mh_dtype_size(int d)
{
    static const size_t sz[MH_NDTYPES] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 1};
    return d >= 0 && d < MH_NDTYPES ? sz[d] : 0;
}

const char *mh_dtype_name(int d)
{
    static const char *nm[MH_NDTYPES] = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"};
    return d >= 0 && d < MH_NDTYPES ? nm[d] : "?";
}

static int fail(unpickler *u, const char *fmt, const char *a, long long b)
{
    char msg[600];
    snprintf(msg, sizeof msg, fmt, a, b);
    mt_strfmt(u->err, u->errlen, "data.pkl: %s", msg);
    return -1;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static val *new_val(unpickler *u, int kind)
{
    if (u->nall >= MAX_VALUES || grow((void **)&u->all, &u->capall, u->nall + 1, sizeof *u->all))
        return fail(u, "more than %s%lld values", "", MAX_VALUES), NULL;
    val *v = calloc(1, sizeof *v);
    if (!v)
        return fail(u, "out of memory%s (%lld)", "", 0), NULL;
    v->kind = kind;
    u->all[u->nall++] = v;
    return v;
}

static int push(unpickler *u, val *v)
{
    if (!v)
        return -1;
    if (u->sp >= MAX_STACK || grow((void **)&u->stack, &u->capstack, u->sp + 1, sizeof *u->stack))
        return fail(u, "stack deeper than %s%lld", "", MAX_STACK);
    u->stack[u->sp++] = v;
    return 0;
}

static int add_item(unpickler *u, val *c, val *x)
{
    if (grow((void **)&c->items, &c->cap, c->n + 1, sizeof *c->items))
        return fail(u, "out of memory%s (%lld)", "", 0);
    c->items[c->n++] = x;
    return 0;
}

static val *pop(unpickler *u)
{
    size_t floor = u->nmarks ? u->marks[u->nmarks - 1] : 0;
    if (u->sp <= floor)
        return fail(u, "stack underflow at byte %s%lld", "", (long long)(u->p - u->start)), NULL;
    return u->stack[--u->sp];
}

/* Pops everything above the topmost mark into a new container of kind `kind`. */
static val *pop_mark(unpickler *u, int kind)
{
    if (!u->nmarks)
        return fail(u, "no MARK before byte %s%lld", "", (long long)(u->p - u->start)), NULL;
    size_t m = u->marks[--u->nmarks];
    val *c = new_val(u, kind);
    if (!c)
        return NULL;
    for (size_t i = m; i < u->sp; i++)
        if (add_item(u, c, u->stack[i]))
            return NULL;
    u->sp = m;
    return c;
}

static int need(unpickler *u, size_t n)
{
    if ((size_t)(u->end - u->p) < n)
        return fail(u, "truncated at byte %s%lld", "", (long long)(u->p - u->start));
    return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t x = 0;
    for (int i = n - 1; i >= 0; i--)
        x = x << 8 | p[i];
    return x;
}

static val *str_val(unpickler *u, size_t len)
{
    if (need(u, len))
        return NULL;
    val *v = new_val(u, V_STR);
    if (!v)
        return NULL;
    v->s = malloc(len + 1);
    if (!v->s)
        return fail(u, "out of memory%s (%lld)", "", 0), NULL;
    memcpy(v->s, u->p, len);
    v->s[len] = 0;
    v->n = len;
    u->p += len;
    return v;
}

static val *global(unpickler *u, const char *mod, const char *name)
{
    val *g = new_val(u, V_GLOBAL);
    if (!g)
        return NULL;
    if (!strcmp(mod, "collections") && !strcmp(name, "OrderedDict")) {
        g->i = G_ORDEREDDICT;
        return g;
    }
    if (!strcmp(mod, "torch._utils") && (!strcmp(name, "_rebuild_tensor_v2") || !strcmp(name, "_rebuild_tensor"))) {
        g->i = G_REBUILD_V2;
        return g;
    }
    if (!strcmp(mod, "torch._utils") && !strcmp(name, "_rebuild_parameter")) {
        g->i = G_REBUILD_PARAM;
        return g;
    }
    if (!strcmp(mod, "torch"))
        for (size_t k = 0; k < sizeof STORAGES / sizeof *STORAGES; k++)
            if (!strcmp(name, STORAGES[k].name)) {
                g->i = G_STORAGE;
                g->sub = STORAGES[k].dtype;
                return g;
            }
    char full[200];
    snprintf(full, sizeof full, "%.90s.%.90s", mod, name);
    fail(u, "global '%s' at byte %lld refused: a weights-only load allows only tensor storage rebuilds "
         "(torch._utils._rebuild_tensor_v2, torch.*Storage, collections.OrderedDict)", full,
         (long long)(u->p - u->start));
    return NULL;
}

static int int_of(const val *v, int64_t *out)
{
    if (!v || (v->kind != V_INT && v->kind != V_BOOL))
        return -1;
    *out = v->i;
    return 0;
}

static val *rebuild_tensor(unpickler *u, val *args)
{
    if (args->kind != V_TUPLE || args->n < 4 || args->items[0]->kind != V_STORAGE ||
        args->items[2]->kind != V_TUPLE || args->items[3]->kind != V_TUPLE ||
        args->items[2]->n != args->items[3]->n || args->items[2]->n > 8)
        return fail(u, "_rebuild_tensor_v2 with arguments other than (storage, offset, size, stride, ...)%s%lld",
                    "", 0), NULL;
    mh_torch_tensor t = {0};
    const mh_storage *s = &u->st[args->items[0]->i];
    t.storage = (int)args->items[0]->i;
    t.dtype = s->dtype;
    t.ndim = (int)args->items[2]->n;
    if (int_of(args->items[1], &t.offset) || t.offset < 0)
        return fail(u, "tensor storage offset is not a non-negative integer%s%lld", "", 0), NULL;
    int64_t last = t.offset, numel = 1;
    for (int d = 0; d < t.ndim; d++) {
        if (int_of(args->items[2]->items[d], &t.shape[d]) || int_of(args->items[3]->items[d], &t.stride[d]) ||
            t.shape[d] < 0 || t.shape[d] > (1LL << 40) || t.stride[d] < 0 || t.stride[d] > (1LL << 40))
            return fail(u, "tensor size or stride %s%lld is not a valid dimension", "", d), NULL;
        if (t.shape[d] && numel > (1LL << 40) / t.shape[d])
            return fail(u, "tensor with more than 2^40 elements%s%lld", "", 0), NULL;
        numel *= t.shape[d];
        if (t.shape[d])
            last += (t.shape[d] - 1) * t.stride[d];
    }
    if (numel && last >= s->numel)
        return fail(u, "tensor reaches element %s%lld of its storage, past the storage's end", "",
                    (long long)last), NULL;
    if (grow((void **)&u->t, &u->capt, u->nt + 1, sizeof *u->t))
        return fail(u, "out of memory%s (%lld)", "", 0), NULL;
    val *v = new_val(u, V_TENSOR);
    if (!v)
        return NULL;
    v->i = (int64_t)u->nt;
    u->t[u->nt++] = t;
    return v;
}

static val *reduce(unpickler *u, val *f, val *args)
{
    if (f->kind != V_GLOBAL || args->kind != V_TUPLE)
        return fail(u, "REDUCE of something other than an allowed global at byte %s%lld", "",
                    (long long)(u->p - u->start)), NULL;
    switch (f->i) {
    case G_ORDEREDDICT:
        if (args->n)
            return fail(u, "OrderedDict called with %s%lld arguments", "", (long long)args->n), NULL;
        return new_val(u, V_DICT);
    case G_REBUILD_V2:
        return rebuild_tensor(u, args);
    case G_REBUILD_PARAM:
        if (args->n < 1 || args->items[0]->kind != V_TENSOR)
            return fail(u, "_rebuild_parameter without a tensor%s%lld", "", 0), NULL;
        return args->items[0];
    default:
        return fail(u, "a storage type is not callable%s%lld", "", 0), NULL;
    }
}

static val *persistent(unpickler *u, val *pid)
{
    int64_t numel;
    if (pid->kind == V_TUPLE && pid->n == 6 && pid->items[5]->kind != V_NONE)
        return fail(u, "a storage view (legacy format)%s%lld is not read", "", 0), NULL;
    if (pid->kind != V_TUPLE || (pid->n != 5 && pid->n != 6) || pid->items[0]->kind != V_STR || strcmp(pid->items[0]->s, "storage") ||
        pid->items[1]->kind != V_GLOBAL || pid->items[1]->i != G_STORAGE || pid->items[2]->kind != V_STR ||
        int_of(pid->items[4], &numel) || numel < 0 || numel > (1LL << 40))
        return fail(u, "persistent id other than ('storage', torch.*Storage, key, location, numel)%s%lld",
                    "", 0), NULL;
    const char *key = pid->items[2]->s;
    for (const char *c = key; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_'))
            return fail(u, "storage key '%.40s' is not a plain name%lld", key, 0), NULL;
    size_t idx = u->nst;
    for (size_t k = 0; k < u->nst; k++)
        if (!strcmp(u->st[k].key, key))
            idx = k;
    if (idx == u->nst) {
        if (!*key || u->nst >= (1u << 20) || grow((void **)&u->st, &u->capst, u->nst + 1, sizeof *u->st))
            return fail(u, "bad storage key or too many storages%s%lld", "", 0), NULL;
        u->st[idx].key = strdup(key);
        if (!u->st[idx].key)
            return fail(u, "out of memory%s (%lld)", "", 0), NULL;
        u->st[idx].dtype = pid->items[1]->sub;
        u->st[idx].numel = numel;
        u->nst++;
    } else if (u->st[idx].dtype != pid->items[1]->sub || u->st[idx].numel != numel) {
        return fail(u, "storage '%s' declared twice with different types or sizes%lld", key, 0), NULL;
    }
    val *v = new_val(u, V_STORAGE);
    if (v)
        v->i = (int64_t)idx;
    return v;
}

/* A memo index of n little-endian bytes at the cursor (BINPUT/BINGET 1, LONG_ 4). */
static int memo_index(unpickler *u, int n, uint64_t *idx)
{
    if (need(u, (size_t)n))
        return -1;
    *idx = le(u->p, n);
    u->p += n;
    return 0;
}

static int memo_put(unpickler *u, uint64_t idx)
{
    if (!u->sp)
        return fail(u, "PUT on an empty stack%s%lld", "", 0);
    if (idx >= MAX_MEMO)
        return fail(u, "memo index %s%lld too large", "", (long long)idx);
    size_t old = u->capmemo;
    if (grow((void **)&u->memo, &u->capmemo, idx + 1, sizeof *u->memo))
        return fail(u, "out of memory%s (%lld)", "", 0);
    for (size_t k = old; k < u->capmemo; k++)
        u->memo[k] = NULL;
    if (!u->memo[idx])
        u->nmemo++;
    u->memo[idx] = u->stack[u->sp - 1];
    return 0;
}

static int memo_get(unpickler *u, uint64_t idx)
{
    if (idx >= u->capmemo || !u->memo[idx])
        return fail(u, "GET of unset memo entry %s%lld", "", (long long)idx);
    return push(u, u->memo[idx]);
}

/* Runs the machine to STOP; returns the top value or NULL with a message. */
static val *run(unpickler *u)
{
    while (u->p < u->end) {
        unsigned char op = *u->p++;
        val *a, *b, *c;
        switch (op) {
        case 0x80: /* PROTO */
            if (need(u, 1))
                return NULL;
            if (*u->p > 5)
                return fail(u, "pickle protocol %s%lld", "", *u->p), NULL;
            u->p++;
            break;
        case 0x95: /* FRAME: a length hint only */
            if (need(u, 8))
                return NULL;
            u->p += 8;
            break;
        case '.': /* STOP */
            if (u->sp != 1 || u->nmarks)
                return fail(u, "STOP with %s%lld values on the stack", "", (long long)u->sp), NULL;
            return u->stack[0];
        case '(': /* MARK */
            if (u->nmarks >= MAX_STACK || grow((void **)&u->marks, &u->capmarks, u->nmarks + 1, sizeof *u->marks))
                return fail(u, "too many marks%s%lld", "", 0), NULL;
            u->marks[u->nmarks++] = u->sp;
            break;
        case 'N': if (push(u, new_val(u, V_NONE))) return NULL; break;
        case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
            if (!(a = new_val(u, V_BOOL)))
                return NULL;
            a->i = op == 0x88;
            if (push(u, a))
                return NULL;
            break;
        case 'J': case 'K': case 'M': { /* BININT, BININT1, BININT2 */
            int n = op == 'J' ? 4 : op == 'K' ? 1 : 2;
            if (need(u, (size_t)n) || !(a = new_val(u, V_INT)))
                return NULL;
            uint64_t x = le(u->p, n);
            a->i = op == 'J' ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
            u->p += n;
            if (push(u, a))
                return NULL;
            break;
        }
        case 0x8a: { /* LONG1 */
            if (need(u, 1))
                return NULL;
            int n = *u->p++;
            if (n > 8)
                return fail(u, "integer of %s%lld bytes", "", n), NULL;
            if (need(u, (size_t)n) || !(a = new_val(u, V_INT)))
                return NULL;
            uint64_t x = le(u->p, n);
            if (n && n < 8 && (u->p[n - 1] & 0x80))
                x |= ~0ULL << (8 * n);
            a->i = (int64_t)x;
            u->p += n;
            if (push(u, a))
                return NULL;
            break;
        }
        case 'X': case 0x8c: case 'U': { /* BINUNICODE, SHORT_BINUNICODE, SHORT_BINSTRING */
            int n = op == 'X' ? 4 : 1;
            if (need(u, (size_t)n))
                return NULL;
            size_t len = (size_t)le(u->p, n);
            u->p += n;
            if (push(u, str_val(u, len)))
                return NULL;
            break;
        }
        case 'c': { /* GLOBAL "module\nname\n" */
            const unsigned char *nl1 = memchr(u->p, '\n', (size_t)(u->end - u->p));
            const unsigned char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(u->end - nl1 - 1)) : NULL;
            if (!nl2 || nl1 - u->p > 100 || nl2 - nl1 > 100)
                return fail(u, "bad GLOBAL at byte %s%lld", "", (long long)(u->p - u->start)), NULL;
            char mod[101], name[101];
            memcpy(mod, u->p, (size_t)(nl1 - u->p));
            mod[nl1 - u->p] = 0;
            memcpy(name, nl1 + 1, (size_t)(nl2 - nl1 - 1));
            name[nl2 - nl1 - 1] = 0;
            u->p = nl2 + 1;
            if (push(u, global(u, mod, name)))
                return NULL;
            break;
        }
        case 0x93: /* STACK_GLOBAL */
            if (!(b = pop(u)) || !(a = pop(u)))
                return NULL;
            if (a->kind != V_STR || b->kind != V_STR)
                return fail(u, "STACK_GLOBAL of non-strings%s%lld", "", 0), NULL;
            if (push(u, global(u, a->s, b->s)))
                return NULL;
            break;
        case ')': if (push(u, new_val(u, V_TUPLE))) return NULL; break;
        case ']': if (push(u, new_val(u, V_LIST))) return NULL; break;
        case '}': if (push(u, new_val(u, V_DICT))) return NULL; break;
        case 't': if (push(u, pop_mark(u, V_TUPLE))) return NULL; break;
        case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
            int n = op - 0x84;
            if (!(c = new_val(u, V_TUPLE)))
                return NULL;
            val *xs[3];
            for (int k = n - 1; k >= 0; k--)
                if (!(xs[k] = pop(u)))
                    return NULL;
            for (int k = 0; k < n; k++)
                if (add_item(u, c, xs[k]))
                    return NULL;
            if (push(u, c))
                return NULL;
            break;
        }
        case 'q': case 'r': case 'h': case 'j': { /* BINPUT, LONG_BINPUT, BINGET, LONG_BINGET */
            uint64_t idx;
            if (memo_index(u, op == 'q' || op == 'h' ? 1 : 4, &idx))
                return NULL;
            if (op == 'q' || op == 'r' ? memo_put(u, idx) : memo_get(u, idx))
                return NULL;
            break;
        }
        case 0x94: /* MEMOIZE */
            if (memo_put(u, u->nmemo))
                return NULL;
            break;
        case 'a': /* APPEND */
            if (!(b = pop(u)) || !(a = pop(u)))
                return NULL;
            if (a->kind != V_LIST)
                return fail(u, "APPEND to a non-list%s%lld", "", 0), NULL;
            if (add_item(u, a, b) || push(u, a))
                return NULL;
            break;
        case 'e': case 'u': /* APPENDS, SETITEMS: the items since the mark, in order */
            if (!(b = pop_mark(u, V_TUPLE)) || !(a = pop(u)))
                return NULL;
            if (op == 'e' && a->kind != V_LIST)
                return fail(u, "APPENDS to a non-list%s%lld", "", 0), NULL;
            if (op == 'u' && (a->kind != V_DICT || b->n % 2))
                return fail(u, "SETITEMS on a non-dict or with an odd count%s%lld", "", 0), NULL;
            for (size_t k = 0; k < b->n; k++)
                if (add_item(u, a, b->items[k]))
                    return NULL;
            if (push(u, a))
                return NULL;
            break;
        case 's': /* SETITEM */
            if (!(c = pop(u)) || !(b = pop(u)) || !(a = pop(u)))
                return NULL;
            if (a->kind != V_DICT)
                return fail(u, "SETITEM on a non-dict%s%lld", "", 0), NULL;
            if (add_item(u, a, b) || add_item(u, a, c) || push(u, a))
                return NULL;
            break;
        case 'R': /* REDUCE */
            if (!(b = pop(u)) || !(a = pop(u)) || push(u, reduce(u, a, b)))
                return NULL;
            break;
        case 'b': /* BUILD: state for a dict (OrderedDict._metadata) or tensor, dropped */
            if (!(b = pop(u)) || !(a = pop(u)))
                return NULL;
            if (a->kind != V_DICT && a->kind != V_TENSOR)
                return fail(u, "BUILD on something other than a dict or tensor%s%lld", "", 0), NULL;
            if (push(u, a))
                return NULL;
            break;
        case 'Q': /* BINPERSID */
            if (!(a = pop(u)) || push(u, persistent(u, a)))
                return NULL;
            break;
        default:
            if (op >= 0x20 && op < 0x7f)
                fail(u, "opcode '%s' at byte %lld is not allowed in a weights-only load",
                     (char[]){(char)op, 0}, (long long)(u->p - 1 - u->start));
            else
                fail(u, "opcode 0x%s at byte %lld is not allowed in a weights-only load",
                     (char[]){"0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15], 0},
                     (long long)(u->p - 1 - u->start));
            return NULL;
        }
    }
    return fail(u, "no STOP before the end%s%lld", "", 0), NULL;
}

static void unpickler_free(unpickler *u)
{
    for (size_t k = 0; k < u->nall; k++) {
        free(u->all[k]->s);
        free(u->all[k]->items);
        free(u->all[k]);
    }
    free(u->all);
    free(u->stack);
    free(u->marks);
    free(u->memo);
    for (size_t k = 0; k < u->nst; k++)
        free(u->st[k].key);
    free(u->st);
    free(u->t);
}

int mh_unpickle(const void *bytes, size_t len, mh_state_dict *t, size_t *used, char *err, size_t errlen)
{
    unpickler u = {.p = bytes, .start = bytes, .end = (const unsigned char *)bytes + len,
                   .err = err, .errlen = errlen};
    val *top = run(&u);
    int rc = -1;
    if (!top)
        goto out;
    if (used)
        *used = (size_t)(u.p - u.start);
    if (top->kind != V_DICT) {
        fail(&u, "not a state dict (a dict of named tensors)%s%lld", "", 0);
        goto out;
    }
    size_t n = top->n / 2;
    for (size_t k = 0; k < n; k++) {
        val *key = top->items[2 * k], *v = top->items[2 * k + 1];
        if (key->kind != V_STR || v->kind != V_TENSOR) {
            fail(&u, "entry %s%lld of the state dict is not a named tensor", "", (long long)k);
            goto out;
        }
        for (size_t j = 0; j < k; j++)
            if (!strcmp(top->items[2 * j]->s, key->s)) {
                fail(&u, "tensor '%.100s' appears twice%lld", key->s, 0);
                goto out;
            }
    }
    if (t) {
        t->t = calloc(n ? n : 1, sizeof *t->t);
        t->names = calloc(n ? n : 1, sizeof *t->names);
        if (!t->t || !t->names) {
            fail(&u, "out of memory%s (%lld)", "", 0);
            goto out;
        }
        for (size_t k = 0; k < n; k++) {
            t->t[k] = u.t[top->items[2 * k + 1]->i];
            if (!(t->names[k] = strdup(top->items[2 * k]->s))) {
                fail(&u, "out of memory%s (%lld)", "", 0);
                goto out;
            }
            t->t[k].name = t->names[k];
            t->count = (int)k + 1;
        }
        t->st = u.st;
        t->nst = u.nst;
        u.st = NULL;
        u.nst = 0;
    }
    rc = 0;
out:
    unpickler_free(&u);
    return rc;
}

int mh_unpickle_check(const void *bytes, size_t len, char *err, size_t errlen)
{
    return mh_unpickle(bytes, len, NULL, NULL, err, errlen);
}

void mh_state_dict_free(mh_state_dict *sd)
{
    for (int k = 0; k < sd->count; k++)
        free(sd->names[k]);
    free(sd->names);
    free(sd->t);
    for (size_t k = 0; k < sd->nst; k++)
        free(sd->st[k].key);
    free(sd->st);
    memset(sd, 0, sizeof *sd);
}

int mh_unpickle_legacy(const unsigned char *b, size_t len, size_t base, int what, const mh_state_dict *t,
                       size_t *data_off, int64_t *ival, size_t *used, char *err, size_t errlen)
{
    unpickler u = {.p = b, .start = b, .end = b + len, .err = err, .errlen = errlen};
    val *top = run(&u);
    int rc = -1;
    if (!top)
        goto out;
    *used = (size_t)(u.p - u.start);
    if (what == MH_LEGACY_INT) {
        if (top->kind != V_INT)
            goto shape;
        *ival = top->i;
    } else if (what == MH_LEGACY_SYS_INFO) {
        if (top->kind != V_DICT)
            goto shape;
        for (size_t k = 0; k + 1 < top->n; k += 2)
            if (top->items[k]->kind == V_STR && !strcmp(top->items[k]->s, "little_endian") &&
                top->items[k + 1]->kind == V_BOOL && !top->items[k + 1]->i) {
                mt_strfmt(err, errlen, "big-endian checkpoint (sys_info little_endian is False)");
                goto out;
            }
    } else {
        if (top->kind != V_LIST || top->n != t->nst)
            goto shape;
        size_t pos = *used;
        for (size_t k = 0; k < top->n; k++) {
            size_t idx = t->nst;
            for (size_t j = 0; top->items[k]->kind == V_STR && j < t->nst; j++)
                if (!strcmp(t->st[j].key, top->items[k]->s))
                    idx = j;
            if (idx == t->nst || data_off[idx] != (size_t)-1) {
                fail(&u, "storage key list names %s%lld an unknown or repeated storage", "", (long long)k);
                goto out;
            }
            size_t es = mh_dtype_size(t->st[idx].dtype);
            if (len - pos < 8 || le(b + pos, 8) != (uint64_t)t->st[idx].numel ||
                (uint64_t)(len - pos - 8) / es < (uint64_t)t->st[idx].numel) {
                fail(&u, "storage %s%lld: its data is missing or of another size", "", (long long)idx);
                goto out;
            }
            data_off[idx] = base + pos + 8;
            pos += 8 + (size_t)t->st[idx].numel * es;
        }
        *used = pos;
    }
    rc = 0;
    goto out;
shape:
    fail(&u, "legacy header pickle of an unexpected shape%s%lld", "", what);
out:
    unpickler_free(&u);
    return rc;
}
