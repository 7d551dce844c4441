#!/usr/bin/python3
"""Glossary enforcement on real software messages: do the glossary's target terms come
out, and what does enforcing them cost the rest of the translation?

Takes the messages of the debian-l10n dev split (../shared/data/debian-l10n/dev.en-de)
in which a term of the glossary below occurs (word boundaries, first letter in either
case, as translator/glossary.c matches) and whose German reference holds that term's
target (so the glossary agrees with the reference), up to --count messages. Writes the
glossary as TSV, translates the messages with mt-translate without and with --glossary,
and reports:

  terms:  of the term occurrences in those messages, the share whose target term is in
          the output (as often as the source term occurs; first letter in either case);
  chrF:   of the outputs against the references (tools/bleu.py), without and with;
  time:   seconds of each mt-translate run (model load included).

  tools/eval_glossary.py [--cli build/cli/mt-translate] [--model models/en-de]
                         [--shared ../shared] [--count 250] [--check] [--show] [--out DIR]

--check exits 1 unless the term share with the glossary is >= 98% and its chrF no more
than 1 point below the one without; exit 77 when the data or the model is absent.
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bleu  # noqa: E402

# Software terms as the German references of debian-l10n translate them (en -> de).
GLOSSARY = [
    ("file", "Datei"), ("files", "Dateien"), ("folder", "Ordner"), ("folders", "Ordner"),
    ("directory", "Verzeichnis"), ("package", "Paket"), ("packages", "Pakete"),
    ("server", "Server"), ("password", "Passwort"), ("user", "Benutzer"), ("users", "Benutzer"),
    ("window", "Fenster"), ("windows", "Fenster"), ("menu", "Menü"), ("document", "Dokument"),
    ("documents", "Dokumente"), ("error", "Fehler"), ("errors", "Fehler"), ("settings", "Einstellungen"),
    ("option", "Option"), ("options", "Optionen"), ("table", "Tabelle"), ("tables", "Tabellen"),
    ("cell", "Zelle"), ("cells", "Zellen"), ("page", "Seite"), ("pages", "Seiten"), ("image", "Bild"),
    ("images", "Bilder"), ("field", "Feld"), ("fields", "Felder"), ("value", "Wert"), ("values", "Werte"),
    ("list", "Liste"), ("data", "Daten"), ("database", "Datenbank"), ("dialog", "Dialog"),
    ("toolbar", "Symbolleiste"), ("keyboard", "Tastatur"), ("printer", "Drucker"), ("network", "Netzwerk"),
    ("connection", "Verbindung"), ("device", "Gerät"), ("devices", "Geräte"), ("account", "Konto"),
    ("name", "Name"), ("color", "Farbe"), ("colour", "Farbe"), ("font", "Schriftart"), ("line", "Zeile"),
    ("lines", "Zeilen"), ("column", "Spalte"), ("columns", "Spalten"), ("row", "Zeile"), ("rows", "Zeilen"),
    ("text", "Text"), ("number", "Nummer"), ("date", "Datum"), ("time", "Zeit"), ("version", "Version"),
    ("system", "System"), ("program", "Programm"), ("application", "Anwendung"), ("applications", "Anwendungen"),
    ("function", "Funktion"), ("functions", "Funktionen"), ("object", "Objekt"), ("objects", "Objekte"),
    ("chart", "Diagramm"), ("slide", "Folie"), ("slides", "Folien"), ("sheet", "Tabelle"),
    ("formula", "Formel"), ("format", "Format"), ("style", "Vorlage"), ("styles", "Vorlagen"),
    ("icon", "Symbol"), ("key", "Schlüssel"), ("message", "Nachricht"), ("messages", "Nachrichten"),
    ("address", "Adresse"), ("mouse", "Maus"), ("screen", "Bildschirm"), ("panel", "Leiste"),
    ("tab", "Reiter"), ("size", "Größe"), ("position", "Position"), ("selection", "Auswahl"),
    ("range", "Bereich"), ("area", "Bereich"), ("mode", "Modus"), ("game", "Spiel"), ("card", "Karte"),
    ("cards", "Karten"), ("player", "Spieler"), ("language", "Sprache"), ("search", "Suche"),
    ("content", "Inhalt"), ("contents", "Inhalt"), ("entry", "Eintrag"), ("entries", "Einträge"),
    ("command", "Befehl"), ("commands", "Befehle"), ("character", "Zeichen"), ("characters", "Zeichen"),
    ("word", "Wort"), ("words", "Wörter"), ("paragraph", "Absatz"), ("template", "Vorlage"),
    ("calendar", "Kalender"), ("task", "Aufgabe"), ("tasks", "Aufgaben"), ("project", "Projekt"),
    ("module", "Modul"), ("plugin", "Plugin"), ("extension", "Erweiterung"), ("library", "Bibliothek"),
]


def term_re(term):
    first = re.escape(term[0])
    if term[0].isalpha():
        first = "[%s%s]" % (term[0].lower(), term[0].upper())
    return re.compile(r"(?<![\w])" + first + re.escape(term[1:]) + r"(?![\w])")


def count_target(term, text):
    """Occurrences of term in text, first letter in either case (compounds count)."""
    return len(re.findall("[%s%s]%s" % (re.escape(term[0].lower()), re.escape(term[0].upper()),
                                        re.escape(term[1:])), text))


def select(path, count):
    """(source, reference, [(target term, occurrences)]) of messages with agreeing terms."""
    regs = [(s, t, term_re(s)) for s, t in GLOSSARY]
    out, seen = [], set()
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 2 or cols[0] in seen or len(cols[0]) > 300 or "\t" in cols[0]:
                continue
            src, ref = cols[0], cols[1]
            # longest terms first, occurrences not overlapping (the matcher's rule)
            taken, terms = [], {}
            for s, t, r in sorted(regs, key=lambda x: -len(x[0])):
                for m in r.finditer(src):
                    if any(a < m.end() and m.start() < b for a, b in taken):
                        continue
                    taken.append((m.start(), m.end()))
                    terms[t] = terms.get(t, 0) + 1
            if not terms or any(count_target(t, ref) == 0 for t in terms):
                continue
            seen.add(src)
            out.append((src, ref, sorted(terms.items())))
            if len(out) == count:
                break
    return out


def translate(cli, model, lines, glossary):
    cmd = [cli, "-m", model] + (["--glossary", glossary] if glossary else [])
    t0 = time.monotonic()
    p = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=3600)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("mt-translate failed: " + p.stderr[-2000:])
    out = p.stdout.split("\n")[:len(lines)]
    if len(out) != len(lines):
        sys.exit("mt-translate: %d lines for %d" % (len(out), len(lines)))
    return out, dt


def term_share(items, outputs):
    hit = total = 0
    for (_, _, terms), o in zip(items, outputs):
        for t, n in terms:
            total += n
            hit += min(n, count_target(t, o))
    return hit, total


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(root, "build", "cli", "mt-translate"))
    ap.add_argument("--model", default=os.path.join(root, "models", "en-de"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(root), "shared"))
    ap.add_argument("--count", type=int, default=250)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--show", action="store_true", help="print every message's outputs")
    ap.add_argument("--out", help="keep the glossary, sources and outputs in this directory")
    a = ap.parse_args(argv)
    data = os.path.join(a.shared, "data", "debian-l10n", "dev.en-de.tsv.gz")
    for p, what in ((data, "the debian-l10n dev split"), (os.path.join(a.model, "model.safetensors"), "the model")):
        if not os.path.exists(p):
            print("SKIP: %s is absent (%s)" % (what, p))
            return 77
    items = select(data, a.count)
    work = a.out or tempfile.mkdtemp(prefix="eval-glossary-")
    os.makedirs(work, exist_ok=True)
    gpath = os.path.join(work, "glossary.tsv")
    with open(gpath, "w", encoding="utf-8") as f:
        f.write("".join("%s\t%s\n" % e for e in GLOSSARY))
    srcs = [s for s, _, _ in items]
    refs = [r for _, r, _ in items]
    plain, t_plain = translate(a.cli, a.model, srcs, None)
    forced, t_forced = translate(a.cli, a.model, srcs, gpath)
    if a.out:
        for name, lines in (("source", srcs), ("reference", refs), ("plain", plain), ("glossary", forced)):
            with open(os.path.join(work, name + ".txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
    if a.show:
        for (s, r, terms), p, g in zip(items, plain, forced):
            print("SRC %s\nREF %s\nOFF %s\nON  %s\n    %s\n" % (s, r, p, g, terms))
    hp, tot = term_share(items, plain)
    hg, _ = term_share(items, forced)
    c_plain = bleu.corpus_chrf(plain, refs)
    c_forced = bleu.corpus_chrf(forced, refs)
    print("messages: %d, term occurrences: %d, glossary entries: %d" % (len(items), tot, len(GLOSSARY)))
    print("terms in output: without glossary %d/%d = %.1f%%, with %d/%d = %.1f%%"
          % (hp, tot, 100.0 * hp / tot, hg, tot, 100.0 * hg / tot))
    print("chrF: without %.2f, with %.2f (%+.2f)" % (c_plain, c_forced, c_forced - c_plain))
    print("time: without %.1f s, with %.1f s (%+.0f%%)" % (t_plain, t_forced, 100.0 * (t_forced / t_plain - 1)))
    if a.check:
        ok = hg >= 0.98 * tot and c_forced >= c_plain - 1.0 and len(items) >= 200
        print("check: %s" % ("pass" if ok else "FAIL"))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
