"""MkDocs hook: Sphinx cross-reference roles in docstrings (``:class:`~swe.Rain```) render
as plain code (``Rain``) instead of showing the role's markup."""

import re

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|obj|exc):<code>(~?)([^<]*)</code>")


def _code(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if tilde else target}</code>"


def on_page_content(html, **kwargs):
    return _ROLE.sub(_code, html)
