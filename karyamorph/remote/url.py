"""A GPU host's address, ``ssh://[user@]host[:port]``, parsed once."""

from __future__ import annotations

import re
from dataclasses import dataclass

from karyamorph.errors import KaryaMorphError

# A host name, an IPv4 address or a bracketed IPv6 one; an ssh_config ``Host`` alias is a name too.
_URL = re.compile(
    r"ssh://(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?P<port>\d+))?/?"
)


class RemoteError(KaryaMorphError, RuntimeError):
    """A GPU host could not be reached, set up or used; the message names the host."""


@dataclass(frozen=True, slots=True)
class SshUrl:
    """Where a GPU host is reached over SSH.

    Attributes
    ----------
    host : str
        Host name, address, or an alias of the user's ``~/.ssh/config``.
    user : str or None
        Login name; None leaves it to ssh (its config, then the local user).
    port : int or None
        TCP port; None leaves it to ssh (its config, then 22).
    """

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str, *, where: str = "--gpu") -> SshUrl:
        """``ssh://user@host:port`` (user and port optional) as an :class:`SshUrl`.

        Raises
        ------
        RemoteError
            ``text`` is not such an address; the message names ``where`` it came from.
        """
        m = _URL.fullmatch(text.strip())
        if m is None:
            raise RemoteError(f"{where} {text}: expected ssh://[user@]host[:port], e.g. ssh://me@gpu-box:22")
        port = int(m["port"]) if m["port"] else None
        if port is not None and not 0 < port < 65536:
            raise RemoteError(f"{where} {text}: port {port} is not between 1 and 65535")
        return cls(m["host"].strip("[]"), m["user"], port)

    @property
    def destination(self) -> str:
        """What ssh takes as its destination argument: ``user@host`` or ``host``."""
        return f"{self.user}@{self.host}" if self.user else self.host

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ssh://{self.user + '@' if self.user else ''}{host}{f':{self.port}' if self.port else ''}"
