"""Real nodes' pure parts: the address plan, the CNI network, image digests and archives."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import pathlib
import tarfile

import attrs
import pytest

from kubetrain.devcluster import dev, images, network, process


def net(slot: int) -> network.NodeNetwork:
    return network.NodeNetwork(
        slot=slot, holder=process.Process("holder", [], pathlib.Path("/dev/null")), pid=1
    )


def test_every_address_is_private_and_distinct_per_slot_and_node() -> None:
    seen: set[str] = set()
    for slot in (1, 2, network.SLOTS[-1]):
        n = net(slot)
        addresses = [n.host_ip, n.gateway_ip, n.dns_ip, *(n.node_ip(i) for i in range(8))]
        assert all(ipaddress.ip_address(a).is_private for a in addresses)
        assert not seen & set(addresses)
        seen |= set(addresses)
        pods = ipaddress.ip_network(n.pod_cidr)
        assert pods.is_private
        assert all(ipaddress.ip_network(n.node_pod_cidr(i)).subnet_of(pods) for i in range(8))
        assert not any(ipaddress.ip_address(a) in pods for a in addresses)


def test_the_cni_network_gives_each_node_its_own_bridge_and_range(tmp_path: pathlib.Path) -> None:
    configs = [json.loads(network.cni_config(net(3), i, tmp_path / str(i))) for i in range(2)]
    bridges = [c["plugins"][0]["bridge"] for c in configs]
    ranges = [c["plugins"][0]["ipam"]["ranges"][0][0]["subnet"] for c in configs]
    assert bridges == ["ktbr0", "ktbr1"]
    assert ranges == ["10.103.0.0/24", "10.103.1.0/24"]
    # No masquerade: nothing is meant to leave the node network.
    assert all(c["plugins"][0]["ipMasq"] is False for c in configs)
    assert configs[1]["plugins"][0]["ipam"]["dataDir"] == str(tmp_path / "1")


def test_the_digest_follows_the_recipe_and_every_byte_of_its_files(tmp_path: pathlib.Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "a.py").write_text("print(1)\n")
    image = images.Image(name="x/y", tag="1", files=(("/opt/s", tmp_path / "scripts"),))
    first = images.digest(image)
    assert images.digest(image) == first
    (tmp_path / "scripts" / "a.py").write_text("print(2)\n")
    second = images.digest(image)
    assert second != first
    (tmp_path / "scripts" / "b.py").write_text("")
    assert images.digest(image) != second
    assert images.digest(attrs.evolve(image, packages=("python3",))) != images.digest(image)
    for change in (
        {"suite": "bullseye"},
        {"python": "3.9"},
        {"aliases": ("docker.io/a/b:1",)},
        {"sdists": ("c==1",)},
    ):
        assert images.digest(attrs.evolve(image, **change)) != images.digest(image), change
    # Bytecode caches are not content.
    (tmp_path / "scripts" / "__pycache__").mkdir()
    (tmp_path / "scripts" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    before = images.digest(image)
    assert images.digest(image) == before


def test_an_image_without_packages_is_an_oci_layout_of_its_files(tmp_path: pathlib.Path) -> None:
    program = tmp_path / "pause"
    program.write_bytes(b"\x7fELF not really")
    image = images.Image(
        name="kubetrain.local/t",
        tag="1",
        files=(("/pause", program),),
        entrypoint=("/pause",),
        aliases=("docker.io/seed/image:cpu",),
    )
    archive = images.build(image, cache=tmp_path / "cache")
    assert images.build(image, cache=tmp_path / "cache") == archive  # cached by content
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        entry, alias = index["manifests"]
        assert entry["annotations"]["io.containerd.image.name"] == "kubetrain.local/t:1"
        # A stand-in for a seed's image: the same manifest under the seed's name too.
        assert alias["annotations"]["io.containerd.image.name"] == "docker.io/seed/image:cpu"
        assert alias["annotations"]["org.opencontainers.image.ref.name"] == "cpu"
        assert alias["digest"] == entry["digest"]
        manifest_bytes = tar.extractfile(f"blobs/sha256/{entry['digest'].split(':')[1]}").read()  # type: ignore[union-attr]
        assert hashlib.sha256(manifest_bytes).hexdigest() == entry["digest"].split(":")[1]
        manifest = json.loads(manifest_bytes)
        (layer,) = manifest["layers"]
        layer_bytes = tar.extractfile(f"blobs/sha256/{layer['digest'].split(':')[1]}").read()  # type: ignore[union-attr]
        assert hashlib.sha256(layer_bytes).hexdigest() == layer["digest"].split(":")[1]
        config = json.loads(
            tar.extractfile(f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}").read()
        )  # type: ignore[union-attr]
    assert "oci-layout" in names
    assert config["config"]["Entrypoint"] == ["/pause"]
    assert config["rootfs"]["diff_ids"] == [layer["digest"]]
    with tarfile.open(fileobj=__import__("io").BytesIO(layer_bytes)) as inner:
        assert "./pause" in inner.getnames()


def test_a_build_sweeps_its_own_earlier_archives_and_no_other_images(tmp_path: pathlib.Path) -> None:
    program = tmp_path / "pause"
    program.write_bytes(b"one")
    cache = tmp_path / "cache"
    image = images.Image(name="kubetrain.local/t", tag="1", files=(("/pause", program),))
    first = images.build(image, cache=cache)
    # Another image whose name begins with this one's and a hyphen, and a file that is no archive.
    longer = images.build(attrs.evolve(image, name="kubetrain.local/t-released"), cache=cache)
    (cache / "kubetrain.local_t-notes.tar").write_text("kept")
    program.write_bytes(b"two")
    second = images.build(image, cache=cache)
    assert second != first
    assert not first.exists()
    assert second.exists()
    assert longer.exists()
    assert (cache / "kubetrain.local_t-notes.tar").exists()


def test_dev_images_builds_what_is_not_cached_and_says_each(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBETRAIN_CACHE", str(tmp_path / "cache"))
    program = tmp_path / "p"
    program.write_bytes(b"x")
    one, two = (images.Image(name=f"kubetrain.local/{n}", tag="1", files=(("/p", program),)) for n in "ab")
    broken = images.Image(name="kubetrain.local/c", tag="1", files=(("/p", tmp_path / "missing"),))
    wanted = [one, two]
    monkeypatch.setattr(images, "for_nodes", lambda _root, pause, seeds: wanted)
    images.build(one)
    assert dev.build_images(root=tmp_path) == 0
    out = capsys.readouterr().out
    assert "kubetrain.local/a:1: cached" in out
    assert "build kubetrain.local/b:1" in out
    assert "kubetrain.local/b:1: built" in out
    assert images.cached(two)
    wanted.append(broken)
    assert dev.build_images(root=tmp_path) == 1
    said = capsys.readouterr()
    assert said.err.startswith("error: image kubetrain.local/c:1: "), said.err


def test_build_all_keeps_the_order_asked_and_raises_a_failed_build(tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "cache"
    program = tmp_path / "p"
    program.write_bytes(b"x")
    one, two = (images.Image(name=f"kubetrain.local/{n}", tag="1", files=(("/p", program),)) for n in "ab")
    broken = images.Image(name="kubetrain.local/c", tag="1", files=(("/p", tmp_path / "missing"),))
    archives = images.build_all([two, one], cache=cache)
    assert [a.name.split("-")[0] for a in archives] == ["kubetrain.local_b", "kubetrain.local_a"]
    with pytest.raises((images.BuildError, OSError)):
        images.build_all([one, broken, two], cache=cache)
