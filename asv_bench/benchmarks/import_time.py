"""Import time of ember beside PyTorch (asv ``timeraw_``: each sample is a fresh
interpreter, so module caches do not hide the cost)."""

import importlib.util


def timeraw_import_ember():
    return "import ember"


def timeraw_import_torch():
    if importlib.util.find_spec("torch") is None:
        raise NotImplementedError("torch is not installed")
    return "import torch"


def timeraw_import_ember_no_plugins():
    # autoload off: what is left is the extension modules and the tensor API
    return """
import os
os.environ["EMBER_DEVICE_BACKEND_AUTOLOAD"] = "0"
import ember
"""
