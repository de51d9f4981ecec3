# As in Inductor: the options each torch.compile mode patches in.
def list_mode_options(mode=None, dynamic=None):
    mode_options = {
        "default": {},
        "reduce-overhead": {"triton.cudagraphs": True},
        "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
        "max-autotune": {"max_autotune": True, "coordinate_descent_tuning": True, "triton.cudagraphs": True},
    }
    return mode_options[mode] if mode else mode_options
