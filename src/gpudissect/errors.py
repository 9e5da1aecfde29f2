"""Error types whose message is meant for the user, as one line."""


class GpuDissectError(Exception):
    """A problem the user can act on (bad input, missing GPU or tool); printed without traceback."""


class NoGpuError(GpuDissectError):
    pass


class CompileError(GpuDissectError):
    pass


class BenchSkipped(GpuDissectError):
    """A benchmark that cannot run here for a reason that is no fault (an optional package is not
    installed, the machine has fewer GPUs than it needs): stored as skipped, with the reason."""


class CheckFailed(GpuDissectError):
    """A kernel's output did not match what it should have computed: no number may be stored."""
