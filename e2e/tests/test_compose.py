"""docker-compose.yml and gateway/Dockerfile, checked as far as a machine without a Docker engine
can: the YAML parses, the services, images, ports and mounted paths agree with the Dockerfile and
the build outputs, and the sql-client's placeholder filling gives complete SQL."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "gateway" / "Dockerfile"
CONNECTOR_JAR = "connector-java/target/setats-flink-connector-0.1.0.jar"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_services(compose):
    assert set(compose["services"]) == {"nats", "setats", "jobmanager", "taskmanager", "sql-client"}


def test_gateway_builds_from_the_dockerfile_and_uses_the_nats_service(compose):
    gw = compose["services"]["setats"]
    assert (REPO / gw["build"]["context"] / gw["build"]["dockerfile"]) == DOCKERFILE
    cmd = gw["command"]
    assert cmd[0] == "serve"
    assert cmd[cmd.index("--nats-url") + 1] == "nats://setats:${NATS_PASSWORD:-change-me-nats}@nats:4222"
    nats = compose["services"]["nats"]
    assert "4222" in " ".join(nats["command"])
    # SPEC section 14: NATS is not published and needs the password the gateway has.
    assert "ports" not in nats
    assert nats["command"][nats["command"].index("--pass") + 1] == "${NATS_PASSWORD:-change-me-nats}"
    # The gateway listens beyond loopback, so it has a users file, mounted from the repository.
    assert cmd[cmd.index("--flight-addr") + 1] == ":8815"
    users = cmd[cmd.index("--users-file") + 1]
    mount = [v for v in gw["volumes"] if v.split(":")[1] == users]
    assert len(mount) == 1 and (REPO / mount[0].split(":")[0]).exists()
    text = (REPO / mount[0].split(":")[0]).read_text()
    users_yaml = yaml.safe_load(text)
    names = [u["name"] for u in users_yaml["users"]]
    assert compose["services"]["sql-client"]["environment"]["SETATS_USERNAME"] in names
    assert all(u["password"].startswith("$2") for u in users_yaml["users"])
    warehouse = cmd[cmd.index("--warehouse") + 1]
    # The connector's 'warehouse' must equal the gateway's (SPEC section 2).
    env = compose["services"]["sql-client"]["environment"]
    assert env["SETATS_WAREHOUSE"] == "file://" + warehouse
    assert env["SETATS_MANAGER_URL"] == "grpc://setats:8815"
    assert "8815:8815" in gw["ports"] and "8816:8816" in gw["ports"]
    assert any(v.endswith(":/var/lib/setats") for v in gw["volumes"])


def test_dockerfile_builds_the_gateway_binary_with_the_go_of_go_mod():
    text = DOCKERFILE.read_text()
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    froms = [l for l in lines if l.startswith("FROM ")]
    assert len(froms) == 2 and " AS build" in froms[0]
    m = re.search(r"^ARG GO_VERSION=(\S+)", text, re.M)
    go_mod = re.search(r"^go (\d+\.\d+)", (REPO / "go.mod").read_text(), re.M).group(1)
    assert m and m.group(1) == go_mod
    pkg = re.search(r"go build .* (\./gateway/cmd/setats)", text).group(1)
    assert (REPO / pkg / "main.go").exists()
    assert 'ENTRYPOINT ["/usr/local/bin/setats"]' in text
    assert "COPY --from=build /out/setats /usr/local/bin/setats" in text
    # EXPOSE covers the gateway's default ports (gateway/options.go).
    assert re.search(r"^EXPOSE 8815 8816", text, re.M)


def test_flink_services_share_one_image_and_mount_the_connector_jar(compose):
    services = compose["services"]
    images = {services[s]["image"] for s in ("jobmanager", "taskmanager", "sql-client")}
    assert len(images) == 1 and images.pop().startswith("flink:1.20")
    for s in ("jobmanager", "taskmanager", "sql-client"):
        mounts = services[s]["volumes"]
        jar = [m for m in mounts if m.startswith("./connector-java/")]
        assert jar == [f"./{CONNECTOR_JAR}:/opt/flink/lib/setats-flink-connector-0.1.0.jar:ro"], s
        props = services[s]["environment"]["FLINK_PROPERTIES"]
        assert "jobmanager.rpc.address: jobmanager" in props
        assert "--add-opens=java.base/java.nio=ALL-UNNAMED" in props
    # The jar path is the one the Makefile builds.
    assert f"CONNECTOR_JAR := {CONNECTOR_JAR}" in (REPO / "Makefile").read_text()


def sql_client_script(compose) -> str:
    cmd = compose["services"]["sql-client"]["command"]
    assert cmd[:2] == ["bash", "-c"]
    return cmd[2].replace("$$", "$")  # compose's escape for a literal $


def test_sql_client_fills_every_placeholder(compose, tmp_path):
    if shutil.which("perl") is None:
        pytest.skip("perl not on this machine")
    script = sql_client_script(compose)
    mounts = compose["services"]["sql-client"]["volumes"]
    sql_dir = [m for m in mounts if m.startswith("./e2e/sql:")]
    assert sql_dir == ["./e2e/sql:/opt/setats/sql:ro"]
    render = re.search(r"^render\(\) \{ (perl .*) \"\$1\"; \}$", script, re.M).group(1)
    env = {k: str(v) for k, v in compose["services"]["sql-client"]["environment"].items() if k != "FLINK_PROPERTIES"}
    env["DEMO_DT"] = "20250101"
    env["PATH"] = "/usr/bin:/bin"
    jobs = set(re.findall(r"\b(demo-[a-z]+)\b", script))
    assert jobs == {"demo-write", "demo-update", "demo-cdc"}
    for name in sorted(jobs):
        src = REPO / "e2e" / "sql" / f"{name}.sql"
        assert src.exists(), name
        out = subprocess.run(["bash", "-c", render + ' "$1"', "render", str(src)], env=env,
                             capture_output=True, text=True, check=True).stdout
        assert "${" not in out, name
        assert "'grpc://setats:8815'" in out and "'file:///var/lib/setats/warehouse'" in out, name
        assert "'username' = 'etl'" in out and "'password' = 'setats-demo'" in out, name
    # An unset variable stops the script instead of submitting broken SQL.
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT '${NOT_SET_ANYWHERE}';")
    r = subprocess.run(["bash", "-c", render + ' "$1"', "render", str(bad)], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "NOT_SET_ANYWHERE" in r.stderr
