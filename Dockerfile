# kubesched image: `docker build -t kubesched:0.1.0 .`, then `kubectl apply -k deploy/`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
# No .pyc writes (the root filesystem is read-only) and unbuffered logs.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
RUN groupadd --gid 65532 kubesched && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin kubesched
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["kubesched"]
CMD ["run", "--config", "/etc/kubesched/config.yaml"]
