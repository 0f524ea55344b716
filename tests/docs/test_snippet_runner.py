"""The snippet runner itself: a broken block fails, markers and fixtures are read."""

from __future__ import annotations

import pytest

from tests.docs.snippets import PageSession, SnippetError, parse_page, substitute_ports

PAGE = """\
# A page

```python
x = 1
```

<!-- docs-test: timeout=5 -->
```python
raise SystemExit(3)
```

- in a list:

    ```bash
    echo indented
    ```

```bash
# not run by the docs tests: needs a GPU
nvidia-smi
```

```text
not code
```

<!-- docs-test: background port=8000 timeout=30 -->
```bash
python -c "{SERVE}" --port 8000
```

```bash
python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/')"
```
""".replace(
    "{SERVE}",
    "import sys, http.server as h; "
    "h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[2])), h.SimpleHTTPRequestHandler)"
    ".serve_forever()",
)


def test_runner__reads_blocks_markers_and_directives():
    blocks = parse_page(PAGE, "page.md")
    assert [(b.line, b.language) for b in blocks] == [
        (3, "python"), (8, "python"), (14, "bash"), (18, "bash"), (28, "bash"), (32, "bash"),
    ]  # fmt: skip
    assert blocks[1].timeout == 5
    assert blocks[2].code == "echo indented\n"
    assert blocks[3].skip_reason == "needs a GPU"
    assert blocks[4].directives == {"background": "true", "port": "8000", "timeout": "30"}


def test_runner__a_broken_block_fails_with_its_place_and_output(tmp_path):
    session = PageSession("page.md", tmp_path / "page", tmp_path / "cache")
    first, broken = parse_page(PAGE, "page.md")[:2]
    session.run(first)
    with pytest.raises(SnippetError, match=r"page.md:8: exit status 3"):
        session.run(broken)


def test_runner__a_block_past_its_timeout_fails(tmp_path):
    (block,) = parse_page("<!-- docs-test: timeout=1 -->\n```bash\nsleep 30\n```\n", "p.md")
    session = PageSession("p.md", tmp_path / "p", tmp_path / "cache")
    with pytest.raises(SnippetError, match="still running after 1 s"):
        session.run(block)


def test_runner__background_server_on_a_free_port_is_stopped_at_the_end(tmp_path):
    server, client = parse_page(PAGE, "page.md")[4:]
    session = PageSession("page.md", tmp_path / "page", tmp_path / "cache")
    try:
        session.run(server)
        session.run(client)
        (process,) = session.background
    finally:
        session.close()
    assert process.poll() is not None


def test_runner__documented_ports_become_the_fixture_ports():
    code = 'RemoteEnv("http://127.0.0.1:8000", ...)\nagent-envs serve --port 8000\n:80001'
    assert substitute_ports(code, {"8000": 41234}) == (
        'RemoteEnv("http://127.0.0.1:41234", ...)\nagent-envs serve --port 41234\n:80001'
    )
