"""Reading passages in: corpus files and folders, what a Python caller hands over, and OpenIE imports.

The public modules are listed in ``__all__``; each is imported on its own (importing the
subpackage imports none of them, so no layer pulls in the ones above it).
"""

__all__ = ["corpus", "documents", "items", "location", "openie"]
