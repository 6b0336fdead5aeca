"""`kubesched run`: schedule the pods of a real cluster."""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from typing import Annotated

import typer

from kubesched.cli.app import PlainFlagsCommand, app
from kubesched.cli.common import fail, set_feature_gates, tracing_config
from kubesched.config.errors import ConfigError
from kubesched.scheduler.configload import load_config


def _log_levels(spec: str) -> tuple[int, dict[str, int]]:
    """`info` or `info,kubesched.decisions=debug`: the root level, then levels of named loggers."""

    def level_of(text: str) -> int:
        level = getattr(logging, text.upper(), None)
        if not isinstance(level, int):
            raise ValueError(f"unknown level {text!r} (debug, info, warning, error)")
        return level

    root, *rest = [part.strip() for part in spec.split(",")]
    per_logger = {}
    for part in rest:
        name, sep, text = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{part!r} is not LOGGER=LEVEL")
        per_logger[name.strip()] = level_of(text.strip())
    return level_of(root), per_logger


@app.command(cls=PlainFlagsCommand)
def run(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="KubeSchedulerConfiguration (default profile if omitted).")] = None,
    kubeconfig: Annotated[
        str | None, typer.Option(help="kubeconfig file (default: in-cluster service account, else ~/.kube/config).")
    ] = None,
    bind_address: Annotated[str, typer.Option(help="Address of the secure port (/healthz /livez /readyz /metrics /debug).")] = "0.0.0.0",
    secure_port: Annotated[int, typer.Option(min=0, max=65535, help="HTTPS port, as kube-scheduler's (0: serve nothing).")] = 10259,
    tls_cert_file: Annotated[
        str | None, typer.Option(help="Serving certificate (PEM); without one, a self-signed certificate is made at start.")
    ] = None,
    tls_private_key_file: Annotated[str | None, typer.Option(help="The serving certificate's key (PEM).")] = None,
    client_ca_file: Annotated[
        str | None,
        typer.Option(help="CA of client certificates (default: the API server's, from the ConfigMap "
                     "extension-apiserver-authentication in kube-system)."),
    ] = None,
    authorization_always_allow_paths: Annotated[
        str, typer.Option(help="Comma-separated paths served without authorization.")
    ] = "/healthz,/readyz,/livez",
    advertise_address: Annotated[
        str | None, typer.Option(help="Address the leader publishes on its Lease for `kubesched explain` (default: $POD_IP).")
    ] = None,
    tracing_config_file: Annotated[
        Path | None, typer.Option(help="TracingConfiguration (endpoint, samplingRatePerMillion): export cycles as OTLP spans.")
    ] = None,
    log_level: Annotated[
        str,
        typer.Option(
            help="debug, info, warning or error; then, comma-separated, LOGGER=LEVEL for one logger, "
            "e.g. info,kubesched.decisions=debug (each scored cycle's feasible nodes and final scores)."
        ),
    ] = "info",
    feature_gates: Annotated[
        str, typer.Option(help="kube's feature gates, e.g. GenericWorkload=true (pod groups); as kube-scheduler takes them.")
    ] = "",
) -> None:
    """Schedule the pods of a real cluster whose schedulerName names one of the profiles."""

    from kubesched.backends.kube.runner import KubeScheduler, RunError, RunOptions
    from kubesched.client import KubeConfigError

    try:
        level, per_logger = _log_levels(log_level)
    except ValueError as exc:
        raise fail(f"--log-level: {exc}") from None
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    set_feature_gates(feature_gates)
    for name, logger_level in per_logger.items():
        logging.getLogger(name).setLevel(logger_level)
    from kubesched.config.parse import read_config_text
    from kubesched.scheduler.configload import load_config_text

    try:
        # Read once: the text is what later changes of the file are compared with.
        text = read_config_text(config) if config is not None else ""
        cfg = load_config_text(text, str(config)) if config is not None else load_config(None)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    tracing = tracing_config(tracing_config_file)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            options = RunOptions(
                cfg, kubeconfig, bind_address, secure_port, tls_cert_file=tls_cert_file, tls_private_key_file=tls_private_key_file,
                client_ca_file=client_ca_file, advertise_address=advertise_address, tracing=tracing,
                always_allow_paths=tuple(p.strip() for p in authorization_always_allow_paths.split(",") if p.strip()),
                config_path=config, config_text=text,
            )
            sched = KubeScheduler(options)
        except KubeConfigError as exc:
            raise fail(str(exc)) from None
        # SIGHUP: evaluate the configuration file now, changed or not.
        loop.add_signal_handler(signal.SIGHUP, sched.reload.request)
        try:
            return await sched.run(stop)
        except RunError as exc:
            raise fail(str(exc)) from None

    code = asyncio.run(main())
    if code:
        raise typer.Exit(code)

