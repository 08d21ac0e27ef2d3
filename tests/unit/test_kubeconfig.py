"""A kubeconfig that cannot be used is one clear line, from every verb and from client.connect.

Malformed (not YAML, not a map, a context naming no cluster, a hostile file), missing, or
pointing at a cluster that does not answer: every verb that talks to a cluster prints one
``error:`` line and exits 1, and ``client.connect`` raises the client's own error
(:class:`~kubetrain.client.InvalidKubeconfig`, :class:`~kubetrain.client.Unreachable`), never
yaml's, httpx's or a KeyError.
"""

from __future__ import annotations

import pathlib

import pytest
import yaml
from testkit import kube

from kubetrain import client
from kubetrain.cli import main
from kubetrain.client import kubeconfig
from kubetrain_bench.files import generator

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = str(ROOT / "samples" / "v1beta1" / "pytorch-ddp.yaml")
VERBS = (
    ["submit", SAMPLE],
    ["get", "x"],
    ["list"],
    ["delete", "x"],
    ["describe", "x"],
    ["logs", "x"],
    ["wait", "x"],
    ["tensorboard", "x"],
    ["migrate-storage"],
)


def config(**changes: object) -> dict[str, object]:
    good: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    return {**good, **changes}


MALFORMED: dict[str, tuple[str, str]] = {
    # name: (the file, what the error line says after "error: kubeconfig FILE")
    "not yaml": ("this: is: not: yaml: [\n", ":1:9: mapping values are not allowed"),
    "a list": ("- 1\n- 2\n", ":1:1: expected a map (a kubeconfig), got a list"),
    "empty": ("", ":1:1: no document in it"),
    "binary": ("key: \x01\x02\n", ":1:6: the control character U+0001 is not allowed"),
    "clusters not a list": (yaml.safe_dump(config(clusters=3)), ":2:1: clusters: expected a list, got 3"),
    "no current context": (
        yaml.safe_dump({k: v for k, v in config().items() if k != "current-context"}),
        ":1:1: current-context: not set: give --context NAME, or set it",
    ),
    "context names nothing": (
        yaml.safe_dump(config(**{"current-context": "nope"})),
        ":11:1: current-context: no context named 'nope' (it has c)",
    ),
    "no such cluster": (
        yaml.safe_dump(config(contexts=[{"name": "c", "context": {"cluster": "zz", "user": "u"}}])),
        ":8:5: contexts[0].context.cluster: no cluster named 'zz' (it has c)",
    ),
    "no server": (
        yaml.safe_dump(config(clusters=[{"name": "c", "cluster": {}}])),
        ":3:3: clusters[0].cluster.server: expected the server's address",
    ),
    "duplicate key": ("a: 1\na: 2\n", ":2:1: a: duplicate key 'a': written at line 1 and again at line 2"),
}


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_every_verb_says_what_is_wrong_with_a_kubeconfig_in_one_line(
    verb: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "kc"
    for text, said in MALFORMED.values():
        bad.write_text(text)
        assert main.main([*verb, "--kubeconfig", str(bad)]) == 1
        assert one_error_line(capsys.readouterr().err).startswith(f"error: kubeconfig {bad}{said}")
    assert main.main([*verb, "--kubeconfig", str(tmp_path / "nope")]) == 1
    assert one_error_line(capsys.readouterr().err) == (
        f"error: kubeconfig {tmp_path / 'nope'}: No such file or directory"
    )
    unreachable, port = kube.unreachable_kubeconfig(tmp_path)
    assert main.main([*verb, "--kubeconfig", str(unreachable)]) == 1
    assert one_error_line(capsys.readouterr().err).startswith(
        f"error: cannot reach the cluster at https://127.0.0.1:{port}: connection refused"
    )


def test_no_kubeconfig_at_all_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for verb in (["list"], ["migrate-storage"]):
        assert main.main(verb) == 1
        assert one_error_line(capsys.readouterr().err) == (
            "error: no cluster: no kubeconfig (~/.kube/config does not exist) and not in a pod; "
            "`kubetrain dev kubeconfig` prints the dev cluster's"
        )
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/a:{tmp_path}/b")
    with pytest.raises(client.Unreachable, match=r"\$KUBECONFIG \(.*/a:.*/b\) names no file that exists"):
        client.connect()


def test_connect_raises_the_clients_own_errors(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "kc"
    for text, said in MALFORMED.values():
        bad.write_text(text)
        with pytest.raises(client.InvalidKubeconfig) as e:
            client.connect(str(bad))
        assert str(e.value).startswith(f"kubeconfig {bad}{said}")
    bad.write_text(yaml.safe_dump(config()))
    with pytest.raises(client.InvalidKubeconfig, match=r"no context named 'other' \(it has c\)"):
        client.connect(str(bad), context="other")
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(tmp_path / "nope")}}
    bad.write_text(yaml.safe_dump(config(users=[{"name": "u", "user": user}])))
    with pytest.raises(
        client.InvalidKubeconfig, match=r"cannot use kubeconfig .*: .*No such file or directory"
    ):
        client.connect(str(bad))
    unreachable, port = kube.unreachable_kubeconfig(tmp_path)
    with pytest.raises(client.Unreachable, match=f"cannot reach the cluster at https://127.0.0.1:{port}"):
        client.connect(str(unreachable))


def check_or_connect(path: str, *, every_tenth: bool) -> None:
    """``client.connect`` (which starts an event loop each time), or what it checks first."""
    if every_tenth:
        client.connect(path)
    else:
        kubeconfig.check(path, None)


def test_hostile_files_as_a_kubeconfig_are_the_clients_errors(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "kc"
    for case in generator.cases(31, 200):
        if case.big:
            continue
        path.write_bytes(case.data)
        with pytest.raises(client.Error) as e:
            check_or_connect(str(path), every_tenth=case.index % 10 == 0)
        assert "\n" not in str(e.value), (case.label, str(e.value))
        assert isinstance(e.value, client.Unreachable), (case.label, e.value)
