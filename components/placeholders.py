"""The placeholder syntax of the offline plan: one place for the mocks that write them and the diff that reads them.

A value the cloud knows only after deploy is shown as `<KIND of NAME>` (`<id of llm-vpc>`,
`<self link (unique id) of llm-tpl>`) or `<autoname:NAME>`, where NAME is the logical name of the
resource it comes from. The diff follows these references to carry a replacement on to whoever
uses the replaced resource, so every form the mocks write must parse with `REFERENCE`: the mock
answers are checked against it when they are loaded (`plan.runner`).
"""

from __future__ import annotations

import re

# What a `secure:` value reads as when it cannot be decrypted (the offline plan never decrypts).
SECRET = "[secret]"
# KIND is any words without angle brackets or a colon (it may hold parentheses); NAME follows " of ".
REFERENCE = re.compile(r"<(?:[^<>:]+? of |autoname:)([^<>]+)>")


def of(kind: str, name: str) -> str:
    """`<KIND of NAME>`: an output of resource NAME known only at deploy."""
    text = f"<{kind} of {name}>"
    if referenced(text) != [name]:
        raise ValueError(f"{text!r} does not parse as a reference to {name!r}")
    return text


def autoname(name: str) -> str:
    """The physical name the provider generates from logical name NAME."""
    return f"<autoname:{name}>"


def referenced(value: str) -> list[str]:
    """The logical names a string refers to through placeholders."""
    return [m.group(1) for m in REFERENCE.finditer(value)] if "<" in value else []
