"""The SSH address, the ssh command line KaryaMorph builds, and what ssh's exit statuses mean."""

from __future__ import annotations

import shlex

import pytest

from karyamorph.remote.channel import SshTransport, serve_command
from karyamorph.remote.ssh import SSH_OPTIONS_ENV, remote_python, ssh_argv
from karyamorph.remote.url import RemoteError, SshUrl


@pytest.mark.parametrize(
    ("text", "host", "user", "port"),
    [
        ("ssh://gpu-box", "gpu-box", None, None),
        ("ssh://me@gpu-box", "gpu-box", "me", None),
        ("ssh://me@10.0.0.7:2222", "10.0.0.7", "me", 2222),
        ("ssh://[::1]:22/", "::1", None, 22),
    ],
)
def test_parse(text: str, host: str, user: str | None, port: int | None) -> None:
    url = SshUrl.parse(text)
    assert (url.host, url.user, url.port) == (host, user, port)
    assert SshUrl.parse(str(url)) == url


@pytest.mark.parametrize(
    "text", ["gpu-box", "http://gpu-box", "ssh://", "ssh://a b", "ssh://h:0", "ssh://h:x"]
)
def test_parse_refuses_what_is_not_an_ssh_address(text: str) -> None:
    with pytest.raises(RemoteError, match=r"--gpu .*ssh://"):
        SshUrl.parse(text)


def test_ssh_never_prompts_and_never_waits_forever(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SSH_OPTIONS_ENV, "-i /keys/k -o UserKnownHostsFile=/keys/known")
    argv = ssh_argv(SshUrl.parse("ssh://me@box:2200"), "true", connect_timeout_s=7)
    options = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    assert {"BatchMode=yes", "ConnectTimeout=7", "ServerAliveInterval=5", "ServerAliveCountMax=3"} <= set(
        options
    )
    # The user's options come first: for ssh, the first value given wins.
    assert argv.index("-i") < argv.index("BatchMode=yes")
    assert argv[argv.index("-p") + 1] == "2200"
    assert argv[-3:] == ["--", "me@box", "true"]
    assert "-T" in argv  # no terminal: the channel carries binary messages


def test_serve_command_quotes_the_environment_and_finds_the_versioned_env() -> None:
    command = serve_command("0", {"CUDA_VISIBLE_DEVICES": "1", "NOTE": "a b; rm -rf /"}, version="1.2.3")
    words = shlex.split(command)
    assert words[:4] == ["exec", "env", "CUDA_VISIBLE_DEVICES=1", "NOTE=a b; rm -rf /"]
    assert words[-4:] == ["-m", "karyamorph.remote.serve", "1.2.3", "0"]
    assert remote_python("1.2.3") in command
    assert "/karyamorph/remote/1.2.3/venv/bin/python" in remote_python("1.2.3")
    with pytest.raises(ValueError, match="not environment variable names"):
        serve_command("0", {"A-B": "1"})
    with pytest.raises(ValueError, match="version"):
        remote_python("1.0; reboot")


def test_ssh_exit_statuses_are_said_as_what_they_mean() -> None:
    transport = SshTransport(SshUrl.parse("ssh://box"), version="1.2.3")
    assert transport.where == " on ssh://box"
    assert "connection failed or dropped" in transport.describe_exit(255)
    assert "karyamorph remote setup ssh://box" in transport.describe_exit(127)
    assert transport.describe_exit(-9) == "the SSH connection was cut: ssh killed by SIGKILL"
    assert transport.describe_exit(2) == "exit status 2"
