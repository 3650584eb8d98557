"""People for tests: users with a password and a role in an account, signed in."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass

import httpx
from argon2 import PasswordHasher

from tidegate.db.engine import Database
from tidegate.models import Membership, User

PASSWORD = "correct horse battery staple"

# The people made here are stored with an argon2id hash at argon2's smallest cost (one
# pass over 8 KiB): a stored hash names its own parameters, and the server verifies each
# under them (auth/passwords.py), so their sign-ins cost microseconds where the suite's
# profile (OWASP's minimum) costs 18-60 ms a hash or a check. The suite made and checked
# about 1,500 of them, some 28 s of CPU. What the profiles cost and which one hashes new
# passwords is tests/auth/test_passwords.py's; passwords set through the API (sign-up,
# invitations, resets) are hashed by the server as in service.
_FACTORY_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@functools.cache
def stored_hash(password: str) -> str:
    """What the factory stores for ``password`` (one salt for every person of a process)."""
    return _FACTORY_HASHER.hash(password)


@dataclass
class Person:
    user_id: str
    email: str
    password: str


@dataclass
class Browser:
    """A signed-in browser: its cookies and CSRF token, sent explicitly on each request
    (the shared test client must keep no cookies between tests)."""

    session: str
    csrf: str
    info: dict[str, object]

    @property
    def headers(self) -> dict[str, str]:
        """Cookies and the CSRF header, as the web app sends them."""
        return {
            "Cookie": f"tidegate_session={self.session}; tidegate_csrf={self.csrf}",
            "X-CSRF-Token": self.csrf,
        }

    @property
    def cookies_only(self) -> dict[str, str]:
        return {"Cookie": f"tidegate_session={self.session}; tidegate_csrf={self.csrf}"}


async def add_person(
    database_url: str,
    *,
    account_id: str,
    role: str = "member",
    email: str | None = None,
    password: str = PASSWORD,
) -> Person:
    """A user (created, or found by e-mail) with a password and ``role`` in the account."""
    email = email or f"person-{uuid.uuid4().hex[:8]}@example.com"
    db = Database.connect(database_url)
    try:
        async with db.write_sessions() as session:
            from sqlalchemy import select

            user = (await session.execute(select(User).where(User.email == email))).scalar()
            if user is None:
                user = User(email=email, verified=True)
                session.add(user)
            user.password_hash = stored_hash(password)
            await session.flush()
            found = await session.get(Membership, (user.id, account_id))
            if found is None:
                session.add(Membership(user_id=user.id, account_id=account_id, role=role))
            else:
                found.role = role
            await session.commit()
            return Person(user_id=user.id, email=email, password=password)
    finally:
        await db.dispose()


def _cookie(response: httpx.Response, name: str) -> str:
    for header in response.headers.get_list("set-cookie"):
        if header.startswith(f"{name}="):
            return header.split(";", 1)[0].split("=", 1)[1]
    raise AssertionError(f"no {name} cookie in {response.headers}")


async def sign_in(client: httpx.AsyncClient, body: dict[str, str]) -> Browser:
    response = await client.post("/v1/auth/session", json=body)
    client.cookies.clear()
    assert response.status_code == 200, response.text
    return Browser(
        session=_cookie(response, "tidegate_session"),
        csrf=_cookie(response, "tidegate_csrf"),
        info=response.json(),
    )


async def sign_in_person(client: httpx.AsyncClient, person: Person) -> Browser:
    return await sign_in(client, {"email": person.email, "password": person.password})


async def person_in_group(
    client: httpx.AsyncClient, *, account_id: str, headers: dict[str, str], group: dict[str, object]
) -> Browser:
    """A member of ``account_id`` placed in a new group ``group`` (the groups API's
    body), signed in: a person who sees only that group's scope."""
    made = await client.post("/v1/config/groups", json=group, headers=headers)
    assert made.status_code == 200, made.text
    person = await add_person(client.database_url, account_id=account_id)
    placed = await client.put(
        f"/v1/config/members/{person.email}",
        json={"groups": [made.json()["id"]]},
        headers=headers,
    )
    assert placed.status_code == 200, placed.text
    return await sign_in_person(client, person)
