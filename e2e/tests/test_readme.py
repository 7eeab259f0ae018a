"""The README's pyarrow example, run as written against a fresh gateway (only the address differs),
prints exactly the output the README shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks_after(heading: str) -> list[tuple[str, str]]:
    text = README.read_text()
    section = text[text.index(heading):]
    return re.findall(r"```(\w*)\n(.*?)```", section, re.S)


def test_pyarrow_example_prints_what_the_readme_shows(gateway, tmp_path):
    blocks = blocks_after("## Arrow Flight API")
    code = next(body for lang, body in blocks if lang == "python")
    shown = next(body for lang, body in blocks[blocks.index(("python", code)) + 1:] if lang == "")
    assert 'flight.connect("grpc://127.0.0.1:8815")' in code
    script = tmp_path / "example.py"
    script.write_text(code.replace("grpc://127.0.0.1:8815", gateway.url))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown
