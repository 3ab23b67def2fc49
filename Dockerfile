# CPU image of the molprop prediction service (FastAPI + uvicorn) with the shipped models.
#   docker build -t molprop .
#   docker run --rm -p 8000:8000 molprop          # then: curl localhost:8000/health
# Settings via the environment: MOLPROP_API_KEY, MOLPROP_MAX_BATCH, MOLPROP_MODEL_DIR, ...
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=2 \
    MOLPROP_NO_PROGRESS=1

# RDKit wheels need libXrender / libXext at import time
RUN apt-get update \
    && apt-get install -y --no-install-recommends libxrender1 libxext6 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# CPU-only torch first (the default PyPI wheel would pull CUDA libraries), then the package
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY molprop/ molprop/
COPY api/ api/
# the shipped model artifacts (config.json + safetensors + card.md + domain.safetensors) are
# installed into the package (molprop.pretrained) and served from there; the sources are then
# removed so that the image holds one copy and runs the installed package
COPY pretrained/ pretrained/
RUN pip install ".[service]" && rm -rf /app/*

RUN useradd --create-home --uid 10001 molprop
USER molprop

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status != 200)"

CMD ["uvicorn", "api.main:app", "--host", "0.0.0.0", "--port", "8000"]
