"""Where the URL and the token come from, and the file `poolctl login` writes (mode 0600)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from poolctl.config import config_path, normalise_url, read_file, resolve, write_file
from poolctl.errors import UsageError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("POOLWEB_URL", raising=False)
    monkeypatch.delenv("POOLWEB_TOKEN", raising=False)
    return tmp_path


def test_the_file_is_in_the_platforms_config_directory(home):
    assert config_path() == home / "poolctl" / "config.json"


def test_the_file_is_readable_by_its_owner_only(home):
    path = write_file("http://127.0.0.1:8000", "secret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": "http://127.0.0.1:8000", "token": "secret"}


def test_rewriting_a_file_someone_opened_up_closes_it_again(home):
    path = write_file("http://a", "one")
    os.chmod(path, 0o644)
    write_file("http://b", "two")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and read_file()["token"] == "two"
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]  # no partial file left


def test_arguments_win_over_the_environment_which_wins_over_the_file(home, monkeypatch):
    write_file("http://file:1", "file-token")
    assert resolve() == resolve(None, None)
    assert (resolve().url, resolve().token) == ("http://file:1", "file-token")
    monkeypatch.setenv("POOLWEB_URL", "http://env:2")
    assert (resolve().url, resolve().token) == ("http://env:2", "file-token")
    monkeypatch.setenv("POOLWEB_TOKEN", "env-token")
    assert (resolve().url, resolve().token) == ("http://env:2", "env-token")
    assert resolve("http://arg:3/", "arg-token").url == "http://arg:3"


def test_nothing_set_says_how_to_sign_in(home):
    with pytest.raises(UsageError) as raised:
        resolve()
    assert "poolctl login" in raised.value.line()


def test_a_broken_file_is_a_usage_error_naming_it(home):
    (home / "poolctl").mkdir()
    (home / "poolctl" / "config.json").write_text("{not json")
    with pytest.raises(UsageError) as raised:
        resolve()
    assert "config.json" in raised.value.message


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host", "http://", "http://host/api/v1"])
def test_a_url_that_is_not_a_servers_root_is_refused_with_an_example(url):
    with pytest.raises(UsageError) as raised:
        normalise_url(url)
    assert "root URL" in raised.value.hint


def test_a_url_keeps_its_path_prefix_without_the_trailing_slash():
    assert normalise_url(" https://gpus.example.org/poolweb/ ") == "https://gpus.example.org/poolweb"
