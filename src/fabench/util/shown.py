"""What of a user's file an error message may quote. fabench runs as root and reads files a
user names (specs, profiles, hostfiles, topology files); a message that quoted any line of
any file would copy /etc/shadow onto the terminal and into stored reasons. A word is quoted
only when it is shaped as what the file should hold (a key, a host name); anything else is
named by its place (file, line) and shape only."""

import re

# Keys, host names, switch names: letters, digits and . _ - [ ] (a Slurm host list), at most
# 80 characters. A password hash ($, /, :) or a sentence (spaces) is none of them.
_WORD = re.compile(r"^[A-Za-z0-9_.\-\[\],]{1,80}\Z")


def shown(word: object) -> str:
    """``word`` quoted, when it has the shape of a name; else a placeholder that says why."""
    text = str(word)
    if _WORD.match(text):
        return repr(text)
    return f"(a word of {len(text)} characters that is no name; not shown)"
