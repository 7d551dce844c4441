/* decode_opts.c: decoding controls, defined as tools/mtref/search.py defines them.
 *
 * Per hypothesis at step t, with gen[0..t) its generated tokens (target prefix included,
 * start token excluded):
 *   logits: each distinct token of gen has its logit divided by repetition_penalty when
 *     positive, multiplied when not; when sampling, all logits are divided by the
 *     temperature. Then log-softmax and the pad/bad-id masks run as before.
 *   log-probs: at t < prefix length (and before the last step, where eos is forced)
 *     every token but prefix[t] is -inf (nothing else applies); otherwise eos is -inf while t < min_length (not at the last step), and
 *     with n = no_repeat_ngram_size every token v that would complete an n-gram already
 *     in gen is -inf.
 *   sampling (beam 1): tokens sorted by log-prob; the k best (ties at the k-th kept),
 *     then the smallest prefix whose renormalised mass reaches top-p (ties kept); one is
 *     drawn with probability proportional to exp(lp) using u = uniform(seed, index, t),
 *     walking token ids in increasing order. The hypothesis score adds lp[token].
 * The random number depends on the request seed, the sentence's index in its request
 * and the step only, so batching and threads cannot change a sample. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode_opts.h"

int mt_decode_opts_sampling(const mt_search_options *o) { return o->sampling_topk != 1; }

int mt_decode_opts_active(const mt_search_options *o)
{
    return mt_decode_opts_sampling(o) || o->no_repeat_ngram_size > 0 || o->repetition_penalty != 1.0f ||
           o->min_length > 0 || o->target_prefix;
}

int mt_decode_opts_check(const mt_model_info *in, const mt_search_options *o, int n, char *err, size_t errlen)
{
    const char *bad = NULL;
    if (o->sampling_topk < 0 || o->sampling_topk > in->tgt_vocab_size)
        bad = "sampling_topk must be 0 (whole vocabulary) to the target vocabulary size";
    else if (!(o->sampling_topp > 0.0f && o->sampling_topp <= 1.0f))
        bad = "sampling_topp must be in (0, 1]";
    else if (!(o->sampling_temperature > 0.0f) || isinf(o->sampling_temperature))
        bad = "sampling_temperature must be > 0";
    else if (mt_decode_opts_sampling(o) && o->beam_size != 1)
        bad = "sampling (sampling_topk != 1) needs beam_size 1";
    else if (o->no_repeat_ngram_size < 0)
        bad = "no_repeat_ngram_size must be >= 0";
    else if (!(o->repetition_penalty >= 1.0f) || isinf(o->repetition_penalty))
        bad = "repetition_penalty must be >= 1";
    else if (o->min_length < 0)
        bad = "min_length must be >= 0";
    else if (o->return_alignments && (o->alignment_layer >= in->decoder_layers ||
                                      o->alignment_layer < -in->decoder_layers))
        bad = "alignment_layer must be in [-decoder_layers, decoder_layers)";
    else if (o->replace_unknowns && (o->unk_id < 0 || o->unk_id >= in->tgt_vocab_size ||
                                     in->src_vocab_size != in->tgt_vocab_size))
        bad = "replace_unknowns needs unk_id (0 to the vocabulary size - 1) and one shared vocabulary";
    if (bad)
        return snprintf(err, errlen, "%s", bad), MT_ERR_INVALID;
    for (int s = 0; o->target_prefix && s < n; s++) {
        int len = o->target_prefix_len ? o->target_prefix_len[s] : 0;
        if (len < 0 || (len > 0 && !o->target_prefix[s]))
            return snprintf(err, errlen, "target_prefix of sentence %d: bad length %d", s, len), MT_ERR_INVALID;
        for (int i = 0; i < len; i++) {
            int v = o->target_prefix[s][i];
            if (v < 0 || v >= in->tgt_vocab_size || v == in->pad_id || v == in->eos_id)
                return snprintf(err, errlen, "target_prefix of sentence %d: id %d is not an ordinary target "
                                "token (0 to %d, not pad or eos)", s, v, in->tgt_vocab_size - 1), MT_ERR_INVALID;
        }
    }
    return MT_OK;
}

void mt_decode_opts_logits(const mt_search_options *o, const int *gen, int t, float *logits, int V)
{
    if (o->repetition_penalty != 1.0f) {
        /* A token repeated in gen is penalised once: mark by visiting each first occurrence. */
        for (int i = 0; i < t; i++) {
            int seen = 0;
            for (int j = 0; j < i && !seen; j++)
                seen = gen[j] == gen[i];
            if (seen || gen[i] < 0 || gen[i] >= V)
                continue;
            float *x = &logits[gen[i]];
            *x = *x > 0.0f ? *x / o->repetition_penalty : *x * o->repetition_penalty;
        }
    }
    if (mt_decode_opts_sampling(o) && o->sampling_temperature != 1.0f)
        for (int v = 0; v < V; v++)
            logits[v] /= o->sampling_temperature;
}

void mt_decode_opts_logprobs(const mt_search_options *o, const mt_model_info *in, int sent, const int *gen,
                             int t, int limit, float *lp, int V)
{
    int plen = o->target_prefix && o->target_prefix_len ? o->target_prefix_len[sent] : 0;
    if (t < plen && t < limit - 1) {
        int want = o->target_prefix[sent][t];
        float keep = lp[want];
        for (int v = 0; v < V; v++)
            lp[v] = -INFINITY;
        lp[want] = keep;
        return;
    }
    if (t < o->min_length && t < limit - 1)
        lp[in->eos_id] = -INFINITY;
    int n = o->no_repeat_ngram_size;
    if (n > 0 && t + 1 >= n) {
        /* gen[t-n+1 .. t) is the new n-gram's head; each earlier match bans what followed. */
        const int *head = gen + t - (n - 1);
        for (int start = 0; start + n - 1 < t; start++) {
            int match = 1;
            for (int i = 0; i < n - 1 && match; i++)
                match = gen[start + i] == head[i];
            if (match && gen[start + n - 1] >= 0 && gen[start + n - 1] < V)
                lp[gen[start + n - 1]] = -INFINITY;
        }
    }
}

int mt_decode_opts_layer(const mt_model_info *in, const mt_search_options *o)
{
    return o->alignment_layer < 0 ? in->decoder_layers + o->alignment_layer : o->alignment_layer;
}

int mt_decode_opts_aligns(const mt_search_options *o) { return o->return_alignments || o->replace_unknowns; }

int mt_decode_opts_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

double mt_decode_opts_uniform(uint64_t seed, uint64_t index, int step)
{
    uint64_t x = splitmix64(splitmix64(splitmix64(seed) ^ index) ^ (uint64_t)step);
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

static int descending(const void *pa, const void *pb)
{
    float a = *(const float *)pa, b = *(const float *)pb;
    return (a < b) - (a > b);
}

int mt_decode_opts_sample(const mt_search_options *o, int sent, int t, const float *lp, int V, float *scratch)
{
    int n = 0;
    for (int v = 0; v < V; v++)
        if (lp[v] > -INFINITY)
            scratch[n++] = lp[v];
    if (n == 0)
        return -1;
    qsort(scratch, (size_t)n, sizeof *scratch, descending);
    int k = o->sampling_topk > 0 && o->sampling_topk < n ? o->sampling_topk : n;
    double top = scratch[0], mass = 0.0, kept = 0.0;
    for (int i = 0; i < k; i++)
        mass += exp((double)scratch[i] - top);
    int last = k - 1; /* index of the threshold value */
    if (o->sampling_topp < 1.0f)
        for (int i = 0; i < k; i++) {
            kept += exp((double)scratch[i] - top);
            if (kept >= (double)o->sampling_topp * mass) {
                last = i;
                break;
            }
        }
    float threshold = scratch[last];
    double total = 0.0;
    for (int v = 0; v < V; v++)
        if (lp[v] >= threshold && lp[v] > -INFINITY)
            total += exp((double)lp[v] - top);
    uint64_t index = o->sentence_index ? o->sentence_index[sent] : (uint64_t)sent;
    double target = mt_decode_opts_uniform(o->seed, index, t) * total, acc = 0.0;
    int pick = -1;
    for (int v = 0; v < V; v++)
        if (lp[v] >= threshold && lp[v] > -INFINITY) {
            pick = v;
            acc += exp((double)lp[v] - top);
            if (acc > target)
                break;
        }
    return pick;
}

int mt_search_options_check(const mt_model_info *in, const mt_search_options *o, char *err, size_t errlen)
{
    return mt_decode_opts_check(in, o, 0, err, errlen);
}
