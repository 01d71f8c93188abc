"""YAML documents validated by pydantic, with errors that name the file, line and key.

Campaign specs and tuning profiles are both written by hand; both report mistakes the same way.
"""

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, ValidationError

from ..errors import FabenchError
from .labels import check_label
from .shown import shown

# A name a spec gives (a campaign's): check_label's rules as a pydantic field type
Label = Annotated[str, AfterValidator(check_label)]

M = TypeVar("M", bound=BaseModel)


def parse_yaml_model(text: str, source: str, model: type[M], *, what: str, hint: str,
                     docs: str, error: type[FabenchError],
                     skip_loc: Callable[[Any], bool] = lambda p: False,
                     messages: dict[str, str] | None = None) -> M:
    """Parse `text` as YAML into `model`.

    `what` names the document ("campaign spec"), `hint` says what a valid top level holds,
    `skip_loc` drops pydantic's internal path parts (union tags) from reported keys, and
    `messages` replaces pydantic's message for given error types.
    """
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise error(f"{source}{where}: not valid YAML: "
                    f"{getattr(exc, 'problem', exc)}") from exc
    except ValueError:
        # a number of thousands of digits: Python's int() refuses it (its 4,300-digit limit)
        # inside the YAML loader, which was a traceback
        raise error(f"{source}: not valid YAML: a number too long to read") from None
    if not isinstance(data, dict):
        raise error(f"{source}: a {what} is a mapping with {hint}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(explain(exc, node, source, what=what, docs=docs, skip_loc=skip_loc,
                            messages=messages or {})) from None


def explain(exc: ValidationError, root: yaml.Node | None, source: str, *, what: str, docs: str,
            skip_loc: Callable[[Any], bool], messages: dict[str, str]) -> str:
    lines = []
    for err in exc.errors():
        loc = [p for p in err["loc"]
               if not (isinstance(p, str) and (p.startswith("function-") or skip_loc(p)))]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] in messages:
            msg = messages[err["type"]]
        elif err["type"] == "extra_forbidden":
            msg = f"unknown key (check the spelling; see {docs})"
        elif err["type"] == "missing":
            msg = "required key is missing"
        line = line_of(root, loc)
        lines.append(f"{source}{f' line {line}' if line else ''}: {dotted(loc)}: {msg}")
    return f"invalid {what}:\n  " + "\n  ".join(lines)


def dotted(loc: list[Any]) -> str:
    out = ""
    for p in loc:
        # a key is the file's content: quoted only when it is shaped as a key
        name = str(p) if isinstance(p, int) or shown(p).startswith("'") else shown(p)
        out += f"[{p}]" if isinstance(p, int) else (f".{name}" if out else name)
    return out or "(top level)"


def line_of(node: yaml.Node | None, loc: list[Any]) -> int | None:
    """The line of the deepest node of `loc` that exists in the document."""
    best = node.start_mark.line + 1 if node is not None else None
    for p in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if k.value == p:
                    best, nxt = k.start_mark.line + 1, v
                    break
            if nxt is None:
                return best
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(p, int):
            if p >= len(node.value):
                return best
            node = node.value[p]
            best = node.start_mark.line + 1
        else:
            # A scalar given where a list was expected: the scalar's own line.
            return best
    return best
