"""The web page's server side through TestClient: the page, its static files, the molecule
drawings and the model cards (the page's behaviour in a browser: tests/browser)."""

from __future__ import annotations

import json
import re
import threading
import time
import xml.etree.ElementTree as ET

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from api.main import create_app
from api.settings import Settings
from api.web import STATIC_FILES, card_html
from tests.api.test_api_limits import busy_lane


def _config(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="molprop-config">(.*?)</script>', page)
    assert match, "the page carries its configuration"
    return json.loads(match.group(1))


def test_page_lists_the_served_models_with_their_cards(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp  # no inline, no CDN
    page = response.text
    names = re.findall(r'<option value="([^"]+)">', page)
    assert [n for n in names if n in ("bbb", "solubility")] == ["bbb", "solubility"]
    # each card rendered from markdown: its "# title" line becomes a heading
    assert "<h1>solubility: tiny test model (logp)</h1>" in page
    assert "<h1>bbb: tiny test model (p_np)</h1>" in page
    config = _config(page)
    assert [m["name"] for m in config["models"]] == ["bbb", "solubility"]
    assert {m["target"] for m in config["models"]} == {"logp", "p_np"}
    assert config["jobRows"] <= 50  # capped at the fixture's MOLPROP_MAX_BATCH
    assert config["needsKey"] is False
    # nothing from outside the machine: every src / href is local
    for url in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert url.startswith("/"), url


def test_card_markdown_is_rendered_and_raw_html_escaped() -> None:
    html = str(card_html("# Title\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |"))
    assert "<h1>Title</h1>" in html and "<td>1</td>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in str(card_html("[x](javascript:alert(1))")).replace(
        "[x](javascript:alert(1))", ""
    )


def test_static_files_are_a_fixed_list(client: TestClient) -> None:
    for name, media_type in STATIC_FILES.items():
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and response.content
        assert response.headers["content-type"] == media_type
    for bad in ("web.py", "..%2Fweb.py", "..%2F..%2Fpyproject.toml", "%2Fetc%2Fpasswd"):
        assert client.get(f"/static/{bad}").status_code == 404


def test_molecule_drawing_is_svg_and_bad_smiles_get_the_reason(client: TestClient) -> None:
    response = client.get("/web/molecule.svg", params={"smiles": "c1ccccc1O"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert ET.fromstring(response.text).tag == "{http://www.w3.org/2000/svg}svg"
    bad = client.get("/web/molecule.svg", params={"smiles": "<script>alert(1)</script>"})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("text/plain")
    assert "could not parse" in bad.text
    long = client.get("/web/molecule.svg", params={"smiles": "C" * 121})  # fixture limit: 120
    assert long.status_code == 422 and "too long" in long.text
    assert client.get("/web/molecule.svg").status_code == 422  # no SMILES at all


@given(smiles=st.text(min_size=1, max_size=60))
@settings(max_examples=80, deadline=None, derandomize=True, database=None)
def test_molecule_drawing_never_fails_with_a_5xx(client: TestClient, smiles: str) -> None:
    response = client.get("/web/molecule.svg", params={"smiles": smiles})
    assert response.status_code in (200, 422), (smiles, response.status_code, response.text)
    if response.status_code == 200:
        assert response.headers["content-type"] == "image/svg+xml"


def test_page_asks_for_the_key_when_the_service_has_one(model_dir, tmp_path) -> None:
    keyed = Settings(model_dir=model_dir, api_key="s3cret", data_dir=tmp_path, job_workers=0)
    with TestClient(create_app(keyed)) as c:
        page = c.get("/")  # the page, its files and the drawings need no key
        assert page.status_code == 200 and _config(page.text)["needsKey"] is True
        assert c.get("/static/web.js").status_code == 200
        assert c.get("/web/molecule.svg", params={"smiles": "CCO"}).status_code == 200
        assert c.get("/v1/models").status_code == 401  # the API the page calls does


def test_page_before_the_models_are_loaded_says_so(model_dir, tmp_path) -> None:
    app = create_app(Settings(model_dir=model_dir, data_dir=tmp_path, job_workers=0))
    page = TestClient(app).get("/")  # no lifespan run: the models are not loaded yet
    assert page.status_code == 503
    assert "still loading" in page.text and 'id="predict-form"' not in page.text


def test_drawings_run_on_their_own_bounded_lane_and_repeat_from_the_cache(
    model_dir, tmp_path, monkeypatch
) -> None:
    """With the drawing worker busy: a cached drawing is answered (the same bytes), one new
    drawing waits in the queue (one place) and is drawn once the worker is free, the next is
    refused with 503 and Retry-After; predictions are not held up by drawings."""
    monkeypatch.setenv("MOLPROP_WEB_DRAW_QUEUE", "1")
    app = create_app(Settings(model_dir=model_dir, data_dir=tmp_path, job_workers=0))
    with TestClient(app) as c:
        first = c.get("/web/molecule.svg", params={"smiles": "CCO"})
        assert first.status_code == 200
        queued: dict = {}

        def wait_for_drawing() -> None:
            queued["r"] = c.get("/web/molecule.svg", params={"smiles": "c1ccccc1O"})

        with busy_lane(c, "draw"):
            again = c.get("/web/molecule.svg", params={"smiles": "CCO"})
            waiting = threading.Thread(target=wait_for_drawing)
            waiting.start()
            lane = c.app.state.lanes["draw"]
            deadline = time.monotonic() + 30
            while lane.waiting < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            refused = c.get("/web/molecule.svg", params={"smiles": "CCN"})
            predicted = c.post("/v1/predict", json={"model": "solubility", "smiles": ["CCO"]})
        waiting.join(timeout=30)
    assert again.status_code == 200 and again.content == first.content
    assert again.headers["content-type"] == "image/svg+xml"
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) >= 1
    assert "too many drawings waiting" in refused.text
    assert queued["r"].status_code == 200
    assert ET.fromstring(queued["r"].text).tag == "{http://www.w3.org/2000/svg}svg"
    assert predicted.status_code == 200
