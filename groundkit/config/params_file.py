"""Reading params.yaml and ``--set`` values as DVC reads them: YAML 1.2, with refusals of what readers take differently.

DVC reads params.yaml with ruamel.yaml (YAML 1.2) and ``dvc exp run -S`` values with Hydra's grammar;
PyYAML (YAML 1.1) words the messages of a file DVC's reader refuses (a key written twice, by line).
groundkit/config/__init__.py validates what this module reads.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from groundkit.errors import DuplicateKeyError, ParamsError
from groundkit.inputs.suggest import near_path_text

__all__ = ["PATH_KEYS", "apply_overrides", "read_params_file"]


PATH_KEYS = frozenset({"corpus.root", "corpus.judgments", "retrieve.run"})
"""Keys whose ``--set`` value is a path, taken verbatim: YAML would read ``a #2.jsonl`` as ``a`` and ``yes`` as true."""


def _yaml12() -> Any:
    """The YAML reader DVC reads params.yaml with (``dvc.utils.serialize.parse_yaml``): ruamel.yaml, safe, YAML 1.2.

    groundkit reads every value with it, so a value means to groundkit what it means to DVC: YAML 1.1
    (PyYAML's) reads ``010`` as 8 and ``1:20`` as 80, where YAML 1.2 reads 10 and the text ``1:20``.
    """
    from ruamel.yaml import YAML

    return YAML(typ="safe")


# A number every reader of a value takes alike: YAML 1.2 (params.yaml, as DVC and groundkit read it), YAML 1.1
# and Hydra's grammar, which reads `dvc exp run -S` values. Decimal, without leading zeros, radix prefixes,
# underscores or sexagesimal parts.
_PLAIN_NUMBER = re.compile(r"[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _ambiguous(key: str, raw: str, value: Any) -> ParamsError | None:
    """The refusal of a ``--set`` value that YAML 1.2, YAML 1.1 and ``dvc exp run -S`` would read differently."""
    text = raw.strip()
    if isinstance(value, bool) or _PLAIN_NUMBER.fullmatch(text):
        return None
    try:
        old = yaml.safe_load(text)
    except yaml.YAMLError:
        old = text
    numbers = (int, float)
    if not (isinstance(value, numbers) or (isinstance(old, numbers) and not isinstance(old, bool))):
        return None
    readers = [("YAML 1.2 (how DVC and groundkit read params.yaml)", value), ("YAML 1.1", old)]
    if isinstance(value, numbers):
        readers.append(("`dvc exp run -S`", text))  # Hydra's grammar: a number is decimal, without leading zeros
    readings: dict[str, list[str]] = {}
    for reader, reading in readers:
        shown = f"the text {reading!r}" if isinstance(reading, str) else repr(reading)
        readings.setdefault(shown, []).append(reader)
    told = ", ".join(f"{shown} by {' and '.join(names)}" for shown, names in readings.items())
    return ParamsError("--set", f"{key}={text} is not read alike: {told}", key=key,
                       fix="write the number in plain decimal (no leading zeros, 0x/0o/0b prefixes, underscores or "
                           "colons), or quote it if you mean the text")


def _parse_override(assignment: str) -> tuple[list[str], Any]:
    if "=" not in assignment:
        raise ParamsError(
            "--set", f"{assignment!r} is not KEY=VALUE", fix="write e.g. --set chunk.size=400"
        )
    key, _, raw = assignment.partition("=")
    key = key.strip()
    if key in PATH_KEYS:
        return key.split("."), raw
    if not raw.strip():
        return key.split("."), raw
    try:
        value = _yaml12().load(raw)
    except Exception:  # ruamel's errors share no base class with a stable name: the text stays text
        value = raw
    refusal = _ambiguous(key, raw, value)
    if refusal is not None:
        raise refusal
    return key.split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` overrides to raw params: values parsed as YAML, except paths (``PATH_KEYS``)."""
    for assignment in overrides:
        keys, value = _parse_override(assignment)
        node = data
        for depth, part in enumerate(keys[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ParamsError(
                    "--set", f"{'.'.join(keys[: depth + 1])} is not a section", key=".".join(keys)
                )
            node = child
        node[keys[-1]] = value
    return data


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (PyYAML keeps the last silently).

    Only a file DVC's reader refused is read with it: its messages name the dotted key and both lines.
    """

    def construct_document(self, node: yaml.Node) -> Any:
        self._prefixes = _key_prefixes(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` is meant to be overridden by the keys beside it
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first_line.get(key)
            except TypeError:
                continue  # an unhashable key: SafeLoader reports it, with its line
            if earlier is not None:
                raise DuplicateKeyError(self._prefixes.get(id(node), "") + str(key), key_node.start_mark.line + 1,
                                    earlier)
            first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _key_prefixes(root: yaml.Node) -> dict[int, str]:
    """The dotted path (``retrieve.options.``) in front of the keys of each mapping node, by node id."""
    prefixes: dict[int, str] = {}
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:  # iterative, and each node once: aliases may point back up the tree
        node, prefix = stack.pop()
        if id(node) in prefixes:
            continue
        prefixes[id(node)] = prefix
        if isinstance(node, yaml.MappingNode):
            stack.extend((value, f"{prefix}{key.value}.") for key, value in node.value
                         if isinstance(key, yaml.ScalarNode))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{prefix}{index}.") for index, item in enumerate(node.value))
    return prefixes


def read_params_file(path: str | Path) -> dict[str, Any]:
    """Read params.yaml into a dict as DVC reads it (YAML 1.2, :func:`_yaml12`), with YAML errors (a key
    written twice among them) reported by line."""
    path = Path(path)
    if not path.is_file():
        raise ParamsError(path, f"params file does not exist{near_path_text(path)}",
                          fix="pass --params PATH or create params.yaml")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ParamsError(path, "is not valid UTF-8", fix="re-encode the file as UTF-8") from None
    from ruamel.yaml import YAMLError as Yaml12Error

    try:
        data = _yaml12().load(text)
    except Yaml12Error as exc:
        _explain_yaml_error(path, text)  # PyYAML's reading names the dotted key of a duplicate and the line
        mark = getattr(exc, "problem_mark", None)
        raise ParamsError(path, f"is not valid YAML: {getattr(exc, 'problem', None) or exc}",
                          fix="check indentation and quoting",
                          line=mark.line + 1 if mark is not None else None) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParamsError(path, "must be a YAML mapping of sections", fix="see the committed params.yaml")
    return data


def _explain_yaml_error(path: Path, text: str) -> None:
    """Raise the ParamsError that PyYAML's reading of ``text`` gives, if it finds a problem (it says more)."""
    try:
        yaml.load(text, Loader=_UniqueKeyLoader)
    except DuplicateKeyError as exc:
        raise ParamsError(path, f"duplicate key (first set on line {exc.first_line}); YAML would silently keep only "
                          "the last value", key=exc.key, line=exc.line,
                          fix="keep one of the two lines") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ParamsError(
            path,
            f"is not valid YAML: {getattr(exc, 'problem', exc)}",
            fix="check indentation and quoting",
            line=mark.line + 1 if mark is not None else None,
        ) from None
