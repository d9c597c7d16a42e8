"""Which torch a library of HCOps' was built against: the marker
"hcops-torch-built-for:<version>" its C++ compiles into it (libhcops_torch's
register.cpp, the torch.distributed backend's module.cpp), read from the
file before loading it, so that only a build made for the torch running is
loaded (one made for another torch would bring that torch's libraries in
beside it, or fail to resolve). No import of torch here."""

MARKER = b"hcops-torch-built-for:"


def built_for(path):
    """The torch version the library at path was built against, or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    i = data.find(MARKER)
    if i < 0:
        return None
    return data[i + len(MARKER):data.find(b"\0", i)].decode("ascii", "replace")
