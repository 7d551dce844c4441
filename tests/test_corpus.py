#!/usr/bin/python3
"""tools/corpus/bible.py on tiny synthetic SWORD modules (no download, no ../shared).

Two made-up zText modules (English in KJV versification, German in a made-up "Luther"
one) and their canon headers: markup, footnotes and headings go, the space a tag left
before punctuation goes, verses join until both sides end a sentence, a verse missing on
one side loses its run, a chapter whose verse count differs between the versifications
is skipped, and a pair with an evaluation sentence (a Tatoeba dev line) is dropped. The
modules are read both from a directory of zips and from a bare git directory like the
fetched snapshot; a source without the modules stops with a message naming the file.

Env: MT_SOURCE_DIR. Prints "N passed, M failed".
"""
import gzip
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile
import zlib

SOURCE = os.environ.get("MT_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIBLE = os.path.join(SOURCE, "tools", "corpus", "bible.py")
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
    ("ot", 1, 4): "God saw the light <hi type=\"italic\">itself</hi> .",
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
    ("ot", 1, 4): "Und Gott sah das Licht selbst.",
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
        d = f"{t}/shared/data"
        for split in ("val", "test_2016_flickr"):
            write_gz(f"{d}/multi30k/{split}.en.gz", ["A dog runs."])
            write_gz(f"{d}/multi30k/{split}.de.gz", ["Ein Hund rennt."])
        write_gz(f"{d}/tatoeba/dev.en-de.tsv.gz", ["I am tired.\tIch bin müde."])
        write_gz(f"{d}/debian-l10n/dev.en-de.tsv.gz", ["Open file\tDatei öffnen"])

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

    def test_a_source_without_the_modules_is_refused_by_name(self):
        empty = f"{self.tmp}/empty"
        os.makedirs(empty)
        out = f"{self.tmp}/none.tsv.gz"
        proc = self.run_bible(empty, out)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("NHEB.zip", proc.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
