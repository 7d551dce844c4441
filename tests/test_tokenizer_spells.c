/* test_tokenizer_spells.c: mt_tokenizer_spells on the shipped models/en-de and de-en (no
 * byte fallback): the characters the source side reads as <unk> ("✓", CJK) and the rare
 * symbol pieces the models never learnt ("€", "£") and the symbols normalisation turns
 * into other characters ("™" -> "TM") are reported, the ones it spells, directly ("ä",
 * "→", "°") or after normalisation (a letter: "ﬁ" -> "fi"), are not, and the answer agrees
 * with mt_tokenizer_encode on every code point of U+0080..U+2FFF, CJK and emoji samples
 * (an unk id: unknown; none: spelled, symbols aside). Skips (77) without the models. */
#include "check_main.h"
#include "tokenizer.h"

#include <check.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dirs[2][PATH_MAX];

static size_t put_utf8(uint32_t cp, char *o)
{
    if (cp < 0x80)
        return o[0] = (char)cp, 1;
    if (cp < 0x800)
        return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)), o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    return o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F)), o[2] = (char)(0x80 | (cp >> 6 & 0x3F)),
           o[3] = (char)(0x80 | (cp & 0x3F)), 4;
}

static mt_tokenizer *load(int i)
{
    char err[512];
    mt_tokenizer *tok = mt_tokenizer_load(dirs[i], err, sizeof err);
    ck_assert_msg(tok != NULL, "load %s: %s", dirs[i], err);
    return tok;
}

static int spells(const mt_tokenizer *tok, const char *s) { return mt_tokenizer_spells(tok, s, strlen(s)); }

/* tokenizer.h's symbols: the only characters judged by their pieces' rarity or by what
 * normalisation makes of them. */
static int is_symbol(uint32_t cp)
{
    return (cp >= 0xA2 && cp <= 0xA9) || cp == 0xAC || (cp >= 0xAE && cp <= 0xB4) || cp == 0xB6 || cp == 0xB9 ||
           (cp >= 0xBC && cp <= 0xBE) || cp == 0xD7 || cp == 0xF7 || (cp >= 0x2070 && cp <= 0x209F) ||
           (cp >= 0x20A0 && cp <= 0x20CF) || (cp >= 0x2100 && cp <= 0x2BFF);
}

/* 1 when encoding ch alone gives no unk id. */
static int encode_spells(const mt_tokenizer *tok, const char *ch, size_t n)
{
    int32_t ids[64];
    char err[256];
    int k = mt_tokenizer_encode(tok, ch, n, ids, 64, err, sizeof err);
    ck_assert_msg(k >= 0 && k <= 64, "encode U+%s: %s", ch, err);
    for (int i = 0; i < k; i++)
        if (ids[i] == mt_tokenizer_unk_id(tok))
            return 0;
    return 1;
}

START_TEST(known_characters)
{
    mt_tokenizer *tok = load(_i);
    ck_assert_int_eq(spells(tok, "\xe2\x82\xac"), 0); /* € (a rare piece) */
    ck_assert_int_eq(encode_spells(tok, "\xe2\x82\xac", 3), 1);
    ck_assert_int_eq(spells(tok, "\xc2\xa3"), 0);     /* £ */
    ck_assert_int_eq(spells(tok, "\xe2\x89\xa4"), 0); /* ≤ */
    ck_assert_int_eq(spells(tok, "\xe2\x86\x92"), 1); /* → (learnt) */
    ck_assert_int_eq(spells(tok, "\xc2\xb0"), 1);     /* ° */
    ck_assert_int_eq(spells(tok, "\xc2\xa9"), 1);     /* © */
    ck_assert_int_eq(spells(tok, "\xe2\x80\x9e"), 1); /* „ (punctuation: never by rarity) */
    ck_assert_int_eq(spells(tok, "\xe2\x9c\x93"), 0); /* ✓ */
    ck_assert_int_eq(spells(tok, "\xe6\x9d\xb1"), 0); /* 東 */
    ck_assert_int_eq(spells(tok, "\xc3\xa4"), 1);     /* ä */
    ck_assert_int_eq(spells(tok, "\xc3\x9f"), 1);     /* ß */
    ck_assert_int_eq(spells(tok, "a"), 1);
    /* ™: NFKC makes it "TM", which encodes without unk, but the model cannot write "™" */
    ck_assert_int_eq(encode_spells(tok, "\xe2\x84\xa2", 3), 1);
    ck_assert_int_eq(spells(tok, "\xe2\x84\xa2"), 0);
    ck_assert_int_eq(spells(tok, "\xc2\xb2"), 0); /* ² -> 2 */
    ck_assert_int_eq(spells(tok, "\xc2\xbd"), 0); /* ½ -> 1⁄2 */
    /* a letter normalised is still spelled: "ﬁ" -> "fi" */
    ck_assert_int_eq(spells(tok, "\xef\xac\x81"), 1);
    /* every ASCII character, control characters too */
    for (int c = 1; c < 0x80; c++) {
        char ch = (char)c;
        ck_assert_msg(mt_tokenizer_spells(tok, &ch, 1) == 1, "ASCII %d flagged", c);
    }
    /* not one character: refused */
    ck_assert_int_eq(mt_tokenizer_spells(tok, "ab", 2), -1);
    ck_assert_int_eq(mt_tokenizer_spells(tok, "\xe2\x82", 2), -1);
    ck_assert_int_eq(mt_tokenizer_spells(tok, "\xff", 1), -1);
    ck_assert_int_eq(mt_tokenizer_spells(tok, "\xed\xa0\x80", 3), -1); /* a surrogate */
    ck_assert_int_eq(mt_tokenizer_spells(tok, "", 0), -1);
    ck_assert_int_eq(mt_tokenizer_spells(NULL, "a", 1), -1);
    mt_tokenizer_free(tok);
}
END_TEST

/* The set built at load and the on-demand encode together say what encoding says. */
START_TEST(agrees_with_encode)
{
    mt_tokenizer *tok = load(_i);
    static const uint32_t ranges[][2] = {{0x80, 0x2FFF}, {0x3000, 0x30FF}, {0x4E00, 0x4FFF}, {0xFB00, 0xFFFD},
                                         {0x1F300, 0x1F6FF}, {0x1F900, 0x1F9FF}};
    int unknown = 0, spelled = 0, rare = 0;
    for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++)
        for (uint32_t cp = ranges[r][0]; cp <= ranges[r][1]; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF)
                continue;
            char ch[4];
            size_t n = put_utf8(cp, ch);
            int enc = encode_spells(tok, ch, n), got = mt_tokenizer_spells(tok, ch, n);
            ck_assert_msg(got == enc || (enc && !got && is_symbol(cp)), "U+%04X: spells %d, encode says %d (%s)",
                          (unsigned)cp, got, enc, dirs[_i]);
            unknown += !got;
            spelled += got;
            rare += enc && !got;
        }
    /* both answers occur: the check is not vacuous */
    ck_assert_int_gt(unknown, 1000);
    ck_assert_int_gt(spelled, 100);
    ck_assert_int_gt(rare, 10);
    printf("%s: %d spelled, %d unknown, %d of them symbols encoding without unk\n", dirs[_i], spelled, unknown, rare);
    mt_tokenizer_free(tok);
}
END_TEST

int main(void)
{
    const char *src = getenv("MT_SOURCE_DIR");
    snprintf(dirs[0], sizeof dirs[0], "%s/models/en-de", src && *src ? src : ".");
    snprintf(dirs[1], sizeof dirs[1], "%s/models/de-en", src && *src ? src : ".");
    char p[PATH_MAX + 16];
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/vocab.json", dirs[i]);
        if (access(p, R_OK) != 0) {
            printf("SKIP: %s missing (the shipped models)\n", p);
            return 77;
        }
    }
    Suite *s = suite_create("tokenizer_spells");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, known_characters, 0, 2);
    tcase_add_loop_test(tc, agrees_with_encode, 0, 2);
    suite_add_tcase(s, tc);
    return mt_check_run(srunner_create(s));
}
