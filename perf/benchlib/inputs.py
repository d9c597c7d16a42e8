"""Reading a JSON file that a measuring script wrote, for the projections that
use it: a message naming the file and what is wrong, and the script that
writes it when a key is missing."""
import json


def read_json(path, keys, writer, error):
    """The JSON object in `path`, which must have every key of `keys`; raises
    error(message) otherwise (writer: how to make the file)."""
    try:
        with open(path) as f:
            inp = json.load(f)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise error(f"{path}: not JSON: {e}") from None
    for key in keys:
        if key not in inp:
            raise error(f"{path}: no {key!r} (write it with {writer})")
    return inp
