"""Builds a binary for another target inside a host build, so the report can
run the i686 build of a benchmark kernel beside the host one.

The i686 build drops the command line's --copt/--linkopt: a sanitizer
config (--config=tsan, asan, ubsan) must not leak into it (i686 gcc has no
TSan, and a benchmark kernel is measured uninstrumented anyway)."""

def _i686_transition_impl(settings, attr):
    return {
        "//command_line_option:platforms": "//toolchains:linux_i686",
        "//command_line_option:dynamic_mode": "off",
        "//command_line_option:features": settings["//command_line_option:features"] + ["fully_static_link"],
        "//command_line_option:copt": [],
        "//command_line_option:linkopt": [],
    }

_i686_transition = transition(
    implementation = _i686_transition_impl,
    inputs = ["//command_line_option:features"],
    outputs = [
        "//command_line_option:platforms",
        "//command_line_option:dynamic_mode",
        "//command_line_option:features",
        "//command_line_option:copt",
        "//command_line_option:linkopt",
    ],
)

def _i686_binary_impl(ctx):
    src = ctx.attr.binary[0][DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = src, is_executable = True)
    return [DefaultInfo(executable = out, files = depset([out]))]

i686_binary = rule(
    implementation = _i686_binary_impl,
    attrs = {
        "binary": attr.label(cfg = _i686_transition, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    executable = True,
)

# PERCPU_FORCE_SEQCOUNT changes U64Stat's layout and writer protocol, so it
# is a whole-build setting (primitives/internal/abi.h refuses to link a
# translation unit built with it against a library built without it): this
# rule builds the binary AND every library it links with the flag.
def _seqcount_transition_impl(settings, attr):
    return {
        "//command_line_option:copt": settings["//command_line_option:copt"] + ["-DPERCPU_FORCE_SEQCOUNT"],
    }

_seqcount_transition = transition(
    implementation = _seqcount_transition_impl,
    inputs = ["//command_line_option:copt"],
    outputs = ["//command_line_option:copt"],
)

seqcount_binary = rule(
    implementation = _i686_binary_impl,
    attrs = {
        "binary": attr.label(cfg = _seqcount_transition, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    executable = True,
)
