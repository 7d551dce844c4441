#!/usr/bin/python3
"""File paths and "::"-qualified names come back byte for byte (MT_PROTECT_PATH).

Before the kind existed the shipped en-de wrote "Edit /etc/apt/sources.list and run
./configure." as "... ./konfigurieren.", "Class::Accessor::Grouped" as
"Class::Accessor::Gruppeed" and "../x" as "./x". Runs the real mt-translate
($MT_BUILD_DIR/cli/mt-translate) on models/en-de and models/de-en: each path or name is in
the output exactly as often as in the source, and the words around it are translated.
Skips (77) without the binary or the models.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_unknown_chars import ShippedModelCase  # noqa: E402  (mt-translate on models/, check())


class Paths(ShippedModelCase):
    def test_en_de(self):
        self.check("en-de", [
            ("Edit /etc/apt/sources.list and run ./configure.", ["/etc/apt/sources.list", "./configure"], []),
            ("Class::Accessor::Grouped is a module.", ["Class::Accessor::Grouped"], ["Modul"]),
            ("Copy ~/.bashrc to /usr/share/doc/ and read ../x first.", ["~/.bashrc", "/usr/share/doc/", "../x"],
             ["Kopier"]),
            ("Set Acquire::http::No-Cache to true.", ["Acquire::http::No-Cache"], []),
        ])

    def test_de_en(self):
        self.check("de-en", [
            ("Bearbeiten Sie /etc/apt/sources.list und führen Sie ./configure aus.",
             ["/etc/apt/sources.list", "./configure"], []),
            ("Class::Accessor::Grouped ist ein Modul.", ["Class::Accessor::Grouped"], ["module"]),
        ])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import testmain
    sys.exit(testmain.run(__name__))
