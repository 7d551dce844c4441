"""A file of a public repository that the `fetch` tool brought here (a bare git
directory under /work/.mirror, read at HEAD), or of a plain folder holding the same
files, for the tools/corpus scripts that read such repositories (bible.py, bcontrast.py).
"""
import os
import subprocess


def read(source, path, fetch_hint):
    """The bytes of PATH: SOURCE/BASENAME(PATH) if that is a file, else PATH at HEAD of
    the git directory SOURCE. Stops with a message naming both and FETCH_HINT (what to
    fetch) when neither has it."""
    plain = os.path.join(source, os.path.basename(path))
    if os.path.isfile(plain):
        with open(plain, "rb") as f:
            return f.read()
    proc = subprocess.run(["git", "--git-dir", source, "show", f"HEAD:{path}"],
                          capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"{source}: neither {os.path.basename(path)} nor a git directory "
                         f"with {path} ({proc.stderr.decode('utf-8', 'replace').strip()}); "
                         f"fetch {fetch_hint} and give its git directory as --source "
                         "(tools/corpus/README.md)")
    return proc.stdout
