"""Delegated authentication and authorization for the secure port, as kube components do it.

Authentication: a client certificate verified against the client CA (user = CN, groups = O), else
a bearer token checked with a TokenReview, else the anonymous user (system:anonymous, group
system:unauthenticated). A token the API server does not accept is a 401; it never falls back to
anonymous. Authorization: a SubjectAccessReview for the non-resource URL (the request path) and
the verb (the lowercased method), except on the always-allowed paths (/healthz, /livez, /readyz).
Answers are cached as kube's delegating authenticator and authorizer cache them (10 s each for a
token, an allow and a deny), in bounded maps. When the API cannot answer, the request fails (401
or 500), never allowed.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
CACHE_TTL = 10.0
CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


class ReviewError(RuntimeError):
    """The API server could not answer a review."""


class Reviewer(Protocol):
    async def review_token(self, token: str) -> UserInfo | None:
        """The token's user, or None when the API server does not accept it; ReviewError if it cannot say."""
        ...

    async def review_access(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason) for `verb` on the non-resource URL `path`; ReviewError if it cannot say."""
        ...


class ApiPoster(Protocol):
    async def post(self, path: str, body: Any) -> Any: ...


class ApiReviewer:
    """TokenReview and SubjectAccessReview through kubesched's own API client (RBAC: the
    system:auth-delegator ClusterRole)."""

    def __init__(self, client: ApiPoster) -> None:
        self.client = client

    async def review_token(self, token: str) -> UserInfo | None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            answer = await self.client.post("/apis/authentication.k8s.io/v1/tokenreviews", body)
        except Exception as exc:
            raise ReviewError(f"TokenReview failed: {exc}") from exc
        status = answer.get("status") if isinstance(answer, dict) else None
        if not isinstance(status, dict) or not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        extra = user.get("extra") or {}
        return UserInfo(
            str(user.get("username", "")),
            tuple(str(g) for g in user.get("groups") or ()),
            str(user.get("uid", "")),
            tuple(sorted((str(k), tuple(str(x) for x in v)) for k, v in extra.items() if isinstance(v, list))),
        )

    async def review_access(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups), "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        try:
            answer = await self.client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
        except Exception as exc:
            raise ReviewError(f"SubjectAccessReview failed: {exc}") from exc
        status = answer.get("status") if isinstance(answer, dict) else None
        if not isinstance(status, dict):
            raise ReviewError("SubjectAccessReview: no status in the answer")
        return bool(status.get("allowed")) and not status.get("denied"), str(status.get("reason") or "")


K = TypeVar("K")
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """At most `size` entries, each for `ttl` seconds; the oldest goes first when full."""

    def __init__(self, ttl: float, size: int = CACHE_SIZE, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.size = size
        self.clock = clock
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self.clock():
            del self._items[key]
            return None
        return item[1]

    def put(self, key: K, value: V, ttl: float | None = None) -> None:
        self._items[key] = (self.clock() + (self.ttl if ttl is None else ttl), value)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome for one request: 200 to go on, else the status code and kube's Status message."""

    code: int
    message: str = ""
    user: UserInfo | None = None


class DelegatingAuth:
    def __init__(
        self,
        reviewer: Reviewer,
        always_allow_paths: Iterable[str] = ALWAYS_ALLOW_PATHS,
        *,
        token_ttl: float = CACHE_TTL,
        allow_ttl: float = CACHE_TTL,
        deny_ttl: float = CACHE_TTL,
        cache_size: int = CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviewer = reviewer
        self.always_allow = frozenset(always_allow_paths)
        self.deny_ttl = deny_ttl
        # A refused token is cached too, as (None,): it is a 401 for the TTL without asking again.
        self.tokens: TTLCache[str, tuple[UserInfo | None]] = TTLCache(token_ttl, cache_size, clock)
        self.access: TTLCache[tuple[UserInfo, str, str], tuple[bool, str]] = TTLCache(allow_ttl, cache_size, clock)

    async def authenticate(self, authorization: str | None, cert_user: UserInfo | None) -> UserInfo | None:
        """The request's user; None for a credential the API server refuses (a 401)."""
        if cert_user is not None:
            return cert_user
        if authorization:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return await self._token_user(token)
        return UserInfo(ANONYMOUS, (UNAUTHENTICATED,))

    async def _token_user(self, token: str) -> UserInfo | None:
        cached = self.tokens.get(token)
        if cached is not None:
            return cached[0]
        user = await self.reviewer.review_token(token)
        self.tokens.put(token, (user,))
        return user

    async def decide(self, method: str, path: str, authorization: str | None, cert_user: UserInfo | None) -> Decision:
        try:
            user = await self.authenticate(authorization, cert_user)
        except ReviewError as exc:
            log.warning("authentication of a request to %s failed: %s", path, exc)
            return Decision(401, "Unauthorized")
        if user is None:
            return Decision(401, "Unauthorized")
        if path in self.always_allow:
            return Decision(200, user=user)
        verb = method.lower()
        key = (user, verb, path)
        answer = self.access.get(key)
        if answer is None:
            try:
                answer = await self.reviewer.review_access(user, verb, path)
            except ReviewError as exc:
                log.warning("authorization of %s %s for %s failed: %s", verb, path, user.name, exc)
                return Decision(500, "Internal Server Error: authorization could not be checked")
            self.access.put(key, answer, None if answer[0] else self.deny_ttl)
        allowed, reason = answer
        if allowed:
            return Decision(200, user=user)
        message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
        return Decision(403, f"{message}: {reason}" if reason else message, user)


def user_from_peer_cert(peercert: Any) -> UserInfo | None:
    """The user of a verified client certificate (ssl's getpeercert() form): CN and the O values."""
    if not isinstance(peercert, dict) or not peercert.get("subject"):
        return None
    name = ""
    groups: list[str] = []
    for rdn in peercert["subject"]:
        for attr, value in rdn:
            if attr == "commonName":
                name = value
            elif attr == "organizationName":
                groups.append(value)
    return UserInfo(name, (*groups, AUTHENTICATED)) if name else None
