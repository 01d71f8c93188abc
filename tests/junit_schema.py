"""A checker of JUnit XML against what Jenkins' JUnit plugin reads (its junit XSD: testsuites >
testsuite > properties?, testcase*, system-out?, system-err?; a testcase holds at most one of
skipped, error, failure, then system-out/system-err), written for these tests: the rules
below are the schema's elements, their required attributes and types, and their order."""

import xml.etree.ElementTree as ET

_INT = "int"
_DEC = "decimal"
_STR = "str"

SUITE_ATTRS = {"name": _STR, "tests": _INT, "failures": _INT, "errors": _INT,
               "skipped": _INT, "disabled": _INT, "time": _DEC, "timestamp": _STR,
               "hostname": _STR, "id": _STR, "package": _STR, "assertions": _STR, "file": _STR}
SUITE_REQUIRED = ("name", "tests")
CASE_ATTRS = {"name": _STR, "classname": _STR, "assertions": _STR, "time": _DEC,
              "status": _STR, "file": _STR, "line": _STR}
CASE_REQUIRED = ("name",)
RESULT_ATTRS = {"message": _STR, "type": _STR}
SUITE_ORDER = ("properties", "testcase", "system-out", "system-err")
CASE_RESULTS = ("skipped", "error", "failure")


def _attrs(el: ET.Element, allowed: dict[str, str], required: tuple[str, ...],
           errors: list[str]) -> None:
    for k, v in el.attrib.items():
        if k not in allowed:
            errors.append(f"<{el.tag}> has attribute {k!r}, not in the schema")
            continue
        kind = allowed[k]
        try:
            if kind == _INT and int(v) < 0:
                errors.append(f"<{el.tag} {k}={v!r}>: not a non-negative integer")
            elif kind == _DEC:
                float(v)
        except ValueError:
            errors.append(f"<{el.tag} {k}={v!r}>: not a {kind}")
    for k in required:
        if k not in el.attrib:
            errors.append(f"<{el.tag}> lacks required attribute {k!r}")


def _case(tc: ET.Element, errors: list[str]) -> None:
    _attrs(tc, CASE_ATTRS, CASE_REQUIRED, errors)
    results = [c for c in tc if c.tag in CASE_RESULTS]
    if len(results) > 1:
        errors.append(f"testcase {tc.get('name')!r}: more than one of skipped/error/failure")
    seen_out = False
    for c in tc:
        if c.tag in CASE_RESULTS:
            if seen_out:
                errors.append(f"testcase {tc.get('name')!r}: <{c.tag}> after system-out")
            _attrs(c, RESULT_ATTRS, (), errors)
        elif c.tag in ("system-out", "system-err"):
            seen_out = True
            if len(c):
                errors.append(f"<{c.tag}> holds elements; it is text only")
        else:
            errors.append(f"testcase {tc.get('name')!r}: unknown element <{c.tag}>")


def _suite(s: ET.Element, errors: list[str]) -> None:
    _attrs(s, SUITE_ATTRS, SUITE_REQUIRED, errors)
    last = -1
    for c in s:
        if c.tag not in SUITE_ORDER:
            errors.append(f"testsuite: unknown element <{c.tag}>")
            continue
        pos = SUITE_ORDER.index(c.tag)
        if pos < last:
            errors.append(f"testsuite: <{c.tag}> out of order")
        last = pos
        if c.tag == "properties":
            for p in c:
                if p.tag != "property":
                    errors.append(f"properties: unknown element <{p.tag}>")
                _attrs(p, {"name": _STR, "value": _STR}, ("name", "value"), errors)
        elif c.tag == "testcase":
            _case(c, errors)
    cases = s.findall("testcase")
    counts = {"tests": len(cases),
              "failures": sum(1 for c in cases if c.find("failure") is not None),
              "errors": sum(1 for c in cases if c.find("error") is not None),
              "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
    for k, n in counts.items():
        if k in s.attrib and int(s.attrib[k]) != n:
            errors.append(f"testsuite {k}={s.attrib[k]} but {n} such testcases")


def junit_errors(text: str) -> list[str]:
    """Everything in `text` that the schema does not allow; [] for a valid file."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return [f"not XML: {exc}"]
    errors: list[str] = []
    if root.tag == "testsuites":
        for s in root:
            if s.tag != "testsuite":
                errors.append(f"testsuites: unknown element <{s.tag}>")
            else:
                _suite(s, errors)
    elif root.tag == "testsuite":
        _suite(root, errors)
    else:
        errors.append(f"root element <{root.tag}>: testsuites or testsuite")
    return errors
