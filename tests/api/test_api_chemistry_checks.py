"""The service applies molprop's chemistry checks: salts predicted as their neutral parent with
the standardised SMILES next to the input; inorganic input and metals ``unsupported`` with no
value, interval or domain flag; ``in_domain`` null wherever there is no prediction."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

PD_PORPHYRIN = "c1cc2cc3ccc4n3[Pd]n5c(cc1n2)ccc5cc1ccc(c4)n1"
SODIUM_BENZOATE = "[Na+].[O-]C(=O)c1ccccc1"
BENZOIC_ACID = "O=C(O)c1ccccc1"
SMILES = ["CCO", "[Na+].[Cl-]", PD_PORPHYRIN, SODIUM_BENZOATE, BENZOIC_ACID, "C1CC", "x" * 200]


@pytest.mark.parametrize("model", ["solubility", "bbb"])
def test_predict_reports_unsupported_rows_and_the_standardised_smiles(
    client: TestClient, model: str
) -> None:
    r = client.post("/v1/predict", json={"model": model, "smiles": SMILES, "interval": 0.9})
    assert r.status_code == 200, r.text
    rows = r.json()["results"]
    assert [x["status"] for x in rows] == [
        "ok",
        "unsupported",
        "unsupported",
        "ok",
        "ok",
        "invalid_input",  # parsed, then refused
        "invalid_input",  # refused before the model (too long)
    ]
    assert [x["smiles"] for x in rows] == SMILES  # the input, as sent
    assert [x["standardized_smiles"] for x in rows] == [
        "CCO",
        None,
        None,
        BENZOIC_ACID,
        BENZOIC_ACID,
        None,
        None,
    ]
    assert rows[3]["value"] == pytest.approx(rows[4]["value"], abs=1e-5)
    assert "inorganic" in rows[1]["error"] and "metal Pd" in rows[2]["error"]
    for x in rows:
        if x["status"] != "ok":
            assert x["value"] is None and x["interval"] is None and x["uncertainty"] is None
            assert x["in_domain"] is None, x
        else:
            assert isinstance(x["in_domain"], bool)
    if model == "solubility":  # the calibrated regression model: intervals on ok rows only
        assert all(x["interval"] is not None for x in rows if x["status"] == "ok")


def test_explain_refuses_unsupported_and_explains_the_standardised_salt(client) -> None:
    r = client.post(
        "/v1/explain",
        json={"model": "solubility", "smiles": ["[Na+].[Cl-]", SODIUM_BENZOATE], "svg": False},
    )
    assert r.status_code == 200, r.text
    unsupported, salt = r.json()["results"]
    assert unsupported["status"] == "unsupported" and unsupported["atoms"] == []
    assert salt["status"] == "ok" and salt["standardized_smiles"] == BENZOIC_ACID
    assert [a["element"] for a in salt["atoms"]] == ["O", "C", "O", "C", "C", "C", "C", "C", "C"]
