"""URL fetching for ingestion, hardened against server-side request forgery.

For every hop: http/https only, the host resolved once, every address checked by `AddressPolicy`, and
the connection made to exactly that address (original ``Host`` header and TLS server name), so a second
DNS answer cannot swap in a private address. Connections are never pooled: a pooled TLS connection is
keyed by IP and port, and reuse could carry one host's request over another's session. Redirects, size,
time and content types are capped; requests to a host are spaced by PER_HOST_DELAY.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import time
import zlib
from collections.abc import Sequence

import httpx

from carrag.services.errors import FetchFailed, FetchRefused, PayloadTooLarge
from carrag.services.fetchers.address_policy import AddressPolicy, Resolver, parse_address, system_resolver
from carrag.services.fetchers.base import MEDIA_TYPE_EXTENSIONS, FetchedPage, FetchOptions

ALLOWED_CONTENT_TYPES = {
    "text/html",
    "application/xhtml+xml",
    "text/plain",
    "text/markdown",
    "text/x-markdown",
    "application/pdf",
    *MEDIA_TYPE_EXTENSIONS,  # office documents, e-books, e-mail
}
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
_HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")  # after IDNA encoding


class HostPacer:
    """Spaces requests to the same host by at least ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._last: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, host: str) -> None:
        if self.delay <= 0:
            return
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            last = self._last.get(host)
            now = time.monotonic()
            if last is not None and now - last < self.delay:
                await asyncio.sleep(self.delay - (now - last))
            self._last[host] = time.monotonic()
        self._forget_idle_hosts()

    def _forget_idle_hosts(self) -> None:
        """Keep the per-host maps small: a host last fetched over ``delay`` ago needs no entry."""
        if len(self._last) < 1024:
            return
        cutoff = time.monotonic() - self.delay
        for host, last in list(self._last.items()):
            lock = self._locks.get(host)
            if last < cutoff and (lock is None or not lock.locked()):
                del self._last[host]
                self._locks.pop(host, None)


class HttpFetcher:
    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_bytes: int = 10 * 1024 * 1024,
        max_redirects: int = 5,
        user_agent: str = "Carrag",
        allowed_hosts: Sequence[str] = (),
        per_host_delay: float = 1.0,
        resolver: Resolver = system_resolver,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.policy = AddressPolicy(allowed_hosts)
        self.pacer = HostPacer(per_host_delay)
        self._resolve = resolver
        self._client = httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            headers={
                "User-Agent": user_agent,
                "Accept": "text/html,text/plain,text/markdown,application/pdf;q=0.9",
                "Accept-Encoding": "gzip, deflate",  # the codings `_CappedDecoder` undoes
            },
            limits=httpx.Limits(max_keepalive_connections=0),
            transport=transport,
            trust_env=False,  # never route through an environment proxy that bypasses the checks
        )

    async def fetch(self, url: str, options: FetchOptions | None = None) -> FetchedPage:
        try:
            async with asyncio.timeout(self.timeout):
                return await self._fetch(url, options or FetchOptions())
        except TimeoutError as exc:
            raise FetchFailed(f"fetching {url} took longer than {self.timeout:.0f}s") from exc

    async def _pinned_address(self, url: httpx.URL) -> str:
        if url.scheme not in ("http", "https"):
            raise FetchRefused(f"Only http and https URLs can be ingested (got {url.scheme or 'no scheme'}:).")
        host = _ascii_host(url)
        if not host:
            raise FetchRefused(f"URL {url} has no host.")
        if url.userinfo:
            raise FetchRefused("URLs with embedded credentials are not fetched.")
        port = url.port or (443 if url.scheme == "https" else 80)
        if _is_ip_literal(host):
            addresses = [host]
        elif not _HOST_NAME.fullmatch(host):
            raise FetchRefused(f"URL {url} has an invalid host name.")
        else:
            try:
                addresses = await self._resolve(host, port)
            except (OSError, UnicodeError) as exc:
                raise FetchFailed(f"cannot resolve host {host!r}: {exc}") from exc
        if not addresses:
            raise FetchFailed(f"host {host!r} has no addresses")
        for address in addresses:
            reason = self.policy.check(host, address)
            if reason is not None:
                raise FetchRefused(
                    f"Refusing to fetch {url}: {host} resolves to {address}, {reason}. "
                    "An operator can allow it with FETCH_ALLOWED_HOSTS."
                )
        return addresses[0]

    async def _fetch(self, url: str, options: FetchOptions) -> FetchedPage:
        try:
            current = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise FetchRefused(f"Invalid URL: {exc}") from exc
        conditions = {}
        if options.etag:
            conditions["If-None-Match"] = options.etag
        if options.last_modified:
            conditions["If-Modified-Since"] = options.last_modified
        for _hop in range(self.max_redirects + 1):
            address = await self._pinned_address(current)
            host = _ascii_host(current)
            await self.pacer.wait(host)
            target = current.copy_with(host=str(parse_address(address)))
            shown_host = f"[{host}]" if ":" in host else host
            host_header = shown_host if current.port is None else f"{shown_host}:{current.port}"
            extensions = {"sni_hostname": host} if current.scheme == "https" and not _is_ip_literal(host) else {}
            request = self._client.build_request(
                "GET", target, headers={"Host": host_header, **conditions}, extensions=extensions
            )
            try:
                response = await self._client.send(request, stream=True)
            except httpx.TimeoutException as exc:
                raise FetchFailed(f"{current} timed out") from exc
            except httpx.HTTPError as exc:
                raise FetchFailed(f"cannot fetch {current}: {exc}") from exc
            try:
                if response.status_code in REDIRECT_STATUSES:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchFailed(f"{current} redirected without a Location header")
                    try:
                        current = current.join(location)
                    except httpx.InvalidURL as exc:
                        raise FetchRefused(f"{current} redirected to an invalid URL: {exc}") from exc
                    if options.follow is not None and not options.follow(str(current)):
                        raise FetchRefused(f"{url} redirects to {current}, outside the crawl; not followed.")
                    continue
                validators = {
                    "etag": response.headers.get("etag"),
                    "last_modified": response.headers.get("last-modified"),
                }
                if response.status_code == 304 and conditions:
                    return FetchedPage(str(url), str(current), "", None, b"", status=304, **validators)
                if response.status_code >= 400:
                    raise FetchFailed(f"{current} answered HTTP {response.status_code}", response.status_code)
                media_type, charset = _content_type(response.headers.get("content-type", ""))
                if media_type not in (options.media_types or ALLOWED_CONTENT_TYPES):
                    raise FetchRefused(
                        f"{current} has content type {media_type or 'unknown'}; only web pages, text and "
                        "PDF and the supported document formats are ingested."
                    )
                body = await self._read_capped(response, current)
                return FetchedPage(str(url), str(current), media_type, charset, body, **validators)
            finally:
                await response.aclose()
        raise FetchFailed(f"{url} redirected more than {self.max_redirects} times")

    async def _read_capped(self, response: httpx.Response, url: httpx.URL) -> bytes:
        """The body, at most ``max_bytes`` both as sent and once decompressed. Content coding is
        undone here, in bounded steps, rather than by httpx: its decoders expand a whole network
        read at once, and stacked codings (``gzip, gzip``) multiply the expansion."""
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise PayloadTooLarge(f"{url} is {int(declared)} bytes; the limit is {self.max_bytes} (FETCH_MAX_BYTES).")
        too_large = f"{url} is larger than {self.max_bytes} bytes (FETCH_MAX_BYTES)."
        decoder = _CappedDecoder(response.headers.get("content-encoding", ""), self.max_bytes, too_large, url)
        body = bytearray()
        received = 0
        try:
            async for part in response.aiter_raw():
                received += len(part)
                if received > self.max_bytes:
                    raise PayloadTooLarge(too_large)
                body.extend(decoder.feed(part))
        except httpx.HTTPError as exc:
            raise FetchFailed(f"reading {url} failed: {exc}") from exc
        return bytes(body)

    async def aclose(self) -> None:
        await self._client.aclose()


class _CappedDecoder:
    """Undoes one ``gzip`` or ``deflate`` content coding, never producing more than ``limit`` bytes
    (zlib's ``max_length``), so a compression bomb costs at most the limit in memory."""

    def __init__(self, header: str, limit: int, too_large: str, url: httpx.URL) -> None:
        codings = [c.strip().lower() for c in header.split(",") if c.strip() and c.strip().lower() != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise FetchRefused(f"{url} uses content coding {header!r}; only gzip and deflate are accepted.")
        self.coding = codings[0] if codings else None
        self.limit = limit
        self.too_large = too_large
        self.url = url
        self.produced = 0
        self._inflate = None
        if self.coding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self.coding == "deflate":
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS)

    def feed(self, data: bytes) -> bytes:
        if self._inflate is None:
            return data
        try:
            out = self._inflate.decompress(data, self.limit - self.produced + 1)
        except zlib.error:
            if self.coding != "deflate" or self.produced:
                raise FetchFailed(f"{self.url} sent a body that does not decompress as {self.coding}") from None
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" sent without the zlib header
            self.coding = "raw deflate"
            return self.feed(data)
        self.produced += len(out)
        if self.produced > self.limit:
            raise PayloadTooLarge(self.too_large)
        return out


def _ascii_host(url: httpx.URL) -> str:
    """The host as sent on the wire: IDNA-encoded, lower-case, IPv6 without brackets."""
    return url.raw_host.decode("ascii").lower()


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _content_type(header: str) -> tuple[str, str | None]:
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip("\"' ").lower()
    return media_type.strip().lower(), charset
