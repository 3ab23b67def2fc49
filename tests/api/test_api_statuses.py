"""The service reports rows with molprop.inference's statuses and row semantics, not its own."""

from __future__ import annotations

import inspect
from typing import get_args

from api import routes
from api.schemas import PredictionResult, Status
from molprop.inference import STATUSES


def test_response_statuses_are_the_inference_statuses():
    assert get_args(Status) == STATUSES
    assert PredictionResult.model_fields["status"].annotation == Status


def test_rows_are_built_without_status_strings_of_their_own():
    for function in (routes.build_results, routes.screen_rows):
        source = inspect.getsource(function)
        for status in STATUSES:
            assert f'"{status}"' not in source and f"'{status}'" not in source, status
    assert "RowPrediction" in inspect.getsource(routes.build_results)
    assert not hasattr(routes, "STATUS_INVALID")
