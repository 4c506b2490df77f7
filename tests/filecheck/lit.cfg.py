# lit configuration for the FileCheck-style .mlir tests (MLIR's own test style).
import os
import sys

import lit.formats

config.name = "approx"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
bin_dir = os.path.dirname(sys.executable)
config.substitutions.append(("approx-opt", f"{sys.executable} -m approx_opt.main"))
config.substitutions.append(("filecheck", os.path.join(bin_dir, "filecheck")))
config.environment["PYTHONPATH"] = os.path.dirname(os.path.dirname(config.test_source_root))
config.environment["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
