"""moto's S3 server with its conditional writes made atomic, as AWS's are.

moto checks ``If-None-Match: *`` (and ``If-Match``) and then stores the object as two steps of
one request thread, so two racing PUTs of one key can both pass the check and both answer 200:
on a loaded machine the suite saw two committers both told they created one snapshot. AWS
decides a conditional write atomically; here one lock makes every object write (PUT, and the
completion of a multipart upload) one step. Run as ``python _moto_atomic.py -H host -p port``,
the arguments of ``python -m moto.server``.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable

from moto.s3.responses import S3Response
from moto.server import main

_WRITES = threading.Lock()


def _atomic(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(self: S3Response, *args: Any, **kwargs: Any) -> Any:
        with _WRITES:
            return method(self, *args, **kwargs)

    return locked


S3Response.put_object = _atomic(S3Response.put_object)  # type: ignore[method-assign]
S3Response._key_response_post = _atomic(S3Response._key_response_post)  # type: ignore[method-assign]

if __name__ == "__main__":
    main(sys.argv[1:])
