/* detect.h: language identification of a text (for POST /detect and source "auto"),
 * over libexttextcat, the n-gram classifier LibreOffice uses (Debian libexttextcat-dev,
 * fingerprints in libexttextcat-data).
 *
 * A detector is created for a list of candidate languages (ISO 639-1 codes such as
 * "en", "de"); only those languages' fingerprints are loaded, so answers are restricted
 * to the loaded models' languages, which is what makes short texts usable (see the
 * accuracy table printed by tests/detect_accuracy.c). With no candidates every
 * language libexttextcat knows is considered.
 *
 * Thread-safety: a detector may be used by any number of threads at once; calls on one
 * detector are serialised by a mutex inside it (libexttextcat's handle is not
 * re-entrant). Errors: create returns NULL with a message; mt_detect returns -1.
 * Ownership: create reads the codes and data_dir during the call only; results go into
 * the caller's array; the caller frees the detector with mt_detector_free.
 */
#ifndef MT_DETECT_H
#define MT_DETECT_H

#include <stddef.h>

typedef struct mt_detector mt_detector;

/* One answer: a language code and a confidence in 0..100 (best first). */
typedef struct {
    char code[16];
    double confidence;
} mt_detect_result;

/* Loads the fingerprints of `codes` (n codes; n == 0: all) from data_dir (NULL: the
 * directory libexttextcat-data installs). Unknown codes are an error naming them. */
mt_detector *mt_detector_create(const char *const *codes, int n, const char *data_dir,
                                char *err, size_t errlen);
void mt_detector_free(mt_detector *det);

/* Number of languages the detector chooses among. */
int mt_detector_count(const mt_detector *det);

/* Classifies text[0..len). Fills up to max results, best first, and returns their
 * number: 0 when the text gives no evidence (empty, digits, or too many languages tie).
 * Confidence: libexttextcat keeps the languages whose n-gram distance is within 3% of
 * the best; each gets 100 * (best/its distance), normalised over those kept, so one
 * clear winner scores 100 and a tie between two about 50 each. Returns -1 on error. */
int mt_detect(mt_detector *det, const char *text, size_t len, mt_detect_result *results,
              int max);

#endif
