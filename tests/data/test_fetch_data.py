import subprocess
import sys
import zipfile

from helpers import REPO, write_tiny_corpus

SCRIPT = [sys.executable, str(REPO / "scripts" / "fetch_data.py")]


def fetch(tmp_path, *args):
    return subprocess.run(SCRIPT + ["--dest", str(tmp_path / "raw"), *args],
                          capture_output=True, text=True, cwd=tmp_path)


def test_copies_from_the_mirror_then_does_nothing(tmp_path):
    write_tiny_corpus(tmp_path / "mirror" / "cmn-eng" / "cmn.txt")
    (tmp_path / "mirror" / "cmn-eng" / "README.md").write_text("credit", encoding="utf-8")
    first = fetch(tmp_path, "--mirror", str(tmp_path / "mirror"))
    assert first.returncode == 0, first.stderr
    target = tmp_path / "raw" / "cmn-eng" / "cmn.txt"
    assert target.read_bytes() == (tmp_path / "mirror" / "cmn-eng" / "cmn.txt").read_bytes()
    assert (tmp_path / "raw" / "cmn-eng" / "README.md").read_text() == "credit"
    again = fetch(tmp_path, "--mirror", str(tmp_path / "nowhere"), "--url", "file:///nowhere.zip")
    assert again.returncode == 0 and "already there" in again.stderr


def test_downloads_and_extracts_when_there_is_no_mirror(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "cmn.txt")
    with zipfile.ZipFile(tmp_path / "cmn-eng.zip", "w") as archive:
        archive.write(corpus, "cmn.txt")
        archive.writestr("_about.txt", "about")
    result = fetch(tmp_path, "--mirror", str(tmp_path / "nowhere"),
                   "--url", (tmp_path / "cmn-eng.zip").as_uri())
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "raw" / "cmn-eng" / "cmn.txt").read_bytes() == corpus.read_bytes()


def test_a_bad_file_in_place_is_fetched_again(tmp_path):
    write_tiny_corpus(tmp_path / "mirror" / "cmn-eng" / "cmn.txt")
    (tmp_path / "raw" / "cmn-eng").mkdir(parents=True)
    (tmp_path / "raw" / "cmn-eng" / "cmn.txt").write_text("<html>error page</html>\n")
    result = fetch(tmp_path, "--mirror", str(tmp_path / "mirror"))
    assert result.returncode == 0 and "fetching it again" in result.stderr
    fetched = tmp_path / "raw" / "cmn-eng" / "cmn.txt"
    assert fetched.read_text(encoding="utf-8-sig").startswith("Tom")


def test_neither_mirror_nor_download_says_what_to_do(tmp_path):
    result = fetch(tmp_path, "--mirror", str(tmp_path / "nowhere"), "--url",
                   (tmp_path / "missing.zip").as_uri())
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "error: could not download" in result.stderr
    assert "data/raw/cmn-eng/cmn.txt" in result.stderr and "DATA_MIRROR" in result.stderr
    assert not (tmp_path / "raw" / "cmn-eng" / "cmn.txt").exists()


def test_a_mirror_file_in_the_wrong_format_is_refused(tmp_path):
    (tmp_path / "mirror" / "cmn-eng").mkdir(parents=True)
    (tmp_path / "mirror" / "cmn-eng" / "cmn.txt").write_text("no tabs\nat all\n")
    result = fetch(tmp_path, "--mirror", str(tmp_path / "mirror"))
    assert result.returncode == 2 and "not the cmn-eng corpus: only 0 of 2 lines" in result.stderr
