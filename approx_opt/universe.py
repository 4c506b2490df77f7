"""xDSL plugin entry point: stock `xdsl-opt` loads the approx dialect and passes
(declared in pyproject.toml under `xdsl.universe`)."""

from xdsl.universe import Universe

from approx_dialect import Approx, xdsl_compat
from passes import ALL_PASSES, ApproxPipelinePass

xdsl_compat.install()  # stock xdsl-opt reads and verifies as approx-opt does

APPROX_UNIVERSE = Universe(
    all_dialects={"approx": lambda: Approx},
    all_passes={name: (lambda cls=cls: cls)
                for name, cls in {**ALL_PASSES, ApproxPipelinePass.name: ApproxPipelinePass}.items()},
)
