"""``/v1/jobs``: persistent jobs for large inputs and fine-tuning (stored in the job database,
:mod:`molprop.jobstore`; run by ``molprop worker`` processes, never in this process).

``POST /v1/jobs`` takes a JSON body (:class:`~api.job_schemas.JobRequest`) or a multipart form
with a CSV upload (:class:`~api.job_schemas.JobUpload`) and answers 202 with the queued job;
``GET /v1/jobs/{id}`` reports progress; ``GET /v1/jobs/{id}/results`` streams the result CSV
of a done predict job (the columns and per-row statuses of ``molprop predict``, row i = input
row i); ``DELETE /v1/jobs/{id}`` cancels (a running job stops between batches). Bad input is a
4xx naming the problem: 404 unknown model or job, 409 results of an unfinished job or a model
name already taken, 413 too many rows, 422 malformed bodies / missing columns / bad names.

Jobs belong to the API key that submitted them (:mod:`api.keys`): a user key lists, reads and
cancels only its own (another key's job answers 404, as an unknown id does); an admin key sees
every job. A fine-tune job publishes a model every caller is served, so it needs an admin key
(403 otherwise), as ``DELETE /v1/models/{name}`` (a published model; the models of the model
directory cannot be deleted) does. Without keys (the local single-user service) all is allowed.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from api.errors import safe_text, strict_json_loads
from api.job_schemas import JobInfo, JobList, JobRequest, JobUpload
from api.keys import Caller
from api.registry import ServedModel
from api.routes import (
    CallerDep,
    find_model,
    get_models,
    get_settings,
    require_admin,
    require_api_key,
)
from api.schemas import ErrorBody
from api.settings import Settings
from molprop.artifact.published import PublishedModels
from molprop.errors import ConfigError, DataError
from molprop.jobstore import JobInput, store
from molprop.jobstore.inputs import TooManyRows
from molprop.jobstore.options import FinetuneOptions, PredictOptions
from molprop.jobstore.store import FINAL_STATUSES, JobRecord

log = logging.getLogger(__name__)

#: longest model name a fine-tune job may choose
MAX_NAME_LENGTH = 100
#: a published model's name: letters, digits, '_' and '-' (no dot, no path separator)
NEW_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
#: names Windows reserves for devices (a directory named so cannot be made or read there)
RESERVED_NAMES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{d}{i}" for d in ("com", "lpt") for i in range(10)]
)
#: upload names kept as they are (others are read as CSV); SDF names are kept so that the
#: upload is refused with the reason (jobs take tables) instead of being read as a CSV
_UPLOAD_SUFFIXES = (".csv", ".tsv", ".smi", ".txt", ".sdf", ".sd", ".mol")

jobs_router = APIRouter(
    prefix="/v1",
    tags=["jobs"],
    dependencies=[Depends(require_api_key)],
    responses={
        401: {"model": ErrorBody},
        503: {"model": ErrorBody, "description": "models still loading / job database not open"},
    },
)


def get_engine(request: Request) -> Engine:
    engine = getattr(request.app.state, "engine", None)
    if engine is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the job database is not open")
    return engine


def job_info(job: JobRecord) -> JobInfo:
    published = None if job.report is None else job.report.get("published")
    options = job.options
    return JobInfo(
        id=job.id,
        kind=job.kind,
        model=job.model,
        status=job.status,
        rows_done=job.rows_done,
        rows_total=job.rows_total,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        error=job.error,
        new_model=options.name
        if isinstance(options, FinetuneOptions) and published is not False
        else None,
        published=published,
        report=job.report,
        owner=job.owner,
    )


#: 422 (starlette renamed its constant; the number is what clients see)
UNPROCESSABLE = 422


def _unprocessable(message: str) -> HTTPException:
    return HTTPException(UNPROCESSABLE, message)


def _input_error(exc: DataError, path: Path | None = None, name: str = "") -> HTTPException:
    """413 for too many rows, else 422 with the reason (naming the upload, not the temporary
    file it was saved to)."""
    if isinstance(exc, TooManyRows):
        return HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, str(exc))
    message = str(exc)
    if path is not None:
        message = message.replace(str(path), f"the upload {name!r}")
        if message.startswith(f"{path.name} "):  # a reason that names the file, not the path
            message = name + message[len(path.name) :]
    return _unprocessable(safe_text(message))


def _interval(model: ServedModel, level: float | None) -> float | None:
    try:
        return model.predictor.interval_level(level)
    except ConfigError as exc:
        raise _unprocessable(f"interval: {exc}") from None


def _predictable(model: ServedModel) -> ServedModel:
    """A model a predict job can run: one that needs measured low-fidelity labels per row is
    refused at submission (jobs take SMILES and ids only), not failed later by the worker."""
    columns = model.predictor.low_columns
    if columns:
        raise _unprocessable(
            f"model {model.name!r} was trained on measured low-fidelity labels {list(columns)}, "
            "which jobs do not take: use POST /v1/predict with 'low', or "
            "`molprop predict --low-column`"
        )
    return model


_Model = TypeVar("_Model", bound=BaseModel)


def _validate(schema: type[_Model], data: Any) -> _Model:
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None


#: what the 413 for a JSON job body over ``MOLPROP_MAX_JOB_JSON_BYTES`` advises
UPLOAD = (
    "send the SMILES as a file upload instead (multipart/form-data with a CSV or .smi in the "
    "field 'file', see POST /v1/jobs), which is read in chunks"
)


def _parse_json_job(
    raw: bytes,
    engine: Engine,
    settings: Settings,
    models: dict[str, ServedModel],
    caller: Caller,
) -> JobRecord:
    """The JSON body's job (runs in a thread: parsing, validating and chunking a body of up to
    ``MOLPROP_MAX_JOB_JSON_BYTES`` keeps the event loop free)."""
    try:
        data = strict_json_loads(raw)
    except ValueError as exc:
        raise _unprocessable(f"malformed JSON body: {exc}") from None
    body: JobRequest = _validate(JobRequest, data)
    model = _predictable(find_model(body.model, models))
    level = _interval(model, body.interval)
    try:
        job_input = JobInput.from_lists(
            body.smiles, body.ids, settings.job_chunk_rows, settings.max_job_rows
        )
    except DataError as exc:
        raise _input_error(exc) from None
    return store.create_job(
        engine, model.name, job_input, PredictOptions(interval=level), owner=caller.owner
    )


async def _json_job(
    request: Request,
    engine: Engine,
    settings: Settings,
    models: dict[str, ServedModel],
    caller: Caller,
) -> JobRecord:
    raw = await request.body()  # at most MOLPROP_MAX_JOB_JSON_BYTES (api.limits)
    return await run_in_threadpool(_parse_json_job, raw, engine, settings, models, caller)


def upload_suffix(filename: str | None) -> str:
    """The format suffix of the client's file name: ``.csv``, ``.tsv``, ``.smi`` or ``.txt``,
    with ``.gz`` when gzipped; ``.csv`` (``.csv.gz``) for any other name. Only this suffix is
    taken from the name."""
    name = (filename or "").lower()
    gz = name.endswith(".gz")
    stem = name.removesuffix(".gz")
    suffix = next((s for s in _UPLOAD_SUFFIXES if stem.endswith(s)), ".csv")
    return suffix + (".gz" if gz else "")


def upload_name(filename: str | None) -> str:
    """The client's file name as error messages show it: printable, at most 80 characters."""
    name = "".join(c if c.isprintable() else "?" for c in safe_text(filename or ""))
    return name if len(name) <= 80 else name[:77] + "..."


def _save_upload(upload: UploadFile, folder: Path) -> Path:
    """The upload saved as ``upload<suffix>`` (:func:`upload_suffix`: the suffix says the
    format). The client's name is never a path here: one of 300 characters, with a NUL or a
    path separator names the same file."""
    path = folder / f"upload{upload_suffix(upload.filename)}"
    with open(path, "wb") as out:
        shutil.copyfileobj(upload.file, out)
    return path


def _check_new_name(name: str | None, engine: Engine, models: dict[str, ServedModel]) -> str:
    """The name a fine-tune job publishes its model as: 422 unless letters, digits, '_' and
    '-' (no dot, no path separator) and not a name Windows reserves (``CON``, ``NUL``, ...);
    409 when a model of that name, or of a name differing only by case, exists or is being
    made (on a case-insensitive file system the two would be one directory)."""
    if not name:
        raise _unprocessable("a fine-tune job needs the new model's name (field 'name')")
    if len(name) > MAX_NAME_LENGTH or not NEW_MODEL_NAME.fullmatch(name):
        raise _unprocessable(
            f"model name {safe_text(name)[:120]!r} is not allowed: use letters, digits, '_' "
            f"and '-' (no '.', no path separator), starting with a letter or digit, at most "
            f"{MAX_NAME_LENGTH} characters"
        )
    if name.casefold() in RESERVED_NAMES:
        raise _unprocessable(f"model name {name!r} is reserved (a device name on Windows)")
    taken = [*models, *store.model_names(engine), *store.pending_model_names(engine)]
    clash = next((other for other in taken if other.casefold() == name.casefold()), None)
    if clash is not None:
        which = repr(name) if clash == name else f"{clash!r} (differing only by case)"
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"a model named {which} exists or is being made"
        )
    return name


def _form_job(
    form: dict[str, Any],
    upload: UploadFile,
    engine: Engine,
    settings: Settings,
    models: dict[str, ServedModel],
    caller: Caller,
) -> JobRecord:
    """The multipart form's job (runs in a thread: reads and chunks the upload)."""
    fields: JobUpload = _validate(JobUpload, {**form, "file": b""})
    if fields.kind == "finetune":
        require_admin(caller, "publishing a model (a fine-tune job)")
    try:
        model = find_model(fields.model_name(models), models)
    except ValueError as exc:
        raise _unprocessable(str(exc)) from None
    with tempfile.TemporaryDirectory(prefix="molprop-upload-") as tmp:
        path = _save_upload(upload, Path(tmp))
        if fields.kind == "predict":
            _predictable(model)
            level = _interval(model, fields.interval)
            required = [fields.id_column] if fields.id_column else []
            try:
                job_input = JobInput.from_table(
                    path,
                    fields.smiles_column,
                    required,
                    settings.job_chunk_rows,
                    settings.max_job_rows,
                )
            except DataError as exc:
                raise _input_error(exc, path, upload_name(upload.filename)) from None
            return store.create_job(
                engine,
                model.name,
                job_input,
                fields.predict_options(level),
                owner=caller.owner,
            )
        name = _check_new_name(fields.name, engine, models)
        if not fields.target_column:
            raise _unprocessable("a fine-tune job needs the label column (field 'target_column')")
        try:
            table = JobInput.from_table(
                path,
                fields.smiles_column,
                [fields.target_column],
                settings.job_chunk_rows,
                settings.max_job_rows,
            )
        except DataError as exc:
            raise _input_error(exc, path, upload_name(upload.filename)) from None
        options = fields.finetune_options(name, fields.target_column, table.rows_total)
        return store.create_job(
            engine, model.name, None, options, path.read_bytes(), owner=caller.owner
        )


_REQUEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": JobRequest.model_json_schema()},
            "multipart/form-data": {"schema": JobUpload.model_json_schema()},
        },
    }
}


@jobs_router.post(
    "/jobs",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobInfo,
    openapi_extra=_REQUEST_BODY,
    responses={
        404: {"model": ErrorBody, "description": "unknown model"},
        409: {"model": ErrorBody, "description": "fine-tune: the model name is taken"},
        413: {"model": ErrorBody, "description": "too many rows or too large a body"},
        415: {"model": ErrorBody, "description": "neither JSON nor a multipart form"},
        422: {"description": "malformed body, ids length != smiles length, missing column"},
    },
)
async def submit_job(
    request: Request,
    settings: Annotated[Settings, Depends(get_settings)],
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
    engine: Annotated[Engine, Depends(get_engine)],
    caller: CallerDep,
) -> JobInfo:
    """Queue a job; 202 with its state. JSON (``application/json``, :class:`JobRequest`):
    ``model``, ``smiles``, optional ``ids`` (one per SMILES) and ``interval``. Multipart
    (``multipart/form-data``, :class:`JobUpload`): a ``file`` upload plus the form fields; for
    ``kind=finetune`` a labelled CSV, a served base ``model`` and the new model's ``name``."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json":
        job = await _json_job(request, engine, settings, models, caller)
    elif content_type == "multipart/form-data":
        try:
            form = await request.form(max_files=1, max_fields=20)
        except Exception as exc:  # malformed multipart body
            raise _unprocessable(f"malformed multipart body: {exc}") from None
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise _unprocessable("the form has no file upload (field 'file')")
        fields = {k: v for k, v in form.items() if k != "file" and isinstance(v, str) and v != ""}
        job = await run_in_threadpool(_form_job, fields, upload, engine, settings, models, caller)
    else:
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            "send application/json or multipart/form-data (a CSV upload)",
        )
    log.info("job %s queued: %s %s, %d rows", job.id, job.kind, job.model, job.rows_total)
    return job_info(job)


def _job(engine: Engine, job_id: str, caller: Caller) -> JobRecord:
    """The job ``caller`` may see; 404 for another key's job as for an unknown id."""
    job = store.get_job(engine, job_id)
    if job is None or not caller.sees(job.owner):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job with id {safe_text(job_id)!r}")
    return job


#: most result rows one ``GET /v1/jobs/{id}/results?limit=`` page holds
MAX_RESULT_PAGE = 100_000


def result_page(parts: Iterator[str], offset: int, limit: int | None) -> Iterator[str]:
    """The header line of a result CSV streamed as ``parts`` (its first part is the header
    line), then its records ``offset`` to ``offset + limit - 1`` exactly as written. A record
    ends at a line break outside quotes: where the quotes seen so far are even (a quoted field
    may hold line breaks; ``""`` escapes keep the count even)."""
    parts = iter(parts)
    header = next(parts, None)
    if header is None:
        return
    yield header
    end = None if limit is None else offset + limit
    index, record, quotes = 0, [], 0
    for part in parts:
        for line in part.splitlines(keepends=True):
            record.append(line)
            quotes += line.count('"')
            if quotes % 2 or not line.endswith(("\n", "\r")):
                continue
            if index >= offset:
                yield "".join(record)
            index += 1
            record, quotes = [], 0
            if end is not None and index >= end:
                return
    if record and index >= offset and (end is None or index < end):
        yield "".join(record)


JobId = Annotated[str, PathParam(max_length=64, description="the id POST /v1/jobs returned")]


@jobs_router.get("/jobs", response_model=JobList)
def list_jobs(engine: Annotated[Engine, Depends(get_engine)], caller: CallerDep) -> JobList:
    """The newest 100 jobs the caller may see (a user key: its own; an admin key: all),
    newest first."""
    owner = None if caller.is_admin else caller.owner
    return JobList(jobs=[job_info(j) for j in store.list_jobs(engine, owner=owner)])


@jobs_router.get("/jobs/{job_id}", response_model=JobInfo, responses={404: {"model": ErrorBody}})
def get_job(
    job_id: JobId, engine: Annotated[Engine, Depends(get_engine)], caller: CallerDep
) -> JobInfo:
    """A job's status and progress (``rows_done`` of ``rows_total``)."""
    return job_info(_job(engine, job_id, caller))


@jobs_router.get(
    "/jobs/{job_id}/results",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/csv": {}}, "description": "the result CSV, row i = input row i"},
        404: {"model": ErrorBody},
        409: {"model": ErrorBody, "description": "the job is not done (or is a fine-tune job)"},
    },
)
def job_results(
    job_id: JobId,
    engine: Annotated[Engine, Depends(get_engine)],
    caller: CallerDep,
    offset: Annotated[
        int, Query(ge=0, description="skip this many result rows (0: from the first)")
    ] = 0,
    limit: Annotated[
        int | None,
        Query(ge=1, le=MAX_RESULT_PAGE, description="at most this many result rows (none: all)"),
    ] = None,
):
    """The result CSV of a done predict job, streamed: the input columns (``id`` first for a
    JSON job with ids), then the predictions, ``status`` and ``error`` of each row, as
    ``molprop predict`` writes them; row i is input row i. ``offset`` / ``limit`` give a page
    of it (the header line, then rows ``offset`` to ``offset + limit - 1``, as written; past
    the last row: the header alone); the job's ``rows_total`` says how many there are."""
    job = _job(engine, job_id, caller)
    if isinstance(job.options, FinetuneOptions):
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"job {job.id} is a fine-tune job: it has no result table; when done, its model "
            f"is served as {job.options.name!r}",
        )
    if job.status != store.DONE:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"job {job.id} is {job.status} ({job.rows_done} of {job.rows_total} rows done); "
            "results are available once it is done",
        )
    body = store.iter_results(engine, job.id)
    if offset or limit is not None:
        body = result_page(body, offset, limit)
    return StreamingResponse(
        body,
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="job-{job.id}.csv"'},
    )


@jobs_router.delete(
    "/jobs/{job_id}",
    response_model=JobInfo,
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
def cancel_job(
    job_id: JobId, engine: Annotated[Engine, Depends(get_engine)], caller: CallerDep
) -> JobInfo:
    """Cancel a queued or running job (a running job stops before its next batch); 409 for a
    job that has already ended."""
    job = _job(engine, job_id, caller)
    if job.status in FINAL_STATUSES:
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"job {job.id} has already ended ({job.status})"
        )
    cancelled = store.cancel_job(engine, job.id)
    assert cancelled is not None
    return job_info(cancelled)


@jobs_router.delete(
    "/models/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    tags=["models"],
    responses={
        403: {"model": ErrorBody, "description": "not an admin key"},
        404: {"model": ErrorBody, "description": "no such model"},
        409: {"model": ErrorBody, "description": "a model of the model directory"},
    },
)
def delete_model(
    name: Annotated[str, PathParam(max_length=200)],
    caller: CallerDep,
    settings: Annotated[Settings, Depends(get_settings)],
    models: Annotated[dict[str, ServedModel], Depends(get_models)],
    engine: Annotated[Engine, Depends(get_engine)],
) -> Response:
    """Delete a published model (one a fine-tune job made; admin keys only): it is no longer
    served, and its name is free again. The models of the model directory (the shipped ones,
    ``MOLPROP_MODEL_DIR``) cannot be deleted (409). Jobs still queued on the model fail when
    a worker takes them (the model is gone)."""
    require_admin(caller, "deleting a model")
    if name not in store.model_names(engine):
        if name in models and not models[name].published:
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                f"model {name!r} is one of the model directory's (shipped) models, not a "
                "published one: it cannot be deleted through the API",
            )
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no published model named {safe_text(name)!r}"
        )
    job_id = store.delete_model(engine, name)
    models.pop(name, None)
    if job_id is not None:  # this process's extracted copy (workers extract their own)
        PublishedModels.in_data_dir(engine, settings.data_dir).discard(job_id)
    log.info("model %s deleted (by %s)", name, caller.name or "the local user")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
