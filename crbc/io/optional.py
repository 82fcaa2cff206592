"""Optional packages the core does not install, imported on use with a message that says how to
get them (the core needs only numpy, scipy and msgspec: pyproject.toml)."""

from __future__ import annotations

__all__ = ["pandas"]


def pandas():
    """The pandas module, or an ImportError that says how to install it."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("this needs pandas, which the core library does not install: "
                          "pip install \"crbc[report]\" (or pip install pandas)") from None
    return pd
