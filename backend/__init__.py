"""Machi: a server that gives the characters of a Unity world their minds."""

import os

# Retrieval is one matrix-vector product per query, served to many concurrent requests: a single BLAS
# thread per process is fastest there, and a multi-threaded BLAS on a busy 2-core machine was 10-20x slower.
# Set before numpy is first imported; an explicit environment value wins.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
#: The protocol major the server speaks. 2 (issue 24) added visitors, groups and actions; every version-1 request
#: shape is still accepted and version-1 clients still served (api/protocol.py SUPPORTED_VERSIONS).
PROTOCOL_VERSION = 2
