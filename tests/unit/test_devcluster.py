"""The local control plane's parts that need no cluster: binaries, certificates, processes."""

from __future__ import annotations

import ipaddress
import json
import pathlib
import subprocess
import sys

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubetrain.devcluster import binaries, controlplane, dev, process
from kubetrain.operator import pki


def test_missing_binaries_fail_loudly_with_the_build_command(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBETRAIN_CACHE", str(tmp_path))
    monkeypatch.setenv("KUBETRAIN_BIN_PATH", "")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(binaries.BinariesNotFoundError) as e:
        binaries.find()
    message = str(e.value)
    assert (
        "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, kustomize" in message
    )
    assert "hack/build-control-plane.sh" in message


def test_the_newest_cached_version_wins(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBETRAIN_CACHE", str(tmp_path))
    monkeypatch.setenv("KUBETRAIN_BIN_PATH", "")
    for version in ("v1.9.0", "v1.36.3", "v1.10.2"):
        b = tmp_path / "k8s" / version / "bin" / "kubectl"
        b.parent.mkdir(parents=True)
        b.write_text("#!/bin/sh\n")
        b.chmod(0o755)
    assert binaries.find(("kubectl",))["kubectl"] == str(tmp_path / "k8s/v1.36.3/bin/kubectl")


def test_issued_certificates_chain_to_the_ca() -> None:
    ca = pki.new_ca("test-ca")
    serving = pki.issue(ca, "apiserver", hosts=("127.0.0.1", "localhost"), server=True)
    admin = pki.issue(ca, "admin", organizations=("system:masters",), client=True)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    for pair in (serving, admin):
        cert = x509.load_pem_x509_certificate(pair.cert_pem)
        assert cert.issuer == ca_cert.subject
        ca_key = ca_cert.public_key()
        assert isinstance(ca_key, ec.EllipticCurvePublicKey)
        cert.verify_directly_issued_by(ca_cert)
    sans = (
        x509.load_pem_x509_certificate(serving.cert_pem)
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    admin_cert = x509.load_pem_x509_certificate(admin.cert_pem)
    assert admin_cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    usage = admin_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_a_component_that_dies_is_reported_with_its_log(tmp_path: pathlib.Path) -> None:
    p = process.Process(
        "broken",
        [sys.executable, "-P", "-c", "print('bad flag --foo'); raise SystemExit(3)"],
        tmp_path / "broken.log",
    )
    p.start()
    with pytest.raises(process.StartError) as e:
        process.wait_until("broken to be healthy", lambda: False, timeout=10, watch=[p])
    assert "broken exited with status 3" in str(e.value)
    assert "bad flag --foo" in str(e.value)


def test_stop_escalates_to_sigkill(tmp_path: pathlib.Path) -> None:
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    p = process.Process("stubborn", [sys.executable, "-P", "-c", stubborn], tmp_path / "stubborn.log")
    p.start()
    process.wait_until("stubborn to start", lambda: "up" in p.tail(), timeout=10, watch=[p])
    assert p.pid is not None
    p.stop(timeout=0.5)
    assert not p.alive()
    assert process.pids_alive([p.pid]) == []


def test_children_start_only_from_the_main_thread(tmp_path: pathlib.Path) -> None:
    import threading

    p = process.Process(
        "sleeper", [sys.executable, "-P", "-c", "import time; time.sleep(5)"], tmp_path / "s.log"
    )
    errors: list[BaseException] = []

    def start_in_thread() -> None:
        try:
            p.start()
        except RuntimeError as e:
            errors.append(e)

    t = threading.Thread(target=start_in_thread)
    t.start()
    t.join()
    assert len(errors) == 1
    assert "main thread" in str(errors[0])
    assert not p.alive()


def test_a_state_file_whose_pid_is_now_another_process_is_stale(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `dev up` killed outright leaves its state file; its pid may be given to another process.
    monkeypatch.setenv("KUBETRAIN_CACHE", str(tmp_path))
    (tmp_path / "dev").mkdir()
    state = tmp_path / "dev" / "state.json"
    other = subprocess.Popen(["sleep", "60"])
    try:
        started = process.started_at(other.pid)
        assert started is not None
        state.write_text(json.dumps({"pid": other.pid, "started": started, "server": "s", "tier": "cluster"}))
        assert dev._running_pid() == other.pid
        state.write_text(json.dumps({"pid": other.pid, "started": started - 1, "server": "s"}))
        assert dev._running_pid() is None
        state.write_text(json.dumps({"pid": other.pid, "server": "s"}))  # from before start times were kept
        assert dev._running_pid() is None
        assert dev.down() == 0
        assert other.poll() is None, "dev down signalled a process that is not its cluster"
    finally:
        other.kill()
        other.wait()


def test_native_gangs_are_switched_on_as_each_kubernetes_version_names_them() -> None:
    # 1.37 knows neither GangScheduling nor v1alpha2: naming either stops kube-apiserver.
    assert controlplane.gang_flags(36) == (
        "--feature-gates=GenericWorkload=true,GangScheduling=true",
        "--runtime-config=scheduling.k8s.io/v1alpha2=true",
    )
    assert controlplane.gang_flags(37) == (
        "--feature-gates=GenericWorkload=true",
        "--runtime-config=scheduling.k8s.io/v1beta1=true",
    )
