"""The README's Security example, run as written against a gateway with a users file and TLS (a CA
and a server certificate made here with the openssl CLI): it prints exactly what the README shows
(only the address and the warehouse differ)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SETATS_BIN, Gateway

README = Path(__file__).resolve().parents[2] / "README.md"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d: Path) -> None:
    """ca.pem (self-signed CA) and server.pem / server-key.pem for 127.0.0.1, signed by it."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-days", "1", "-subj", "/CN=setats test CA", "-keyout", "ca-key.pem", "-out", "ca.pem", cwd=d)
    openssl("req", *ec, "-subj", "/CN=localhost", "-keyout", "server-key.pem", "-out", "server.csr", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
            "-days", "1", "-extfile", "ext.cnf", "-out", "server.pem", cwd=d)


def hash_password(pw: str) -> str:
    out = subprocess.run([str(SETATS_BIN), "user", "hash-password"], input=pw + "\n", capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out.startswith("$2a$") and pw not in out
    return out


@pytest.fixture(scope="module")
def secure_gateway(tmp_path_factory):
    if not SETATS_BIN.exists():
        pytest.skip(f"{SETATS_BIN} is not built (make build-gateway)")
    if shutil.which("openssl") is None:
        pytest.fail("the openssl CLI is missing (Debian package openssl, .ci/install-debian.sh)")
    d = tmp_path_factory.mktemp("secure")
    make_certs(d)
    (d / "users.yaml").write_text(
        "users:\n"
        f'  - name: etl\n    password: "{hash_password("etl-password")}"\n'
        '    grants: [{database: "*", table: "*", privileges: [admin]}]\n'
        f'  - name: reader\n    password: "{hash_password("reader-password")}"\n'
        "    grants: [{database: shop, privileges: [read]}]\n")
    gw = Gateway(d, "--users-file", str(d / "users.yaml"), "--tls-cert", str(d / "server.pem"),
                 "--tls-key", str(d / "server-key.pem"))
    yield gw, d
    assert gw.stop() == 0


def test_security_example_prints_what_the_readme_shows(secure_gateway):
    gw, d = secure_gateway
    text = README.read_text()
    section = text[text.index("## Security"):]
    section = section[:section.index("\n## ", 4)]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    code = next(body for lang, body in blocks if lang == "python")
    shown = next(body for lang, body in blocks[blocks.index(("python", code)) + 1:] if lang == "")
    assert 'fl.FlightClient("grpc+tls://127.0.0.1:8815"' in code
    addr = gw.url.removeprefix("grpc://")
    (d / "example.py").write_text(code.replace("grpc+tls://127.0.0.1:8815", "grpc+tls://" + addr))
    out = subprocess.run([sys.executable, "example.py"], cwd=d, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown.replace("file:///data/wh", gw.warehouse)


def test_plaintext_and_anonymous_clients_are_refused(secure_gateway):
    import pyarrow.flight as fl
    gw, d = secure_gateway
    plain = fl.FlightClient(gw.url)
    with pytest.raises(fl.FlightError):
        list(plain.do_action(fl.Action("gateway-info", b"{}"), fl.FlightCallOptions(timeout=10)))
    tls = fl.FlightClient(gw.url.replace("grpc://", "grpc+tls://"), tls_root_certs=(d / "ca.pem").read_bytes())
    with pytest.raises(fl.FlightUnauthenticatedError, match="wrong password"):
        tls.authenticate_basic_token("etl", "not-the-password")


def test_pyarrow_client_with_user_and_password_over_tls(secure_gateway):
    """e2e/pyarrow_client.py, the Python example client, with the connector's three options:
    a user and password (handshake, bearer token on every call) and the gateway's CA."""
    import pyarrow as pa
    import pyarrow.flight as fl
    sys.path.insert(0, str(README.parent / "e2e"))
    from pyarrow_client import SetatsClient
    gw, d = secure_gateway
    url = gw.url.replace("grpc://", "grpc+tls://")
    ca = str(d / "ca.pem")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    with SetatsClient(url, username="etl", password="etl-password", tls_ca_cert=ca) as c:
        c.create_table("shop", "py_orders", [("id", "BIGINT NOT NULL"), ("v", "STRING")], ["id"], bucket_count=1)
        assert len(c.upsert("shop", "py_orders", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], schema)) == 1
        assert "py_orders" in c.list_tables("shop")
    with SetatsClient(url, username="reader", password="reader-password", tls_ca_cert=ca) as r:
        assert r.read_changelog("shop", "py_orders").num_rows == 2
        assert sum(t.num_rows for _, t in r.read_table_changelog("shop", "py_orders")) == 2
        with pytest.raises(fl.FlightUnauthorizedError, match='user "reader" has no write privilege on table shop.py_orders'):
            r.upsert("shop", "py_orders", [{"id": 3, "v": "c"}], schema)
    with pytest.raises(fl.FlightUnauthenticatedError, match="wrong password"):
        SetatsClient(url, username="etl", password="nope", tls_ca_cert=ca)
    # The script, with the password from the environment.
    out = subprocess.run([sys.executable, str(README.parent / "e2e" / "pyarrow_client.py"), "--url", url,
                          "--tls-ca-cert", ca, "--username", "reader", "tables", "shop"],
                         env={**os.environ, "SETATS_PASSWORD": "reader-password"},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "py_orders" in out.stdout.split()
