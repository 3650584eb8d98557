"""argon2id profiles: the default is RFC 9106's low-memory choice, OWASP's minimum is a
setting, and a hash made under either verifies under the other (a stored hash names its
own parameters, so changing the setting locks nobody out)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import make_settings

from tidegate.app import create_app
from tidegate.auth import passwords
from tidegate.config import Settings


@pytest.fixture
def restored_profile() -> Iterator[None]:
    before = passwords._hasher
    try:
        yield
    finally:
        passwords._hasher = before
        passwords._dummy.cache_clear()


def test_the_default_profile_is_rfc_9106_low_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDEGATE_PASSWORD_HASH_PROFILE", raising=False)
    assert Settings().password_hash_profile == "rfc9106-low-memory"
    parameters = passwords.PROFILES["rfc9106-low-memory"].hash("correct horse")
    assert parameters.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


async def test_each_profile_verifies_the_others_hashes(
    tmp_path: Path, restored_profile: None
) -> None:
    made = {}
    for name in ("rfc9106-low-memory", "owasp-minimum"):
        create_app(make_settings("sqlite+aiosqlite://", tmp_path, password_hash_profile=name))
        made[name] = await passwords.hash_password(f"password of {name}")
    assert made["owasp-minimum"].startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert made["rfc9106-low-memory"].startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    for name in ("owasp-minimum", "rfc9106-low-memory"):
        passwords.use_profile(name)
        for made_under, stored in made.items():
            assert await passwords.verify_password(stored, f"password of {made_under}")
            assert not await passwords.verify_password(stored, "a wrong password")


def test_an_unknown_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="password_hash_profile"):
        Settings(password_hash_profile="md5")  # type: ignore[arg-type]
