// spm_shim.cc: extern "C" wrapper over sentencepiece::SentencePieceProcessor.
// The only C++ file of the project. Every entry point catches everything: no
// exception may unwind into C frames.
#include "spm_shim.h"

#include <sentencepiece_processor.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

struct mt_spm {
  sentencepiece::SentencePieceProcessor proc;
};

namespace {

__attribute__((format(printf, 3, 4))) void set_err(char *err, size_t errlen, const char *fmt,
                                                   ...) {
  if (err == nullptr || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void clear_err(char *err, size_t errlen) {
  if (err != nullptr && errlen > 0) err[0] = '\0';
}

}  // namespace

extern "C" mt_spm *mt_spm_load(const char *path, char *err, size_t errlen) {
  mt_spm *spm = nullptr;
  try {
    spm = new mt_spm();
    const auto status = spm->proc.Load(path);
    if (!status.ok()) {
      set_err(err, errlen, "%s: not a valid SentencePiece model (%s)", path, status.message());
      delete spm;
      return nullptr;
    }
    if (spm->proc.GetPieceSize() <= 0) {
      set_err(err, errlen, "%s: %s", path, "SentencePiece model has no pieces");
      delete spm;
      return nullptr;
    }
    clear_err(err, errlen);
    return spm;
  } catch (const std::exception &e) {
    set_err(err, errlen, "%s: cannot load SentencePiece model (%s)", path, e.what());
  } catch (...) {
    set_err(err, errlen, "%s: %s", path, "cannot load SentencePiece model (unknown error)");
  }
  delete spm;
  return nullptr;
}

extern "C" void mt_spm_free(mt_spm *spm) {
  try {
    delete spm;
  } catch (...) {
  }
}

extern "C" int mt_spm_encode(const mt_spm *spm, const char *text, size_t len,
                             mt_spm_piece_fn fn, void *ctx, char *err, size_t errlen) {
  clear_err(err, errlen);
  try {
    std::vector<std::string> pieces;
    const auto status = spm->proc.Encode(std::string_view(text, len), &pieces);
    if (!status.ok()) {
      set_err(err, errlen, "SentencePiece encode failed: %s", status.message());
      return -1;
    }
    for (const std::string &p : pieces) {
      if (fn(ctx, p.data(), p.size()) != 0) return -1;
    }
    return 0;
  } catch (const std::exception &e) {
    set_err(err, errlen, "SentencePiece encode failed: %s", e.what());
  } catch (...) {
    set_err(err, errlen, "SentencePiece encode failed: %s", "unknown error");
  }
  return -1;
}

extern "C" char *mt_spm_decode(const mt_spm *spm, const char *const *pieces, size_t n,
                               size_t *outlen, char *err, size_t errlen) {
  clear_err(err, errlen);
  try {
    std::vector<std::string_view> views;
    views.reserve(n);
    for (size_t i = 0; i < n; i++) views.emplace_back(pieces[i]);
    std::string text;
    const auto status = spm->proc.Decode(views, &text);
    if (!status.ok()) {
      set_err(err, errlen, "SentencePiece decode failed: %s", status.message());
      return nullptr;
    }
    char *out = static_cast<char *>(std::malloc(text.size() + 1));
    if (out == nullptr) {
      set_err(err, errlen, "SentencePiece decode failed: %s", "out of memory");
      return nullptr;
    }
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    *outlen = text.size();
    return out;
  } catch (const std::exception &e) {
    set_err(err, errlen, "SentencePiece decode failed: %s", e.what());
  } catch (...) {
    set_err(err, errlen, "SentencePiece decode failed: %s", "unknown error");
  }
  return nullptr;
}

extern "C" int mt_spm_piece_score(const mt_spm *spm, const char *piece, size_t len, float *score) {
  try {
    const int id = spm->proc.PieceToId(std::string_view(piece, len));
    if (spm->proc.IsUnknown(id)) return -1;
    *score = spm->proc.GetScore(id);
    return 0;
  } catch (...) {
    return -1;
  }
}

extern "C" int mt_spm_byte_fallback(const mt_spm *spm) {
  try {
    return spm->proc.IsByte(spm->proc.PieceToId("<0xE2>")) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}
