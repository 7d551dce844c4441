/* spells.c: which characters the source side can spell (tokenizer.h mt_tokenizer_spells).
 * The code points of the source vocabulary's pieces are judged at load and sorted into
 * tok->spelled (UNSPELLED set on those it cannot spell: "€"); a character outside that
 * set is judged on demand (an encode, about 3 us), which answers the ones SentencePiece's
 * normalisation maps elsewhere ("™" -> "TM") and confirms the ones it cannot spell (CJK).
 * Read-only after load.
 *
 * Unknown is what encodes to the unk id, and, in a vocabulary without byte fallback, a
 * symbol the vocabulary holds only as a rare piece: the shipped en-de / de-en have "€"
 * (log-probability -13.03), "£" (-14.81), "≤" (-13.71), "≈" and "≥" (-17.09, the floor) as
 * pieces, and the models, which almost never saw them in training, write "665", "awk",
 * "66" and "ARCH" for them; "→" (-12.12), "©" (-11.75), "°" (-10.78) and "×" (-10.48)
 * come back. Letters and punctuation are never judged by rarity: a rare letter is part of
 * a word, and cutting it out would split the word.
 *
 * Nor can the model write back a symbol that SentencePiece's normalisation (NFKC) turns
 * into other characters, vocabulary or not: it reads "™" as "TM", "½" as "1⁄2", "²" as "2",
 * and the shipped models wrote "Diese Marke ist registriert", "Milchbecher", "40 m2".
 * Such a symbol (is_symbol, superscripts and fractions too) is unknown as well. */
#include "tokenizer.h"
#include "tokenizer_impl.h"
#include "status.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* Below this score a symbol's piece counts as unseen (see the top comment). */
#define RARE_SYMBOL_SCORE (-12.5f)

/* Currency, letterlike, number forms, arrows, mathematical and technical symbols, box
 * drawing, shapes, dingbats, super- and subscripts and the Latin-1 signs, superscripts and
 * fractions (¢ £ ¤ ¥ ¦ § ¨ © ¬ ® ¯ ° ± ² ³ ´ ¶ ¹ ¼ ½ ¾ × ÷): characters that are the same in
 * every language and read alone. Not General Punctuation (quotes, dashes). */
static int is_symbol(uint32_t cp)
{
    return (cp >= 0xA2 && cp <= 0xA9) || cp == 0xAC || (cp >= 0xAE && cp <= 0xB4) || cp == 0xB6 || cp == 0xB9 ||
           (cp >= 0xBC && cp <= 0xBE) || cp == 0xD7 || cp == 0xF7 || (cp >= 0x2070 && cp <= 0x209F) ||
           (cp >= 0x20A0 && cp <= 0x20CF) || (cp >= 0x2100 && cp <= 0x2BFF);
}

struct judge {
    const mt_tokenizer *tok;
    int unk;         /* a piece the source vocabulary lacks */
    float min_score; /* the lowest score of the other pieces, "\u2581" alone left out */
    char text[16];   /* the pieces' text without "\u2581", as far as it fits */
    size_t n_text;   /* its length; sizeof text + 1 once it did not fit */
};

static int on_piece(void *ctx, const char *piece, size_t len)
{
    struct judge *j = ctx;
    int32_t id = mt_tok_vocab_find(&j->tok->src, piece, len);
    if (id < 0 || id == j->tok->unk_id) {
        j->unk = 1;
        return 1; /* stop: the answer is known */
    }
    float score;
    if (!(len == 3 && !memcmp(piece, "\xe2\x96\x81", 3)) && !mt_spm_piece_score(j->tok->src_spm, piece, len, &score) &&
        score < j->min_score)
        j->min_score = score;
    for (size_t i = 0; i < len && j->n_text <= sizeof j->text; i++) {
        if (i + 3 <= len && !memcmp(piece + i, "\xe2\x96\x81", 3)) {
            i += 2;
            continue;
        }
        if (j->n_text < sizeof j->text)
            j->text[j->n_text] = piece[i];
        j->n_text++;
    }
    return 0;
}

/* 1 when the source side spells the character s[0, n) (code point cp), 0 when not. */
static int judge(const mt_tokenizer *tok, const char *s, size_t n, uint32_t cp)
{
    char err[160];
    struct judge j = {tok, 0, 0.0f, {0}, 0};
    if (mt_spm_encode(tok->src_spm, s, n, on_piece, &j, err, sizeof err) != 0 || j.unk)
        return 0;
    if (!is_symbol(cp))
        return 1;
    if (j.n_text != n || memcmp(j.text, s, n)) /* normalised into other characters */
        return 0;
    return !(tok->rare_symbols && j.min_score < RARE_SYMBOL_SCORE);
}

/* Marks a code point of tok->spelled the source side cannot spell (code points < 2^21). */
#define UNSPELLED 0x80000000u

static int cp_order(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x & ~UNSPELLED, b = *(const uint32_t *)y & ~UNSPELLED;
    return (a > b) - (a < b);
}

int mt_tok_build_spelled(mt_tokenizer *tok, const char *vocab_path, char *err, size_t errlen)
{
    size_t cap = 0, n = 0;
    tok->rare_symbols = !mt_spm_byte_fallback(tok->src_spm);
    for (int32_t id = 0; id < tok->src.size; id++)
        if (tok->src.piece[id])
            cap += strlen(tok->src.piece[id]);
    uint32_t *cps = malloc(sizeof *cps * (cap + 1));
    if (!cps) {
        mt_error(MT_ERR_INVALID, err, errlen, "%s: out of memory", vocab_path);
        return -1;
    }
    for (int32_t id = 0; id < tok->src.size; id++) {
        const char *p = tok->src.piece[id];
        for (size_t i = 0, len = p ? strlen(p) : 0; i < len;) {
            uint32_t cp;
            int l = mt_utf8_len(p + i, len - i, &cp);
            if (l <= 0) /* a piece that is not UTF-8 spells nothing */
                break;
            if (cp >= 0x80)
                cps[n++] = cp;
            i += (size_t)l;
        }
    }
    qsort(cps, n, sizeof *cps, cp_order);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        char ch[4];
        uint32_t cp = cps[i];
        if (kept > 0 && cp == (cps[kept - 1] & ~UNSPELLED))
            continue;
        cps[kept++] = cp | (judge(tok, ch, mt_utf8_put(cp, ch), cp) ? 0 : UNSPELLED);
    }
    tok->spelled = cps;
    tok->n_spelled = kept;
    return 0;
}

int mt_tokenizer_spells(const mt_tokenizer *tok, const char *ch, size_t n)
{
    uint32_t cp;
    if (!tok || !ch || n == 0 || (size_t)mt_utf8_len(ch, n, &cp) != n)
        return -1;
    if (cp < 0x80) /* ASCII is never reported: masks and markup are made of it */
        return 1;
    const uint32_t *known = bsearch(&cp, tok->spelled, tok->n_spelled, sizeof cp, cp_order);
    if (known)
        return !(*known & UNSPELLED);
    return judge(tok, ch, n, cp);
}
