"""Host names are data: a name from a hostfile, a command line or a spec becomes an argument of
ssh, mpirun or an agent, where a leading `-` is an option (`-oProxyCommand=...` runs a command)
and a shell character is code. Only RFC 1123 names and IP addresses pass.
"""

import ipaddress
import re

from ..errors import FabenchError
from .shown import shown

MAX_NAME = 253  # RFC 1035 2.3.4: a full name, without the trailing dot
# RFC 1123 2.1: a label is letters, digits and hyphens, 1-63 long, no hyphen at either end;
# it may start with a digit.
_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")


def host_problem(name: str) -> str | None:
    """Why ``name`` is not a host name or address; None when it is one."""
    if not name:
        return "empty"
    if name.startswith("-"):
        return "starts with '-' (it would be read as an option)"
    try:
        ipaddress.ip_address(name.strip("[]") if name.startswith("[") else name)
        return None
    except ValueError:
        pass
    if len(name) > MAX_NAME:
        return f"longer than {MAX_NAME} characters"
    for label in name.rstrip(".").split("."):
        if not _LABEL.match(label):
            said = shown(label)
            return (f"{'label ' + said if said.startswith(chr(39)) else 'a label'} is not "
                    "1-63 letters, digits or '-' "
                    "(RFC 1123), nor is the name an IP address")
    return None


def check_host(name: str, where: str) -> str:
    """``name`` when it is a host name or address, else an error naming ``where`` it came
    from (a file and line, an option)."""
    why = host_problem(name)
    if why is not None:
        raise FabenchError(f"{where}: host name {shown(name)} refused: {why}")
    return name
