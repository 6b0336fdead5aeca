"""Finding and reading manifest files: directories walked, files read within a size limit, YAML
and JSON documents parsed, `kind: List` (PodList, NodeList...) opened into its items, each object
with the file, document and item it came from. A file that cannot be read or parsed is an error
naming it, which a caller may take as one refused object and read on (objects_in).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api import yamlio
from kubesched.backends.sim.clusterinput import ManifestError, cut, type_name

# One manifest file: `kubectl get pods -A -o yaml` of a 10,000-pod cluster is about 60 MiB, and
# reading YAML takes some twenty times the file's size in memory.
MAX_MANIFEST_BYTES = 256 * 2**20


@dataclass(frozen=True, slots=True)
class Origin:
    file: str
    document: int
    item: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}: document {self.document}"
        return where if self.item is None else f"{where}, item {self.item}"


def find_files(paths: Sequence[str | Path]) -> list[Path]:
    """The manifest files named, directories read recursively (*.yaml, *.yml, *.json, sorted; hidden
    files and directories skipped)."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(
                f
                for f in path.rglob("*")
                if f.is_file()
                and f.suffix.lower() in (".yaml", ".yml", ".json")
                # Hidden files and directories (.git, .github, editor backups) are not manifests.
                and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise ManifestError(f"{path}: no such file or directory")
    return out


def documents(path: Path) -> Iterator[tuple[Origin, Any]]:
    """The documents of one file: multi-document YAML, or one JSON document."""
    name = str(path)
    try:
        text = yamlio.read_text(path, MAX_MANIFEST_BYTES, "manifest file")
    except yamlio.InputFileError as exc:
        raise ManifestError(f"{name}: {exc}") from None
    try:
        if path.suffix.lower() == ".json":
            yield Origin(name, 1), yamlio.load_json(text)
            return
        for index, data in yamlio.load_all(text):
            yield Origin(name, index), data
    except yamlio.YamlError as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        problem = exc.problem if exc.problem.startswith("invalid ") else f"invalid {kind}: {exc.problem}"
        where = f"line {exc.line} column {exc.column}: " if exc.line is not None else ""
        document = f"document {exc.document}: " if exc.document is not None else ""
        raise ManifestError(f"{name}: {document}{where}{problem}") from None


def document_objects(origin: Origin, data: Any) -> Iterator[tuple[Origin, dict[str, Any]]]:
    """The objects of one document: the document itself or the items of a List."""
    if data is None:
        return
    if not isinstance(data, dict):
        raise ManifestError(f"{origin}: expected a Kubernetes object (a mapping with apiVersion and kind), "
                            f"got {type_name(data)}")
    kind = data.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in data:
        items = data["items"]
        if items is None:
            return
        if not isinstance(items, list):
            raise ManifestError(f"{origin}: {cut(kind)}: items: expected a list, got {type_name(items)}")
        for i, item in enumerate(items, 1):
            sub = Origin(origin.file, origin.document, i)
            if not isinstance(item, dict):
                raise ManifestError(f"{sub}: expected a Kubernetes object, got {type_name(item)}")
            yield sub, item
        return
    yield origin, data


def objects_in(files: Sequence[Path], refuse: Callable[[ManifestError], None] | None = None) -> Iterator[tuple[Origin, dict[str, Any]]]:
    """Every object of the files, in order; a file without any is an error. A file that cannot be
    read or parsed (invalid YAML or JSON), a document that is not an object and a file without
    objects raise ManifestError; given `refuse`, it gets the error instead and reading goes on with
    the next document or file (what came before the error stays read, as kubectl applies it)."""
    for f in files:
        found = 0
        try:
            for origin, data in documents(f):
                try:
                    for entry in document_objects(origin, data):
                        found += 1
                        yield entry
                except ManifestError as exc:
                    found += 1  # a document, if not an object: the file is not empty
                    _refused(exc, refuse)
            if not found:
                # kubectl apply says "no objects passed to apply"; an empty file is a mistake here too.
                raise ManifestError(f"{f}: no Kubernetes objects in this file (it is empty, or holds only comments or empty "
                                    "documents)")
        except ManifestError as exc:
            _refused(exc, refuse)


def _refused(exc: ManifestError, refuse: Callable[[ManifestError], None] | None) -> None:
    if refuse is None:
        raise exc
    refuse(exc)
