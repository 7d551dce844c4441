#!/usr/bin/python3
"""tools/corpus/bible.py, 0ad.py and bcontrast.py on tiny synthetic input (no download,
no ../shared).

bible.py:
Two made-up zText modules (English in KJV versification, German in a made-up "Luther"
one) and their canon headers: markup, footnotes and headings go (a psalm-style canonical
title stays, even one closed late), the space a tag left
before punctuation goes, verses join until both sides end a sentence, a verse missing on
one side loses its run, a chapter whose verse count differs between the versifications
is skipped, and a pair with an evaluation sentence (a Tatoeba dev line) is dropped. The
modules are read both from a directory of zips and from a bare git directory like the
fetched snapshot; a source without the modules, or a damaged module, stops with a
message naming the file.

0ad.py, on a folder of two made-up PO files: the header, fuzzy and untranslated entries
are skipped, continued strings and escapes read, a plural entry gives its singular,
[font]/[color] markup goes, a message with a placeholder is skipped, a message with line
breaks (or the game's own backslash-n) pairs line by line (or stays whole where the line
counts differ), and an
evaluation sentence is dropped; an empty folder or a file not in UTF-8 stops with a
message.

bcontrast.py, on made-up train.json/dev.json: the agent's source is English, the
customer's target is, equal sides and evaluation sentences are dropped; files whose
speakers' languages are swapped, or that are missing, not JSON or not dialogues, stop
with a message.

xquad.py, on made-up xquad.en.json/xquad.de.json: a paragraph with as many sentences on
both sides pairs one to one, one whose translation splits a sentence in two is aligned
by length and names (the split half joins its sentence, not the next one), a subscript on its
own line joins its formula, questions pair by id, an evaluation sentence and a news dev
line (--held-out) are dropped; files that do not line up, are missing or are not SQuAD
JSON stop with a message.

canlaws.py, on a made-up Act in English and French (XML as Justice Canada's): provisions
pair by their path of labels ("(a)" and "a)" alike), definitions by their English term
though sorted differently, headings by rank; the other language's term in a definition,
historical notes and repealed provisions are left out; an Act in one language only is
skipped; an evaluation sentence is dropped; --max-pairs keeps the same share every run;
read from a folder and from a git snapshot; malformed XML and a source without the Acts
stop with a message.

Env: MT_SOURCE_DIR. Prints "N passed, M failed".
"""
import contextlib
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import unittest.mock
import zipfile
import zlib

SOURCE = os.environ.get("MT_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIBLE = os.path.join(SOURCE, "tools", "corpus", "bible.py")
ZEROAD = os.path.join(SOURCE, "tools", "corpus", "0ad.py")
BCONTRAST = os.path.join(SOURCE, "tools", "corpus", "bcontrast.py")
NEWS_DEV = os.path.join(SOURCE, "tools", "corpus", "news_dev.py")
XQUAD = os.path.join(SOURCE, "tools", "corpus", "xquad.py")
CANLAWS = os.path.join(SOURCE, "tools", "corpus", "canlaws.py")
PYTHON = "/usr/bin/python3"

CANON = """// test versification
struct sbook otbooks[] = {
  {"Genesis", "Gen", "Gen", 2},
  {"", "", "", 0}
};
struct sbook ntbooks[] = {
  {"Matthew", "Matt", "Matt", 1},
  {"", "", "", 0}
};
int vm[] = {
  // Genesis
  4, 2,
  // Matthew
  3
};
"""
# Genesis 2 has three verses here, two in KJV: that chapter is skipped.
CANON_LUTHER = """struct sbook otbooks_luther[] = {
  {"Genesis", "Gen", "Gen", 2},
};
int vm_luther[] = { 4, 3, 3 };
"""

EN = {  # (testament, book, chapter, verse): OSIS
    ("ot", 1, 1): '<title type="x-s">The creation</title> In the beginning <divineName>God'
                  '</divineName> created the heavens<note>Hebrew: "shamayim"</note>.',
    ("ot", 1, 2): "Now the earth was empty,",
    ("ot", 1, 3): '<l sID="x"/>and God said, "Let there be light."<l eID="x"/>',
    ("ot", 1, 4): '<title canonical="true" type="psalm">A song.</title> God saw the light '
                  '<hi type="italic">itself</hi> .',
    ("ot", 2, 1): "Thus the heavens were finished.",
    ("ot", 2, 2): "On the seventh day God rested.",
    ("nt", 1, 1): "I am tired.",
    ("nt", 1, 2): "This verse has no German side,",
    ("nt", 1, 3): "so its sentence is lost.",
}
DE = {
    ("ot", 1, 1): "Im Anfang schuf Gott die Himmel<note>wörtlich</note>.",
    ("ot", 1, 2): "Die Erde aber war leer;",
    ("ot", 1, 3): "und Gott sprach: »Es werde Licht.«",
    ("ot", 1, 4): '<title canonical="true" type="psalm">Ein Lied. Und Gott</title> sah das '
                  'Licht selbst.',  # a superscription closed late, as in Menge's Psalm 15
    ("ot", 2, 1): "So wurden die Himmel vollendet.",
    ("ot", 2, 2): "Am siebenten Tage ruhte Gott.",
    ("nt", 1, 1): "Ich bin müde.",
    ("nt", 1, 3): "daher geht sein Satz verloren.",
}


def zipped_module(name, verses, counts, v11n=None):
    """A zText module zip: each testament one block; index 0 empty, 1 the testament,
    then per book its heading and per chapter its heading and verses."""
    files = {}
    for t, chapters in (("ot", counts["ot"]), ("nt", counts["nt"])):
        index, entries = 3, {}  # 2: the one book's heading
        for c, n in enumerate(chapters, 1):
            index += 1
            for v in range(1, n + 1):
                if (t, c, v) in verses:
                    entries[index] = verses[(t, c, v)].encode()
                index += 1
        block, bzv = b"", b""
        for i in range(index):
            text = entries.get(i, b"")
            bzv += struct.pack("<IIH", 0, len(block), len(text))
            block += text
        bzz = zlib.compress(block)
        d = f"modules/texts/ztext/{name.lower()}/"
        files[d + f"{t}.bzs"] = struct.pack("<III", 0, len(bzz), len(block))
        files[d + f"{t}.bzv"] = bzv
        files[d + f"{t}.bzz"] = bzz
    conf = f"[{name}]\nModDrv=zText\nSourceType=OSIS\nEncoding=UTF-8\nCompressType=ZIP\n"
    if v11n:
        conf += f"Versification={v11n}\n"
    files[f"mods.d/{name.lower()}.conf"] = conf.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return buf.getvalue()


def write_gz(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def fake_shared(root):
    """The evaluation files manpages.held_out_keys reads, one pair each."""
    d = f"{root}/data"
    for split in ("val", "test_2016_flickr"):
        write_gz(f"{d}/multi30k/{split}.en.gz", ["A dog runs."])
        write_gz(f"{d}/multi30k/{split}.de.gz", ["Ein Hund rennt."])
    write_gz(f"{d}/tatoeba/dev.en-de.tsv.gz", ["I am tired.\tIch bin müde."])
    write_gz(f"{d}/debian-l10n/dev.en-de.tsv.gz", ["Open file\tDatei öffnen"])


class Bible(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_corpus.")
        t = cls.tmp
        os.makedirs(f"{t}/canon")
        with open(f"{t}/canon/canon.h", "w") as f:
            f.write(CANON)
        with open(f"{t}/canon/canon_luther.h", "w") as f:
            f.write(CANON_LUTHER)
        cls.zips = {"NHEB": zipped_module("NHEB", EN, {"ot": [4, 2], "nt": [3]}),
                    "GerMenge": zipped_module("GerMenge", DE, {"ot": [4, 3], "nt": [3]}, "Luther")}
        os.makedirs(f"{t}/zips")
        for name, data in cls.zips.items():
            with open(f"{t}/zips/{name}.zip", "wb") as f:
                f.write(data)
        fake_shared(f"{t}/shared")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_bible(self, source, out):
        return subprocess.run([PYTHON, BIBLE, "--lang", "de", "--source", source,
                               "--canon", f"{self.tmp}/canon", "--shared", f"{self.tmp}/shared",
                               "--out", out], capture_output=True, text=True, timeout=300)

    def rows(self, path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [line.rstrip("\n").split("\t") for line in f]

    EXPECTED = [
        ["In the beginning God created the heavens.", "Im Anfang schuf Gott die Himmel.",
         "bible:Gen 1"],
        ['Now the earth was empty, and God said, "Let there be light."',
         "Die Erde aber war leer; und Gott sprach: »Es werde Licht.«", "bible:Gen 1"],
        ["A song.", "Ein Lied.", "bible:Gen 1"],
        ["God saw the light itself.", "Und Gott sah das Licht selbst.", "bible:Gen 1"],
    ]

    def test_pairs_from_a_directory_of_zips(self):
        out = f"{self.tmp}/dir.tsv.gz"
        proc = self.run_bible(f"{self.tmp}/zips", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.rows(out), self.EXPECTED)
        self.assertIn("skipped_chapters 1", proc.stdout)
        self.assertIn("held_out 1", proc.stdout)

    def test_pairs_from_a_git_snapshot(self):
        repo = f"{self.tmp}/work"
        for lang, name in (("en", "NHEB"), ("de", "GerMenge")):
            os.makedirs(f"{repo}/sources_backup/{lang}/{name}")
            with open(f"{repo}/sources_backup/{lang}/{name}/{name}.zip", "wb") as f:
                f.write(self.zips[name])
        git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.org"]
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "modules"], check=True)
        out = f"{self.tmp}/git.tsv.gz"
        proc = self.run_bible(f"{repo}/.git", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.rows(out), self.EXPECTED)

    def test_a_damaged_module_is_refused_by_name(self):
        broken = f"{self.tmp}/broken"
        os.makedirs(broken)
        with open(f"{broken}/NHEB.zip", "wb") as f:
            f.write(self.zips["NHEB"][:200])  # cut short
        shutil.copy(f"{self.tmp}/zips/GerMenge.zip", broken)
        out = f"{self.tmp}/broken.tsv.gz"
        proc = self.run_bible(broken, out)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("NHEB.zip: not a readable zText module zip", proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertFalse(os.path.exists(out))

    def test_a_source_without_the_modules_is_refused_by_name(self):
        empty = f"{self.tmp}/empty"
        os.makedirs(empty)
        out = f"{self.tmp}/none.tsv.gz"
        proc = self.run_bible(empty, out)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("NHEB.zip", proc.stderr)
        self.assertFalse(os.path.exists(out))

PO_MAPS = r"""# Translators:
# Someone
msgid ""
msgstr ""
"Language: de\n"

#: maps/a.json
msgid "[font=\"sans-bold-16\"]A quiet valley[/font] with a river."
msgstr "[font=\"sans-bold-16\"]Ein stilles Tal[/font] mit einem Fluss."

#, fuzzy
msgid "A fuzzy line that was not checked."
msgstr "Eine unsichere Zeile, nicht geprüft."

msgid "Nobody translated this sentence yet."
msgstr ""

msgid "Players start "
"with a \"small\" army."
msgstr "Die Spieler beginnen "
"mit einem \"kleinen\" Heer."

msgid "Train %(count)s soldiers quickly."
msgstr "Bilde schnell %(count)s Soldaten aus."

msgid "First line of the tip.\nSecond line of the tip."
msgstr "Erste Zeile des Tipps.\nZweite Zeile des Tipps."

msgid "Three lines here.\nThey are merged.\nIn German, two."
msgstr "Drei Zeilen hier.\nSie werden im Deutschen zu zweien zusammengelegt."

msgid "A quote of old. \\n— Someone wise"
msgstr "Ein altes Zitat. \\n— Jemand Weises"
"""
PO_GUI = """msgid ""
msgstr "Language: de\\n"

msgctxt "button"
msgid "One [color=\\"red\\"]unit[/color] selected"
msgid_plural "Many units selected"
msgstr[0] "Eine [color=\\"red\\"]Einheit[/color] ausgewählt"
msgstr[1] "Viele Einheiten ausgewählt"

msgid "I am tired."
msgstr "Ich bin müde."
"""


class ZeroAD(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_corpus.")
        os.makedirs(f"{cls.tmp}/l10n")
        with open(f"{cls.tmp}/l10n/de.public-maps.po", "w", encoding="utf-8") as f:
            f.write(PO_MAPS)
        with open(f"{cls.tmp}/l10n/de.public-gui-other.po", "w", encoding="utf-8") as f:
            f.write(PO_GUI)
        with open(f"{cls.tmp}/l10n/fr.public-maps.po", "w", encoding="utf-8") as f:
            f.write("")  # another language: not read for --lang de
        fake_shared(f"{cls.tmp}/shared")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_0ad(self, folder, out):
        return subprocess.run([PYTHON, ZEROAD, "--lang", "de", "--l10n", folder,
                               "--shared", f"{self.tmp}/shared", "--out", out],
                              capture_output=True, text=True, timeout=300)

    def test_pairs(self):
        out = f"{self.tmp}/out.tsv.gz"
        proc = self.run_0ad(f"{self.tmp}/l10n", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with gzip.open(out, "rt", encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        self.assertEqual(rows, [
            ["One unit selected", "Eine Einheit ausgewählt", "0ad:public-gui-other"],
            ["A quiet valley with a river.", "Ein stilles Tal mit einem Fluss.", "0ad:public-maps"],
            ['Players start with a "small" army.', 'Die Spieler beginnen mit einem "kleinen" Heer.',
             "0ad:public-maps"],
            ["First line of the tip.", "Erste Zeile des Tipps.", "0ad:public-maps"],
            ["Second line of the tip.", "Zweite Zeile des Tipps.", "0ad:public-maps"],
            ["Three lines here. They are merged. In German, two.",
             "Drei Zeilen hier. Sie werden im Deutschen zu zweien zusammengelegt.",
             "0ad:public-maps"],
            ["A quote of old.", "Ein altes Zitat.", "0ad:public-maps"],
            ["— Someone wise", "— Jemand Weises", "0ad:public-maps"],
        ])
        self.assertIn("held_out 1", proc.stdout)

    def test_a_catalogue_not_in_utf8_is_refused(self):
        d = f"{self.tmp}/latin1"
        os.makedirs(d)
        with open(f"{d}/de.public-maps.po", "wb") as f:
            f.write('msgid "Grün"\nmsgstr "Grün"\n'.encode("latin-1"))
        proc = self.run_0ad(d, f"{self.tmp}/latin1.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("de.public-maps.po: not UTF-8", proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def test_a_folder_without_catalogues_is_refused(self):
        empty = f"{self.tmp}/empty"
        os.makedirs(empty)
        proc = self.run_0ad(empty, f"{self.tmp}/none.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no de.*.po files", proc.stderr)


CHAT_TRAIN = {"dlg-1": [
    {"utteranceID": 0, "speaker": "agent", "source": "Hi there! How can I help?",
     "target": "Hallo! Wie kann ich helfen?"},
    {"utteranceID": 1, "speaker": "customer", "source": "Ich möchte eine große Pizza bestellen.",
     "target": "I would like to order a large pizza."},
    {"utteranceID": 2, "speaker": "customer", "source": "Okay.", "target": "Okay."},
    {"utteranceID": 3, "speaker": "agent", "source": "I am tired.", "target": "Ich bin müde."},
]}
CHAT_DEV = {"dlg-2": [
    {"utteranceID": 0, "speaker": "agent", "source": "Your table is booked for seven people.",
     "target": "Ihr Tisch ist für sieben Personen reserviert."},
]}


class BConTrasT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_corpus.")
        fake_shared(f"{cls.tmp}/shared")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def folder(self, name, train, dev):
        d = f"{self.tmp}/{name}"
        os.makedirs(d)
        for file, data in (("train.json", train), ("dev.json", dev)):
            if data is not None:
                with open(f"{d}/{file}", "w", encoding="utf-8") as f:
                    f.write(data if isinstance(data, str) else json.dumps(data))
        return d

    def run_bcontrast(self, source, out):
        return subprocess.run([PYTHON, BCONTRAST, "--lang", "de", "--source", source,
                               "--shared", f"{self.tmp}/shared", "--out", out],
                              capture_output=True, text=True, timeout=300)

    def test_pairs(self):
        out = f"{self.tmp}/chat.tsv.gz"
        proc = self.run_bcontrast(self.folder("good", CHAT_TRAIN, CHAT_DEV), out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with gzip.open(out, "rt", encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        self.assertEqual(rows, [
            ["Hi there!", "Hallo!", "bcontrast:train"],
            ["How can I help?", "Wie kann ich helfen?", "bcontrast:train"],
            ["I would like to order a large pizza.", "Ich möchte eine große Pizza bestellen.",
             "bcontrast:train"],
            ["Your table is booked for seven people.",
             "Ihr Tisch ist für sieben Personen reserviert.", "bcontrast:dev"],
        ])
        self.assertIn("held_out 1", proc.stdout)

    def test_swapped_languages_are_refused(self):
        swapped = {"dlg-1": [dict(u, speaker="customer" if u["speaker"] == "agent" else "agent")
                             for u in CHAT_TRAIN["dlg-1"]]}
        proc = self.run_bcontrast(self.folder("swapped", swapped, CHAT_DEV),
                                  f"{self.tmp}/swapped.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("train.json: 3 of 4 English sides look German", proc.stderr)

    def test_missing_or_broken_files_are_refused(self):
        proc = self.run_bcontrast(self.folder("nodev", CHAT_TRAIN, None), f"{self.tmp}/x.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("neither dev.json nor a git directory", proc.stderr)
        proc = self.run_bcontrast(self.folder("broken", "{not json", CHAT_DEV),
                                  f"{self.tmp}/y.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("train.json is not JSON", proc.stderr)
        self.assertFalse(os.path.exists(f"{self.tmp}/y.tsv.gz"))
        proc = self.run_bcontrast(self.folder("shape", {"dlg-9": "hello"}, CHAT_DEV),
                                  f"{self.tmp}/z.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("train.json: dialogue dlg-9 is not a list of utterance objects", proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)



# NTREX-128 in small: three articles (2, 3 and 2 lines), CRLF line ends as the release has.
NEWS_DOCS = ["bbc.1", "bbc.1", "reuters.7", "reuters.7", "reuters.7", "cnn.3", "cnn.3"]
NEWS = {
    "newstest2019-src.eng.txt": ["Storm hits the coast", "Two  people were hurt.",
                                 "Prices rose by 3%.", "Oh, no.", "The bank said so.",
                                 "Rain is due.", "It will last."],
    "newstest2019-ref.deu.txt": ["Sturm trifft die Küste", "Zwei Menschen wurden verletzt.",
                                 "Die Preise stiegen um 3 %.", "Oh, nein.", "Das sagte die Bank.",
                                 "Regen wird erwartet.", "Er wird anhalten."],
    "newstest2019-ref.fra.txt": ["Une tempête frappe la côte", "Deux personnes ont été blessées.",
                                 "Les prix ont augmenté de 3 %.", "Oh, non.", "La banque l’a dit.",
                                 "La pluie est attendue.", "Elle durera."],
    "DOCUMENT_IDS.tsv": [f"{d}\t{i}" for i, d in enumerate(NEWS_DOCS)],
}


class NewsDev(unittest.TestCase):
    """news_dev.py, on a made-up NTREX snapshot: whole articles up to --lines, English
    with German and French, spaces cleaned; eval_models.py's news-dev set reads what it
    writes ("n/a" without it); misaligned files and a limit below the first article stop
    with a message; --overlap's count of dev pairs with a side that is a training line."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_corpus.")
        repo = f"{cls.tmp}/ntrex"
        os.makedirs(f"{repo}/NTREX-128")
        for name, lines in NEWS.items():
            path = f"{repo}/{name}" if name == "DOCUMENT_IDS.tsv" else f"{repo}/NTREX-128/{name}"
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write("".join(line + "\r\n" for line in lines))
        git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.org"]
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "news"], check=True)
        cls.git_dir = f"{repo}/.git"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_news_dev(self, source, out_dir, *extra):
        return subprocess.run([PYTHON, NEWS_DEV, "--source", source, "--out-dir", out_dir, *extra],
                              capture_output=True, text=True, timeout=300)

    def read(self, path):
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n").split("\t") for line in f]

    def test_whole_articles_up_to_the_limit(self):
        out = f"{self.tmp}/five"
        proc = self.run_news_dev(self.git_dir, out, "--lines", "6")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.read(f"{out}/news-dev.en-de.tsv"), [
            ["Storm hits the coast", "Sturm trifft die Küste"],
            ["Two people were hurt.", "Zwei Menschen wurden verletzt."],
            ["Prices rose by 3%.", "Die Preise stiegen um 3 %."],
            ["Oh, no.", "Oh, nein."],
            ["The bank said so.", "Das sagte die Bank."]])  # cnn.3 would make 7 lines
        self.assertEqual(self.read(f"{out}/news-dev.en-fr.tsv")[4],
                         ["The bank said so.", "La banque l’a dit."])
        self.assertIn("news-dev.en-de.tsv: 5 pairs from 2 articles", proc.stdout)
        proc = self.run_news_dev(self.git_dir, f"{self.tmp}/all", "--lines", "0")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(self.read(f"{self.tmp}/all/news-dev.en-fr.tsv")), 7)

        sys.path.insert(0, os.path.join(SOURCE, "tools"))
        import eval_models
        self.assertIn("news-dev", eval_models.SET_NAMES)
        en, de = eval_models.load_set("news-dev", "de", out)
        self.assertEqual((en[1], de[1]), ("Two people were hurt.", "Zwei Menschen wurden verletzt."))
        self.assertIsNone(eval_models.load_set("news-dev", "de", f"{self.tmp}/nowhere"))

    def test_bad_snapshots_are_refused(self):
        proc = self.run_news_dev(self.git_dir, f"{self.tmp}/x", "--lines", "1")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("--lines 1 is less than the first article (2 lines)", proc.stderr)
        folder = f"{self.tmp}/short"
        os.makedirs(folder)
        for name, lines in NEWS.items():  # German one line short (a line dropped)
            with open(f"{folder}/{name}", "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in (lines[:-1] if "deu" in name else lines))
        proc = self.run_news_dev(folder, f"{self.tmp}/y")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("newstest2019-ref.deu.txt has 6 lines, NTREX-128/newstest2019-src.eng.txt 7",
                      proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        empty = f"{self.tmp}/empty"
        os.makedirs(empty)
        for name in NEWS:
            open(f"{empty}/{name}", "w").close()
        proc = self.run_news_dev(empty, f"{self.tmp}/e")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("the snapshot's files are empty", proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        proc = self.run_news_dev(f"{self.tmp}/nothing", f"{self.tmp}/z")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("fetch github:MicrosoftTranslator/NTREX", proc.stderr)

    def test_overlap_counts_pairs_with_a_training_line(self):
        sys.path.insert(0, os.path.join(SOURCE, "tools", "corpus"))
        import news_dev
        write_gz(f"{self.tmp}/train.en.gz", ["oh,  NO.", "Something else."])
        write_gz(f"{self.tmp}/train.de.gz", ["Das sagte die Bank.", "Oh, nein."])
        pairs = list(zip(NEWS["newstest2019-src.eng.txt"], NEWS["newstest2019-ref.deu.txt"]))
        files = {"mix": [f"{self.tmp}/train.en.gz", f"{self.tmp}/train.de.gz"]}
        with unittest.mock.patch.object(news_dev, "training_files", lambda x: files), \
                contextlib.redirect_stdout(io.StringIO()) as said:
            self.assertEqual(news_dev.overlap(pairs, "de"), 2)  # "Oh, no." and "The bank said so."
        self.assertIn("mix: 2 pairs with a side in it (English 1, de 2)", said.getvalue())


def squad(title, paragraphs):
    """A SQuAD-format file of one article: paragraphs are (context, [(id, question)])."""
    return {"version": "1.1", "data": [{"title": title, "paragraphs": [
        {"context": c, "qas": [{"id": i, "question": q, "answers": []} for i, q in qs]}
        for c, qs in paragraphs]}]}


XQUAD_EN = [
    ("The bridge opened in 1932. It crossed the river Main.",
     [("q1", "When did the bridge open?"), ("q2", "I am tired.")]),
    # The translation splits the first sentence; the second half's length would fit the
    # next sentence as well: only its "3rd-and-9" says where it belongs.
    ("With 4:51 left, Carolina got the ball on their own 24-yard line with a chance to "
     "mount a winning drive, and soon faced 3rd-and-9. On the next play, Miller stripped "
     "the ball away from Newton, and it was recovered by Ward, who returned it five yards. "
     "Carolina failed to score.",
     [("q3", "Who took the ball from Newton?")]),
    ("Divers breathe compressed O\n2 under pressure.", [("q4", "What do divers breathe?")]),
]
XQUAD_DE = [
    ("Die Brücke wurde 1932 eröffnet. Sie überquerte den Main.",
     [("q1", "Wann wurde die Brücke eröffnet?"), ("q2", "Ich bin müde.")]),
    ("Mit 4:51 verbleibenden Minuten brachte Carolina den Ball auf die eigene "
     "24-Yard-Linie und bekam die Chance auf einen entscheidenden Drive. Bald darauf "
     "standen sie vor einem 3rd-and-9. Beim nächsten Spielzug nahm Miller Newton den Ball "
     "ab, und Ward eroberte ihn und trug ihn fünf Yard zurück. Carolina punktete nicht.",
     [("q3", "Wer nahm Newton den Ball ab?")]),
    ("Taucher atmen unter Druck komprimiertes O\n2.", [("q4", "Was atmen Taucher?")]),
]


class XQuAD(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_corpus.")
        fake_shared(f"{cls.tmp}/shared")
        cls.news = f"{cls.tmp}/news-dev.en-de.tsv"
        with open(cls.news, "w", encoding="utf-8") as f:
            f.write("What do divers breathe?\tWas atmen Taucher?\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def folder(self, name, en, de):
        d = f"{self.tmp}/{name}"
        os.makedirs(d)
        for lang, data in (("en", en), ("de", de)):
            if data is not None:
                with open(f"{d}/xquad.{lang}.json", "w", encoding="utf-8") as f:
                    f.write(data if isinstance(data, str) else json.dumps(data))
        return d

    def run_xquad(self, source, out, *held_out):
        extra = [a for h in held_out for a in ("--held-out", h)]
        return subprocess.run([PYTHON, XQUAD, "--lang", "de", "--source", source,
                               "--shared", f"{self.tmp}/shared", "--out", out, *extra],
                              capture_output=True, text=True, timeout=300)

    def test_pairs(self):
        out = f"{self.tmp}/xquad.tsv.gz"
        proc = self.run_xquad(self.folder("good", squad("A", XQUAD_EN), squad("A", XQUAD_DE)),
                              out, self.news)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with gzip.open(out, "rt", encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        self.assertEqual(rows, [
            ["The bridge opened in 1932.", "Die Brücke wurde 1932 eröffnet.", "xquad:context"],
            ["It crossed the river Main.", "Sie überquerte den Main.", "xquad:context"],
            ["When did the bridge open?", "Wann wurde die Brücke eröffnet?", "xquad:question"],
            ["With 4:51 left, Carolina got the ball on their own 24-yard line with a chance "
             "to mount a winning drive, and soon faced 3rd-and-9.",
             "Mit 4:51 verbleibenden Minuten brachte Carolina den Ball auf die eigene "
             "24-Yard-Linie und bekam die Chance auf einen entscheidenden Drive. Bald darauf "
             "standen sie vor einem 3rd-and-9.", "xquad:context"],
            ["On the next play, Miller stripped the ball away from Newton, and it was "
             "recovered by Ward, who returned it five yards.",
             "Beim nächsten Spielzug nahm Miller Newton den Ball ab, und Ward eroberte ihn "
             "und trug ihn fünf Yard zurück.", "xquad:context"],
            ["Carolina failed to score.", "Carolina punktete nicht.", "xquad:context"],
            ["Who took the ball from Newton?", "Wer nahm Newton den Ball ab?", "xquad:question"],
            ["Divers breathe compressed O2 under pressure.",
             "Taucher atmen unter Druck komprimiertes O2.", "xquad:context"],
        ])
        self.assertIn("held_out 2", proc.stdout)  # "I am tired." (Tatoeba dev), the news line

    def test_files_that_do_not_line_up_are_refused(self):
        other_ids = [(c, [("x" + i, q) for i, q in qs]) for c, qs in XQUAD_DE]
        proc = self.run_xquad(self.folder("ids", squad("A", XQUAD_EN), squad("A", other_ids)),
                              f"{self.tmp}/ids.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("3 of 3 paragraphs have other question ids in the translation",
                      proc.stderr)
        proc = self.run_xquad(self.folder("short", squad("A", XQUAD_EN),
                                          squad("A", XQUAD_DE[:2])), f"{self.tmp}/short.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("the English file has 3 paragraphs, the translation 2", proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)

    def test_missing_or_broken_files_are_refused(self):
        proc = self.run_xquad(self.folder("node", squad("A", XQUAD_EN), None),
                              f"{self.tmp}/x.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("neither xquad.de.json nor a git directory", proc.stderr)
        self.assertIn("fetch github:deepmind/xquad", proc.stderr)
        proc = self.run_xquad(self.folder("broken", "{not json", squad("A", XQUAD_DE)),
                              f"{self.tmp}/y.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("xquad.en.json is not JSON", proc.stderr)
        proc = self.run_xquad(self.folder("shape", {"data": [{"title": "A"}]},
                                          squad("A", XQUAD_DE)), f"{self.tmp}/z.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("xquad.en.json: expected SQuAD format", proc.stderr)
        proc = self.run_xquad(self.folder("para", {"data": [{"title": "A", "paragraphs": [
            {"context": 5}]}]}, squad("A", XQUAD_DE)), f"{self.tmp}/w.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("article 'A' has a paragraph without context and qas", proc.stderr)
        self.assertFalse(any(os.path.exists(f"{self.tmp}/{n}.tsv.gz") for n in "xyzw"))
        self.assertNotIn("Traceback", proc.stderr)


LAW_EN = """<?xml version="1.0" encoding="utf-8"?>
<Statute xmlns:lims="http://justice.gc.ca/lims" xml:lang="en"><Identification>
<LongTitle lims:fid="1">An Act respecting bridges</LongTitle></Identification><Body>
<Heading lims:fid="2" level="1"><Label>PART 1</Label><TitleText>Bridges</TitleText></Heading>
<Section lims:fid="3"><MarginalNote lims:fid="4">Definitions</MarginalNote><Label>1</Label>
<Text>The following definitions apply in this Act.</Text>
<Definition lims:fid="5"><Text><DefinedTermEn>bridge</DefinedTermEn> means a structure over water.
(<DefinedTermFr>pont</DefinedTermFr>)</Text></Definition>
<Definition lims:fid="6"><Text><DefinedTermEn>toll</DefinedTermEn> means a fee paid to cross a
bridge. (<DefinedTermFr>péage</DefinedTermFr>)</Text></Definition></Section>
<Section lims:fid="7"><Label>2</Label><Subsection lims:fid="8"><Label>(1)</Label>
<Text>The Minister may build a bridge if</Text>
<Paragraph lims:fid="9"><Label>(a)</Label><Text>the river is wider than 10 metres; or</Text></Paragraph>
<Paragraph lims:fid="10"><Label>(b)</Label><Text>I am tired.</Text></Paragraph></Subsection>
<HistoricalNote><HistoricalNoteSubItem>1985, c. 12, s. 2</HistoricalNoteSubItem></HistoricalNote></Section>
<Section lims:fid="11"><Label>3</Label><Text>[Repealed, 2001, c. 4, s. 9]</Text></Section>
</Body></Statute>
"""
# The French version: other fids where provisions were amended, definitions in French
# alphabetical order, "a)" labels, its own heading label.
LAW_FR = """<?xml version="1.0" encoding="utf-8"?>
<Statute xmlns:lims="http://justice.gc.ca/lims" xml:lang="fr"><Identification>
<LongTitle lims:fid="1">Loi concernant les ponts</LongTitle></Identification><Body>
<Heading lims:fid="2" level="1"><Label>PARTIE 1</Label><TitleText>Ponts</TitleText></Heading>
<Section lims:fid="3"><MarginalNote lims:fid="4">Définitions</MarginalNote><Label>1</Label>
<Text>Les définitions qui suivent s’appliquent à la présente loi.</Text>
<Definition lims:fid="66"><Text><DefinedTermFr>péage</DefinedTermFr> Somme payée pour traverser
un pont. (<DefinedTermEn>toll</DefinedTermEn>)</Text></Definition>
<Definition lims:fid="55"><Text><DefinedTermFr>pont</DefinedTermFr> Ouvrage au-dessus de l’eau.
(<DefinedTermEn>bridge</DefinedTermEn>)</Text></Definition></Section>
<Section lims:fid="7"><Label>2</Label><Subsection lims:fid="88"><Label>(1)</Label>
<Text>Le ministre peut construire un pont si, selon le cas :</Text>
<Paragraph lims:fid="99"><Label>a)</Label><Text>la rivière a plus de 10 mètres de large;</Text></Paragraph>
<Paragraph lims:fid="100"><Label>b)</Label><Text>Je suis fatigué.</Text></Paragraph></Subsection>
<HistoricalNote><HistoricalNoteSubItem>1985, ch. 12, art. 2</HistoricalNoteSubItem></HistoricalNote></Section>
<Section lims:fid="11"><Label>3</Label><Text>[Abrogé, 2001, ch. 4, art. 9]</Text></Section>
</Body></Statute>
"""
LAW_ROWS = [
    ["An Act respecting bridges", "Loi concernant les ponts", "canlaws:B-1"],
    ["Bridges", "Ponts", "canlaws:B-1"],
    ["The following definitions apply in this Act.",
     "Les définitions qui suivent s’appliquent à la présente loi.", "canlaws:B-1"],
    ["bridge means a structure over water.", "pont Ouvrage au-dessus de l’eau.", "canlaws:B-1"],
    ["toll means a fee paid to cross a bridge.", "péage Somme payée pour traverser un pont.",
     "canlaws:B-1"],
    ["The Minister may build a bridge if", "Le ministre peut construire un pont si, selon le cas :",
     "canlaws:B-1"],
    ["the river is wider than 10 metres; or", "la rivière a plus de 10 mètres de large;",
     "canlaws:B-1"],
]


class CanLaws(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_corpus.")
        d = f"{cls.tmp}/shared/data"
        for split in ("val", "test_2016_flickr"):
            write_gz(f"{d}/multi30k/{split}.en.gz", ["A dog runs."])
            write_gz(f"{d}/multi30k/{split}.fr.gz", ["Un chien court."])
        write_gz(f"{d}/tatoeba/dev.en-fr.tsv.gz", ["I am tired.\tJe suis fatigué."])
        write_gz(f"{d}/debian-l10n/dev.en-fr.tsv.gz", ["Open file\tOuvrir le fichier"])
        cls.news = f"{cls.tmp}/news-dev.en-fr.tsv"
        with open(cls.news, "w", encoding="utf-8") as f:
            f.write("Definitions\tDéfinitions\n")
        cls.repo = cls.acts("repo", {"B-1": (LAW_EN, LAW_FR), "E-9": (LAW_EN, None)})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def acts(cls, name, laws):
        root = f"{cls.tmp}/{name}"
        os.makedirs(f"{root}/eng/acts")
        os.makedirs(f"{root}/fra/lois")
        for act, (en, fr) in laws.items():
            for folder, text in (("eng/acts", en), ("fra/lois", fr)):
                if text is not None:
                    with open(f"{root}/{folder}/{act}.xml", "w", encoding="utf-8") as f:
                        f.write(text)
        return root

    def run_canlaws(self, source, out, *extra):
        return subprocess.run([PYTHON, CANLAWS, "--lang", "fr", "--source", source,
                               "--shared", f"{self.tmp}/shared", "--held-out", self.news,
                               "--out", out, *extra],
                              capture_output=True, text=True, timeout=300)

    def rows(self, path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [line.rstrip("\n").split("\t") for line in f]

    def test_pairs_from_a_folder(self):
        out = f"{self.tmp}/laws.tsv.gz"
        proc = self.run_canlaws(self.repo, out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.rows(out), LAW_ROWS)
        self.assertIn("acts 1,", proc.stdout)  # E-9 has no French version
        self.assertIn("held_out 2", proc.stdout)  # "I am tired." (Tatoeba dev), the news line

    def test_pairs_from_a_git_snapshot_and_the_cap(self):
        git = ["git", "-C", self.repo, "-c", "user.name=t", "-c", "user.email=t@example.org"]
        if not os.path.isdir(f"{self.repo}/.git"):
            subprocess.run(["git", "init", "-q", self.repo], check=True)
            subprocess.run(git + ["add", "."], check=True)
            subprocess.run(git + ["commit", "-q", "-m", "acts"], check=True)
        out = f"{self.tmp}/laws-git.tsv.gz"
        proc = self.run_canlaws(f"{self.repo}/.git", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.rows(out), LAW_ROWS)
        capped = []
        for run in range(2):
            out = f"{self.tmp}/laws-cap{run}.tsv.gz"
            proc = self.run_canlaws(self.repo, out, "--max-pairs", "3")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            capped.append(self.rows(out))
        self.assertEqual(len(capped[0]), 3)
        self.assertEqual(capped[0], capped[1])
        self.assertTrue(all(r in LAW_ROWS for r in capped[0]))
        self.assertIn("pairs_before_cap 7", proc.stdout)

    def test_bad_sources_are_refused(self):
        bad = self.acts("bad", {"B-1": (LAW_EN, LAW_FR.replace("</Body>", ""))})
        proc = self.run_canlaws(bad, f"{self.tmp}/bad.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("fra/lois/B-1.xml: not well-formed XML", proc.stderr)
        self.assertFalse(os.path.exists(f"{self.tmp}/bad.tsv.gz"))
        proc = self.run_canlaws(f"{self.tmp}/nothing", f"{self.tmp}/none.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("fetch github:justicecanada/laws-lois-xml", proc.stderr)
        empty = self.acts("empty", {})
        proc = self.run_canlaws(empty, f"{self.tmp}/empty.tsv.gz")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no Act in both eng/acts/ and fra/lois/", proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
